import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { ProviderConfig } from '../config/config-file.js';
import type { GatewayError } from '../core/errors.js';
import { newGenerationId } from '../generation/fan-out.js';
import type { ContentPart, DocumentPart, Finish, GeneratedChoice, GenerationRequest, GenerationResult, ImagePart, Message, StreamPart, TokenLogprob, Usage } from '../generation/model.js';
import type { Capabilities, EmbedCall, GenerationCall, RelayCall, RelayResponse, WireOperation } from '../generation/provider.js';
import { TranslatingProvider, outputLimit } from './translating-provider.js';
import { readErrorBody, UpstreamClient, type Json, type ResponseBody } from './upstream-client.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { listAllPages, listField, optionalCount, optionalString, upstreamModel } from './model-listing.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import { toolArguments, isObject } from '../wire/json.js';
import { usageFromGemini } from '../wire/gemini/usage.js';
import { embeddingsFromGemini, GEMINI_MAX_BATCH_REQUESTS } from '../wire/gemini/embedding.js';
import type { EmbeddingResult } from '../generation/embedding.js';

const CAPABILITIES: Capabilities = {
  upstream: 'the Gemini generateContent API',
  maxChoicesPerCall: 8, // candidateCount
  maxTemperature: 2,
  maxStopSequences: 5,
  logprobs: true,
  logitBias: false,
  penalties: true,
  topK: true,
  jsonWithoutSchema: true,
  forwardsExtensions: false,
  // batchEmbedContents takes at most 100 requests.
  maxEmbeddingInputs: GEMINI_MAX_BATCH_REQUESTS,
  embedsTokenIds: false,
};

/** thinkingBudget for OpenAI's effort levels. */
const THINKING_BUDGET = { minimal: 512, low: 1024, medium: 8192, high: 24576 } as const;

/** Content Gemini flagged and withheld; LANGUAGE too ("flagged for using an unsupported language"). */
const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'LANGUAGE', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION']);

