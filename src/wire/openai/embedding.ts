import type { Embedding } from '../../generation/embedding.js';
import { isObject } from '../json.js';

/**
 * The vectors of an OpenAI embeddings answer in input order: `data` sorted by `index` (a server may
 * list them otherwise), each a list of floats or, when base64 was asked and the server honours it,
 * the base64 of little-endian float32s. A string saying what is wrong with an answer that is not one.
 */
export function embeddingsFromOpenAI(body: Readonly<Record<string, unknown>>, expected: number): Embedding[] | string {
  if (!Array.isArray(body.data)) return 'an embeddings answer without data';
  const items = body.data as unknown[];
  if (items.length !== expected) return `an embeddings answer with ${items.length} vectors for ${expected} inputs`;
  const ordered = new Array<Embedding | undefined>(expected);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!isObject(item)) return 'an embeddings answer whose data holds something other than an object';
    const index = item.index === undefined ? i : item.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= expected || ordered[index] !== undefined) return 'an embeddings answer whose indexes are not its inputs';
    const vector = item.embedding;
    if (typeof vector === 'string') ordered[index] = { kind: 'base64', data: vector };
    else if (Array.isArray(vector)) ordered[index] = { kind: 'float', values: vector as number[] };
    else return 'an embeddings answer with a vector that is neither floats nor base64';
  }
  return ordered as Embedding[];
}
