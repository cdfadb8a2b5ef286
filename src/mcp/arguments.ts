import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import { RE2 } from 're2-wasm';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { invalidParams, type McpError } from './jsonrpc.js';

/**
 * Tool arguments checked against the tool's `inputSchema` before they leave Sluice. Schemas come
 * from upstream servers: configured by the operator, yet not trusted to be cheap. No input may make
 * a check cost more than linear time in the arguments, so:
 * - a schema larger than MAX_SCHEMA_BYTES is not compiled;
 * - `pattern` runs on RE2 (linear time); a pattern RE2 cannot compile (a lookaround, a
 *   back-reference) is that keyword alone left to the upstream;
 * - `uniqueItems` is never checked here (Ajv compares items pairwise: quadratic); the upstream does;
 * - a schema whose applicators would apply subschemas to one value more than MAX_BRANCHING times
 *   (nested anyOf/oneOf through `$ref`, a cycle that consumes no data) is not compiled (see branchingOf);
 * - nothing is ever fetched (no `loadSchema`: a remote `$ref` fails to compile).
 * Each schema is compiled once (per tool, per version of its server's lists) by an Ajv of its own
 * list version (a renewed list starts afresh, so nothing accumulates). A schema Sluice does not
 * check leaves the tool's arguments to the upstream's own check (logged once per tool).
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** The most schema applications one argument value may cost (see branchingOf). */
export const MAX_BRANCHING = 1000;

/** What one tool's arguments are checked with, or null when the gateway cannot check them. */
type Check = ValidateFunction | null;

/** One list version's compiled checks, by tool. */
export class ArgumentChecks {
  private draft07: Ajv | undefined;
  private draft2020: Ajv2020 | undefined;
  private readonly checks = new WeakMap<Tool, Check>();
  private readonly options: Options;

  constructor(
    private readonly serverId: string,
    private readonly logger: Logger,
  ) {
    this.options = {
      // Upstream schemas use keywords and formats Ajv may not know: they are ignored, as the spec's validators do.
      strict: false,
      validateFormats: false,
      // The first error is enough to name a field, and stops the work early.
      allErrors: false,
      code: { regExp: linearPatterns((pattern) => this.logger.warn({ server: this.serverId, pattern: pattern.slice(0, 200) }, `a pattern in a tool schema of MCP server ${this.serverId} is not one the gateway runs (a lookaround, a back-reference, or past its count of distinct patterns): that pattern is left to the upstream server to check`)) },
    };
  }

