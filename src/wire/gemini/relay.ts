import { isObject } from '../json.js';
import type { RelayFormat } from '../relay-format.js';

/** A chunk with a candidate that has parts or a finish reason. */
export const GEMINI_GENERATE_CONTENT: RelayFormat = {
  isContent: (event) =>
    Array.isArray(event.candidates) &&
    event.candidates.some((candidate: unknown) => {
      if (!isObject(candidate)) return false;
      if (candidate.finishReason !== undefined) return true;
      const parts = isObject(candidate.content) ? candidate.content.parts : undefined;
      return Array.isArray(parts) && parts.length > 0;
    }),
  wholeProblem: (body) => (Array.isArray(body.candidates) || isObject(body.promptFeedback) ? undefined : 'an answer without candidates'),
};

export const GEMINI_COUNT_TOKENS: RelayFormat = {
  isContent: () => true,
  wholeProblem: (body) => (typeof body.totalTokens === 'number' ? undefined : 'a token count without totalTokens'),
};
