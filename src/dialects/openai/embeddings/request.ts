import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import type { EmbeddingInput, EmbeddingRequest } from '../../../generation/embedding.js';
import { MAX_EMBEDDING_INPUTS } from '../../../generation/embedding-plan.js';
import { invalid, validationError, withoutProtoKey } from '../validation.js';

/**
 * `POST /v1/embeddings` bodies, with the types and bounds of OpenAI's reference: `input` a string,
 * strings, token ids or token-id arrays, none empty and at most 2,048 of them; `encoding_format`
 * float (the default) or base64; `dimensions` a positive integer. Unknown fields are kept, for an
 * OpenAI-compatible upstream (vLLM's `truncate_prompt_tokens`, …); Gemini's `task_type`/`taskType`
 * and `title` are also read for a Gemini upstream.
 */
const tokenIds = z.array(z.number().int().min(0));

/** An embeddings body, as validated (also the OpenAPI document's request schema). */
export const embeddingsBodySchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
  encoding_format: z.enum(['float', 'base64']).nullish(),
  dimensions: z.number().int().min(1).nullish(),
  user: z.string().nullish(),
  task_type: z.string().min(1).nullish(),
  taskType: z.string().min(1).nullish(),
  title: z.string().nullish(),
});

const bodySchema = withoutProtoKey(embeddingsBodySchema);

/** The fields the embedding model holds; any other (`user` included) is an extension, passed on to OpenAI-compatible upstreams. */
const MODELLED = new Set(['model', 'input', 'encoding_format', 'dimensions']);

export interface EmbeddingsRequest {
  readonly model: string;
  readonly stream: false;
  readonly embedding: EmbeddingRequest;
  /** How the caller wants the vectors, whatever the upstream gives. */
  readonly encoding: 'float' | 'base64';
}

/** Parses a JSON body already read; throws a GatewayError naming the parameter at fault. */
export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  // Counted before the shapes are checked: a request over the limit is refused without reading every input.
  const raw = (body as { input?: unknown }).input;
  if (Array.isArray(raw) && raw.length > MAX_EMBEDDING_INPUTS) {
    throw invalid('input', `Invalid 'input': at most ${MAX_EMBEDDING_INPUTS} inputs can be embedded in one request, got ${raw.length}.`);
  }
  const parsed = bodySchema.safeParse(body, { reportInput: true });
  if (!parsed.success) throw inputNamed(validationError(parsed.error.issues[0]!));
  const data = parsed.data;
  const extensions: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(data)) if (!MODELLED.has(field)) extensions[field] = value;
  const taskType = data.task_type ?? data.taskType ?? undefined;
  const embedding: EmbeddingRequest = {
    input: inputOf(data.input),
    dimensions: data.dimensions ?? undefined,
    extensions,
    ...(taskType === undefined ? {} : { taskType }),
    ...(data.title == null ? {} : { title: data.title }),
  };
  return { model: data.model, stream: false, embedding, encoding: data.encoding_format ?? 'float' };
}

/** The inputs in the embedding model's terms; an empty input (or an empty one among them) is refused, as OpenAI refuses it. */
function inputOf(input: string | string[] | number[] | number[][]): EmbeddingInput {
  if (typeof input === 'string') {
    if (input === '') throw invalid('input', "Invalid 'input': the input to embed must not be an empty string.");
    return { kind: 'text', texts: [input] };
  }
  if (input.length === 0) throw invalid('input', "Invalid 'input': expected at least one input to embed, got an empty array.");
  if (typeof input[0] === 'number') return { kind: 'tokens', tokens: [input as number[]] };
  if (typeof input[0] === 'string') {
    const texts = input as string[];
    const empty = texts.indexOf('');
    if (empty !== -1) throw invalid('input', `Invalid 'input[${empty}]': an input to embed must not be an empty string.`);
    return { kind: 'text', texts };
  }
  const tokens = input as number[][];
  const empty = tokens.findIndex((ids) => ids.length === 0);
  if (empty !== -1) throw invalid('input', `Invalid 'input[${empty}]': an input to embed must hold at least one token id.`);
  return { kind: 'tokens', tokens };
}


/** A fault inside `input` (`input[3]`, a negative token id) names `input` as its parameter; the message says where. */
function inputNamed(error: GatewayError): GatewayError {
  if (error.param === null || !error.param.startsWith('input[')) return error;
  return new GatewayError(error.kind, error.message, { param: 'input', ...(error.code === undefined ? {} : { code: error.code }) });
}
