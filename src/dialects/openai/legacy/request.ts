import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import { invalid, logitBiasSchema, validationError, withoutProtoKey } from '../validation.js';
import type { CompletionRequest } from './completion.js';

/**
 * `POST /v1/completions` bodies, with the types and bounds of OpenAI's reference. Unknown fields
 * are kept (servers such as vLLM take many more) and relayed to upstreams of the same dialect.
 */
const tokenId = z.number().int().nonnegative();
const number = (min: number, max: number) => z.number().min(min).max(max);

/** A legacy completions body, as validated (also the OpenAPI document's request schema). */
export const completionBodySchema = z.looseObject({
  model: z.string().min(1),
  prompt: z.union([
    z.string(),
    z.array(z.string()).min(1),
    z.array(tokenId).min(1),
    z.array(z.array(tokenId).min(1)).min(1),
  ]),
  suffix: z.string().nullish(),
  max_tokens: z.number().int().nonnegative().nullish(),
  temperature: number(0, 2).nullish(),
  top_p: number(0, 1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  best_of: z.number().int().min(1).max(20).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  logprobs: z.number().int().min(0).max(5).nullish(),
  echo: z.boolean().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  presence_penalty: number(-2, 2).nullish(),
  frequency_penalty: number(-2, 2).nullish(),
  logit_bias: logitBiasSchema.nullish(),
  user: z.string().nullish(),
  seed: z.number().int().nullish(),
});

/** The body, a top-level `__proto__` key refused rather than lost. */
const completionBodySchemaWithoutProtoKey = withoutProtoKey(completionBodySchema);

/** Parses a JSON body already read; throws a GatewayError naming the parameter at fault. */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  }
  const parsed = completionBodySchemaWithoutProtoKey.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error.issues[0]!);
  const data = parsed.data;
  const n = data.n ?? 1;
  const stream = data.stream ?? false;
  if (data.best_of != null) {
    if (data.best_of < n) {
      throw invalid('best_of', `Invalid 'best_of': it must be greater than or equal to 'n' (${n}), but got ${data.best_of}.`);
    }
    if (stream && data.best_of > 1) throw invalid('best_of', "Invalid 'best_of': results cannot be streamed when 'best_of' is greater than 1.");
  }
  if (data.stream_options != null && !stream) {
    throw invalid('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is true.");
  }
  return {
    model: data.model,
    prompt: data.prompt,
    suffix: data.suffix ?? null,
    maxTokens: data.max_tokens ?? null,
    temperature: data.temperature ?? undefined,
    topP: data.top_p ?? undefined,
    n,
    bestOf: data.best_of ?? undefined,
    stream,
    includeUsage: data.stream_options?.include_usage === true,
    logprobs: data.logprobs ?? null,
    echo: data.echo ?? false,
    stop: data.stop == null ? [] : typeof data.stop === 'string' ? [data.stop] : data.stop,
    presencePenalty: data.presence_penalty ?? undefined,
    frequencyPenalty: data.frequency_penalty ?? undefined,
    logitBias: data.logit_bias ?? undefined,
    seed: data.seed ?? undefined,
    user: data.user ?? undefined,
    body: data,
  };
}
