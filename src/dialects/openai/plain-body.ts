/**
 * A hand-written check for the plainly valid bodies most requests send, beside a zod schema that
 * stays the authority: a check answers NOT_PLAIN for anything it is not sure of (an unusual shape,
 * a value out of bounds, a `__proto__` key), and the caller then runs the schema, which accepts it
 * or words the error. What a check accepts, it answers exactly as zod's `looseObject` would: a
 * fresh object with the shape's keys first, in the shape's order, then the unknown keys as they came;
 * fresh arrays; everything else the same value. So a body relayed upstream is the same bytes either
 * way (the unit tests hold each check to its schema's output).
 */

import type { z } from 'zod';
import { validationError } from './validation.js';

/** A value the fast check does not take; the schema decides. */
export const NOT_PLAIN: unique symbol = Symbol('not plain');

/** A value's output as the schema would make it, or NOT_PLAIN. */
export type PlainCheck = (value: unknown) => unknown;

/** For a field the check never takes: any value of it leaves the body to the schema. */
export const notPlain: PlainCheck = () => NOT_PLAIN;

/** The body as the schema makes it: by the check when it takes it, else by the schema (which words the refusal). */
export function plainOrSchema<Body>(check: PlainCheck, schema: z.ZodType<Body>, body: object): Body {
  const plain = check(body);
  if (plain !== NOT_PLAIN) return plain as Body;
  const parsed = schema.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error.issues[0]!);
  return parsed.data;
}

export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const plainString: PlainCheck = (value) => (typeof value === 'string' ? value : NOT_PLAIN);
export const plainNonEmptyString: PlainCheck = (value) => (typeof value === 'string' && value.length > 0 ? value : NOT_PLAIN);
export const plainBoolean: PlainCheck = (value) => (typeof value === 'boolean' ? value : NOT_PLAIN);

/** A number in [min, max]; `integer`: a safe integer (a stricter test than the schema's, which is fine: anything else falls back). */
export function plainNumber(min: number, max: number, integer = false): PlainCheck {
  return (value) => (typeof value === 'number' && value >= min && value <= max && (integer ? Number.isSafeInteger(value) : Number.isFinite(value)) ? value : NOT_PLAIN);
}

export function plainLiteral(...values: readonly string[]): PlainCheck {
  return (value) => (typeof value === 'string' && values.includes(value) ? value : NOT_PLAIN);
}

/** `.nullish()`: null stays null (an absent key is the object's business). */
export function plainNullish(check: PlainCheck): PlainCheck {
  return (value) => (value === null ? null : check(value));
}

/** An array of `element`s, at least `min` long, as a fresh array. */
export function plainArray(element: PlainCheck, min = 0): PlainCheck {
  return (value) => {
    if (!Array.isArray(value) || value.length < min) return NOT_PLAIN;
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = element(value[i]);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item;
    }
    return out;
  };
}

/** The first check that takes the value. */
export function plainEither(...checks: readonly PlainCheck[]): PlainCheck {
  return (value) => {
    for (const check of checks) {
      const out = check(value);
      if (out !== NOT_PLAIN) return out;
    }
    return NOT_PLAIN;
  };
}

/**
 * `z.looseObject(shape)`: `optional` names the keys that may be absent (every `.nullish()` or
 * `.optional()` field); the others must be there.
 */
export function plainLooseObject(shape: Readonly<Record<string, PlainCheck>>, optional: readonly string[]): PlainCheck {
  const keys = Object.keys(shape);
  const checks = keys.map((key) => shape[key]!);
  const known = new Set(keys);
  const required = keys.map((key) => !optional.includes(key));
  return (value) => {
    if (!isPlainRecord(value) || Object.hasOwn(value, '__proto__')) return NOT_PLAIN;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key in value) {
        const field = checks[i]!(value[key]);
        if (field === NOT_PLAIN) return NOT_PLAIN;
        out[key] = field;
      } else if (required[i]) {
        return NOT_PLAIN;
      }
    }
    for (const key in value) if (!known.has(key)) out[key] = value[key];
    return out;
  };
}

/** `z.discriminatedUnion(tag, …)` over loose objects: the option for the tag's value. */
export function plainTagged(tag: string, options: Readonly<Record<string, PlainCheck>>): PlainCheck {
  const byTag = new Map(Object.entries(options));
  return (value) => {
    if (!isPlainRecord(value)) return NOT_PLAIN;
    const which = value[tag];
    const check = typeof which === 'string' ? byTag.get(which) : undefined;
    return check === undefined ? NOT_PLAIN : check(value);
  };
}
