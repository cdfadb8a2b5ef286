import { z } from 'zod';
import { chatBodySchema } from '../dialects/openai/chat/request.js';
import { completionBodySchema } from '../dialects/openai/legacy/request.js';
import { embeddingsBodySchema } from '../dialects/openai/embeddings/request.js';
import { envelope as responsesBodySchema } from '../dialects/openai/responses/request.js';
import { envelope as messagesBodySchema } from '../dialects/anthropic/messages/request.js';
import { countTokensBody as anthropicCountTokensBodySchema } from '../dialects/anthropic/messages/operation.js';
import { countBody as geminiCountBodySchema, generateBody as geminiGenerateBodySchema } from '../dialects/gemini/generate/request.js';
import { batchBody as geminiBatchEmbedBodySchema, embedBody as geminiEmbedBodySchema } from '../dialects/gemini/embed/request.js';
import { rerankSchema } from '../dialects/openai/rerank/request.js';
import { moderationSchema } from '../dialects/openai/moderations/request.js';
import { imagesSchema } from '../dialects/openai/images/request.js';
import { speechSchema } from '../dialects/openai/audio/speech.js';

/**
 * Sluice's own HTTP API as an OpenAPI 3.1 document (`GET /openapi.json`). Request bodies are the
 * dialects' own zod schemas, the ones that validate requests, converted by zod's `toJSONSchema`
 * (their input side: what a caller sends); what a refinement checks beyond a schema's shape (a
 * `__proto__` key refused, a Gemini `systemInstruction` given as a string) is not in it. Uploads
 * (multipart) are checked field by field in dialects/openai/uploads/form.ts: their forms are
 * described here. Answers are described from what the writers emit, loosely: every field Sluice
 * guarantees, and room for the upstream's own (answers relay them).
 */

const toSchema = (schema: z.ZodType): Record<string, unknown> => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

// What every dialect answers, as its writers emit it (dialects/*/dialect.ts renderError, the replies).
const openAIError = z.looseObject({ error: z.looseObject({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.union([z.string(), z.number()]).nullable() }) });
const anthropicError = z.looseObject({ type: z.literal('error'), error: z.looseObject({ type: z.string(), message: z.string() }), request_id: z.string().optional() });
const geminiError = z.looseObject({ error: z.looseObject({ code: z.number().int(), message: z.string(), status: z.string() }) });

