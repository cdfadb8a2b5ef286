import { z } from 'zod';
import { GatewayError } from '../../core/errors.js';

const TOKEN_ID_KEYS = 'keys must be token ids written as strings of digits';

/**
 * JSON.parse makes a `"__proto__"` key an own key of its object, and zod's records skip it without
 * a word, so the entry would be lost on its way upstream. A map the caller sends refuses that key
 * by name instead, with `message`.
 */
export function withoutProtoKey<T extends z.ZodType>(schema: T, message = "the key '__proto__' is not accepted") {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      if (value !== null && typeof value === 'object' && Object.hasOwn(value, '__proto__')) ctx.addIssue({ code: 'custom', message, path: ['__proto__'], input: value });
    })
    .pipe(schema);
}

/** `logit_bias`: token ids written as strings of digits → a bias in −100..100. */
export const logitBiasSchema = withoutProtoKey(z.record(z.string().regex(/^\d+$/), z.number().min(-100).max(100)), TOKEN_ID_KEYS);

/** `metadata`: string keys (`__proto__` refused) → string values. */
export const metadataSchema = (value: z.ZodString) => withoutProtoKey(z.record(z.string(), value));

/** OpenAI-dialect validation errors, worded as OpenAI words them so that clients that show them read naturally. */
export function invalid(param: string, message: string, code?: string): GatewayError {
  return new GatewayError('invalid_request', message, code === undefined ? { param } : { param, code });
}

/** A zod issue as OpenAI would word it. */
export function validationError(issue: z.core.$ZodIssue): GatewayError {
  const param = formatPath(issue.path);
  const got = describeValue(issue.input);
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
      return invalid(param, `Invalid type for '${param}': expected ${expectedPhrase(issue.expected)}, but got ${got} instead.`, 'invalid_type');
    case 'invalid_union':
      if (issue.input === undefined) return invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
      if (issue.discriminator !== undefined && 'options' in issue && issue.options !== undefined) return discriminatorError(param, issue.input, issue.discriminator, issue.options);
      return invalid(param, `Invalid type for '${param}': expected ${UNION_EXPECTATIONS.get(param) ?? 'one of the documented shapes'}, but got ${got} instead.`, 'invalid_type');
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? `>= ${String(issue.minimum)}` : `<= ${String(issue.maximum)}`;
      if (issue.origin === 'array' || issue.origin === 'string') {
        return invalid(param, `Invalid '${param}': expected ${issue.origin === 'array' ? 'an array' : 'a string'} with length ${bound}.`);
      }
      const kind = Number.isInteger(issue.input) ? 'integer' : 'decimal';
      const side = issue.code === 'too_small' ? 'below minimum' : 'above maximum';
      const code = `${kind}_${issue.code === 'too_small' ? 'below_min' : 'above_max'}_value`;
      return invalid(param, `Invalid '${param}': ${kind} ${side} value. Expected a value ${bound}, but got ${String(issue.input)} instead.`, code);
    }
    case 'invalid_key':
      return invalid(param, `Invalid '${param}': ${TOKEN_ID_KEYS}.`);
    default:
      return invalid(param, `Invalid '${param}': ${issue.message}.`);
  }
}

/**
 * A tagged shape (a message's `role`, a part's `type`) none of whose tags matched: zod reports the
 * whole object at the tag's path; OpenAI names the tag's value and the values there are.
 */
function discriminatorError(param: string, input: unknown, discriminator: string, options: readonly unknown[]): GatewayError {
  const value = input !== null && typeof input === 'object' ? (input as Record<string, unknown>)[discriminator] : undefined;
  if (value === undefined) return invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
  const supported = `Supported values are: ${listed(options.map((option) => `'${String(option)}'`))}.`;
  if (typeof value !== 'string') return invalid(param, `Invalid type for '${param}': expected a string, but got ${describeValue(value)} instead. ${supported}`, 'invalid_type');
  return invalid(param, `Invalid value: '${value}'. ${supported}`, 'invalid_value');
}

/** 'a', 'b', and 'c', as OpenAI lists values. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : items.length === 2 ? `${items[0]} and ${items[1]}` : `${items.slice(0, -1).join(', ')}, and ${items.at(-1)}`;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out === '' ? String(part) : `.${String(part)}`;
  return out || 'body';
}

function expectedPhrase(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'number':
      return 'a number';
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'object':
    case 'record':
      return 'an object';
    case 'array':
      return 'an array';
    default:
      return expected;
  }
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return Number.isInteger(value) ? 'an integer' : 'a decimal number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}

/** What a field that takes several shapes expects, in words. */
const UNION_EXPECTATIONS: ReadonlyMap<string, string> = new Map([
  ['prompt', 'a string, an array of strings, an array of token ids or an array of token-id arrays'],
  ['input', 'a string, an array of strings, an array of token ids or an array of token-id arrays'],
  ['stop', 'a string or an array of strings'],
]);
