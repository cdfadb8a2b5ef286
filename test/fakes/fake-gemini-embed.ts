import type { ServerResponse } from 'node:http';
import { json, type RecordedRequest } from './fake-server.js';
import { fakeVector, NATIVE_DIMENSIONS } from './embedding-vectors.js';

const EMBED_PATH = /^\/(v1beta|v1)\/models\/([^:/?]+):(embedContent|batchEmbedContents)$/;
const REQUEST_FIELDS = new Set(['model', 'content', 'taskType', 'title', 'outputDimensionality']);
const TASK_TYPES = new Set([
  'TASK_TYPE_UNSPECIFIED', 'RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CLASSIFICATION', 'CLUSTERING',
  'QUESTION_ANSWERING', 'FACT_VERIFICATION', 'CODE_RETRIEVAL_QUERY',
]);
/** batchEmbedContents' limit. */
const MAX_BATCH = 100;

class InvalidArgument extends Error {}

/**
 * Gemini's `:embedContent` and `:batchEmbedContents` as documented (the caller's key is checked by
 * fake-gemini.ts first): an EmbedContentRequest {model?, content: {parts: [{text}]}, taskType?,
 * title?, outputDimensionality?} (unknown names refused as Google refuses them); a batch of at most
 * 100 such requests, each naming `models/<the path's model>`; `outputDimensionality` truncates the
 * model's 8 values (more is refused). Vectors from embedding-vectors.ts (the parts' texts joined
 * by a line break); no usage, as Gemini reports none. Undefined when the path is not one of these.
 */
export function fakeGeminiEmbed(request: RecordedRequest, res: ServerResponse, models: ReadonlySet<string>): true | undefined {
  const match = EMBED_PATH.exec(request.path);
  if (request.method !== 'POST' || match === null) return undefined;
  const [, version, model, method] = match;
  if (!models.has(model!)) {
    error(res, 404, 'NOT_FOUND', `models/${model} is not found for API version ${version}, or is not supported for ${method}.`);
    return true;
  }
  const body = request.body;
  try {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidArgument('Invalid JSON payload received.');
    if (method === 'embedContent') {
      if (body.model !== undefined && body.model !== `models/${model}`) throw new InvalidArgument(`* EmbedContentRequest.model: model in the request (${body.model}) does not match the model of the path (models/${model})`);
      json(res, 200, { embedding: { values: embed(body, 'EmbedContentRequest') } });
      return true;
    }
    for (const name of Object.keys(body)) if (name !== 'requests') throw new InvalidArgument(`Invalid JSON payload received. Unknown name "${name}": Cannot find field.`);
    const requests = body.requests;
    if (!Array.isArray(requests) || requests.length === 0) throw new InvalidArgument('* BatchEmbedContentsRequest.requests: requests must not be empty');
    if (requests.length > MAX_BATCH) throw new InvalidArgument(`* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch`);
    const embeddings = requests.map((inner: any, i: number) => {
      const at = `BatchEmbedContentsRequest.requests[${i}]`;
      if (inner === null || typeof inner !== 'object') throw new InvalidArgument(`* ${at}: must be an EmbedContentRequest`);
      if (inner.model !== `models/${model}`) throw new InvalidArgument(`* ${at}.model: the model of each request must be the model of the batch (models/${model}), got ${JSON.stringify(inner.model)}`);
      return { values: embed(inner, at) };
    });
    json(res, 200, { embeddings });
  } catch (e) {
    if (!(e instanceof InvalidArgument)) throw e;
    error(res, 400, 'INVALID_ARGUMENT', e.message);
  }
  return true;
}

function embed(request: any, at: string): number[] {
  for (const name of Object.keys(request)) if (!REQUEST_FIELDS.has(name)) throw new InvalidArgument(`Invalid JSON payload received. Unknown name "${name}" at '${at}': Cannot find field.`);
  const parts = request.content?.parts;
  if (!Array.isArray(parts) || parts.length === 0) throw new InvalidArgument(`* ${at}.content: contents must not be empty`);
  const texts = parts.map((part: any, j: number) => {
    if (part === null || typeof part !== 'object' || typeof part.text !== 'string') throw new InvalidArgument(`* ${at}.content.parts[${j}]: only text parts can be embedded`);
    return part.text as string;
  });
  if (request.taskType !== undefined && !TASK_TYPES.has(request.taskType)) throw new InvalidArgument(`Invalid value at '${at}.task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), "${request.taskType}"`);
  if (request.title !== undefined && typeof request.title !== 'string') throw new InvalidArgument(`Invalid value at '${at}.title' (TYPE_STRING)`);
  let dimensions = NATIVE_DIMENSIONS;
  if (request.outputDimensionality !== undefined) {
    const asked = request.outputDimensionality;
    if (!Number.isInteger(asked) || asked < 1 || asked > NATIVE_DIMENSIONS) throw new InvalidArgument(`* ${at}.output_dimensionality: must be in 1..${NATIVE_DIMENSIONS}`);
    dimensions = asked;
  }
  return fakeVector(texts.join('\n'), dimensions);
}

function error(res: ServerResponse, code: number, status: string, message: string): void {
  json(res, code, { error: { code, message, status } });
}
