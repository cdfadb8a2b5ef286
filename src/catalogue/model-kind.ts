import type { Endpoint } from '../config/config-file.js';

/**
 * What a model serves when its name says it is no generation model: an upstream's list (vLLM's,
 * Ollama's, OpenAI's own) names models but does not say what they do, and a retrieval model
 * registered for chat would only fail. The name's last path segment is read (`BAAI/bge-m3`:
 * `bge-m3`), case aside. Rerankers first: `bge-reranker-*` is a reranker, not a `bge-*` embedder.
 */
const RERANK = /rerank/;
const EMBEDDING = [
  /embed/, // text-embedding-3-small, nomic-embed-text, mxbai-embed-large, snowflake-arctic-embed, jina-embeddings-v3
  /^bge-/, // BAAI/bge-m3, bge-large-en-v1.5
  /(?:^|[-_])e5-/, // e5-mistral-7b-instruct, intfloat/multilingual-e5-large
  /^gte-/, // thenlper/gte-large, Alibaba-NLP/gte-Qwen2-7B-instruct
];

/** `['rerank']` or `['embeddings']` when the name says so; undefined for any other name. */
export function endpointsByName(name: string): Endpoint[] | undefined {
  const segment = name.slice(name.lastIndexOf('/') + 1).toLowerCase();
  if (RERANK.test(segment)) return ['rerank'];
  if (EMBEDDING.some((pattern) => pattern.test(segment))) return ['embeddings'];
  return undefined;
}
