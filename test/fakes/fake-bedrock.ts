import { createHash, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { startFakeAnthropic } from './fake-anthropic.js';
import { json, sleep, startFakeServer, type Behaviour, type FakeUpstream, type RecordedRequest } from './fake-server.js';
import { answer, decodeBase64, isPlainObject, planToolCalls, promptTokens, signatureFor, sniffImage, type OfferedTool, type ToolMode } from './chat-model.js';
import { fakeVector } from './embedding-vectors.js';

/**
 * A stand-in for Amazon Bedrock's runtime and control plane as AWS documents them, on one server.
 *
 * Every request must carry a valid SigV4 signature, which the fake computes itself from the raw
 * request it received (method, path as sent, query, the headers named in SignedHeaders with the
 * values received, the body's bytes) and the secret it holds for the access key: a missing
 * Authorization is `MissingAuthenticationTokenException`, an unknown key or a missing, wrong or
 * unexpected `x-amz-security-token` is `UnrecognizedClientException` ("The security token included
 * in the request is invalid."), a scope of another region or service, an `x-amz-date` more than five
 * minutes from now ("Signature expired: …") or a signature that does not match is
 * `InvalidSignatureException`, all 403 with AWS's `{"message"}` body and `x-amzn-errortype` header.
 *
 * Runtime (model ids in the path, `:` raw or as `%3A`, as the SDKs send them):
 * - `POST /model/{id}/converse` and `/converse-stream` for the ids in `models`: the Converse API,
 *   checked as documented (roles alternating from user, non-blank text, image bytes of their format,
 *   tool results answering the previous turn's tool uses with `toolConfig` defined, a Claude
 *   conversation with thinking whose tool-use turn starts with reasoning carrying the signature this
 *   fake issued, `inferenceConfig` ranges, at most 4 cache points), answered by chat-model.ts's model;
 *   the stream in AWS's binary event-stream framing (messageStart, contentBlockStart/Delta/Stop,
 *   messageStop, metadata; each payload padded with `p` as Bedrock does). Cache points: a prefix seen
 *   before is read (`cacheReadInputTokens`), a new one written (`cacheWriteInputTokens`);
 *   `inputTokens` counts the rest.
 * - `POST /model/{id}/invoke` and `/invoke-with-response-stream` for Anthropic ids: the body must
 *   carry `anthropic_version: "bedrock-2023-05-31"`, no `model` and no `stream`, `anthropic_beta` an
 *   array of strings if present; it is then answered by fake-anthropic.ts's Messages API (its
 *   checks: thinking signatures, tool pairing, cache accounting), its stream re-framed as `chunk`
 *   events of `{"bytes": base64 of the event}`, message_stop carrying
 *   `amazon-bedrock-invocationMetrics`. Its 400s become ValidationException.
 * - `POST /model/{id}/invoke` for `amazon.titan-embed-text-v2:0` (`inputText`, `dimensions` 256 /
 *   512 / 1024, `normalize`; unknown fields refused) and `cohere.embed-*` (`texts` 1..96,
 *   `input_type` required, `embedding_types`, `truncate`).
 * - Unknown model: 404 ResourceNotFoundException; a bad body: 400 ValidationException.
 * - `behaviour.errorAfterChunks` sends an exception frame (`throttlingException`) after that many
 *   events; `bedrockFailure` makes a `behaviour.fail` of an AWS error as AWS sends it.
 *
 * Control plane: `GET /foundation-models` (filters byInferenceType, byOutputModality honoured) and
 * `GET /inference-profiles` (paged by `maxResults`, at most `profilePage`, and `nextToken`).
 */
export interface FakeBedrock extends FakeUpstream {
  readonly region: string;
  /** The fake Anthropic API that answers InvokeModel's Claude bodies. */
  readonly anthropic: FakeUpstream;
  /** The AWS error types refused so far, in order (signature checks included). */
  readonly refusals: string[];
  /** The keys it takes, by access key id: a test may revoke one or add another (temporary credentials rotated). */
  readonly keys: Map<string, AwsKey>;
}

export interface AwsKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Temporary credentials: requests must carry this token, signed. */
  readonly sessionToken?: string;
}

export interface FoundationModelSummary {
  readonly modelId: string;
  readonly modelName?: string;
  readonly providerName?: string;
  readonly outputModalities: string[];
  readonly inferenceTypesSupported: string[];
}

export interface InferenceProfileSummary {
  readonly inferenceProfileId: string;
  readonly inferenceProfileName?: string;
  readonly inferenceProfileArn?: string;
  readonly type?: 'SYSTEM_DEFINED' | 'APPLICATION';
  readonly status?: string;
}

