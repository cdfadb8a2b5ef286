import type { Usage } from '../completions/completion.js';
import { isObject } from './upstream-client.js';

/** Pieces of OpenAI's wire format shared by the completions relay and the chat translation. */
export function toUsage(raw: unknown): Usage | null {
  if (!isObject(raw)) return null;
  const { prompt_tokens: prompt, completion_tokens: completion } = raw;
  if (typeof prompt !== 'number' || typeof completion !== 'number') return null;
  return { promptTokens: prompt, completionTokens: completion };
}
