import { isObject } from '../json.js';
import type { RelayFormat } from '../relay-format.js';

/**
 * A rerank answer in Cohere's shape, which the servers that rerank share (vLLM, TEI, Infinity, Jina):
 * whole, never streamed, readable when its `results` are a list of `{index, relevance_score}`.
 */
export const RERANK: RelayFormat = {
  isContent: () => true,
  wholeProblem: (body) => {
    if (!Array.isArray(body.results)) return 'a rerank answer without results';
    for (const result of body.results as unknown[]) {
      if (!isObject(result) || typeof result.index !== 'number' || typeof result.relevance_score !== 'number') return 'a rerank result without its index and relevance_score';
    }
    return undefined;
  },
};
