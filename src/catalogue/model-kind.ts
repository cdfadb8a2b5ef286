import type { Endpoint } from '../config/config-file.js';

/**
 * What a model serves when its name says it is no generation model: an upstream's list (vLLM's,
 * Ollama's, OpenAI's own) names models but does not say what they do, and a retrieval, image or
 * audio model registered for chat would only fail. The name's last path segment is read
 * (`BAAI/bge-m3`: `bge-m3`), case aside; the first rule that matches wins, rerankers first:
 * `bge-reranker-*` is a reranker, not a `bge-*` embedder.
 */
const RULES: readonly (readonly [Endpoint, readonly RegExp[]])[] = [
  ['rerank', [/rerank/]], // bge-reranker-v2-m3, jina-reranker-v2-base-multilingual, Qwen3-Reranker-4B
  [
    'embeddings',
    [
      /embed/, // text-embedding-3-small, nomic-embed-text, mxbai-embed-large, snowflake-arctic-embed, jina-embeddings-v3
      /^bge-/, // BAAI/bge-m3, bge-large-en-v1.5
      /(?:^|[-_])e5-/, // e5-mistral-7b-instruct, intfloat/multilingual-e5-large
      /^gte-/, // thenlper/gte-large, Alibaba-NLP/gte-Qwen2-7B-instruct
    ],
  ],
  ['moderations', [/moderation/]], // omni-moderation-latest, text-moderation-stable
  ['transcriptions', [/whisper/, /transcribe/]], // whisper-1, openai/whisper-large-v3, gpt-4o-transcribe
  ['speech', [/(?:^|[-_])tts(?:$|[-_])/]], // tts-1, tts-1-hd, gpt-4o-mini-tts
  ['images', [/^dall-e-/, /^gpt-image-/]], // dall-e-3, gpt-image-1
];

/** The one endpoint the name says the model serves (`['embeddings']`, `['rerank']`, …); undefined for a generation model's name. */
export function endpointsByName(name: string): Endpoint[] | undefined {
  const segment = name.slice(name.lastIndexOf('/') + 1).toLowerCase();
  const rule = RULES.find(([, patterns]) => patterns.some((pattern) => pattern.test(segment)));
  return rule === undefined ? undefined : [rule[0]];
}
