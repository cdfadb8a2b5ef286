import { createHash } from 'node:crypto';
import { UNICODE_PROMPT, UNICODE_TOKENS, WORDS } from './generation.js';

/**
 * The deterministic chat "model" the three fakes share, so that one conformance suite can run
 * against each of them. Each fake reads its own wire format into the neutral terms below, asks
 * this module what the model does, and writes the answer back in its own wire format.
 *
 * The rules (the same for every fake; each fake's header says how its API spells them):
 *
 * - Prompt: the text of the last user turn (its text parts joined with ' ').
 * - Plain answer: `[<prompt>]`, then ` I see <n> image(s).` when the last user turn holds n > 0
 *   images, then WORDS (' The quick brown fox jumps over the lazy dog.'), one token each (a
 *   prompt containing UNICODE_PROMPT gets UNICODE_TOKENS instead, as generation.ts says).
 * - Tools: with tools offered and a tool choice that allows calls, a prompt mentioning "weather"
 *   (any case) calls the offered `get_weather` with {"city":"Paris"}; one mentioning
 *   "Paris and Tokyo" makes two parallel calls (Paris, then Tokyo) unless parallel calls are
 *   disabled (then only Paris). A required choice (OpenAI "required", Anthropic "any", Gemini
 *   ANY) calls the first (allowed) tool even without "weather", with the minimal instance of its
 *   parameter schema as arguments (get_weather with "weather" still gets Paris); a tool whose schema
 *   is an open object (type object, no properties, additionalProperties not false) gets {"ok":true},
 *   as JSON without a schema does. A named choice
 *   (OpenAI {type:function}, Anthropic {type:tool}, Gemini ANY with one allowed name) makes
 *   exactly one call of that tool. "none" forbids calls. A call's arguments stream in 3
 *   fragments of the JSON text (2 for "{}"); each fragment counts one output token. A prompt
 *   saying "call tool <name>" (any case) with a tool of that exact name offered and a choice that
 *   allows calls makes one call of it, with the minimal instance of its parameter schema (how a
 *   test drives an agent's own tools, which it offers with a choice of auto).
 * - Tool results: when the conversation's last turn is tool results, the answer is
 *   `Result: <content>` for each result in order, joined with ' ' (one token per word).
 * - JSON: when JSON output is requested with a schema, the answer is the JSON text of the minimal
 *   instance of that schema (see minimalInstance); without a schema it is {"ok":true}. Either is
 *   sent in 3 fragments, one token each. Tool calls win over JSON; tool results win over both.
 * - Reasoning: when asked for, the model first "thinks" REASONING_TEXT ('Let me think.', 3 tokens:
 *   'Let', ' me', ' think.'), which count as output tokens and against the output token limit.
 * - Limits: max tokens cut the answer (finish "length"); stop sequences cut a text answer where
 *   they start (finish "stop" with the sequence). Tool calls are never cut.
 * - Prompt tokens: the words of every text the request carries (system, messages, tool-call
 *   arguments' JSON, tool results) plus one per image, at least 1. Tool definitions are not
 *   counted.
 */

export const WEATHER_TOOL = 'get_weather';
export const REASONING_TEXT = 'Let me think.';
export const REASONING_TOKENS = ['Let', ' me', ' think.'];

/** A 1×1 transparent PNG, base64, for tests that send an image. */
export const TINY_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** A 1×1 GIF, base64. */
export const TINY_GIF_BASE64 = 'R0lGODlhAQABAAAAACwAAAAAAQABAAA=';

export interface OfferedTool {
  readonly name: string;
  /** Its parameter schema: JSON Schema, or Gemini's OpenAPI subset (upper-case types). */
  readonly schema: unknown;
}

/** What the tool choice allows, in neutral terms. */
export type ToolMode =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  | { readonly type: 'required'; readonly among?: readonly string[] }
  | { readonly type: 'named'; readonly name: string };

export interface PlannedCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  /** The arguments' JSON text in the fragments it streams in. */
  readonly fragments: string[];
}

