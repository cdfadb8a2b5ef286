import { GatewayError } from '../../../core/errors.js';
import type { JsonSchema } from '../../../generation/model.js';

/** The fields of Google's `Schema` (an OpenAPI 3.0 subset), used by `parameters` and `responseSchema`. */
export const SCHEMA_FIELDS: ReadonlySet<string> = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum',
]);
/** Fields whose meaning and name are the same in JSON Schema. */
const SAME = ['format', 'title', 'description', 'enum', 'maxItems', 'minItems', 'required', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'default', 'minimum', 'maximum'];
const TYPES = new Set(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL', 'TYPE_UNSPECIFIED']);

/**
 * Whether a `responseJsonSchema` is written as Google's `Schema` (upper-case type names, as the
 * Gemini CLI writes its classifier's): Google takes it, and it is translated as `responseSchema` is.
 */
export function isGoogleSchema(schema: unknown): boolean {
  return isRecord(schema) && typeof schema.type === 'string' && schema.type !== schema.type.toLowerCase() && TYPES.has(schema.type);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function invalid(path: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param: path });
}

/**
 * Google's `Schema` as the JSON Schema other upstreams take: types in lower case, `nullable` as a
 * union with null, `example` as `examples`; an object has only the properties it declares (the
 * subset cannot allow others), which is `additionalProperties: false`, as strict structured
 * outputs elsewhere require it said; `propertyOrdering` (an ordering hint for Gemini's own decoder)
 * has no counterpart and is left out. A name the subset does not have is refused as
 * Google refuses it, so that a schema behaves the same whichever upstream serves the model.
 */
export function jsonSchemaOf(schema: unknown, path: string): JsonSchema {
  if (!isRecord(schema)) throw invalid(path, `Invalid value at '${path}': expected a Schema object.`);
  for (const name of Object.keys(schema)) {
    if (!SCHEMA_FIELDS.has(name)) throw invalid(`${path}.${name}`, `Invalid JSON payload received. Unknown name "${name}" at '${path}': Cannot find field.`);
  }
  const out: Record<string, unknown> = {};
  if (schema.type !== undefined) {
    const type = typeof schema.type === 'string' ? schema.type.toUpperCase() : '';
    if (!TYPES.has(type)) throw invalid(`${path}.type`, `Invalid value at '${path}.type': ${JSON.stringify(schema.type)} is not a Schema type.`);
    if (type !== 'TYPE_UNSPECIFIED') out.type = schema.nullable === true && type !== 'NULL' ? [type.toLowerCase(), 'null'] : type.toLowerCase();
  }
  for (const name of SAME) if (schema[name] !== undefined) out[name] = schema[name];
  if (schema.example !== undefined) out.examples = [schema.example];
  if (schema.properties !== undefined) {
    if (!isRecord(schema.properties)) throw invalid(`${path}.properties`, `Invalid value at '${path}.properties': expected an object.`);
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, sub]) => [name, jsonSchemaOf(sub, `${path}.properties.${name}`)]));
  }
  if (out.type === 'object' || (Array.isArray(out.type) && out.type[0] === 'object') || out.properties !== undefined) out.additionalProperties = false;
  if (schema.items !== undefined) out.items = jsonSchemaOf(schema.items, `${path}.items`);
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf)) throw invalid(`${path}.anyOf`, `Invalid value at '${path}.anyOf': expected an array.`);
    out.anyOf = schema.anyOf.map((sub, i) => jsonSchemaOf(sub, `${path}.anyOf[${i}]`));
  }
  return out;
}