const openAIUsage = z.looseObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int().optional(), total_tokens: z.number().int() });
const chatCompletion = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.number().int(), message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable() }), finish_reason: z.string().nullable() })),
  usage: openAIUsage.nullish(),
});
const textCompletion = z.looseObject({
  id: z.string(),
  object: z.literal('text_completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.number().int(), text: z.string(), finish_reason: z.string().nullable() })),
  usage: openAIUsage.nullish(),
});
const response = z.looseObject({ id: z.string(), object: z.literal('response'), created_at: z.number(), status: z.string(), model: z.string(), output: z.array(z.looseObject({ type: z.string() })) });
const deletedResponse = z.strictObject({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) });
const message = z.looseObject({
  id: z.string(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable(),
  usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
});
const anthropicTokenCount = z.looseObject({ input_tokens: z.number().int() });
const generateContentResponse = z.looseObject({ candidates: z.array(z.looseObject({ content: z.looseObject({ parts: z.array(z.looseObject({})).optional(), role: z.string().optional() }).optional(), finishReason: z.string().optional() })), usageMetadata: z.looseObject({}).optional(), modelVersion: z.string().optional() });
const geminiTokenCount = z.looseObject({ totalTokens: z.number().int() });
const embeddingList = z.looseObject({ object: z.literal('list'), model: z.string(), data: z.array(z.looseObject({ object: z.literal('embedding'), index: z.number().int(), embedding: z.union([z.array(z.number()), z.string()]) })), usage: openAIUsage });
const geminiEmbedding = z.looseObject({ values: z.array(z.number()) });
const rerankResult = z.looseObject({ results: z.array(z.looseObject({ index: z.number().int(), relevance_score: z.number() })) });
const moderationResult = z.looseObject({ id: z.string(), model: z.string(), results: z.array(z.looseObject({ flagged: z.boolean() })) });
const imagesResult = z.looseObject({ created: z.number().int(), data: z.array(z.looseObject({})) });
const transcript = z.looseObject({ text: z.string() });
const openAIModel = z.looseObject({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });
const anthropicModel = z.looseObject({ type: z.literal('model'), id: z.string(), display_name: z.string(), created_at: z.string() });
const geminiModel = z.looseObject({ name: z.string(), displayName: z.string().optional(), supportedGenerationMethods: z.array(z.string()).optional() });
const modelList = z.union([
  z.looseObject({ object: z.literal('list'), data: z.array(openAIModel) }),
  z.looseObject({ data: z.array(anthropicModel), has_more: z.boolean(), first_id: z.string().nullable(), last_id: z.string().nullable() }),
  z.looseObject({ models: z.array(geminiModel), nextPageToken: z.string().optional() }),
]);
const health = z.strictObject({ status: z.literal('ok') });
const readiness = z.union([z.strictObject({ status: z.literal('ready') }), z.strictObject({ status: z.literal('unready'), reasons: z.array(z.string()).min(1) })]);

const upload = (fields: Record<string, Record<string, unknown>>, required: readonly string[]) => ({
  required: true,
  content: { 'multipart/form-data': { schema: { type: 'object', required: ['model', ...required], properties: { model: { type: 'string' }, ...fields } } } },
});

/** What Google's API accepts beyond the JSON names, and Sluice with it (dialects/gemini/generate/json-names.ts). */
const PROTO_NAMES = 'Written with the JSON names; as Google does, Sluice also reads the proto names (`generation_config`) and a single object where a list is expected.';

type Dialect = 'openai' | 'anthropic' | 'gemini';

interface Operation {
  readonly summary: string;
  readonly dialect: Dialect;
  /** Undefined: no body. */
  readonly body?: Record<string, unknown>;
  /** The 200 answer: a component schema's name per content type (`null` for bytes). */
  readonly ok: Readonly<Record<string, string | null>>;
  /** False: unauthenticated. */
  readonly auth?: boolean;
  /** Path parameters. */
  readonly params?: readonly string[];
  readonly query?: readonly string[];
}

const jsonBody = (name: string) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const SSE = 'text/event-stream';

/** Every route Sluice mounts, as its metrics label names it (`METHOD /path`, `{…}` for a path parameter). */
const OPERATIONS: Readonly<Record<string, Operation>> = {
  'POST /v1/chat/completions': { summary: "OpenAI's Chat Completions", dialect: 'openai', body: jsonBody('ChatCompletionRequest'), ok: { 'application/json': 'ChatCompletion', [SSE]: null } },
  'POST /v1/completions': { summary: "OpenAI's legacy completions", dialect: 'openai', body: jsonBody('CompletionRequest'), ok: { 'application/json': 'TextCompletion', [SSE]: null } },
  'POST /v1/responses': { summary: "OpenAI's Responses API", dialect: 'openai', body: jsonBody('ResponsesRequest'), ok: { 'application/json': 'Response', [SSE]: null } },
  'GET /v1/responses/{id}': { summary: 'A stored response of the calling account', dialect: 'openai', params: ['id'], ok: { 'application/json': 'Response' } },
  'DELETE /v1/responses/{id}': { summary: 'Deletes a stored response', dialect: 'openai', params: ['id'], ok: { 'application/json': 'DeletedResponse' } },
  'POST /v1/messages': { summary: "Anthropic's Messages API", dialect: 'anthropic', body: jsonBody('MessagesRequest'), ok: { 'application/json': 'Message', [SSE]: null } },
  'POST /v1/messages/count_tokens': { summary: "Anthropic's token count", dialect: 'anthropic', body: jsonBody('AnthropicCountTokensRequest'), ok: { 'application/json': 'AnthropicTokenCount' } },
  'POST /v1/embeddings': { summary: "OpenAI's embeddings", dialect: 'openai', body: jsonBody('EmbeddingsRequest'), ok: { 'application/json': 'EmbeddingList' } },
  'POST /v1/rerank': { summary: 'Rerank (Cohere, Jina and vLLM wire)', dialect: 'openai', body: jsonBody('RerankRequest'), ok: { 'application/json': 'RerankResult' } },
  'POST /v2/rerank': { summary: "Rerank, under Cohere's v2 path", dialect: 'openai', body: jsonBody('RerankRequest'), ok: { 'application/json': 'RerankResult' } },
  'POST /v1/moderations': { summary: "OpenAI's moderations", dialect: 'openai', body: jsonBody('ModerationRequest'), ok: { 'application/json': 'ModerationResult' } },
  'POST /v1/images/generations': { summary: "OpenAI's image generation", dialect: 'openai', body: jsonBody('ImagesRequest'), ok: { 'application/json': 'ImagesResult', [SSE]: null } },
  'POST /v1/images/edits': { summary: "OpenAI's image edits (an upload)", dialect: 'openai', body: upload({ image: { type: 'string', contentMediaType: 'application/octet-stream' }, prompt: { type: 'string' } }, ['image', 'prompt']), ok: { 'application/json': 'ImagesResult', [SSE]: null } },
  'POST /v1/audio/transcriptions': { summary: "OpenAI's transcriptions (an upload)", dialect: 'openai', body: upload({ file: { type: 'string', contentMediaType: 'application/octet-stream' }, response_format: { enum: ['json', 'text', 'srt', 'vtt', 'verbose_json'] } }, ['file']), ok: { 'application/json': 'Transcript', 'text/plain': null, [SSE]: null } },
  'POST /v1/audio/translations': { summary: "OpenAI's translations into English (an upload)", dialect: 'openai', body: upload({ file: { type: 'string', contentMediaType: 'application/octet-stream' }, response_format: { enum: ['json', 'text', 'srt', 'vtt', 'verbose_json'] } }, ['file']), ok: { 'application/json': 'Transcript', 'text/plain': null } },
  'POST /v1/audio/speech': { summary: "OpenAI's speech", dialect: 'openai', body: jsonBody('SpeechRequest'), ok: { 'audio/*': null, [SSE]: null } },
  'GET /v1/models': { summary: "The models the calling key may use, in the caller's dialect (Anthropic's with `anthropic-version`, Gemini's with a Google key carrier)", dialect: 'openai', query: ['limit', 'after_id', 'before_id', 'pageSize', 'pageToken'], ok: { 'application/json': 'ModelList' } },
  'GET /v1/models/{model}': { summary: "One model, in the caller's dialect", dialect: 'openai', params: ['model'], ok: { 'application/json': 'Model' } },
  'GET /v1beta/models': { summary: "The models the calling key may use, in Gemini's format", dialect: 'gemini', query: ['pageSize', 'pageToken'], ok: { 'application/json': 'ModelList' } },
  'GET /v1beta/models/{model}': { summary: "One model, in Gemini's format", dialect: 'gemini', params: ['model'], ok: { 'application/json': 'Model' } },
  'GET /healthz': { summary: 'The gateway serves', dialect: 'openai', auth: false, ok: { 'application/json': 'Health' } },
  'GET /livez': { summary: 'Liveness: the process serves (also while starting and draining)', dialect: 'openai', auth: false, ok: { 'application/json': 'Health' } },
  'HEAD /livez': { summary: 'Liveness, without a body', dialect: 'openai', auth: false, ok: {} },
  'GET /readyz': { summary: 'Readiness: started, the store answering, not draining (503 with the reasons otherwise)', dialect: 'openai', auth: false, ok: { 'application/json': 'Readiness' } },
  'HEAD /readyz': { summary: 'Readiness, without a body', dialect: 'openai', auth: false, ok: {} },
  'GET /metrics': { summary: 'Prometheus metrics, with `--metrics-token` (as `Authorization: Bearer <token>`)', dialect: 'openai', ok: { 'text/plain': null } },
  'GET /openapi.json': { summary: 'This document', dialect: 'openai', auth: false, ok: { 'application/json': 'OpenApiDocument' } },
};

/** Where Google serves its methods on a model (routes/models.ts's MODEL_PATH_PREFIXES; not imported, as that module imports the server's). */
const GOOGLE_MODEL_PREFIXES = ['/v1/models/', '/v1beta/models/'];

/** Google's methods on a model, under both of its prefixes: `POST /v1beta/models/{model}:generateContent`. */
const MODEL_METHODS: Readonly<Record<string, Omit<Operation, 'dialect' | 'params'>>> = {
  generateContent: { summary: "Gemini's generateContent", body: jsonBody('GenerateContentRequest'), ok: { 'application/json': 'GenerateContentResponse' } },
  streamGenerateContent: { summary: "Gemini's streamed generateContent (`?alt=sse` for server-sent events, else a JSON array)", body: jsonBody('GenerateContentRequest'), query: ['alt'], ok: { 'application/json': 'GenerateContentResponseArray', [SSE]: null } },
  countTokens: { summary: "Gemini's token count", body: jsonBody('GeminiCountTokensRequest'), ok: { 'application/json': 'GeminiTokenCount' } },
  embedContent: { summary: "Gemini's embedContent", body: jsonBody('EmbedContentRequest'), ok: { 'application/json': 'EmbedContentResponse' } },
  batchEmbedContents: { summary: "Gemini's batchEmbedContents", body: jsonBody('BatchEmbedContentsRequest'), ok: { 'application/json': 'BatchEmbedContentsResponse' } },
};

function components(): Record<string, unknown> {
  const schemas: Record<string, z.ZodType> = {
    ChatCompletionRequest: chatBodySchema,
    CompletionRequest: completionBodySchema,
    ResponsesRequest: responsesBodySchema,
    MessagesRequest: messagesBodySchema,
    AnthropicCountTokensRequest: anthropicCountTokensBodySchema,
    GenerateContentRequest: geminiGenerateBodySchema.describe(PROTO_NAMES),
    GeminiCountTokensRequest: geminiCountBodySchema.describe(PROTO_NAMES),
    EmbedContentRequest: geminiEmbedBodySchema.describe(PROTO_NAMES),
    BatchEmbedContentsRequest: geminiBatchEmbedBodySchema.describe(PROTO_NAMES),
    EmbeddingsRequest: embeddingsBodySchema,
    RerankRequest: rerankSchema,
    ModerationRequest: moderationSchema,
    ImagesRequest: imagesSchema,
    SpeechRequest: speechSchema,
    ChatCompletion: chatCompletion,
    TextCompletion: textCompletion,
    Response: response,
    DeletedResponse: deletedResponse,
    Message: message,
    AnthropicTokenCount: anthropicTokenCount,
    GenerateContentResponse: generateContentResponse,
    GenerateContentResponseArray: z.array(generateContentResponse),
    GeminiTokenCount: geminiTokenCount,
    EmbedContentResponse: z.looseObject({ embedding: geminiEmbedding }),
    BatchEmbedContentsResponse: z.looseObject({ embeddings: z.array(geminiEmbedding) }),
    EmbeddingList: embeddingList,
    RerankResult: rerankResult,
    ModerationResult: moderationResult,
    ImagesResult: imagesResult,
    Transcript: transcript,
    ModelList: modelList,
    Model: z.union([openAIModel, anthropicModel, geminiModel]),
    Health: health,
    OpenApiDocument: z.looseObject({ openapi: z.string().regex(/^3\.1\.\d+$/), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.looseObject({})) }),
    Readiness: readiness,
    OpenAIError: openAIError,
    AnthropicError: anthropicError,
    GeminiError: geminiError,
  };
  return {
    schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, toSchema(schema)])),
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'A Sluice key as `Authorization: Bearer <key>` (OpenAI clients; Anthropic clients with an auth token).' },
      anthropicKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: "A Sluice key where Anthropic's clients send theirs." },
      googleKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: "A Sluice key where Google's clients send theirs." },
      googleKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: "A Sluice key as Google's `?key=` query parameter." },
    },
  };
}