export const CLAUDE_MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
export const NOVA_MODEL = 'amazon.nova-lite-v1:0';
export const TITAN_EMBED_MODEL = 'amazon.titan-embed-text-v2:0';
export const COHERE_EMBED_MODEL = 'cohere.embed-english-v3';

const ERROR_NAMESPACE = 'http://internal.amazon.com/coral/com.amazon.bedrock/';
const FIVE_MINUTES_MS = 5 * 60 * 1000;

/** A `behaviour.fail` answering as AWS does: the status, `{"message"}`, and the error type in `x-amzn-errortype`. */
export function bedrockFailure(type: string, status: number, message: string): NonNullable<Behaviour['fail']> {
  return { status, body: JSON.stringify({ message }), headers: { 'x-amzn-errortype': `${type}:${ERROR_NAMESPACE}`, 'x-amzn-requestid': 'fake-request-id' } };
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** One event-stream frame, as Bedrock's runtime sends it. */
export function eventFrame(eventType: string, payload: unknown): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
}

export function exceptionFrame(exceptionType: string, message: string): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: exceptionType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: fromUtf8(JSON.stringify({ message })),
  });
}

export class AwsError extends Error {
  constructor(
    readonly type: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startFakeBedrock(options: {
  region?: string;
  keys: readonly AwsKey[];
  /** Converse model ids (default: CLAUDE_MODEL and NOVA_MODEL); the Anthropic ones also take InvokeModel. */
  models?: readonly string[];
  foundationModels?: readonly FoundationModelSummary[];
  inferenceProfiles?: readonly InferenceProfileSummary[];
  profilePage?: number;
}): Promise<FakeBedrock> {
  const region = options.region ?? 'us-east-1';
  const keys = new Map(options.keys.map((key) => [key.accessKeyId, key]));
  const models = new Set(options.models ?? [CLAUDE_MODEL, NOVA_MODEL]);
  const anthropicKey = 'fake-bedrock-internal';
  const anthropic = await startFakeAnthropic({ apiKey: anthropicKey, models: [...models].filter(isAnthropic) });
  const refusals: string[] = [];
  const cached = new Set<string>();
  const server = await startFakeServer('', async (request, res, behaviour) => {
    try {
      await verifySignature(request, keys, region);
      const path = request.path.replace(/\?.*$/s, '');
      const query = new URLSearchParams(request.path.includes('?') ? request.path.slice(request.path.indexOf('?') + 1) : '');
      if (request.method === 'GET' && path === '/foundation-models') return foundationModels(res, query, options.foundationModels ?? []);
      if (request.method === 'GET' && path === '/inference-profiles') return inferenceProfiles(res, query, options.inferenceProfiles ?? [], options.profilePage ?? 1000);
      const match = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/.exec(path);
      if (request.method !== 'POST' || match === null) throw new AwsError('UnknownOperationException', 404, 'Unknown operation');
      const modelId = decodeURIComponent(match[1]!);
      const action = match[2]!;
      if (!isPlainObject(request.body)) throw new AwsError('ValidationException', 400, 'Malformed input request, please reformat your input and try again.');
      if (action === 'invoke' && modelId === TITAN_EMBED_MODEL) return titanEmbed(res, request.body);
      if (action === 'invoke' && /^cohere\.embed-/.test(modelId)) return cohereEmbed(res, request.body);
      if (!models.has(modelId)) throw new AwsError('ResourceNotFoundException', 404, 'Could not resolve the foundation model from the provided model identifier.');
      if (action === 'converse' || action === 'converse-stream') return await converse(res, request.body, modelId, action === 'converse-stream', behaviour, cached);
      if (!isAnthropic(modelId)) throw new AwsError('ValidationException', 400, 'The provided model identifier is invalid.');
      return await invokeClaude(res, request.body, modelId, action === 'invoke-with-response-stream', anthropic.url, anthropicKey, behaviour);
    } catch (error) {
      if (!(error instanceof AwsError)) throw error;
      refusals.push(error.type);
      const fail = bedrockFailure(error.type, error.status, error.message);
      res.writeHead(error.status, { 'content-type': 'application/json', ...fail.headers });
      res.end(fail.body as string);
    }
  });
  const closeServer = server.close;
  return Object.assign(server, {
    region,
    anthropic,
    refusals,
    keys,
    close: async () => {
      await Promise.all([closeServer(), anthropic.close()]);
    },
  }) as FakeBedrock;
}

function isAnthropic(modelId: string): boolean {
  return /(?:^|[./])anthropic\./.test(modelId);
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([^/,]+)\/([^/,]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** SigV4 checked from the raw request, as AWS checks it (see the header comment). */
export async function verifySignature(request: RecordedRequest, keys: ReadonlyMap<string, AwsKey>, region: string): Promise<void> {
  const authorization = request.headers.authorization;
  if (authorization === undefined) throw new AwsError('MissingAuthenticationTokenException', 403, 'Missing Authentication Token');
  const parts = AUTHORIZATION.exec(authorization);
  if (parts === null) throw new AwsError('IncompleteSignatureException', 403, `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.`);
  const [, accessKeyId, day, scopeRegion, service, signedList, signature] = parts as unknown as string[];
  const key = keys.get(accessKeyId!);
  if (key === undefined) throw new AwsError('UnrecognizedClientException', 403, 'The security token included in the request is invalid.');
  const signedHeaders = signedList!.split(';');
  const token = request.headers['x-amz-security-token'];
  if (key.sessionToken !== undefined ? token !== key.sessionToken || !signedHeaders.includes('x-amz-security-token') : token !== undefined) {
    throw new AwsError('UnrecognizedClientException', 403, 'The security token included in the request is invalid.');
  }
  if (scopeRegion !== region) throw new AwsError('InvalidSignatureException', 403, `Credential should be scoped to a valid region. `);
  if (service !== 'bedrock') throw new AwsError('InvalidSignatureException', 403, `Credential should be scoped to correct service: 'bedrock'. `);
  const amzDate = request.headers['x-amz-date'];
  const date = typeof amzDate === 'string' ? /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate) : null;
  if (date === null || !signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date')) {
    throw new AwsError('IncompleteSignatureException', 403, 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.');
  }
  const signedAt = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]), Number(date[4]), Number(date[5]), Number(date[6]));
  const now = Date.now();
  if (now - signedAt > FIVE_MINUTES_MS) {
    throw new AwsError('InvalidSignatureException', 403, `Signature expired: ${amzDate} is now earlier than ${awsDate(now - FIVE_MINUTES_MS)} (${awsDate(now)} - 5 min.)`);
  }
  if (signedAt - now > FIVE_MINUTES_MS) {
    throw new AwsError('InvalidSignatureException', 403, `Signature not yet current: ${amzDate} is still later than ${awsDate(now + FIVE_MINUTES_MS)} (${awsDate(now)} + 5 min.)`);
  }
  if (day !== amzDate!.slice(0, 8)) throw new AwsError('InvalidSignatureException', 403, 'Credential should be scoped to a valid date.');
  // The expected signature over exactly what was received: the signed headers' values as they came.
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) throw new AwsError('InvalidSignatureException', 403, `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.`);
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  // A payload hash the client sent is what the canonical request holds: it must be the body's.
  const claimed = request.headers['x-amz-content-sha256'];
  if (claimed !== undefined && claimed !== createHash('sha256').update(request.rawBody ?? Buffer.alloc(0)).digest('hex')) {
    throw new AwsError('InvalidSignatureException', 403, 'The provided x-amz-content-sha256 header does not match what was computed.');
  }
  const mark = request.path.indexOf('?');
  const query: Record<string, string | string[]> = {};
  if (mark >= 0) {
    for (const [name, value] of new URLSearchParams(request.path.slice(mark + 1))) {
      const present = query[name];
      query[name] = present === undefined ? value : Array.isArray(present) ? [...present, value] : [present, value];
    }
  }
  const signer = new SignatureV4({ service: 'bedrock', region, credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey }, sha256: Hash.bind(null, 'sha256'), uriEscapePath: true, applyChecksum: false });
  const expected = await signer.sign(
    { method: request.method, protocol: 'http:', hostname: String(request.headers.host), path: mark < 0 ? request.path : request.path.slice(0, mark), query, headers, body: request.rawBody ?? '' },
    { signingDate: new Date(signedAt), signableHeaders: new Set(signedHeaders) },
  );
  const computed = /Signature=([0-9a-f]{64})$/.exec(expected.headers.authorization ?? '')?.[1] ?? '';
  if (computed.length !== signature!.length || !timingSafeEqual(Buffer.from(computed), Buffer.from(signature!))) {
    throw new AwsError('InvalidSignatureException', 403, 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.');
  }
}

function awsDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

function foundationModels(res: ServerResponse, query: URLSearchParams, all: readonly FoundationModelSummary[]): void {
  const inference = query.get('byInferenceType');
  const output = query.get('byOutputModality');
  const modelSummaries = all
    .filter((m) => (inference === null || m.inferenceTypesSupported.includes(inference)) && (output === null || m.outputModalities.includes(output)))
    .map((m) => ({
      modelArn: `arn:aws:bedrock:us-east-1::foundation-model/${m.modelId}`,
      modelId: m.modelId,
      modelName: m.modelName ?? m.modelId,
      providerName: m.providerName ?? 'Amazon',
      inputModalities: ['TEXT'],
      outputModalities: m.outputModalities,
      responseStreamingSupported: m.outputModalities.includes('TEXT'),
      customizationsSupported: [],
      inferenceTypesSupported: m.inferenceTypesSupported,
      modelLifecycle: { status: 'ACTIVE' },
    }));
  json(res, 200, { modelSummaries });
}

function inferenceProfiles(res: ServerResponse, query: URLSearchParams, all: readonly InferenceProfileSummary[], pageMax: number): void {
  const asked = query.get('maxResults') === null ? 1000 : Number(query.get('maxResults'));
  if (!Number.isInteger(asked) || asked < 1 || asked > 1000) throw new AwsError('ValidationException', 400, '1 validation error detected: Value at \'maxResults\' failed to satisfy constraint: Member must have value between 1 and 1000');
  const token = query.get('nextToken');
  // AWS's tokens are opaque base64 with `+`, `/` and `=` in them: a client that does not encode them in the query sends another token.
  const offset = token === null ? 0 : /^o\+(\d+)\/x=$/.exec(token)?.[1];
  if (offset === undefined) throw new AwsError('ValidationException', 400, 'The provided nextToken is invalid.');
  const start = Number(offset);
  const size = Math.min(asked, pageMax);
  const page = all.slice(start, start + size).map((p) => ({
    inferenceProfileId: p.inferenceProfileId,
    inferenceProfileName: p.inferenceProfileName ?? p.inferenceProfileId,
    inferenceProfileArn: p.inferenceProfileArn ?? `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${p.inferenceProfileId}`,
    description: `Routes requests to ${p.inferenceProfileId}`,
    status: p.status ?? 'ACTIVE',
    type: p.type ?? 'SYSTEM_DEFINED',
    models: [],
  }));
  const next = start + size < all.length ? `o+${start + size}/x=` : undefined;
  json(res, 200, { inferenceProfileSummaries: page, ...(next === undefined ? {} : { nextToken: next }) });
}

