import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import type { EmbeddingRequest } from '../../../generation/embedding.js';
import { MAX_EMBEDDING_INPUTS } from '../../../generation/embedding-plan.js';
import type { WireRequest } from '../../../generation/operation.js';
import { GEMINI_TASK_TYPES } from '../../../wire/gemini/embedding.js';
import { invalid, issueError, modelMethodOf } from '../generate/request.js';

/**
 * Google's EmbedContentRequest and BatchEmbedContentsRequest, checked as Google checks them (unknown
 * names refused, proto names such as `task_type` read as their JSON names): a text content, an
 * optional `taskType`, `title` and `outputDimensionality`. A `model` in a body must name the
 * model of the path (`models/<id>`, as Google's examples and @google/genai send it). A batch takes
 * up to Sluice's own limit of 2,048 requests, split for upstreams that take fewer.
 */
const textPart = z.strictObject({ text: z.string() });
const content = z.strictObject({ role: z.string().optional(), parts: z.array(textPart).min(1) });

const embedFields = {
  content,
  taskType: z.enum(GEMINI_TASK_TYPES).optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().min(1).optional(),
};
/** embedContent's and batchEmbedContents' bodies, as validated (also the OpenAPI document's request schemas). */
export const embedBody = z.strictObject({ model: z.string().optional(), ...embedFields });
export const batchBody = z.strictObject({ requests: z.array(z.strictObject({ model: z.string(), ...embedFields })).min(1) });

type EmbedBody = z.infer<typeof embedBody>;

/** Proto field names Google reads as their JSON names. */
const JSON_NAMES: Readonly<Record<string, string>> = { task_type: 'taskType', output_dimensionality: 'outputDimensionality' };

function withJsonNames(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) out[Object.hasOwn(JSON_NAMES, name) ? JSON_NAMES[name]! : name] = value;
  return out;
}

export interface GeminiEmbedRequest {
  readonly model: string;
  readonly stream: false;
  /** Consecutive requests that ask the same (task, title, dimensions) together, in order. */
  readonly requests: readonly EmbeddingRequest[];
  /** All the texts, in order (Sluice's own count). */
  readonly texts: readonly string[];
  /** `:batchEmbedContents` (answered `{embeddings}`), else `:embedContent` (`{embedding}`). */
  readonly batch: boolean;
}

function objectBody(body: unknown, what: string): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_json', `Invalid JSON payload received. Expected ${what} object.`);
  return withJsonNames(body as Record<string, unknown>);
}

/** `POST …/models/{model}:embedContent`. */
export function parseEmbedContentRequest(body: unknown, wire: WireRequest): GeminiEmbedRequest {
  const { model } = modelMethodOf(wire.path);
  const parsed = embedBody.safeParse(objectBody(body, 'an EmbedContentRequest'), { reportInput: true });
  if (!parsed.success) throw issueError(parsed.error.issues[0]!);
  if (parsed.data.model !== undefined) sameModel(parsed.data.model, model, 'model');
  const text = textOf(parsed.data, '');
  return { model, stream: false, requests: [embeddingOf(parsed.data, [text])], texts: [text], batch: false };
}

/** `POST …/models/{model}:batchEmbedContents`. */
export function parseBatchEmbedContentsRequest(body: unknown, wire: WireRequest): GeminiEmbedRequest {
  const { model } = modelMethodOf(wire.path);
  const object = objectBody(body, 'a BatchEmbedContentsRequest');
  // Counted before the shapes are checked: a request over the limit is refused without reading every one.
  if (Array.isArray(object.requests) && object.requests.length > MAX_EMBEDDING_INPUTS) {
    throw invalid('requests', `Invalid value at 'requests': at most ${MAX_EMBEDDING_INPUTS} requests can be embedded in one batch, got ${object.requests.length}.`);
  }
  if (Array.isArray(object.requests)) object.requests = object.requests.map((r: unknown) => (r !== null && typeof r === 'object' && !Array.isArray(r) ? withJsonNames(r as Record<string, unknown>) : r));
  const parsed = batchBody.safeParse(object, { reportInput: true });
  if (!parsed.success) throw issueError(parsed.error.issues[0]!);
  const requests: EmbeddingRequest[] = [];
  const texts: string[] = [];
  let run: { first: EmbedBody; texts: string[] } | undefined;
  parsed.data.requests.forEach((request, i) => {
    sameModel(request.model, model, `requests[${i}].model`);
    const text = textOf(request, `requests[${i}].`);
    texts.push(text);
    if (run !== undefined && sameOptions(run.first, request)) run.texts.push(text);
    else {
      if (run !== undefined) requests.push(embeddingOf(run.first, run.texts));
      run = { first: request, texts: [text] };
    }
  });
  requests.push(embeddingOf(run!.first, run!.texts));
  return { model, stream: false, requests, texts, batch: true };
}

function sameModel(named: string, pathModel: string, param: string): void {
  const id = named.startsWith('models/') ? named.slice('models/'.length) : named;
  if (id !== pathModel) throw invalid(param, `Invalid value at '${param}': the model ${JSON.stringify(named)} is not the model of the path (models/${pathModel}).`);
}

function sameOptions(a: EmbedBody, b: EmbedBody): boolean {
  return a.taskType === b.taskType && a.title === b.title && a.outputDimensionality === b.outputDimensionality;
}

/** The content's text: its parts joined by a line break; an empty one is refused, as no upstream embeds nothing. */
function textOf(request: EmbedBody, at: string): string {
  const text = request.content.parts.length === 1 ? request.content.parts[0]!.text : request.content.parts.map((part) => part.text).join('\n');
  if (text === '') throw invalid(`${at}content.parts`, `Invalid value at '${at}content.parts': the content to embed holds no text.`);
  return text;
}

function embeddingOf(request: EmbedBody, texts: string[]): EmbeddingRequest {
  return {
    input: { kind: 'text', texts },
    dimensions: request.outputDimensionality,
    extensions: {},
    ...(request.taskType === undefined ? {} : { taskType: request.taskType }),
    ...(request.title === undefined ? {} : { title: request.title }),
  };
}
