import { usageOf, type Usage } from '../../generation/model.js';
import { isObject } from '../json.js';

/** Usage as OpenAI's APIs report it: chat and legacy completions (`usage`), and the Responses API. */

/** OpenAI usage: prompt_tokens includes the cached ones, completion_tokens the reasoning ones. */
export function usageFromOpenAI(raw: unknown): Usage | null {
  if (!isObject(raw)) return null;
  const { prompt_tokens: input, completion_tokens: output } = raw;
  if (typeof input !== 'number' || typeof output !== 'number') return null;
  const prompt = isObject(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {};
  const completion = isObject(raw.completion_tokens_details) ? raw.completion_tokens_details : {};
  return { input, output, cachedInput: Number(prompt.cached_tokens ?? 0), cacheWrite: 0, reasoning: Number(completion.reasoning_tokens ?? 0) };
}

/** Sluice's usage from a Responses API upstream's. */
export function usageFromResponses(raw: unknown): Usage | null {
  if (!isObject(raw) || typeof raw.input_tokens !== 'number' || typeof raw.output_tokens !== 'number') return null;
  const input = isObject(raw.input_tokens_details) ? raw.input_tokens_details : {};
  const output = isObject(raw.output_tokens_details) ? raw.output_tokens_details : {};
  return { input: raw.input_tokens, output: raw.output_tokens, cachedInput: Number(input.cached_tokens ?? 0), cacheWrite: 0, reasoning: Number(output.reasoning_tokens ?? 0) };
}

/** An embeddings answer's usage (`prompt_tokens`, `total_tokens`: nothing generated). */
export function usageFromOpenAIEmbeddings(raw: unknown): Usage | null {
  if (!isObject(raw) || typeof raw.prompt_tokens !== 'number') return null;
  return usageOf(raw.prompt_tokens, 0);
}