const ERROR_SCHEMA: Record<Dialect, string> = { openai: 'OpenAIError', anthropic: 'AnthropicError', gemini: 'GeminiError' };

function operation(route: string, op: Operation): Record<string, unknown> {
  const error = { description: `An error, in ${op.dialect === 'openai' ? "OpenAI's" : op.dialect === 'anthropic' ? "Anthropic's" : "Google's"} shape (a caller of another dialect on a shared path gets its own)`, content: { 'application/json': { schema: ref(ERROR_SCHEMA[op.dialect]) } } };
  const content = Object.fromEntries(Object.entries(op.ok).map(([type, schema]) => [type, schema === null ? {} : { schema: ref(schema) }]));
  const responses: Record<string, unknown> = { '200': { description: 'Success', ...(Object.keys(content).length === 0 ? {} : { content }) } };
  if (route.endsWith(' /readyz')) responses['503'] = { description: 'Not ready: starting, draining, or the store not answering', ...(route.startsWith('GET') ? { content: { 'application/json': { schema: ref('Readiness') } } } : {}) };
  // Any route but the probes may also answer an error (a 503 while the gateway starts or drains, if nothing else).
  else if (!route.endsWith(' /livez')) responses['default'] = error;
  return {
    operationId: route.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, ''),
    summary: op.summary,
    tags: [op.auth === false || route === 'GET /metrics' ? 'platform' : op.dialect],
    ...(op.auth === false ? { security: [] } : {}),
    ...(op.params === undefined && op.query === undefined
      ? {}
      : { parameters: [...(op.params ?? []).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })), ...(op.query ?? []).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }))] }),
    ...(op.body === undefined ? {} : { requestBody: op.body }),
    responses,
  };
}

