import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import { invalid, logitBiasSchema, withoutProtoKey } from '../validation.js';
import { notPlain, plainOrSchema, plainArray, plainBoolean, plainEither, plainLooseObject, plainNonEmptyString, plainNullish, plainNumber, plainString } from '../plain-body.js';
import type { CompletionRequest } from './completion.js';

/**
 * `POST /v1/completions` bodies, with the types and bounds of OpenAI's reference. Unknown fields
 * are kept (servers such as vLLM take many more) and relayed to upstreams of the same dialect.
 */
const tokenId = z.number().int().nonnegative();
const zNumber = (min: number, max: number) => z.number().min(min).max(max);

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
  temperature: zNumber(0, 2).nullish(),
  top_p: zNumber(0, 1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  best_of: z.number().int().min(1).max(20).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  logprobs: z.number().int().min(0).max(5).nullish(),
  echo: z.boolean().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  presence_penalty: zNumber(-2, 2).nullish(),
  frequency_penalty: zNumber(-2, 2).nullish(),
  logit_bias: logitBiasSchema.nullish(),
  user: z.string().nullish(),
  seed: z.number().int().nullish(),
});

/** The body, a top-level `__proto__` key refused rather than lost. */
const completionBodySchemaWithoutProtoKey = withoutProtoKey(completionBodySchema);

const number = (min: number, max: number) => plainNullish(plainNumber(min, max));
const integer = (min: number, max: number) => plainNullish(plainNumber(min, max, true));
const stringOrStrings = plainNullish(plainEither(plainString, plainArray(plainString)));

/**
 * The common bodies (a text prompt or a list of them, the usual sampling fields), checked by hand
 * as completionBodySchema would check them; anything else, and every error, is the schema's.
 * The keys in the schema's order: the output's order depends on it.
 */
export const plainCompletionBody = plainLooseObject(
  {
    model: plainNonEmptyString,
    prompt: plainEither(plainString, plainArray(plainString, 1)),
    suffix: plainNullish(plainString),
    max_tokens: integer(0, Number.MAX_SAFE_INTEGER),
    temperature: number(0, 2),
    top_p: number(0, 1),
    n: integer(1, 128),
    best_of: integer(1, 20),
    stream: plainNullish(plainBoolean),
    stream_options: plainNullish(plainLooseObject({ include_usage: plainNullish(plainBoolean) }, ['include_usage'])),
    logprobs: integer(0, 5),
    echo: plainNullish(plainBoolean),
    stop: stringOrStrings,
    presence_penalty: number(-2, 2),
    frequency_penalty: number(-2, 2),
    logit_bias: plainNullish(notPlain),
    user: plainNullish(plainString),
    seed: integer(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  },
  ['suffix', 'max_tokens', 'temperature', 'top_p', 'n', 'best_of', 'stream', 'stream_options', 'logprobs', 'echo', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'user', 'seed'],
);

/** Parses a JSON body already read; throws a GatewayError naming the parameter at fault. */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  }
  const data = plainOrSchema(plainCompletionBody, completionBodySchemaWithoutProtoKey, body);
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
