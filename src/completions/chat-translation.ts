import type { CatalogueModel } from '../catalogue/catalogue.js';
import { GatewayError } from '../errors.js';
import type { CompletionRequest } from './completion.js';

/** What a chat-style upstream can do, so a legacy request it cannot honour is refused up front. */
export interface ChatCapabilities {
  /** For messages: "the Anthropic Messages API". */
  readonly upstream: string;
  readonly maxTemperature: number;
  readonly maxStopSequences: number | null;
  readonly logprobs: boolean;
  readonly logitBias: boolean;
  readonly penalties: boolean;
  /** Choices one upstream call can return (its `n`); more means several calls. */
  readonly maxChoicesPerCall: number;
  /** Fields outside OpenAI's legacy parameters: forwarded as they are, or each one refused. */
  readonly forwardsUnknownFields: boolean;
  /** Fields outside OpenAI's parameters that the adapter maps itself (`top_k`). */
  readonly mappedFields: readonly string[];
}

/** OpenAI's legacy completion parameters; anything else in a body is an extension. */
export const LEGACY_PARAMETERS: ReadonlySet<string> = new Set([
  'model', 'prompt', 'suffix', 'max_tokens', 'temperature', 'top_p', 'n', 'best_of', 'stream', 'stream_options',
  'logprobs', 'echo', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'user', 'seed',
]);

/** Legacy `max_tokens` default, which chat APIs do not share (Anthropic requires a value). */
export const DEFAULT_MAX_TOKENS = 16;

/** Upstream calls one request may fan out to (prompts × n, over the upstream's own `n`). */
export const MAX_TURNS_PER_REQUEST = 128;


/**
 * Refuses, with a 400 naming the parameter and the model, whatever the upstream cannot honour:
 * nothing is silently dropped. `seed` is a best-effort hint in OpenAI's own API, so an upstream
 * without one ignores it rather than failing every evaluation harness that sends it.
 */
export function checkTranslatable(request: CompletionRequest, model: CatalogueModel, caps: ChatCapabilities): void {
  const unsupported = (param: string, what: string) =>
    new GatewayError('unsupported_parameter', `Model \`${model.id}\` cannot take ${what}: it is served through ${caps.upstream}.`, {
      param,
      code: 'unsupported_parameter',
    });
  if (typeof request.prompt !== 'string' && request.prompt.some((p) => typeof p !== 'string')) {
    throw unsupported('prompt', 'token-id prompts (send text)');
  }
  const prompts = typeof request.prompt === 'string' ? 1 : request.prompt.length;
  const turns = prompts * Math.ceil(request.n / caps.maxChoicesPerCall);
  if (turns > MAX_TURNS_PER_REQUEST) {
    throw unsupported('n', `${prompts} prompt(s) × n = ${request.n}, which would take ${turns} upstream calls (at most ${MAX_TURNS_PER_REQUEST})`);
  }
  if (request.bestOf !== undefined && request.bestOf > 1) throw unsupported('best_of', "'best_of' greater than 1");
  if (request.suffix !== null && request.suffix !== '') throw unsupported('suffix', "'suffix' (no fill-in-the-middle)");
  if (request.maxTokens === 0) throw unsupported('max_tokens', "'max_tokens' of 0");
  if (request.temperature !== undefined && request.temperature > caps.maxTemperature) {
    throw unsupported('temperature', `'temperature' above ${caps.maxTemperature}`);
  }
  if (request.logprobs !== null) {
    if (!caps.logprobs) throw unsupported('logprobs', "'logprobs' (the upstream returns no token log-probabilities)");
    if (request.echo) throw unsupported('echo', "'echo' together with 'logprobs' (the upstream cannot score prompt tokens)");
  }
  if (request.logitBias !== undefined && Object.keys(request.logitBias).length > 0 && !caps.logitBias) {
    throw unsupported('logit_bias', "'logit_bias'");
  }
  if (!caps.penalties) {
    if (request.presencePenalty) throw unsupported('presence_penalty', "a non-zero 'presence_penalty'");
    if (request.frequencyPenalty) throw unsupported('frequency_penalty', "a non-zero 'frequency_penalty'");
  }
  if (caps.maxStopSequences !== null && request.stop.length > caps.maxStopSequences) {
    throw unsupported('stop', `more than ${caps.maxStopSequences} stop sequences`);
  }
  if (!caps.forwardsUnknownFields) {
    for (const field of Object.keys(request.body)) {
      if (!LEGACY_PARAMETERS.has(field) && !caps.mappedFields.includes(field)) throw unsupported(field, `the parameter '${field}'`);
    }
  }
}

/** One upstream call: one prompt, asking for `choices` choices whose first has index `firstChoice`. */
export interface ChatTurn {
  readonly prompt: string;
  readonly firstChoice: number;
  readonly choices: number;
}

/** Every prompt times `n`, prompt-major, in as few calls as the upstream's own `n` allows. */
export function planTurns(request: CompletionRequest, maxChoicesPerCall: number): ChatTurn[] {
  const prompts = typeof request.prompt === 'string' ? [request.prompt] : (request.prompt as string[]);
  const turns: ChatTurn[] = [];
  prompts.forEach((prompt, p) => {
    for (let k = 0; k < request.n; k += maxChoicesPerCall) {
      turns.push({ prompt, firstChoice: p * request.n + k, choices: Math.min(maxChoicesPerCall, request.n - k) });
    }
  });
  return turns;
}
