import { createHash } from 'node:crypto';
import type { ToolDefinition } from '../../../generation/model.js';
import { invalid } from '../validation.js';

type Json = Readonly<Record<string, unknown>>;

/**
 * The tools of a Responses request as an upstream without a Responses API takes them: plain
 * functions. Codex sends two shapes (docs/dialects.md, Codex): `tools` holding functions, a
 * `namespace` of functions and `web_search`; or no `tools` but an `additional_tools` input item
 * holding namespaces, one with a `custom` (free-form) tool. A namespace's functions become
 * functions named `namespace__name` (Codex's own flat spelling); a custom tool becomes a function
 * taking its text as one string parameter, `input`; every other type (hosted by OpenAI: web search,
 * file search, code interpreter, image generation, computer use, MCP, local shell…) is left out
 * and named, or refused where the model says so (`hosted_tools: refuse`). The upstream's calls are
 * mapped back by `origin` to the shape the caller offered: a `function_call` with its `namespace`,
 * or a `custom_tool_call` with its `input`.
 */
export interface ResponsesTools {
  readonly functions: readonly ToolDefinition[];
  /** Tool types left out (each once, in order of appearance). */
  readonly dropped: readonly string[];
  /** Where the first dropped tool sits, for the refusal's `param`. */
  readonly firstDroppedAt: string | undefined;
  /** What the caller offered under an upstream function name; undefined for a name it did not offer. */
  origin(flatName: string): ToolOrigin | undefined;
  /** The upstream function name of a tool the caller names (a replayed call), namespaced or not. */
  flatName(name: string, namespace: string | undefined): string;
}

export interface ToolOrigin {
  readonly kind: 'function' | 'custom';
  readonly name: string;
  readonly namespace: string | undefined;
}

/** The parameter a custom tool's text goes in, once it is a function. */
export const CUSTOM_INPUT = 'input';

/** What every upstream takes as a function name (OpenAI's and Anthropic's 64, Gemini's first character). */
const UPSTREAM_NAME = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;
const NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/**
 * Checks what the translation reads of a tool list, where OpenAI would refuse it too: a function's
 * name and parameters, a namespace's name and tools, a custom tool's name. Other types are not
 * looked into. `at` is the list's parameter path (`tools`, `input[0].tools`).
 */
export function checkToolList(tools: readonly Json[], at: string): void {
  tools.forEach((tool, k) => {
    const where = `${at}[${k}]`;
    if (tool.type === 'function' || tool.type === 'custom') checkNamed(tool, where);
    if (tool.type === 'function' && tool.parameters != null && (typeof tool.parameters !== 'object' || Array.isArray(tool.parameters))) {
      throw invalid(`${where}.parameters`, `Invalid type for '${where}.parameters': expected an object.`, 'invalid_type');
    }
    if (tool.type === 'namespace') {
      checkNamed(tool, where);
      if (!Array.isArray(tool.tools)) throw invalid(`${where}.tools`, `Missing required parameter: '${where}.tools'.`, 'missing_required_parameter');
      const inner = tool.tools as unknown[];
      inner.forEach((t, j) => {
        if (t === null || typeof t !== 'object' || typeof (t as Json).type !== 'string') throw invalid(`${where}.tools[${j}].type`, `Missing required parameter: '${where}.tools[${j}].type'.`, 'missing_required_parameter');
      });
      checkToolList(inner as Json[], `${where}.tools`);
    }
  });
}

function checkNamed(tool: Json, where: string): void {
  if (typeof tool.name !== 'string' || !NAME.test(tool.name)) {
    throw invalid(`${where}.name`, `Invalid '${where}.name': expected a string of 1-128 letters, digits, underscores or dashes.`);
  }
}

interface Offered {
  readonly origin: ToolOrigin;
  readonly definition: Omit<ToolDefinition, 'name'>;
}

/**
 * The tools of a request: its `tools`, then those of every `additional_tools` item of the
 * conversation (a later definition of the same tool replaces an earlier one). Plain functions keep
 * their names; a flattened name that is taken, too long or not a valid upstream name is made unique
 * with a hash of the tool's own name, so that it maps back exactly.
 */
export function responsesTools(tools: readonly Json[], items: readonly Json[]): ResponsesTools {
  const offered = new Map<string, Offered>();
  const dropped: string[] = [];
  let firstDroppedAt: string | undefined;
  const drop = (type: string, at: string) => {
    if (!dropped.includes(type)) dropped.push(type);
    firstDroppedAt ??= at;
  };
  const add = (list: readonly Json[], at: string, namespace?: { name: string; description: string }) => {
    list.forEach((tool, k) => {
      const where = `${at}[${k}]`;
      if (tool.type === 'namespace' && namespace === undefined) {
        const description = typeof tool.description === 'string' ? tool.description : '';
        add(tool.tools as Json[], `${where}.tools`, { name: tool.name as string, description });
      } else if (tool.type === 'function' || tool.type === 'custom') {
        const origin: ToolOrigin = { kind: tool.type, name: tool.name as string, namespace: namespace?.name };
        offered.set(key(origin.name, origin.namespace), { origin, definition: definitionOf(tool, namespace) });
      } else drop(String(tool.type), `${where}.type`);
    });
  };
  add(tools, 'tools');
  items.forEach((item, i) => {
    if (item.type === 'additional_tools') add(item.tools as Json[], `input[${i}].tools`);
  });

  const byFlat = new Map<string, ToolOrigin>();
  const flatOf = new Map<string, string>();
  // Plain names first: they are the caller's own and are never renamed.
  const entries = [...offered.values()].sort((a, b) => Number(a.origin.namespace !== undefined) - Number(b.origin.namespace !== undefined));
  const functions: ToolDefinition[] = [];
  for (const { origin, definition } of entries) {
    const name = uniqueName(origin, byFlat);
    byFlat.set(name, origin);
    flatOf.set(key(origin.name, origin.namespace), name);
    functions.push({ name, ...definition });
  }
  return {
    functions,
    dropped,
    firstDroppedAt,
    origin: (flatName) => byFlat.get(flatName),
    flatName: (name, namespace) => flatOf.get(key(name, namespace)) ?? joined(name, namespace),
  };
}

