import type { ServerResponse } from 'node:http';
import { json } from './fake-server.js';
import type { Behaviour } from './fake-server.js';
import { countWords } from './generation.js';
import { fakeVector, NATIVE_DIMENSIONS, tokenText } from './embedding-vectors.js';

export interface FakeEmbeddingOptions {
  /** Upstream models that cannot shorten their vectors: `dimensions` is refused with vLLM's error, as a model without Matryoshka support. */
  readonly fixedDimensions?: readonly string[];
  /** The most inputs one call may hold (vLLM's and TEI's `max_client_batch_size`); more is refused, as TEI words it. */
  readonly maxInputs?: number;
  /** List `data` in reverse order (each item keeping its `index`), as a server is free to. */
  readonly reversed?: boolean;
}

/** OpenAI's limit on the inputs of one request. */
const OPENAI_MAX_INPUTS = 2048;
const INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";

/**
 * `POST /v1/embeddings` as OpenAI documents it and vLLM serves it: `input` a non-empty string,
 * strings, token ids or token-id arrays (none empty, at most 2,048), `encoding_format` float or
 * base64 (default float), `dimensions` a positive integer no larger than the model's 8 (refused for
 * a model in `fixedDimensions`), `user` a string; other fields ignored, as vLLM does. Vectors come
 * from embedding-vectors.ts (a token-id input is embedded as its tokenText); usage counts the
 * words of each text (a token-id input its length).
 */
export function fakeEmbeddings(res: ServerResponse, body: any, behaviour: Behaviour, options: FakeEmbeddingOptions): void {
  const texts = readInput(body.input);
  if (typeof texts === 'string') return embeddingError(res, 400, texts, 'input');
  if (options.maxInputs !== undefined && texts.length > options.maxInputs) {
    return embeddingError(res, 400, `batch size ${texts.length} > maximum allowed batch size ${options.maxInputs}`, 'input');
  }
  const encoding = body.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') return embeddingError(res, 400, `Invalid value: '${encoding}'. Supported values are: 'float' and 'base64'.`, 'encoding_format');
  let dimensions = NATIVE_DIMENSIONS;
  if (body.dimensions != null) {
    if (options.fixedDimensions?.includes(body.model)) {
      return embeddingError(res, 400, `Model "${body.model}" does not support matryoshka representation, changing output dimensions will lead to poor results.`, null);
    }
    if (!Number.isInteger(body.dimensions) || body.dimensions < 1 || body.dimensions > NATIVE_DIMENSIONS) {
      return embeddingError(res, 400, `dimensions must be an integer in 1..${NATIVE_DIMENSIONS}, got ${JSON.stringify(body.dimensions)}.`, 'dimensions');
    }
    dimensions = body.dimensions;
  }
  if (body.user != null && typeof body.user !== 'string') return embeddingError(res, 400, "Invalid type for 'user': expected a string.", 'user');
  const data = texts.map((item, index) => {
    const vector = fakeVector(item.text, dimensions);
    return { object: 'embedding', index, embedding: encoding === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector };
  });
  if (options.reversed) data.reverse();
  const promptTokens = texts.reduce((sum, item) => sum + item.tokens, 0);
  json(res, 200, {
    id: `embd-${Date.now()}`,
    object: 'list',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    data,
    ...(behaviour.omitUsage ? {} : { usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0, prompt_tokens_details: null } }),
  });
}

/** Each input's text (a token-id input as its tokenText) and token count; or what is wrong, in OpenAI's words. */
function readInput(input: unknown): { text: string; tokens: number }[] | string {
  const isIds = (value: unknown): value is number[] => Array.isArray(value) && value.length > 0 && value.every((id) => Number.isInteger(id) && id >= 0);
  if (typeof input === 'string') return input === '' ? INVALID_INPUT : [{ text: input, tokens: countWords(input) }];
  if (!Array.isArray(input) || input.length === 0 || input.length > OPENAI_MAX_INPUTS) return INVALID_INPUT;
  if (typeof input[0] === 'number') return isIds(input) ? [{ text: tokenText(input), tokens: input.length }] : INVALID_INPUT;
  if (input.every((item) => typeof item === 'string' && item !== '')) return (input as string[]).map((text) => ({ text, tokens: countWords(text) }));
  if (input.every(isIds)) return (input as number[][]).map((ids) => ({ text: tokenText(ids), tokens: ids.length }));
  return INVALID_INPUT;
}

function embeddingError(res: ServerResponse, status: number, message: string, param: string | null): void {
  json(res, status, { error: { message, type: 'BadRequestError', param, code: status } });
}
