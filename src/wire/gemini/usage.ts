import type { Usage } from '../../generation/model.js';
import { isObject } from '../json.js';

/** Usage as Google's generateContent reports it (`usageMetadata`, running totals on every stream chunk). */

/** promptTokenCount includes cached content; thoughts are output beside the candidates. */
export function usageFromGemini(raw: unknown): Usage | null {
  if (!isObject(raw) || typeof raw.promptTokenCount !== 'number') return null;
  const reasoning = Number(raw.thoughtsTokenCount ?? 0);
  return {
    input: raw.promptTokenCount,
    output: Number(raw.candidatesTokenCount ?? 0) + reasoning,
    cachedInput: Number(raw.cachedContentTokenCount ?? 0),
    cacheWrite: 0,
    reasoning,
  };
}
