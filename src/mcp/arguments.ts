import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { invalidParams, type McpError } from './jsonrpc.js';

/**
 * Tool arguments checked against the tool's `inputSchema` before they leave Sluice. Schemas come
 * from upstream servers: configured by the operator, yet not trusted to be cheap. So a schema
 * larger than MAX_SCHEMA_BYTES is not compiled, each is compiled once (per tool, per version of
 * its server's lists) by an Ajv of its own list version (a renewed list starts afresh, so nothing
 * accumulates), nothing is ever fetched (no `loadSchema`: a remote `$ref` fails to compile), and a
 * `pattern` that could backtrack without bound is not run (see linearPatterns). A schema Sluice
 * cannot compile leaves the tool's arguments to the upstream's own check (logged once per tool).
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;

/** What one tool's arguments are checked with, or null when the gateway cannot check them. */
type Check = ValidateFunction | null;

const AJV_OPTIONS: Options = {
  // Upstream schemas use keywords and formats Ajv may not know: they are ignored, as the spec's validators do.
  strict: false,
  validateFormats: false,
  // The first error is enough to name a field, and stops the work early.
  allErrors: false,
  code: { regExp: linearPatterns() },
};

/** One list version's compiled checks, by tool. */
export class ArgumentChecks {
  private draft07: Ajv | undefined;
  private draft2020: Ajv2020 | undefined;
  private readonly checks = new WeakMap<Tool, Check>();

  constructor(
    private readonly serverId: string,
    private readonly logger: Logger,
  ) {}

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
    const schema = tool.inputSchema as Record<string, unknown>;
    let size: number;
    try {
      size = JSON.stringify(schema).length;
    } catch {
      size = Infinity;
    }
    if (size > MAX_SCHEMA_BYTES) {
      this.logger.warn({ server: this.serverId, tool: tool.name, schemaBytes: size }, `the input schema of MCP tool ${this.serverId}/${tool.name} is larger than ${MAX_SCHEMA_BYTES} bytes: its arguments are left to the upstream server to check`);
      return null;
    }
    try {
      return this.ajvFor(schema).compile(schema);
    } catch (error) {
      this.logger.warn({ server: this.serverId, tool: tool.name, err: error instanceof Error ? error.message : String(error) }, `the input schema of MCP tool ${this.serverId}/${tool.name} cannot be compiled: its arguments are left to the upstream server to check`);
      return null;
    }
  }

  /** MCP's schemas are JSON Schema 2020-12 unless they name draft-07 (as zod-to-json-schema's do). */
  private ajvFor(schema: Record<string, unknown>): Ajv | Ajv2020 {
    const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
    if (/draft-0[4-7]/.test(dialect)) return (this.draft07 ??= new Ajv(AJV_OPTIONS));
    return (this.draft2020 ??= new Ajv2020(AJV_OPTIONS));
  }
}

/** `/a/0/b` with `missingProperty: c` → `a[0].b.c`. */
function fieldOf(error: ErrorObject): string {
  const parts = error.instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
  if (missing !== undefined) parts.push(missing);
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}

/**
 * A `pattern` engine for Ajv that runs only patterns JavaScript's backtracking engine runs in
 * linear time: a pattern with a back-reference, or a quantified group that itself holds a
 * quantifier or an alternation (`(a+)+`, `(a|a)*`), may take exponential time on a crafted string
 * and is not run (every string passes it here; the upstream server still checks). Refused
 * patterns are few in real tool schemas: enumerations and simple character classes pass.
 */
export function linearPatterns(): { (pattern: string, flags: string): { test(text: string): boolean }; code: string } {
  const engine = (pattern: string, flags: string) => {
    if (!mayBacktrackWithoutBound(pattern)) return new RegExp(pattern, flags);
    return { test: () => true };
  };
  engine.code = 'RegExp';
  return engine;
}

/** Whether a pattern has a back-reference or a quantified group holding a quantifier or `|`. */
export function mayBacktrackWithoutBound(pattern: string): boolean {
  if (/\\[1-9]|\\k</.test(pattern)) return true;
  // Group by group, innermost first, on a copy with escapes and character classes blanked out (their `*`, `|` and `(` are literal).
  let text = pattern.replace(/\\./g, 'e').replace(/\[(?:\\.|[^\]\\])*\]/g, 'c');
  for (let rounds = 0; rounds < 1000; rounds++) {
    const inner = /\(([^()]*)\)([*+?{]?)/.exec(text);
    if (inner === null) return false;
    const [whole, body, quantifier] = inner as unknown as [string, string, string];
    const quantified = quantifier === '*' || quantifier === '+' || quantifier === '{';
    const risky = /[*+{|]/.test(body.replace(/^\?(?:[:=!]|<[=!]|<[A-Za-z]\w*>)/, ''));
    if (quantified && risky) return true;
    // A group holding a quantifier is itself a quantified piece to the group around it.
    text = text.slice(0, inner.index) + (risky || /[*+{]/.test(body) ? 'q+' : 'g') + text.slice(inner.index + whole.length - quantifier.length);
  }
  return true;
}