/** Which calls the model makes for this prompt, tools and tool choice (none: answer in text). */
export function planToolCalls(prompt: string, tools: readonly OfferedTool[], mode: ToolMode, parallel: boolean): PlannedCall[] {
  if (tools.length === 0 || mode.type === 'none') return [];
  const weather = /weather/i.test(prompt);
  const call = (tool: OfferedTool, city?: string): PlannedCall => {
    const args = tool.name === WEATHER_TOOL && weather ? { city: city ?? 'Paris' } : isOpenObject(tool.schema) ? { ...JSON_WITHOUT_SCHEMA } : asObject(minimalInstance(tool.schema));
    return { name: tool.name, args, fragments: fragments(JSON.stringify(args)) };
  };
  if (mode.type === 'named') {
    const tool = tools.find((t) => t.name === mode.name);
    return tool === undefined ? [] : [call(tool)];
  }
  const asked = /\bcall tool ([\w.:-]+)/i.exec(prompt);
  const askedTool = asked === null ? undefined : tools.find((t) => t.name === asked[1] && (mode.type !== 'required' || mode.among === undefined || mode.among.includes(t.name)));
  if (askedTool !== undefined) return [call(askedTool)];
  const candidates = mode.type === 'required' && mode.among !== undefined ? tools.filter((t) => mode.among!.includes(t.name)) : tools;
  const weatherTool = candidates.find((t) => t.name === WEATHER_TOOL);
  if (weather && weatherTool !== undefined) {
    return /paris and tokyo/i.test(prompt) && parallel ? [call(weatherTool, 'Paris'), call(weatherTool, 'Tokyo')] : [call(weatherTool, 'Paris')];
  }
  if (mode.type === 'required' && candidates.length > 0) return [call(candidates[0]!)];
  return [];
}

/** What the model answers when asked for JSON without a schema, or for the input of a tool that takes any object. */
const JSON_WITHOUT_SCHEMA = { ok: true };

