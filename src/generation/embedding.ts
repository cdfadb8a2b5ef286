import type { Usage } from './model.js';

/**
 * The embedding model the stages speak, as the generation model is for text: what the caller asked
 * to embed, and the vectors an upstream gave back. Dialects parse into it and write from it;
 * provider adapters translate it to their upstream's wire.
 */

/** The inputs of one call: texts, or token ids (OpenAI's wire takes both; an upstream that takes only text refuses ids). */
export type EmbeddingInput = { readonly kind: 'text'; readonly texts: readonly string[] } | { readonly kind: 'tokens'; readonly tokens: readonly (readonly number[])[] };

export interface EmbeddingRequest {
  readonly input: EmbeddingInput;
  /** Dimensions of each vector, for models that can shorten them (OpenAI's `dimensions`, Gemini's `outputDimensionality`). */
  readonly dimensions?: number | undefined;
  /**
   * What the vectors are for, and a document's title (Gemini's `taskType` and `title`), for upstreams
   * that take them (Gemini); others ignore them. A Google caller sets them; an OpenAI caller through
   * the unknown fields `task_type` (or `taskType`) and `title`, which also stay in `extensions`.
   */
  readonly taskType?: string | undefined;
  readonly title?: string | undefined;
  /**
   * Fields the caller sent that Sluice does not model (vLLM's `truncate_prompt_tokens`, Gemini's
   * `task_type` and `title`), passed on to upstreams of the same family as the caller's wire.
   */
  readonly extensions: Readonly<Record<string, unknown>>;
}

/** One vector as the upstream gave it: floats, or the base64 of little-endian float32s (decoded only when the caller asked for the other). */
export type Embedding = { readonly kind: 'float'; readonly values: readonly number[] } | { readonly kind: 'base64'; readonly data: string };

export interface EmbeddingResult {
  /** In input order. */
  readonly embeddings: readonly Embedding[];
  /** The upstream's count; null when it gave none (Gemini's embed does not). */
  readonly usage: Usage | null;
}

/** The number of inputs of a request. */
export function inputCount(input: EmbeddingInput): number {
  return input.kind === 'text' ? input.texts.length : input.tokens.length;
}

/** Every input, for Sluice's own count (token ids count as themselves). */
export function embeddingInputs(input: EmbeddingInput): readonly (string | readonly number[])[] {
  return input.kind === 'text' ? input.texts : input.tokens;
}

/** `request` in calls of at most `perCall` inputs each, in order. */
export function splitEmbeddingRequest(request: EmbeddingRequest, perCall: number): EmbeddingRequest[] {
  const count = inputCount(request.input);
  if (count <= perCall) return [request];
  const batches: EmbeddingRequest[] = [];
  for (let start = 0; start < count; start += perCall) {
    const input: EmbeddingInput =
      request.input.kind === 'text' ? { kind: 'text', texts: request.input.texts.slice(start, start + perCall) } : { kind: 'tokens', tokens: request.input.tokens.slice(start, start + perCall) };
    batches.push({ ...request, input });
  }
  return batches;
}

/** One vector as `encoding` asks, converted only when the upstream gave the other. */
export function encodedAs(embedding: Embedding, encoding: 'float' | 'base64'): readonly number[] | string {
  if (encoding === 'base64') return embedding.kind === 'base64' ? embedding.data : floatsToBase64(embedding.values);
  return embedding.kind === 'float' ? embedding.values : base64ToFloats(embedding.data);
}

/** Floats as the base64 of little-endian float32s, as OpenAI's `encoding_format: base64` answers. */
export function floatsToBase64(values: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(values.length * 4);
  for (let i = 0; i < values.length; i++) bytes.writeFloatLE(values[i]!, i * 4);
  return bytes.toString('base64');
}

/** The base64 of little-endian float32s as floats. */
export function base64ToFloats(data: string): number[] {
  const bytes = Buffer.from(data, 'base64');
  const values = new Array<number>(bytes.length >>> 2);
  for (let i = 0; i < values.length; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
}
