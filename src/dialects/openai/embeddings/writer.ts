import { encodedAs, type EmbeddingResult } from '../../../generation/embedding.js';
import type { Usage } from '../../../generation/model.js';

/**
 * OpenAI's embeddings answer: `data` in input order (the AI SDK reads it by position and ignores
 * `index`), each vector as the caller's `encoding_format` asked whatever the upstream gave, the
 * public model id, and usage always present.
 */
export function embeddingsBody(result: EmbeddingResult, encoding: 'float' | 'base64', model: string, usage: Usage): string {
  return JSON.stringify({
    object: 'list',
    data: result.embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding: encodedAs(embedding, encoding) })),
    model,
    usage: { prompt_tokens: usage.input, total_tokens: usage.input + usage.output },
  });
}