  /** The arguments' first fault as invalid params naming the field, or undefined when they pass (or cannot be checked here). */
  check(tool: Tool, callerName: string, args: Record<string, unknown>): McpError | undefined {
    let check = this.checks.get(tool);
    if (check === undefined) {
      check = this.compile(tool);
      this.checks.set(tool, check);
    }
    if (check === null || check(args)) return undefined;
    const error = check.errors?.[0];
    const field = error === undefined ? '' : fieldOf(error);
    const what = error === undefined ? 'do not match its input schema' : `${field === '' ? 'the arguments' : `\`${field}\``} ${error.message ?? 'is invalid'}`;
    return invalidParams(`Invalid arguments for tool ${callerName}: ${what}.`, field === '' ? undefined : { field });
  }

  private compile(tool: Tool): Check {
    const leftToUpstream = (why: string, detail: Record<string, unknown> = {}): null => {
      this.logger.warn({ server: this.serverId, tool: tool.name, ...detail }, `the input schema of MCP tool ${this.serverId}/${tool.name} ${why}: its arguments are left to the upstream server to check`);
      return null;
    };
    let json: string;
    try {
      json = JSON.stringify(tool.inputSchema);
    } catch {
      return leftToUpstream('cannot be read');
    }
    if (json.length > MAX_SCHEMA_BYTES) return leftToUpstream(`is larger than ${MAX_SCHEMA_BYTES} bytes`, { schemaBytes: json.length });
    // A copy: the listed tool keeps its schema as the upstream gave it.
    const schema = JSON.parse(json) as Record<string, unknown>;
    const branching = branchingOf(schema);
    if (branching > MAX_BRANCHING) return leftToUpstream(`may apply more than ${MAX_BRANCHING} subschemas to one value`, { branching: Number.isFinite(branching) ? branching : 'unbounded' });
    withoutUniqueItems(schema);
    try {
      return this.ajvFor(schema).compile(schema);
    } catch (error) {
      return leftToUpstream('cannot be compiled', { err: error instanceof Error ? error.message : String(error) });
    }
  }

  /** MCP's schemas are JSON Schema 2020-12 unless they name draft-07 (as zod-to-json-schema's do). */
  private ajvFor(schema: Record<string, unknown>): Ajv | Ajv2020 {
    const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
    if (/draft-0[4-7]/.test(dialect)) return (this.draft07 ??= new Ajv(this.options));
    return (this.draft2020 ??= new Ajv2020(this.options));
  }
}

/** `/a/0/b` with `missingProperty: c` → `a[0].b.c`. */
function fieldOf(error: ErrorObject): string {
  const parts = error.instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
  if (missing !== undefined) parts.push(missing);
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}

interface Tester {
  test(text: string): boolean;
}

/**
 * RE2 programs by flags and pattern, shared by every compiled schema of the process. RE2 lives in
 * WebAssembly memory that the garbage collector does not free, and a validator may hold a program
 * as long as it lives: so each distinct pattern is compiled once, and at most MAX_PATTERNS of them
 * (null: RE2 could not compile it). Past that a new pattern is left to the upstream.
 */
const programs = new Map<string, Tester | null>();
export const MAX_PATTERNS = 4096;

/**
 * Ajv's pattern engine: RE2, which runs in linear time. A pattern RE2 cannot compile (a lookaround,
 * a back-reference) passes every string here (the upstream still checks it); `refused` is told once per compile.
 */
export function linearPatterns(refused: (pattern: string) => void): { (pattern: string, flags: string): Tester; code: string } {
  const engine = (pattern: string, flags: string): Tester => {
    // RE2 runs only in unicode mode, which is how JSON Schema's patterns are meant.
    const unicode = flags.includes('u') ? flags : `${flags}u`;
    const key = `${unicode}/${pattern}`;
    let program = programs.get(key);
    if (program === undefined) {
      if (programs.size >= MAX_PATTERNS) program = null;
      else {
        try {
          program = new RE2(pattern, unicode);
        } catch {
          program = null;
        }
        programs.set(key, program);
      }
    }
    if (program !== null) return program;
    refused(pattern);
    return { test: () => true };
  };
  engine.code = 'RE2';
  return engine;
}

/** Keywords whose subschemas apply to the same value (consume nothing): one value may be checked once per path through them. */
const SAME_VALUE_ONE = ['not', 'if', 'then', 'else'];
const SAME_VALUE_LIST = ['allOf', 'anyOf', 'oneOf'];
const SAME_VALUE_MAP = ['dependentSchemas', 'dependencies'];
/** Keywords whose subschemas apply to an object's members, and to an array's items (they consume one level of data). */
const MEMBER_ONE = ['additionalProperties', 'unevaluatedProperties', 'propertyNames'];
const MEMBER_MAP = ['patternProperties'];
const ITEM_ONE = ['items', 'additionalItems', 'contains', 'unevaluatedItems'];
const ITEM_LIST = ['items', 'prefixItems'];
const DEFINITIONS = ['$defs', 'definitions'];

type SchemaNode = Record<string, unknown>;

function isSchema(value: unknown): value is SchemaNode {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function valuesOf(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (isSchema(value)) return Object.values(value);
  return [];
}

/** Every subschema of a node (with `$defs`), for rewriting. */
function subschemasOf(node: SchemaNode): SchemaNode[] {
  const found: unknown[] = [];
  for (const key of [...SAME_VALUE_ONE, ...MEMBER_ONE, ...ITEM_ONE]) found.push(node[key]);
  for (const key of [...SAME_VALUE_LIST, ...ITEM_LIST]) if (Array.isArray(node[key])) found.push(...(node[key] as unknown[]));
  for (const key of [...SAME_VALUE_MAP, ...MEMBER_MAP, ...DEFINITIONS, 'properties']) found.push(...valuesOf(node[key]));
  return found.filter(isSchema);
}

/** Removes `uniqueItems` wherever it is a keyword (Ajv checks it in quadratic time; the upstream checks it). */
function withoutUniqueItems(root: SchemaNode): void {
  const seen = new Set<SchemaNode>();
  const pending = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (seen.has(node)) continue;
    seen.add(node);
    delete node.uniqueItems;
    pending.push(...subschemasOf(node));
  }
}

class Unbounded extends Error {}

/** What applying one schema node to one value costs: applications to the value, and to each member or item below (each the most for any one value). */
interface Measure {
  /** Applications (weighted) of subschemas to the value itself, counting every path through same-value keywords. */
  readonly same: number;
  /** The most applications any one value at or below this one receives. */
  readonly below: number;
  /** Applications reaching a member, by property name, and any member or any item, each summed over the subschemas that reach it. */
  readonly byName: ReadonlyMap<string, number>;
  readonly anyMember: number;
  readonly anyItem: number;
}

/** A schema's cycles that consume data: more are not measured (the schema is left to the upstream). */
const MAX_RECURSIONS = 32;

/**
 * How many subschema applications one value of the arguments may cost at most, when the schema
 * is applied once to the whole: Ajv (with allErrors off) still tries every branch of an anyOf
 * whose branches fail, so `anyOf:[{$ref:next},{$ref:next}]` nested 40 deep is 2^40 checks of one
 * value, and so are members reached by two branches' `properties` on each of 40 levels. Paths
 * through the same-value keywords (anyOf, oneOf, allOf, not, if/then/else, dependentSchemas,
 * `$ref`) are counted with memo, so the walk is linear in the schema; members and items sum the
 * subschemas reaching one value (by name, by any member, by item). Infinity: a `$ref` cycle that
 * consumes no data, a recursion (a cycle through members or items) that reaches one value more
 * than once per level (it doubles with each level of data), a `$ref` the walk does not resolve
 * within the schema. Counts are capped just above MAX_BRANCHING.
 */
export function branchingOf(root: SchemaNode): number {
  const anchors = new Map<string, SchemaNode>();
  const seen = new Set<SchemaNode>();
  const walk = [root];
  for (let node = walk.pop(); node !== undefined; node = walk.pop()) {
    if (seen.has(node)) continue;
    seen.add(node);
    for (const key of ['$anchor', '$dynamicAnchor']) if (typeof node[key] === 'string') anchors.set(node[key] as string, node);
    walk.push(...subschemasOf(node));
  }
  const resolve = (ref: unknown): SchemaNode => {
    if (typeof ref !== 'string' || !ref.startsWith('#')) throw new Unbounded();
    if (ref === '#') return root;
    if (!ref.startsWith('#/')) {
      const anchored = anchors.get(ref.slice(1));
      if (anchored === undefined) throw new Unbounded();
      return anchored;
    }
    let target: unknown = root;
    for (const part of ref.slice(2).split('/')) {
      let key: string;
      try {
        key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        throw new Unbounded();
      }
      target = isSchema(target) || Array.isArray(target) ? (target as Record<string, unknown>)[key] : undefined;
    }
    if (!isSchema(target)) throw new Unbounded();
    return target;
  };
  try {
    // Every node weighs one: the applications themselves.
    const recursions = new Set<SchemaNode>();
    const cost = measureFrom(root, resolve, () => 1, (node) => {
      recursions.add(node);
      return 1;
    });
    if (recursions.size > MAX_RECURSIONS) return Infinity;
    // Each recursion again, counting only its returns to itself: more than one per value is a gain with every level.
    for (const start of recursions) {
      const gain = measureFrom(start, resolve, () => 0, (node) => (node === start ? 1 : 0));
      if (gain > 1) return Infinity;
    }
    return cost;
  } catch (error) {
    if (error instanceof Unbounded) return Infinity;
    throw error;
  }
}

function measureFrom(start: SchemaNode, resolve: (ref: unknown) => SchemaNode, weight: (node: SchemaNode) => number, reentered: (node: SchemaNode) => number): number {
  const cap = (count: number) => Math.min(count, MAX_BRANCHING + 1);
  const memo = new Map<SchemaNode, Measure>();
  /** Nodes being measured, with how many data levels had been consumed when each was entered. */
  const entered = new Map<SchemaNode, number>();
  const measure = (node: SchemaNode, depth: number): Measure => {
    const known = memo.get(node);
    if (known !== undefined) return known;
    const at = entered.get(node);
    if (at !== undefined) {
      // Back to a node being measured: with no data consumed on the way, a loop without end.
      if (at === depth) throw new Unbounded();
      const returned = reentered(node);
      return { same: returned, below: returned, byName: new Map(), anyMember: 0, anyItem: 0 };
    }
    entered.set(node, depth);
    let same = weight(node);
    let below = 0;
    const byName = new Map<string, number>();
    let anyMember = 0;
    let anyItem = 0;
    const sameValue: SchemaNode[] = [];
    for (const key of SAME_VALUE_ONE) if (isSchema(node[key])) sameValue.push(node[key] as SchemaNode);
    for (const key of SAME_VALUE_LIST) if (Array.isArray(node[key])) sameValue.push(...(node[key] as unknown[]).filter(isSchema));
    for (const key of SAME_VALUE_MAP) sameValue.push(...valuesOf(node[key]).filter(isSchema));
    for (const key of ['$ref', '$dynamicRef', '$recursiveRef']) if (node[key] !== undefined) sameValue.push(resolve(node[key]));
    for (const child of sameValue) {
      const measured = measure(child, depth);
      same = cap(same + measured.same);
      below = Math.max(below, measured.below);
      for (const [name, count] of measured.byName) byName.set(name, cap((byName.get(name) ?? 0) + count));
      anyMember = cap(anyMember + measured.anyMember);
      anyItem = cap(anyItem + measured.anyItem);
    }
    const member = (child: unknown): number => (isSchema(child) ? measure(child, depth + 1).below : 0);
    if (isSchema(node.properties)) for (const [name, child] of Object.entries(node.properties)) byName.set(name, cap((byName.get(name) ?? 0) + member(child)));
    for (const key of MEMBER_ONE) anyMember = cap(anyMember + member(node[key]));
    for (const key of MEMBER_MAP) for (const child of valuesOf(node[key])) anyMember = cap(anyMember + member(child));
    for (const key of ITEM_ONE) if (isSchema(node[key])) anyItem = cap(anyItem + member(node[key]));
    for (const key of ITEM_LIST) if (Array.isArray(node[key])) for (const child of node[key] as unknown[]) anyItem = cap(anyItem + member(child));
    // One member is reached by its name's subschemas and by every pattern's and the rest's; one item by all the item keywords.
    const mostByName = Math.max(0, ...byName.values());
    below = cap(Math.max(below, same, mostByName + anyMember, anyItem));
    entered.delete(node);
    const result: Measure = { same, below, byName, anyMember, anyItem };
    memo.set(node, result);
    return result;
  };
  return measure(start, 0).below;
}