function titanEmbed(res: ServerResponse, body: Record<string, any>): void {
  for (const field of Object.keys(body)) if (!['inputText', 'dimensions', 'normalize', 'embeddingTypes'].includes(field)) throw new AwsError('ValidationException', 400, `Malformed input request: extraneous key [${field}] is not permitted, please reformat your input and try again.`);
  if (typeof body.inputText !== 'string' || body.inputText === '') throw new AwsError('ValidationException', 400, 'Malformed input request: #: required key [inputText] not found, please reformat your input and try again.');
  if (body.dimensions !== undefined && ![256, 512, 1024].includes(body.dimensions)) throw new AwsError('ValidationException', 400, 'Malformed input request: #/dimensions: ' + String(body.dimensions) + ' is not a valid enum value, please reformat your input and try again.');
  const embedding = fakeVector(body.inputText, body.dimensions ?? 1024);
  json(res, 200, { embedding, embeddingsByType: { float: embedding }, inputTextTokenCount: promptTokens([body.inputText], 0) });
}

function cohereEmbed(res: ServerResponse, body: Record<string, any>): void {
  for (const field of Object.keys(body)) if (!['texts', 'images', 'input_type', 'truncate', 'embedding_types'].includes(field)) throw new AwsError('ValidationException', 400, `Malformed input request: extraneous key [${field}] is not permitted, please reformat your input and try again.`);
  if (!Array.isArray(body.texts) || body.texts.length === 0 || body.texts.length > 96 || body.texts.some((t: unknown) => typeof t !== 'string')) {
    throw new AwsError('ValidationException', 400, 'Malformed input request: #/texts: expected minimum item count: 1, maximum: 96, please reformat your input and try again.');
  }
  if (!['search_document', 'search_query', 'classification', 'clustering'].includes(body.input_type)) throw new AwsError('ValidationException', 400, 'Malformed input request: #: required key [input_type] not found, please reformat your input and try again.');
  const vectors = (body.texts as string[]).map((text) => fakeVector(text, 1024));
  const byType = Array.isArray(body.embedding_types);
  json(res, 200, { id: 'emb-fake', texts: body.texts, embeddings: byType ? { float: vectors } : vectors, response_type: byType ? 'embeddings_by_type' : 'embeddings_floats' });
}