/** Every route the document describes, as `METHOD /path` (what the route table names them). */
export function documentedRoutes(): string[] {
  const modelRoutes = GOOGLE_MODEL_PREFIXES.flatMap((prefix) => Object.keys(MODEL_METHODS).map((method) => `POST ${prefix}{model}:${method}`));
  return [...Object.keys(OPERATIONS), ...modelRoutes];
}

/** Builds the document (each call anew: the route serves one built once). */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (route: string, op: Operation) => {
    const space = route.indexOf(' ');
    const method = route.slice(0, space).toLowerCase();
    (paths[route.slice(space + 1)] ??= {})[method] = operation(route, op);
  };
  for (const [route, op] of Object.entries(OPERATIONS)) add(route, op);
  for (const prefix of GOOGLE_MODEL_PREFIXES) {
    for (const [method, op] of Object.entries(MODEL_METHODS)) add(`POST ${prefix}{model}:${method}`, { ...op, dialect: 'gemini', params: ['model'] });
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version,
      description: "An LLM gateway's own HTTP API: the OpenAI, Anthropic and Gemini dialects it serves, and its platform routes. Request bodies are the schemas Sluice validates with; fields it does not know are passed on where the dialect allows.",
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }, { anthropicKey: [] }, { googleKey: [] }, { googleKeyQuery: [] }],
    tags: [
      { name: 'openai', description: "OpenAI's wire" },
      { name: 'anthropic', description: "Anthropic's wire" },
      { name: 'gemini', description: "Google's Gemini wire" },
      { name: 'platform', description: 'Health, metrics and this document' },
    ],
    paths,
    components: components(),
  };
}