function finishOf(reason: unknown, calledTools: boolean): Finish | undefined {
  if (typeof reason !== 'string' || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return undefined;
  // Gemini says STOP after function calls too.
  if (reason === 'STOP') return { reason: calledTools ? 'tool_calls' : 'stop', raw: reason };
  if (reason === 'MAX_TOKENS') return { reason: 'length', raw: reason };
  if (FILTERED.has(reason)) return { reason: 'content_filter', raw: reason };
  // The rest is Gemini giving up on the candidate: a malformed or unexpected call, OTHER ("unknown
  // reason"), a reason newer than this list. None of them is a clean stop.
  return { reason: 'error', raw: reason };
}

const BLOCKED: Finish = { reason: 'content_filter', raw: 'PROMPT_BLOCKED' };

function tokenLogprobs(result: unknown): TokenLogprob[] {
  if (!isObject(result) || !Array.isArray(result.chosenCandidates)) return [];
  const top = Array.isArray(result.topCandidates) ? (result.topCandidates as unknown[]) : [];
  return (result.chosenCandidates as Json[]).map((chosen, i) => {
    const step = top[i];
    const candidates = isObject(step) && Array.isArray(step.candidates) ? (step.candidates as Json[]) : [];
    return {
      token: String(chosen.token ?? ''),
      logprob: Number(chosen.logProbability),
      top: candidates.map((c) => ({ token: String(c.token ?? ''), logprob: Number(c.logProbability) })),
    };
  });
}

const MIME_BY_EXTENSION: Readonly<Record<string, string>> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', heic: 'image/heic' };

function imagePart(part: ImagePart): Json {
  if (part.source.kind === 'inline') return { inlineData: { mimeType: part.source.mediaType, data: part.source.data } };
  const extension = /\.([a-z0-9]+)(?:$|[?#])/i.exec(part.source.url)?.[1]?.toLowerCase() ?? '';
  return { fileData: { fileUri: part.source.url, mimeType: Object.hasOwn(MIME_BY_EXTENSION, extension) ? MIME_BY_EXTENSION[extension] : 'image/jpeg' } };
}

/** A document as Gemini's inline blob, or by URL as file data (as images by URL go). */
function documentPart(part: DocumentPart): Json {
  const { source } = part;
  return source.kind === 'inline' ? { inlineData: { mimeType: source.mediaType, data: source.data } } : { fileData: { fileUri: source.url, mimeType: 'application/pdf' } };
}

/**
 * Gemini's contents: `user` and `model` turns, consecutive ones of a role merged; a reasoning
 * signature rides on the part after it, as Gemini returned it; thought text is not sent back.
 */
function contents(messages: readonly Message[]): { system: Json | undefined; turns: Json[] } {
  const systemParts: Json[] = [];
  const turns: { role: string; parts: Json[] }[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      for (const part of message.content) if (part.type === 'text') systemParts.push({ text: part.text });
      continue;
    }
    const role = message.role === 'assistant' ? 'model' : 'user';
    const parts: Json[] = [];
    let signature: string | undefined;
    const add = (part: Json) => {
      parts.push(signature === undefined ? part : { ...part, thoughtSignature: signature });
      signature = undefined;
    };
    for (const part of message.content) addPart(part, add, (s) => (signature = s));
    if (parts.length === 0) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else turns.push({ role, parts });
  }
  return { system: systemParts.length > 0 ? { parts: systemParts } : undefined, turns };
}

function addPart(part: ContentPart, add: (part: Json) => void, sign: (signature: string) => void): void {
  switch (part.type) {
    case 'text':
      if (part.text !== '') add({ text: part.text });
      return;
    case 'image':
      add(imagePart(part));
      return;
    case 'document':
      add(documentPart(part));
      return;
    case 'reasoning':
      if (part.signature !== undefined && part.signature !== '') sign(part.signature);
      return;
    case 'tool_call':
      add({ functionCall: { name: part.name, args: toolArguments(part.arguments) } });
      return;
    case 'tool_result': {
      const text = part.content.map((inner) => (inner.type === 'text' ? inner.text : '')).join('');
      add({ functionResponse: { name: part.name ?? '', response: part.isError ? { error: text } : { content: text } } });
      return;
    }
  }
}

/** The model's id on the upstream, without the `models/` a Gemini client may write before it. */
export function upstreamId(model: CatalogueModel): string {
  return model.upstreamModel.replace(/^models\//, '');
}

/** Gemini gives calls no id: Sluice makes one per call, the same in every part that names it. */
function newCallId(): string {
  return newGenerationId('call_');
}

/** Google's own Gemini API: the key as `x-goog-api-key`, a wrong one answered 400 API_KEY_INVALID. */
function googleApiClient(config: ProviderConfig): UpstreamClient {
  return new UpstreamClient(config, config.api_key === undefined ? {} : { 'x-goog-api-key': config.api_key }, (status, body) => status === 400 && body.includes('API_KEY_INVALID'));
}

/** Chat through Gemini's generateContent; `candidateCount` serves `n` up to 8 a call. */
export class GeminiProvider extends TranslatingProvider {
  readonly kind = 'gemini';
  private readonly caps: Capabilities;

  /**
   * `client` and `modelsPath` are what another home of Gemini's models changes: Vertex AI's client
   * carries a service account's token, and its models live under
   * `/v1/projects/{p}/locations/{l}/publishers/google` rather than at the base URL.
   */
  constructor(
    config: ProviderConfig,
    client: UpstreamClient = googleApiClient(config),
    private readonly modelsPath = '',
  ) {
    super(config.id, client);
    this.caps = config.max_embedding_inputs === undefined ? CAPABILITIES : { ...CAPABILITIES, maxEmbeddingInputs: Math.min(config.max_embedding_inputs, GEMINI_MAX_BATCH_REQUESTS) };
  }

  capabilities(_model?: CatalogueModel): Capabilities {
    return this.caps;
  }

  /**
   * `GET /models`, a thousand a page (the most it gives), paged with `pageToken`; only the models
   * that take generateContent (not embeddings, not Imagen or Veo), named without `models/`.
   */
  listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    return listAllPages(this.client, signal, (token) => `/models?pageSize=1000${token === undefined ? '' : `&pageToken=${encodeURIComponent(token)}`}`, (page) => {
      const models = listField(this.client, page, 'models').flatMap((item) => {
        const name = optionalString(item.name)?.replace(/^models\//, '');
        const methods = Array.isArray(item.supportedGenerationMethods) ? item.supportedGenerationMethods : [];
        if (name === undefined || name === '') return [];
        // Generation models, and embedding models (whose methods are embedContent, not generateContent); the rest (AQA, Imagen's predict) are not served.
        const generates = methods.includes('generateContent');
        if (!generates && !methods.includes('embedContent')) return [];
        return [
          upstreamModel({
            id: name,
            displayName: optionalString(item.displayName),
            description: optionalString(item.description),
            contextWindow: optionalCount(item.inputTokenLimit),
            maxOutputTokens: generates ? optionalCount(item.outputTokenLimit) : undefined,
            ownedBy: undefined,
            created: undefined,
            endpoints: generates ? undefined : ['embeddings'],
          }),
        ];
      });
      return { models, next: optionalString(page.nextPageToken) };
    });
  }

  /** A Gemini caller's own generateContent and countTokens bodies go upstream as they came. */
  override relays(operation: WireOperation): boolean {
    return operation === 'gemini.generateContent' || operation === 'gemini.countTokens';
  }

  /**
   * The caller's body untouched (thought signatures, safety settings, cached content and fields
   * Sluice does not model included), but for the model: the path names the upstream model, and so
   * does a `model` in the body (countTokens' generateContentRequest must carry one). The output
   * limit the catalogue sets for the model is a limit: a larger or missing maxOutputTokens is capped.
   */
  override async relay(call: RelayCall): Promise<RelayResponse> {
    const upstreamName = this.resourceName(call.model);
    if (call.operation === 'gemini.countTokens') {
      return { stream: false, body: await this.client.postJson(this.pathOf(call.model, 'countTokens'), this.countTokensBody(call.body, upstreamName), call) };
    }
    if (call.operation !== 'gemini.generateContent') throw new Error(`provider ${this.id} does not relay ${call.operation}`);
    const body: Json = { ...call.body, ...(call.body.model === undefined ? {} : { model: upstreamName }) };
    const cap = call.model.maxOutputTokens;
    if (cap !== undefined) {
      const config = isObject(body.generationConfig) ? body.generationConfig : {};
      const asked = typeof config.maxOutputTokens === 'number' ? config.maxOutputTokens : cap;
      body.generationConfig = { ...config, maxOutputTokens: Math.min(asked, cap) };
    }
    if (!call.stream) return { stream: false, body: await this.client.postJson(this.pathOf(call.model, 'generateContent'), body, call) };
    const response = await this.client.post(`${this.pathOf(call.model, 'streamGenerateContent')}?alt=sse`, body, call);
    return { stream: true, events: this.relayedEvents(response.body) };
  }

  /** Each event parsed once; Google's in-stream error becomes a thrown GatewayError. */
  private async *relayedEvents(body: ResponseBody): AsyncGenerator<Json> {
    for await (const { data } of this.client.events(body)) {
      const event = this.client.parseEvent(data);
      if (isObject(event.error)) throw this.streamFailure(event.error, data);
      yield event;
    }
  }

  /** Google's in-stream `{"error":{code,message,status}}`, read by its `code` (the HTTP status it stands for), relayed or translated alike. */
  private streamFailure(error: Json, data: string): GatewayError {
    const code = typeof error.code === 'number' ? error.code : undefined;
    return this.client.midStreamFailure(readErrorBody(data).message, code === 503 ? 'upstream_overloaded' : 'upstream_error', code);
  }

  /**
   * Gemini's batchEmbedContents, one request per input (at most 100: the capabilities' limit), each
   * naming the upstream model as the API requires; `dimensions` is its `outputDimensionality`, the
   * task and title its own fields. The caller's other unknown fields are OpenAI's wire's, not
   * Gemini's, and are not sent. Gemini reports no usage for embeddings.
   */
  override async embed(call: EmbedCall): Promise<EmbeddingResult> {
    const r = call.request;
    if (r.input.kind !== 'text') throw new Error('Gemini embeds text only; the plan refuses token ids');
    const model = `models/${upstreamId(call.model)}`;
    const options = {
      ...(r.taskType === undefined ? {} : { taskType: r.taskType }),
      ...(r.title === undefined ? {} : { title: r.title }),
      ...(r.dimensions === undefined ? {} : { outputDimensionality: r.dimensions }),
    };
    const requests = r.input.texts.map((text) => ({ model, content: { parts: [{ text }] }, ...options }));
    const answer = await this.client.postJson(this.pathOf(call.model, 'batchEmbedContents'), { requests }, call);
    const embeddings = embeddingsFromGemini(answer, requests.length);
    if (typeof embeddings === 'string') throw unreadableUpstream(this.id, embeddings);
    return { embeddings, usage: null };
  }

  /** A countTokens body as the upstream takes it: countTokens' generateContentRequest must name the model. */
  protected countTokensBody(body: Readonly<Json>, upstreamName: string): Json {
    const inner = body.generateContentRequest;
    return isObject(inner) ? { ...body, generateContentRequest: { ...inner, model: upstreamName } } : body;
  }

  /** The model as a request body names it: `models/{m}`, or Vertex AI's full resource name. */
  protected resourceName(model: CatalogueModel): string {
    return `models/${upstreamId(model)}`;
  }

  protected pathOf(model: CatalogueModel, method: string): string {
    return `${this.modelsPath}/models/${upstreamId(model)}:${method}`;
  }

  private body(call: GenerationCall): Json {
    const r = call.request;
    const { system, turns } = contents(r.messages);
    return {
      contents: turns,
      ...(system === undefined ? {} : { systemInstruction: system }),
      ...this.tools(r),
      generationConfig: {
        maxOutputTokens: outputLimit(r, call.model),
        stopSequences: r.stop.length > 0 ? r.stop : undefined,
        candidateCount: call.choices === 1 ? undefined : call.choices,
        temperature: r.temperature,
        topP: r.topP,
        topK: r.topK,
        seed: r.seed,
        presencePenalty: r.presencePenalty,
        frequencyPenalty: r.frequencyPenalty,
        responseLogprobs: r.logprobs === undefined ? undefined : true,
        logprobs: r.logprobs === undefined || r.logprobs.top === 0 ? undefined : r.logprobs.top,
        ...this.responseFormat(r),
        ...(r.reasoning === undefined ? {} : { thinkingConfig: { thinkingBudget: THINKING_BUDGET[r.reasoning.effort], includeThoughts: true } }),
      },
    };
  }

  /** Full JSON Schema goes in the `…JsonSchema` fields, which take what the OpenAPI-subset ones refuse. */
  private tools(r: GenerationRequest): Json {
    if (r.tools.length === 0) return {};
    const declarations = r.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parametersJsonSchema: tool.parameters,
    }));
    const choice = r.toolChoice;
    const config =
      choice === undefined || choice.type === 'auto'
        ? undefined
        : choice.type === 'none'
          ? { mode: 'NONE' }
          : choice.type === 'required'
            ? { mode: 'ANY' }
            : { mode: 'ANY', allowedFunctionNames: [choice.name] };
    return { tools: [{ functionDeclarations: declarations }], ...(config === undefined ? {} : { toolConfig: { functionCallingConfig: config } }) };
  }

  private responseFormat(r: GenerationRequest): Json {
    const format = r.responseFormat;
    if (format === undefined || format.type === 'text') return {};
    if (format.type === 'json_object') return { responseMimeType: 'application/json' };
    return { responseMimeType: 'application/json', responseJsonSchema: format.schema };
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    const response = await this.client.postJson(this.pathOf(call.model, 'generateContent'), this.body(call), call);
    const candidates = Array.isArray(response.candidates) ? (response.candidates as unknown[]).filter(isObject) : [];
    const usage = usageFromGemini(response.usageMetadata);
    const blocked = isObject(response.promptFeedback) && Boolean(response.promptFeedback.blockReason);
    if (candidates.length === 0 && !blocked) throw unreadableUpstream(this.id, 'an answer without candidates');
    // A candidate withheld by the safety system stays filtered.
    const choices: GeneratedChoice[] = Array.from({ length: call.choices }, (_, index) => ({ index, content: [], finish: BLOCKED, logprobs: undefined }));
    for (const candidate of candidates) {
      // Proto3 JSON leaves out a zero: a candidate without an index is candidate 0.
      const index = typeof candidate.index === 'number' ? candidate.index : 0;
      if (index >= choices.length) continue;
      const content = this.contentOf(candidate);
      const calledTools = content.some((part) => part.type === 'tool_call');
      choices[index] = {
        index,
        content,
        finish: finishOf(candidate.finishReason, calledTools) ?? { reason: calledTools ? 'tool_calls' : 'stop', raw: undefined },
        logprobs: call.request.logprobs === undefined ? undefined : tokenLogprobs(candidate.logprobsResult),
      };
    }
    return { id: typeof response.responseId === 'string' ? response.responseId : '', created: Math.floor(Date.now() / 1000), choices, usage };
  }

  private contentOf(candidate: Json): ContentPart[] {
    const content = isObject(candidate.content) ? candidate.content : {};
    const out: ContentPart[] = [];
    if (!Array.isArray(content.parts)) return out;
    for (const part of content.parts as unknown[]) {
      if (!isObject(part)) continue;
      const signature = typeof part.thoughtSignature === 'string' ? part.thoughtSignature : undefined;
      if (part.thought === true) {
        out.push({ type: 'reasoning', text: String(part.text ?? ''), ...(signature === undefined ? {} : { signature }) });
        continue;
      }
      if (signature !== undefined) out.push({ type: 'reasoning', text: '', signature });
      if (typeof part.text === 'string') out.push({ type: 'text', text: part.text });
      else if (isObject(part.functionCall)) {
        out.push({ type: 'tool_call', id: newCallId(), name: String(part.functionCall.name ?? ''), arguments: JSON.stringify(part.functionCall.args ?? {}) });
      }
    }
    return out;
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    const response = await this.client.post(`${this.pathOf(call.model, 'streamGenerateContent')}?alt=sse`, this.body(call), call);
    return this.parts(response.body, call);
  }

  /** Each event is a partial GenerateContentResponse; the stream just ends (no [DONE]). */
  private async *parts(body: ResponseBody, call: GenerationCall): AsyncGenerator<StreamPart> {
    const finished = new Set<number>();
    const toolCalls = new Map<number, number>();
    let usage: Usage | null = null;
    let started = false;
    let promptBlocked = false;
    for await (const { data } of this.client.events(body)) {
      const event = this.client.parseEvent(data);
      if (isObject(event.error)) throw this.streamFailure(event.error, data);
      if (!started) {
        started = true;
        yield { type: 'start', id: typeof event.responseId === 'string' ? event.responseId : '', created: Math.floor(Date.now() / 1000) };
      }
      usage = usageFromGemini(event.usageMetadata) ?? usage;
      const candidates = Array.isArray(event.candidates) ? (event.candidates as unknown[]).filter(isObject) : [];
      if (candidates.length === 0 && isObject(event.promptFeedback) && event.promptFeedback.blockReason) {
        promptBlocked = true;
        break;
      }
      for (const candidate of candidates) {
        const index = typeof candidate.index === 'number' ? candidate.index : 0;
        const logprobs = call.request.logprobs === undefined ? undefined : tokenLogprobs(candidate.logprobsResult);
        let textSent = false;
        for (const part of this.contentOf(candidate)) {
          if (part.type === 'text') {
            textSent = true;
            yield logprobs === undefined ? { type: 'text', choice: index, text: part.text } : { type: 'text', choice: index, text: part.text, logprobs };
          } else if (part.type === 'reasoning') {
            if (part.text !== '') yield { type: 'reasoning', choice: index, text: part.text };
            if (part.signature !== undefined) yield { type: 'reasoning_signature', choice: index, signature: part.signature };
          } else if (part.type === 'tool_call') {
            const toolIndex = toolCalls.get(index) ?? 0;
            toolCalls.set(index, toolIndex + 1);
            // Gemini sends each call whole: its start, all its arguments and its end at once.
            yield { type: 'tool_call_start', choice: index, index: toolIndex, id: part.id, name: part.name };
            yield { type: 'tool_call_delta', choice: index, index: toolIndex, arguments: part.arguments };
            yield { type: 'tool_call_end', choice: index, index: toolIndex };
          }
        }
        if (!textSent && logprobs !== undefined && logprobs.length > 0) yield { type: 'text', choice: index, text: '', logprobs };
        const finish = finishOf(candidate.finishReason, toolCalls.has(index));
        if (finish !== undefined && !finished.has(index)) {
          finished.add(index);
          yield { type: 'finish', choice: index, finish };
        }
      }
    }
    if (finished.size === 0 && !promptBlocked) throw unreadableUpstream(this.id, 'a stream that ended without a finish reason');
    // A candidate the upstream stopped reporting (withheld by its safety system) ends filtered.
    for (let index = 0; index < call.choices; index++) if (!finished.has(index)) yield { type: 'finish', choice: index, finish: BLOCKED };
    if (usage !== null) yield { type: 'usage', usage };
  }
}