/** The first `p` characters Bedrock pads each stream payload with, so that sizes give nothing away. */
function padded(payload: Record<string, unknown>): Record<string, unknown> {
  return { ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'.slice(0, 4 + (JSON.stringify(payload).length % 30)) };
}

/** The Converse API: the request checked, the answer whole or as event frames. */
async function converse(res: ServerResponse, body: Record<string, any>, modelId: string, stream: boolean, behaviour: Behaviour, cached: Set<string>): Promise<void> {
  const claude = isAnthropic(modelId);
  const allowed = ['messages', 'system', 'inferenceConfig', 'toolConfig', 'additionalModelRequestFields', 'guardrailConfig', 'promptVariables', 'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig'];
  for (const field of Object.keys(body)) if (!allowed.includes(field)) throw invalid(`Unknown field: ${field}`);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
  const config = body.inferenceConfig ?? {};
  if (!isPlainObject(config)) throw invalid('inferenceConfig must be an object');
  if (config.maxTokens !== undefined && (!Number.isInteger(config.maxTokens) || config.maxTokens < 1)) throw invalid("1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1");
  if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 1)) throw invalid("1 validation error detected: Value at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1");
  if (config.topP !== undefined && (typeof config.topP !== 'number' || config.topP < 0 || config.topP > 1)) throw invalid("1 validation error detected: Value at 'inferenceConfig.topP' failed to satisfy constraint: Member must have value less than or equal to 1");
  if (config.stopSequences !== undefined && (!Array.isArray(config.stopSequences) || config.stopSequences.length > 4)) throw invalid("1 validation error detected: Value at 'inferenceConfig.stopSequences' failed to satisfy constraint: Member must have length less than or equal to 4");
  const maxTokens: number = config.maxTokens ?? 4096;
  const extra = body.additionalModelRequestFields ?? {};
  const thinking = isPlainObject(extra.thinking) && extra.thinking.type === 'enabled';
  if (thinking) {
    if (!claude) throw invalid('The model returned the following errors: thinking is not supported by this model');
    if (!Number.isInteger(extra.thinking.budget_tokens) || extra.thinking.budget_tokens < 1024 || extra.thinking.budget_tokens >= maxTokens) {
      throw invalid('The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`, and budget_tokens must be at least 1024');
    }
    if (config.temperature !== undefined && config.temperature !== 1) throw invalid('The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.');
  }
  if (extra.top_k !== undefined && !claude) throw invalid('The model returned the following errors: Malformed input request: extraneous key [top_k] is not permitted');

  const { tools, mode } = readToolConfig(body.toolConfig);
  const texts: string[] = [];
  let images = 0;
  let documents = 0;
  let cachePoints = 0;
  /** Everything before each cache point, in order: the prefix a cache point marks. */
  const prefixes: { key: string; tokens: number }[] = [];
  const seen: unknown[] = [];
  const mark = () => {
    cachePoints++;
    prefixes.push({ key: JSON.stringify(seen), tokens: promptTokens(texts, images) });
  };
  for (const [i, block] of (Array.isArray(body.system) ? body.system : []).entries()) {
    if (isPlainObject(block) && block.cachePoint !== undefined) mark();
    else if (isPlainObject(block) && typeof block.text === 'string' && block.text.trim() !== '') {
      texts.push(block.text);
      seen.push(block);
    } else throw invalid(`The text field in the SystemContentBlock object at system.${i} is blank. Add text to the text field, and try again.`);
  }
  let previousToolUses = new Set<string>();
  let lastAssistant: any[] = [];
  for (const [m, message] of messages.entries()) {
    const expected = m % 2 === 0 ? 'user' : 'assistant';
    if (!isPlainObject(message) || message.role !== expected) {
      throw invalid(m === 0 ? 'A conversation must start with a user message. Try again with a conversation that starts with a user message.' : 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    }
    if (!Array.isArray(message.content) || message.content.length === 0) throw invalid(`The content field in the Message object at messages.${m} is empty. Add a ContentBlock object to the content field and try again.`);
    const toolUses = new Set<string>();
    for (const [c, block] of message.content.entries()) {
      const where = `messages.${m}.content.${c}`;
      if (!isPlainObject(block) || Object.keys(block).length !== 1) throw invalid(`The ContentBlock object at ${where} has more than one field, or none. Set exactly one field and try again.`);
      const [kind] = Object.keys(block);
      const value = block[kind!];
      switch (kind) {
        case 'text':
          if (typeof value !== 'string' || value.trim() === '') throw invalid(`The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`);
          texts.push(value);
          break;
        case 'image': {
          const bytes = decodeBase64(value?.source?.bytes);
          const format = bytes === null ? null : sniffImage(bytes);
          if (format === null || format !== `image/${value.format}`) throw invalid(`The image at ${where} could not be processed: its bytes are not a ${String(value?.format)} image.`);
          images++;
          break;
        }
        case 'toolUse':
          if (message.role !== 'assistant') throw invalid(`The toolUse at ${where} is in a user message.`);
          if (typeof value?.toolUseId !== 'string' || typeof value.name !== 'string' || !isPlainObject(value.input)) throw invalid(`The toolUse at ${where} needs toolUseId, name and an object input.`);
          toolUses.add(value.toolUseId);
          texts.push(JSON.stringify(value.input));
          break;
        case 'toolResult':
          if (message.role !== 'user' || !previousToolUses.has(value?.toolUseId)) {
            throw invalid(`The toolResult at ${where} does not answer a toolUse of the previous assistant turn. Expected toolResult blocks for ids: ${[...previousToolUses].join(', ')}`);
          }
          if (!Array.isArray(value.content)) throw invalid(`The toolResult at ${where} needs content.`);
          for (const inner of value.content) if (typeof inner?.text === 'string') texts.push(inner.text);
          break;
        case 'reasoningContent': {
          if (message.role !== 'assistant' || !claude) throw invalid(`The reasoningContent at ${where} is not accepted here.`);
          const reasoning = value?.reasoningText;
          if (value?.redactedContent === undefined && (typeof reasoning?.text !== 'string' || reasoning.signature !== signatureFor('bedrock-reasoning', reasoning.text))) {
            throw invalid('The model returned the following errors: messages.' + m + '.content.' + c + ': Invalid `signature` in `thinking` block');
          }
          break;
        }
        case 'cachePoint':
          if (value?.type !== 'default') throw invalid(`The cachePoint at ${where} must be of type default.`);
          mark();
          continue;
        case 'document':
          checkDocument(value, where, message.role, ++documents);
          break;
        default:
          throw invalid(`The ContentBlock object at ${where} has an unknown field ${String(kind)}.`);
      }
      seen.push(block);
    }
    if (message.role === 'user') {
      const answered = new Set(message.content.filter((b: any) => b.toolResult !== undefined).map((b: any) => b.toolResult.toolUseId));
      if ([...previousToolUses].some((id) => !answered.has(id))) throw invalid(`Expected toolResult blocks at messages.${m}.content for the following Ids: ${[...previousToolUses].filter((id) => !answered.has(id)).join(', ')}`);
    }
    if (message.role === 'assistant') lastAssistant = message.content;
    previousToolUses = toolUses;
  }
  if (messages.at(-1).role !== 'user') throw invalid('A conversation must end with a user message. Try again with a conversation that ends with a user message.');
  if (cachePoints > 4) throw invalid('The number of cache points exceeds the maximum of 4.');
  const lastTurn: any[] = messages.at(-1).content;
  const results = lastTurn.filter((b) => b.toolResult !== undefined);
  if ((results.length > 0 || messages.some((msg: any) => msg.content.some((b: any) => b.toolUse !== undefined))) && body.toolConfig === undefined) {
    throw invalid('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
  }
  if (thinking && results.length > 0 && lastAssistant[0]?.reasoningContent === undefined) {
    throw invalid('The model returned the following errors: messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.');
  }

  const prompt = lastTurn.filter((b) => typeof b.text === 'string').map((b) => b.text).join(' ');
  const toolResults = results.length > 0 ? results.map((b) => b.toolResult.content.filter((i: any) => typeof i.text === 'string').map((i: any) => i.text).join(' ')) : null;
  const calls = toolResults === null ? planToolCalls(prompt, tools, mode, true) : [];
  const generated = answer({ prompt, images: lastTurn.filter((b) => b.image !== undefined).length, toolResults, json: null, reasoning: thinking, maxTokens, stops: config.stopSequences ?? [], calls });
  const total = promptTokens(texts, images);
  // The longest marked prefix seen before is read; the longest new one is written, beyond what was read.
  let read = 0;
  let longestNew = 0;
  for (const { key, tokens } of prefixes) {
    if (cached.has(key)) read = Math.max(read, tokens);
    else longestNew = Math.max(longestNew, tokens);
    cached.add(key);
  }
  const write = Math.max(0, longestNew - read);
  const usage = { inputTokens: total - read - write, outputTokens: generated.outputTokens, totalTokens: total + generated.outputTokens, cacheReadInputTokens: read, cacheWriteInputTokens: write };
  const stopReason = generated.finish === 'tool_calls' ? 'tool_use' : generated.finish === 'length' ? 'max_tokens' : generated.stop !== null ? 'stop_sequence' : 'end_turn';
  const reasoningText = generated.reasoning.join('');
  const toolUseId = (j: number) => `tooluse_${modelId.length}${j}${String(Date.now() % 100000)}`;
  const ids = generated.calls.map((_, j) => toolUseId(j));
  if (!stream) {
    const content = [
      ...(thinking ? [{ reasoningContent: { reasoningText: { text: reasoningText, signature: signatureFor('bedrock-reasoning', reasoningText) } } }] : []),
      ...(generated.calls.length > 0 ? generated.calls.map((c, j) => ({ toolUse: { toolUseId: ids[j], name: c.name, input: c.args } })) : [{ text: generated.text.join('') }]),
    ];
    return json(res, 200, { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 12 } });
  }
  const events: [string, Record<string, unknown>][] = [['messageStart', { role: 'assistant' }]];
  let index = 0;
  if (thinking) {
    for (const token of generated.reasoning) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text: token } } }]);
    events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { signature: signatureFor('bedrock-reasoning', reasoningText) } } }], ['contentBlockStop', { contentBlockIndex: index }]);
    index++;
  }
  if (generated.calls.length > 0) {
    for (const [j, call] of generated.calls.entries()) {
      events.push(['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: ids[j], name: call.name } } }]);
      for (const fragment of call.fragments) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: fragment } } }]);
      events.push(['contentBlockStop', { contentBlockIndex: index }]);
      index++;
    }
  } else {
    for (const token of generated.text) events.push(['contentBlockDelta', { contentBlockIndex: index, delta: { text: token } }]);
    events.push(['contentBlockStop', { contentBlockIndex: index }]);
  }
  events.push(['messageStop', { stopReason }], ['metadata', { usage, metrics: { latencyMs: 12 } }]);
  await writeFrames(res, events.map(([type, payload]) => eventFrame(type, padded(payload))), behaviour);
}