/** A schema for any object: of type object, no properties named, none forbidden. */
function isOpenObject(schema: unknown): boolean {
  return isPlainObject(schema) && String(schema.type).toLowerCase() === 'object' && schema.properties === undefined && schema.required === undefined && schema.additionalProperties !== false;
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Splits a text into 3 near-equal fragments (fewer when it is shorter than 3 characters). */
export function fragments(text: string): string[] {
  if (text.length < 3) return text.length === 0 ? [''] : [...text];
  const size = Math.ceil(text.length / 3);
  return [text.slice(0, size), text.slice(size, 2 * size), text.slice(2 * size)].filter((f) => f !== '');
}

/** Word tokens of a text, each but the first with the whitespace before it. */
export function wordTokens(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

export interface AnswerRequest {
  readonly prompt: string;
  readonly images: number;
  /** The contents of the tool results, when the conversation's last turn is tool results. */
  readonly toolResults: readonly string[] | null;
  /** JSON output: a schema, 'object' (any JSON object), or null (text). */
  readonly json: { readonly schema: unknown } | 'object' | null;
  readonly reasoning: boolean;
  readonly maxTokens: number;
  readonly stops: readonly string[];
  readonly calls: readonly PlannedCall[];
}

export interface Answer {
  /** Reasoning tokens (empty when the model did not think). */
  readonly reasoning: string[];
  readonly calls: readonly PlannedCall[];
  /** Text tokens (empty when it called tools). */
  readonly text: string[];
  readonly finish: 'stop' | 'length' | 'tool_calls';
  readonly stop: string | null;
  /** Reasoning tokens + text tokens + one per argument fragment. */
  readonly outputTokens: number;
}

export function answer(request: AnswerRequest): Answer {
  const reasoning = request.reasoning ? REASONING_TOKENS.slice(0, Math.max(0, request.maxTokens)) : [];
  if (request.calls.length > 0) {
    const callTokens = request.calls.reduce((sum, c) => sum + c.fragments.length, 0);
    return { reasoning, calls: request.calls, text: [], finish: 'tool_calls', stop: null, outputTokens: reasoning.length + callTokens };
  }
  let source: string[];
  if (request.toolResults !== null) source = wordTokens(request.toolResults.map((content) => `Result: ${content}`).join(' '));
  else if (request.json !== null) source = fragments(JSON.stringify(request.json === 'object' ? JSON_WITHOUT_SCHEMA : minimalInstance(request.json.schema)));
  else if (request.prompt.includes(UNICODE_PROMPT)) source = UNICODE_TOKENS;
  else source = [`[${request.prompt}]`, ...(request.images > 0 ? [` I see ${request.images} image(s).`] : []), ...WORDS];
  const budget = request.maxTokens - reasoning.length;
  const cut = cutTokens(source, budget, request.json === null ? request.stops : []);
  const finish = reasoning.length < REASONING_TOKENS.length && request.reasoning ? 'length' : cut.finish;
  return { reasoning, calls: [], text: cut.tokens, finish, stop: cut.stop, outputTokens: reasoning.length + cut.tokens.length };
}

function cutTokens(source: readonly string[], maxTokens: number, stops: readonly string[]): { tokens: string[]; finish: 'stop' | 'length'; stop: string | null } {
  const tokens: string[] = [];
  let text = '';
  for (const token of source) {
    if (tokens.length >= maxTokens) return { tokens, finish: 'length', stop: null };
    const next = text + token;
    const stop = stops.find((s) => s !== '' && next.includes(s));
    if (stop !== undefined) {
      const kept = next.slice(0, next.indexOf(stop)).slice(text.length);
      if (kept) tokens.push(kept);
      return { tokens, finish: 'stop', stop };
    }
    tokens.push(token);
    text = next;
  }
  return { tokens, finish: 'stop', stop: null };
}

/**
 * The smallest instance of a schema (JSON Schema or Gemini's OpenAPI subset): `const`, else the
 * first `enum` value, else by type: objects with their required properties (recursively), arrays
 * with one item, strings "example", numbers and integers 1, booleans true, null null; `anyOf` /
 * `oneOf` take their first non-null branch, `allOf` merges its branches, `$ref` follows `#/$defs/…`
 * or `#/definitions/…`.
 */
export function minimalInstance(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (depth > 32 || schema === null || typeof schema !== 'object') return {};
  const s = schema as Record<string, any>;
  if (typeof s.$ref === 'string') {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = match ? (root as any)?.[match[1]!]?.[match[2]!] : undefined;
    return minimalInstance(target ?? {}, root, depth + 1);
  }
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const key of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[key]) && s[key].length > 0) {
      const branch = s[key].find((b: any) => typeOf(b) !== 'null') ?? s[key][0];
      return minimalInstance(branch, root, depth + 1);
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) {
    const merged: Record<string, unknown> = {};
    for (const branch of s.allOf) Object.assign(merged, asObject(minimalInstance(branch, root, depth + 1)));
    return merged;
  }
  switch (typeOf(s)) {
    case 'string':
      return 'example';
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return [minimalInstance(s.items ?? {}, root, depth + 1)];
    default: {
      const out: Record<string, unknown> = {};
      const properties = asObject(s.properties);
      for (const name of Array.isArray(s.required) ? s.required : []) out[name] = minimalInstance(properties[name] ?? {}, root, depth + 1);
      return out;
    }
  }
}

function typeOf(schema: unknown): string {
  if (schema === null || typeof schema !== 'object') return 'object';
  const type = (schema as Record<string, unknown>).type;
  const first = Array.isArray(type) ? (type.find((t) => String(t).toLowerCase() !== 'null') ?? type[0]) : type;
  return typeof first === 'string' ? first.toLowerCase() : 'object';
}

/** Counts prompt tokens as the rules say: words of every text, one per image, at least 1. */
export function promptTokens(texts: readonly string[], images: number): number {
  const words = texts.reduce((sum, text) => sum + text.split(/\s+/).filter(Boolean).length, 0);
  return Math.max(1, words + images);
}

/** Strict base64 (standard alphabet, padded): the bytes, or null if it is not valid base64. */
export function decodeBase64(data: unknown): Buffer | null {
  if (typeof data !== 'string' || data.length === 0 || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return null;
  return Buffer.from(data, 'base64');
}

/** The image type its first bytes show (png, jpeg, gif, webp), or null. */
export function sniffImage(bytes: Buffer): string | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(bytes.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (bytes.length >= 12 && bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return null;
}

/** An opaque signature only this fake family issues for a text, to check replayed reasoning. */
export function signatureFor(kind: string, text: string): string {
  return createHash('sha256').update(`${kind}\0${text}`).digest('base64');
}

export function isPlainObject(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
