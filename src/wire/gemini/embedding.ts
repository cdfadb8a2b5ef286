import type { Embedding } from '../../generation/embedding.js';
import { isObject } from '../json.js';

/** Gemini's embedding wire, shared by the Google caller dialect and the Gemini adapter. */

/** Gemini's `TaskType` values. */
export const GEMINI_TASK_TYPES = [
  'TASK_TYPE_UNSPECIFIED', 'RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CLASSIFICATION', 'CLUSTERING',
  'QUESTION_ANSWERING', 'FACT_VERIFICATION', 'CODE_RETRIEVAL_QUERY',
] as const;

/** batchEmbedContents' own limit on `requests`. */
export const GEMINI_MAX_BATCH_REQUESTS = 100;

/** A batchEmbedContents answer's vectors (`embeddings[].values`, in request order), or what is wrong with it. */
export function embeddingsFromGemini(body: Readonly<Record<string, unknown>>, expected: number): Embedding[] | string {
  if (!Array.isArray(body.embeddings)) return 'an answer without embeddings';
  const items = body.embeddings as unknown[];
  if (items.length !== expected) return `an answer with ${items.length} embeddings for ${expected} requests`;
  const embeddings: Embedding[] = [];
  for (const item of items) {
    if (!isObject(item) || !Array.isArray(item.values)) return 'an embedding without values';
    embeddings.push({ kind: 'float', values: item.values as number[] });
  }
  return embeddings;
}