const DOCUMENT_FORMATS = ['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md'];
/** DocumentBlock's name: alphanumerics, single whitespace, hyphens, parentheses, square brackets; 1 to 200 characters. */
const DOCUMENT_NAME = /^(?!.*\s\s)[A-Za-z0-9\s\-()[\]]{1,200}$/;
const MAX_DOCUMENTS = 5;

/** A DocumentBlock as AWS documents it: in a user message, a valid name, a known format, one source whose bytes are of that format. */
function checkDocument(value: any, where: string, role: string, count: number): void {
  if (role !== 'user') throw invalid(`The document at ${where} is in an assistant message. Documents can only be in user messages.`);
  if (count > MAX_DOCUMENTS) throw invalid(`A conversation can include up to ${MAX_DOCUMENTS} documents. Remove documents and try again.`);
  if (!isPlainObject(value) || Object.keys(value).some((key) => !['format', 'name', 'source', 'context', 'citations'].includes(key))) throw invalid(`The DocumentBlock at ${where} has an unknown field.`);
  if (typeof value.name !== 'string' || !DOCUMENT_NAME.test(value.name)) {
    throw invalid('The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can\'t contain more than one consecutive whitespace character.');
  }
  if (value.format !== undefined && !DOCUMENT_FORMATS.includes(value.format)) throw invalid(`1 validation error detected: Value '${String(value.format)}' at '${where}.document.format' failed to satisfy constraint: Member must satisfy enum value set: [${DOCUMENT_FORMATS.join(', ')}]`);
  if (!isPlainObject(value.source) || Object.keys(value.source).length !== 1) throw invalid(`The DocumentSource at ${where} must have exactly one member.`);
  if (value.source.bytes === undefined) throw invalid(`The DocumentSource at ${where} is not bytes, which this fake does not serve.`);
  const bytes = decodeBase64(value.source.bytes);
  if (bytes === null || bytes.length === 0) throw invalid(`The document at ${where} could not be processed: its bytes are not base64.`);
  if (value.format === 'pdf' && bytes.subarray(0, 5).toString('latin1') !== '%PDF-') throw invalid(`The document at ${where} could not be processed: it is not a valid pdf.`);
}

