import type { Usage } from '../completions/completion.js';
import { GatewayError } from '../errors.js';
import { isObject, readErrorBody } from './upstream-client.js';

/** Pieces of OpenAI's wire format shared by the completions relay and the chat translation. */
export function toUsage(raw: unknown): Usage | null {
  if (!isObject(raw)) return null;
  const { prompt_tokens: prompt, completion_tokens: completion } = raw;
  if (typeof prompt !== 'number' || typeof completion !== 'number') return null;
  return { promptTokens: prompt, completionTokens: completion };
}

/** `data: {"error":{…}}` inside a stream, as OpenAI-compatible servers report a failure mid-way. */
export function midStreamError(providerId: string, data: string): GatewayError {
  const { message } = readErrorBody(data);
  return new GatewayError('upstream_error', `The upstream provider '${providerId}' failed mid-stream${message ? `: ${message}` : '.'}`);
}
