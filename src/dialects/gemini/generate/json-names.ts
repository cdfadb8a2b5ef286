import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import { SCHEMA_FIELDS } from './openapi-schema.js';

/**
 * Google's API reads a field by its JSON name (`generationConfig`) or its proto name
 * (`generation_config`, as Google's own REST examples and raw Python dicts write them), as the
 * proto3 JSON mapping allows, and a single object where a field is repeated (`"contents": {…}`, as
 * its curl examples send it) as a list of one. Sluice checks bodies by the JSON names and lists;
 * this brings a body to them first. Only names the API defines are renamed: keys of free-form data
 * (function-call `args`, JSON schemas, the property names of a `Schema`, labels) are the caller's
 * and stay as sent.
 */

/** How a value is read: a message's fields, a repeated field, a map's values, or (undefined) data left as sent. */
export type Shape = MessageShape | ListShape | MapShape | undefined;

interface Field {
  /** The JSON name, under which the field is read whichever spelling came. */
  readonly name: string;
  readonly shape: Shape;
}

interface MessageShape {
  readonly kind: 'message';
  /** By each name that may come: the JSON name and, where it differs, the proto name. */
  readonly fields: Map<string, Field>;
}

interface ListShape {
  readonly kind: 'list';
  readonly of: Shape;
}

interface MapShape {
  readonly kind: 'map';
  readonly of: Shape;
}

/** `maxOutputTokens` → `max_output_tokens`: how protoc derives the JSON name, inverted. */
function protoName(jsonName: string): string {
  return jsonName.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

function addField(message: MessageShape, name: string, shape: Shape): void {
  const field: Field = { name, shape };
  message.fields.set(name, field);
  message.fields.set(protoName(name), field);
}

/**
 * Google's `Schema` (tool parameters, function responses, `responseSchema`): its own fields are
 * API names; the names under `properties` are the caller's, each a Schema again.
 */
function openApiSchemaShape(): MessageShape {
  const schema: MessageShape = { kind: 'message', fields: new Map() };
  for (const name of SCHEMA_FIELDS) addField(schema, name, undefined);
  addField(schema, 'items', schema);
  addField(schema, 'anyOf', { kind: 'list', of: schema });
  addField(schema, 'properties', { kind: 'map', of: schema });
  return schema;
}

const OPEN_API_SCHEMA = openApiSchemaShape();

/**
 * The shape of a zod schema of the request: objects are messages, arrays repeated fields; any
 * other schema is data, and a record free-form, unless it is `schemaObject`, which holds a Google
 * `Schema`. Built once, at load.
 */
export function shapeOf(schema: z.ZodType, schemaObject: z.ZodType): Shape {
  const built = new Map<z.ZodType, Shape>();
  const walk = (s: z.ZodType): Shape => {
    if (built.has(s)) return built.get(s);
    let shape: Shape;
    if (s === schemaObject) shape = OPEN_API_SCHEMA;
    else if (s instanceof z.ZodOptional || s instanceof z.ZodNullable) shape = walk(s.unwrap() as z.ZodType);
    else if (s instanceof z.ZodPipe) shape = walk(s.out as z.ZodType); // a preprocess: the value is read as its target
    else if (s instanceof z.ZodArray) shape = { kind: 'list', of: walk(s.element as z.ZodType) };
    else if (s instanceof z.ZodObject) {
      const message: MessageShape = { kind: 'message', fields: new Map() };
      for (const [name, field] of Object.entries(s.shape)) addField(message, name, walk(field as z.ZodType));
      shape = message;
    } else shape = undefined;
    built.set(s, shape);
    return shape;
  };
  return walk(schema);
}

/** Where a value is, as a chain to its parent: only rendered for an error. */
interface At {
  readonly up: At | undefined;
  readonly key: string | number;
}

function pathOf(at: At | undefined): string {
  const keys: (string | number)[] = [];
  for (let link = at; link !== undefined; link = link.up) keys.push(link.key);
  let out = '';
  for (const key of keys.reverse()) out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key}`;
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * `value` read by `shape` under JSON names, single objects of repeated fields made lists of one.
 * The caller's value is never changed: what needs no change is returned as is (the same object),
 * the rest copied. One field sent under both its names is refused: the two could disagree.
 * Each value is visited once.
 */
export function withJsonNames(value: unknown, shape: Shape): unknown {
  return read(value, shape, undefined);
}

function read(value: unknown, shape: Shape, at: At | undefined): unknown {
  if (shape === undefined) return value;
  if (shape.kind === 'list') {
    if (isPlainObject(value)) return [read(value, shape.of, { up: at, key: 0 })];
    if (!Array.isArray(value)) return value;
    let copy: unknown[] | undefined;
    value.forEach((item: unknown, i) => {
      const itemRead = read(item, shape.of, { up: at, key: i });
      if (itemRead !== item) (copy ??= [...value])[i] = itemRead;
    });
    return copy ?? value;
  }
  if (!isPlainObject(value)) return value;
  let changed = false;
  const entries: [string, unknown][] = [];
  for (const key of Object.keys(value)) {
    const item = value[key];
    let name = key;
    let itemShape: Shape = undefined;
    if (shape.kind === 'map') itemShape = shape.of;
    else {
      const field = shape.fields.get(key);
      // Not a name of the API: left for validation to refuse by the name sent.
      if (field !== undefined) ({ name, shape: itemShape } = field);
      if (name !== key) {
        if (Object.hasOwn(value, name)) throw sentTwice(key, name, at);
        changed = true;
      }
    }
    const itemRead = read(item, itemShape, { up: at, key: name });
    if (itemRead !== item) changed = true;
    entries.push([name, itemRead]);
  }
  // fromEntries: a "__proto__" key stays a key, as JSON.parse made it.
  return changed ? Object.fromEntries(entries) : value;
}

function sentTwice(protoName: string, jsonName: string, at: At | undefined): GatewayError {
  const where = pathOf(at);
  return new GatewayError('invalid_request', `Invalid JSON payload received. "${protoName}" and "${jsonName}"${where === '' ? '' : ` at '${where}'`} name the same field: send it once.`, {
    param: where === '' ? jsonName : `${where}.${jsonName}`,
  });
}