const key = (name: string, namespace: string | undefined) => (namespace === undefined ? name : `${namespace}\0${name}`);

/** Codex's own flat spelling of a namespaced tool (`ToolName::canonical_flat_name`): `namespace__name`. */
function joined(name: string, namespace: string | undefined): string {
  return namespace === undefined ? name : `${namespace.replace(/_+$/, '')}__${name.replace(/^_+/, '')}`;
}

function uniqueName(origin: ToolOrigin, taken: ReadonlyMap<string, ToolOrigin>): string {
  const name = joined(origin.name, origin.namespace);
  if (origin.namespace === undefined || (UPSTREAM_NAME.test(name) && !taken.has(name))) return name;
  const hash = createHash('sha256').update(key(origin.name, origin.namespace)).digest('hex').slice(0, 8);
  const stem = name.replace(/[^a-zA-Z0-9_-]/g, '_').replace(/^[^a-zA-Z_]/, '_');
  return `${stem.slice(0, 64 - hash.length - 1)}_${hash}`;
}

function definitionOf(tool: Json, namespace: { name: string; description: string } | undefined): Omit<ToolDefinition, 'name'> {
  const own = typeof tool.description === 'string' ? tool.description : undefined;
  // The namespace's description is all the model would have known of the group: it leads each function's.
  const description = namespace !== undefined && namespace.description !== '' ? `${namespace.description}${own ? `\n\n${own}` : ''}` : own;
  if (tool.type === 'function') {
    return {
      description,
      parameters: (tool.parameters as Record<string, unknown> | null | undefined) ?? { type: 'object', properties: {} },
      strict: typeof tool.strict === 'boolean' ? tool.strict : undefined,
    };
  }
  return { description, parameters: customParameters(tool.format), strict: undefined };
}

/** A custom tool's text as a function's one string parameter; a grammar it must follow is told in the parameter's description. */
function customParameters(format: unknown): Record<string, unknown> {
  const f = format !== null && typeof format === 'object' ? (format as Json) : {};
  const grammar = f.type === 'grammar' && typeof f.definition === 'string' ? ` It must follow this ${typeof f.syntax === 'string' ? `${f.syntax} ` : ''}grammar:\n${f.definition}` : '';
  return {
    type: 'object',
    properties: { [CUSTOM_INPUT]: { type: 'string', description: `The tool's input as raw text (not JSON).${grammar}` } },
    required: [CUSTOM_INPUT],
    additionalProperties: false,
  };
}

/** The text of a custom tool's call from the function call's arguments; arguments that are not `{"input": "…"}` are taken as the text itself. */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as Json)[CUSTOM_INPUT] === 'string') return (parsed as Json)[CUSTOM_INPUT] as string;
  } catch {
    // not JSON: the text as it came
  }
  return args;
}

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
/** The arguments' start when they are `{"input": "…`; no model pads it with more than this. */
const INPUT_START = /^\s*\{\s*"input"\s*:\s*"/;
const INPUT_START_MAX = 32;

/**
 * A custom tool's input told as its function's JSON arguments stream in: the text of the `input`
 * string decoded so far, an escape held back until it is whole. Arguments of another shape tell
 * nothing (their text is told whole at the end, by customInput). Each call reads only what came
 * since the last.
 */
export class CustomInputStream {
  /** Where the next undecoded character of the string is; undefined until its start is seen. */
  private at: number | undefined;
  private done = false;
  /** What has been told so far. */
  told = '';

  /** The new text in `args` (all the arguments so far). */
  next(args: string): string {
    if (this.done) return '';
    if (this.at === undefined) {
      const start = INPUT_START.exec(args);
      if (start === null) {
        if (args.length >= INPUT_START_MAX) this.done = true;
        return '';
      }
      this.at = start[0].length;
    }
    let out = '';
    let i = this.at;
    let run = i;
    while (i < args.length) {
      const c = args[i]!;
      if (c !== '"' && c !== '\\') {
        i++;
        continue;
      }
      out += args.slice(run, i);
      if (c === '"') {
        this.done = true;
        run = i;
        break;
      }
      const escape = args[i + 1];
      if (escape === undefined) break;
      if (escape === 'u') {
        const hex = args.slice(i + 2, i + 6);
        if (hex.length < 4) break;
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          this.done = true;
          break;
        }
        out += String.fromCharCode(Number.parseInt(hex, 16));
        i += 6;
      } else if (ESCAPES[escape] !== undefined) {
        out += ESCAPES[escape];
        i += 2;
      } else {
        this.done = true; // not JSON: the end tells the rest
        break;
      }
      run = i;
    }
    if (!this.done && i >= args.length) out += args.slice(run, i);
    this.at = i;
    this.told += out;
    return out;
  }
}