function readToolConfig(config: unknown): { tools: OfferedTool[]; mode: ToolMode } {
  if (config === undefined) return { tools: [], mode: { type: 'auto' } };
  if (!isPlainObject(config) || !Array.isArray(config.tools) || config.tools.length === 0) throw invalid("1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1");
  const tools: OfferedTool[] = [];
  for (const tool of config.tools) {
    const spec = tool?.toolSpec;
    if (typeof spec?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) throw invalid("Value at 'toolConfig.tools.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+");
    if (!isPlainObject(spec.inputSchema?.json)) throw invalid('The toolSpec inputSchema must hold a json schema.');
    if (tools.some((t) => t.name === spec.name)) throw invalid(`The tool name ${spec.name} is defined more than once.`);
    tools.push({ name: spec.name, schema: spec.inputSchema.json });
  }
  const choice = config.toolChoice;
  if (choice === undefined || isPlainObject(choice.auto)) return { tools, mode: { type: 'auto' } };
  if (isPlainObject(choice.any)) return { tools, mode: { type: 'required' } };
  if (isPlainObject(choice.tool) && tools.some((t) => t.name === choice.tool.name)) return { tools, mode: { type: 'named', name: choice.tool.name } };
  throw invalid('The toolChoice must be one of auto, any, or a tool of toolConfig.tools.');
}

