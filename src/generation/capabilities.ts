import type { CatalogueModel } from '../catalogue/catalogue.js';
import { GatewayError } from '../core/errors.js';
import type { GenerationRequest } from './model.js';
import type { Capabilities } from './provider.js';

/** Upstream calls one request may fan out to (choices over the upstream's own `n`). */
export const MAX_CALLS_PER_REQUEST = 128;

/** A 400 that names the parameter, the model and the upstream that cannot take it. */
export function unsupported(model: CatalogueModel, caps: Capabilities, param: string, what: string): GatewayError {
  return new GatewayError('unsupported_parameter', `Model \`${model.id}\` cannot take ${what}: it is served through ${caps.upstream}.`, {
    param,
    code: 'unsupported_parameter',
  });
}

/**
 * Refuses, with a 400 naming the parameter and the model, whatever the upstream cannot honour:
 * nothing is silently dropped. `seed` is a best-effort hint in OpenAI's own API, so an upstream
 * without one ignores it rather than failing every evaluation harness that sends it. `paramOf`
 * gives the caller dialect's own name for a field.
 */
export function checkSupported(request: GenerationRequest, model: CatalogueModel, caps: Capabilities, paramOf: (field: ModelledField) => string = (f) => f): void {
  const refuse = (field: ModelledField, what: string) => unsupported(model, caps, paramOf(field), what);
  const calls = Math.ceil(request.n / caps.maxChoicesPerCall);
  if (calls > MAX_CALLS_PER_REQUEST) throw refuse('n', `n = ${request.n}, which would take ${calls} upstream calls (at most ${MAX_CALLS_PER_REQUEST})`);
  if (request.temperature !== undefined && request.temperature > caps.maxTemperature) {
    throw refuse('temperature', `'${paramOf('temperature')}' above ${caps.maxTemperature}`);
  }
  if (request.logprobs !== undefined && !caps.logprobs) throw refuse('logprobs', `'${paramOf('logprobs')}' (the upstream returns no token log-probabilities)`);
  if (request.logitBias !== undefined && Object.keys(request.logitBias).length > 0 && !caps.logitBias) throw refuse('logit_bias', `'${paramOf('logit_bias')}'`);
  if (!caps.penalties) {
    if (request.presencePenalty) throw refuse('presence_penalty', `a non-zero '${paramOf('presence_penalty')}'`);
    if (request.frequencyPenalty) throw refuse('frequency_penalty', `a non-zero '${paramOf('frequency_penalty')}'`);
  }
  if (request.topK !== undefined && !caps.topK) throw refuse('top_k', `'${paramOf('top_k')}'`);
  if (request.responseFormat?.type === 'json_object' && !caps.jsonWithoutSchema) {
    throw refuse('response_format', 'JSON output without a schema (send a JSON Schema instead)');
  }
  if (caps.maxStopSequences !== null && request.stop.length > caps.maxStopSequences) {
    throw refuse('stop', `more than ${caps.maxStopSequences} stop sequences in '${paramOf('stop')}'`);
  }
  if (!caps.forwardsExtensions) {
    for (const field of Object.keys(request.extensions)) throw unsupported(model, caps, field, `the parameter '${field}'`);
  }
}

/** The request fields whose names differ between caller dialects. */
export type ModelledField = 'n' | 'temperature' | 'logprobs' | 'logit_bias' | 'presence_penalty' | 'frequency_penalty' | 'top_k' | 'stop' | 'response_format';
