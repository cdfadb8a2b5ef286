import type { Usage } from '../../generation/model.js';
import { isObject } from '../json.js';

/** Usage as the Anthropic Messages API reports it: `message_start` holds the input and cache figures, `message_delta` cumulative ones. */

/**
 * Anthropic counts input without the cached part (`input_tokens`) and reports cache reads and writes
 * beside it; Sluice's input is all of them. `message_delta` carries cumulative figures.
 */
export function usageFromAnthropic(raw: Readonly<Record<string, unknown>>, output?: number): Usage {
  const cachedInput = Number(raw.cache_read_input_tokens ?? 0);
  const cacheWrite = Number(raw.cache_creation_input_tokens ?? 0);
  const details = isObject(raw.output_tokens_details) ? raw.output_tokens_details : {};
  return {
    input: Number(raw.input_tokens ?? 0) + cachedInput + cacheWrite,
    output: output ?? Number(raw.output_tokens ?? 0),
    cachedInput,
    cacheWrite,
    reasoning: Number(details.thinking_tokens ?? 0),
  };
}

/** message_delta's usage over what came before: its figures are cumulative, and a null one says nothing. */
export function withUsageDelta(usage: Readonly<Record<string, unknown>>, delta: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return { ...usage, ...Object.fromEntries(Object.entries(delta).filter(([, value]) => value !== null)) };
}