function invalid(message: string): AwsError {
  return new AwsError('ValidationException', 400, message);
}

/** Writes frames, honouring the token delay and `errorAfterChunks` (a throttlingException frame instead of the rest). */
async function writeFrames(res: ServerResponse, frames: readonly Uint8Array[], behaviour: Behaviour): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'fake-request-id' });
  for (const [i, frame] of frames.entries()) {
    if (res.destroyed) return;
    if (behaviour.errorAfterChunks !== undefined && i === behaviour.errorAfterChunks) {
      res.end(exceptionFrame('throttlingException', 'Too many requests, please wait before trying again.'));
      return;
    }
    res.write(frame);
    if (behaviour.tokenDelayMs) await sleep(behaviour.tokenDelayMs);
  }
  res.end();
}

/** InvokeModel on Claude: Bedrock's envelope checked, the Messages body answered by the fake Anthropic API. */
async function invokeClaude(res: ServerResponse, body: Record<string, any>, modelId: string, stream: boolean, anthropicUrl: string, anthropicKey: string, behaviour: Behaviour): Promise<void> {
  if (body.anthropic_version !== 'bedrock-2023-05-31') throw invalid(`Malformed input request: #/anthropic_version: ${JSON.stringify(body.anthropic_version)} is not a valid enum value, please reformat your input and try again.`);
  for (const field of ['model', 'stream']) if (field in body) throw invalid(`Malformed input request: #: extraneous key [${field}] is not permitted, please reformat your input and try again.`);
  if (body.anthropic_beta !== undefined && (!Array.isArray(body.anthropic_beta) || body.anthropic_beta.some((b: unknown) => typeof b !== 'string'))) throw invalid('Malformed input request: #/anthropic_beta: expected type: JSONArray, please reformat your input and try again.');
  const { anthropic_version: _version, anthropic_beta: betas, ...rest } = body;
  const upstream = await fetch(`${anthropicUrl}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': anthropicKey, 'anthropic-version': '2023-06-01', ...(Array.isArray(betas) ? { 'anthropic-beta': betas.join(',') } : {}) },
    body: JSON.stringify({ ...rest, model: modelId, ...(stream ? { stream: true } : {}) }),
  });
  const text = await upstream.text();
  if (!upstream.ok) {
    const message = (() => {
      try {
        return JSON.parse(text).error.message as string;
      } catch {
        return text;
      }
    })();
    throw invalid(`The model returned the following errors: ${message}`);
  }
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '1' });
    res.end(text);
    return;
  }
  const frames: Uint8Array[] = [];
  for (const block of text.split('\n\n')) {
    const data = block.split('\n').find((line) => line.startsWith('data: '));
    if (data === undefined) continue;
    let event = JSON.parse(data.slice(6));
    if (event.type === 'message_stop') event = { ...event, 'amazon-bedrock-invocationMetrics': { inputTokenCount: 1, outputTokenCount: 1, invocationLatency: 12, firstByteLatency: 5 } };
    frames.push(eventFrame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64'), p: 'abcd' }));
  }
  await writeFrames(res, frames, behaviour);
}
