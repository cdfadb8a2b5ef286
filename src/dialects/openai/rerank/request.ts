import { z } from 'zod';
import type { RelayedJsonRequest } from '../relayed-json.js';

/**
 * The most documents one rerank call takes. Cohere's own limit is 10,000 (and it advises 1,000 at
 * most); vLLM and TEI take what fits their batch. Beyond it a call is refused by name rather than
 * sent on, and Sluice's own count of the documents stays bounded.
 */
export const MAX_RERANK_DOCUMENTS = 10_000;

/**
 * `POST /v1/rerank` and `/v2/rerank` bodies in Cohere's shape, which Jina, vLLM, TEI and Infinity
 * share: `query`, `documents` (strings, or `{text}` objects as Cohere's v1 and Jina take them),
 * `top_n`, `return_documents`. Unknown fields (Cohere's `max_tokens_per_doc`, `rank_fields`) are
 * passed on.
 */
export const rerankSchema = z.looseObject({
  model: z.string().min(1),
  query: z.string().min(1),
  documents: z.array(z.union([z.string(), z.looseObject({ text: z.string() })])).min(1).max(MAX_RERANK_DOCUMENTS),
  top_n: z.number().int().min(1).nullish(),
  return_documents: z.boolean().nullish(),
});

export interface RerankRequest extends RelayedJsonRequest {
  readonly query: string;
  readonly documents: readonly string[];
}

export function rerankRequest(body: z.infer<typeof rerankSchema>): RerankRequest {
  return { model: body.model, stream: false, body, query: body.query, documents: body.documents.map((document) => (typeof document === 'string' ? document : document.text)) };
}
