import { parseBedrockModelId } from '../../config/cloud-model-ids.js';
import type { EmbeddingRequest, EmbeddingResult, Embedding } from '../../generation/embedding.js';
import { usageOf } from '../../generation/model.js';
import { isObject } from '../../wire/json.js';
import type { Json } from '../upstream-client.js';

/**
 * Bedrock's embedding models, each with its own InvokeModel body: Amazon Titan Text Embeddings
 * (one text a call) and Cohere Embed (up to 96 texts a call). Other model families embed nothing here.
 */
export type EmbeddingFamily = 'titan' | 'cohere';

/** Cohere Embed's most texts in one call. */
export const COHERE_MAX_TEXTS = 96;

/** The family of an upstream model id (an inference profile or an ARN as well), or undefined when it embeds nothing here. */
export function embeddingFamily(upstreamModel: string): EmbeddingFamily | undefined {
  const { vendor, model = '' } = parseBedrockModelId(upstreamModel);
  if (vendor === 'amazon' && model.startsWith('titan-embed-text')) return 'titan';
  if (vendor === 'cohere' && model.startsWith('embed')) return 'cohere';
  return undefined;
}

/**
 * Whether the model makes vectors of a size asked for: Titan Text Embeddings v2 (256, 512 or 1024)
 * and Cohere Embed v4 do; Titan v1 and Cohere Embed v3 make one size only.
 */
export function takesDimensions(upstreamModel: string): boolean {
  const { model = '' } = parseBedrockModelId(upstreamModel);
  const family = embeddingFamily(upstreamModel);
  return family === 'titan' ? !model.startsWith('titan-embed-text-v1') : family === 'cohere' && model.startsWith('embed-v4');
}

/** Gemini's task types (what a Google caller sends, or an OpenAI caller's `task_type`) as Cohere's `input_type`. */
const COHERE_INPUT_TYPES: Readonly<Record<string, string>> = {
  RETRIEVAL_DOCUMENT: 'search_document',
  RETRIEVAL_QUERY: 'search_query',
  QUESTION_ANSWERING: 'search_query',
  CLASSIFICATION: 'classification',
  CLUSTERING: 'clustering',
};
const COHERE_OWN_INPUT_TYPES = new Set(['search_document', 'search_query', 'classification', 'clustering']);

/**
 * Titan's body: `inputText` (one), and for v2 its `dimensions` (256, 512 or 1024) and `normalize`
 * (true, as OpenAI's vectors are unit length). v1 takes the text alone (the provider refuses `dimensions` for it).
 */
export function titanBody(upstreamModel: string, text: string, r: EmbeddingRequest): Json {
  if (!takesDimensions(upstreamModel)) return { inputText: text };
  return { inputText: text, ...(r.dimensions === undefined ? {} : { dimensions: r.dimensions }), normalize: true };
}

/** `{embedding, inputTextTokenCount}`, or what is wrong with it. */
export function titanResult(body: Json): EmbeddingResult | string {
  if (!Array.isArray(body.embedding) || !body.embedding.every((v) => typeof v === 'number')) return 'a Titan answer without an embedding';
  const tokens = typeof body.inputTextTokenCount === 'number' ? body.inputTextTokenCount : undefined;
  return { embeddings: [{ kind: 'float', values: body.embedding as number[] }], usage: tokens === undefined ? null : usageOf(tokens, 0) };
}

/**
 * Cohere's body: `texts`, the `input_type` it requires (the caller's own `input_type`, else its
 * task type mapped, else `search_document`: what is embedded is most often stored),
 * `embedding_types: ["float"]`, and for Embed v4 `output_dimension` from `dimensions`.
 */
export function cohereBody(upstreamModel: string, texts: readonly string[], r: EmbeddingRequest): Json {
  const own = r.extensions.input_type;
  const inputType = typeof own === 'string' && COHERE_OWN_INPUT_TYPES.has(own) ? own : (COHERE_INPUT_TYPES[r.taskType ?? ''] ?? 'search_document');
  return { texts, input_type: inputType, embedding_types: ['float'], ...(takesDimensions(upstreamModel) && r.dimensions !== undefined ? { output_dimension: r.dimensions } : {}) };
}

/** `{embeddings: {float: [[…]]}}` (asked by type) or `{embeddings: [[…]]}`, one per text in order; Cohere on Bedrock reports no token count in the body. */
export function cohereResult(body: Json, count: number): EmbeddingResult | string {
  const vectors = isObject(body.embeddings) ? body.embeddings.float : body.embeddings;
  if (!Array.isArray(vectors) || vectors.length !== count) return `a Cohere answer without ${count} embedding(s)`;
  const embeddings: Embedding[] = [];
  for (const vector of vectors) {
    if (!Array.isArray(vector) || !vector.every((v) => typeof v === 'number')) return 'a Cohere answer with an embedding that is not numbers';
    embeddings.push({ kind: 'float', values: vector as number[] });
  }
  return { embeddings, usage: null };
}
