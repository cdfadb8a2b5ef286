import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { ProviderConfig } from '../config/config-file.js';
import type { ContentPart, DocumentPart, Finish, GeneratedChoice, GenerationRequest, GenerationResult, Message, StreamPart, TokenLogprob, Usage } from '../generation/model.js';
import type { EmbeddingResult } from '../generation/embedding.js';
import type { Capabilities, ConnectionUse, EmbedCall, GenerationCall, ProviderAdapter, RelayCall, RelayResponse, TransferCall, TransferOperation, Transferred, WireOperation } from '../generation/provider.js';
import { outputLimit } from './translating-provider.js';
import { readErrorBody, UpstreamClient, type Json, type ResponseBody, type SseReader, type UpstreamAuth } from './upstream-client.js';
import { keepUpstreamText, type RelayedEvent } from '../wire/relay-format.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { listAllPages, listField, optionalCount, optionalString, upstreamModel } from './model-listing.js';
import { endpointsByName } from '../catalogue/model-kind.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import { isObject } from '../wire/json.js';
import { usageFromOpenAI, usageFromOpenAIEmbeddings } from '../wire/openai/usage.js';
import { embeddingsFromOpenAI } from '../wire/openai/embedding.js';
import { GatewayError } from '../core/errors.js';
import { unsupported } from '../generation/capabilities.js';

export const OPENAI_CAPABILITIES: Capabilities = {
  upstream: "the upstream's chat completions API",
  maxChoicesPerCall: 128,
  maxTemperature: 2,
  maxStopSequences: null,
  logprobs: true,
  logitBias: true,
  penalties: true,
  // Same family of servers: vLLM's top_k and other extensions work on chat too.
  topK: true,
  jsonWithoutSchema: true,
  forwardsExtensions: true,
  // OpenAI's own limit on `input`; a server that takes fewer (TEI) says so with a 4xx, or its provider's max_embedding_inputs does.
  maxEmbeddingInputs: 2048,
  embedsTokenIds: true,
};

/** Where each caller's bytes go on an OpenAI-compatible server, under its base URL. */
const TRANSFER_PATHS: Readonly<Record<TransferOperation, string>> = {
  'openai.images.edits': '/images/edits',
  'openai.audio.transcriptions': '/audio/transcriptions',
  'openai.audio.translations': '/audio/translations',
  'openai.audio.speech': '/audio/speech',
};

const RELAY_PATHS: Readonly<Partial<Record<WireOperation, string>>> = {
  'openai.completions': '/completions',
  'openai.chat': '/chat/completions',
  'openai.responses': '/responses',
  // JSON operations other than generation, on servers that serve them (vLLM's /rerank; OpenAI's moderations and images).
  'openai.rerank': '/rerank',
  'openai.moderations': '/moderations',
  'openai.images.generations': '/images/generations',
};

function finishOf(reason: unknown): Finish | undefined {
  if (typeof reason !== 'string') return undefined;
  switch (reason) {
    case 'length':
      return { reason: 'length', raw: reason };
    case 'tool_calls':
    case 'function_call':
      return { reason: 'tool_calls', raw: reason };
    case 'content_filter':
      return { reason: 'content_filter', raw: reason };
    default:
      return { reason: 'stop', raw: reason };
  }
}

/** Structured outputs' refusal: the words of it, if the model refused (`refusal` is null or absent otherwise). */
function refusalOf(message: Json): string | undefined {
  return typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : undefined;
}

/** A refusal ends its choice with finish_reason "stop": filtered, as Sluice names a refusal; `raw` keeps OpenAI's word. */
function refusedFinish(finish: Finish): Finish {
  return finish.reason === 'stop' ? { ...finish, reason: 'content_filter' } : finish;
}

function tokenLogprobs(logprobs: unknown): TokenLogprob[] | undefined {
  if (!isObject(logprobs) || !Array.isArray(logprobs.content)) return undefined;
  return (logprobs.content as Json[]).map((item) => ({
    token: String(item.token ?? ''),
    logprob: Number(item.logprob),
    bytes: Array.isArray(item.bytes) ? (item.bytes as number[]) : null,
    top: Array.isArray(item.top_logprobs)
      ? (item.top_logprobs as Json[]).map((t) => ({ token: String(t.token), logprob: Number(t.logprob), bytes: Array.isArray(t.bytes) ? (t.bytes as number[]) : null }))
      : [],
  }));
}

/** vLLM and DeepSeek name the reasoning text `reasoning_content`; newer vLLM and others `reasoning`. */
function reasoningOf(message: Json): string | undefined {
  const text = message.reasoning_content ?? message.reasoning;
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/** Chat's `file` part: the bytes as a `data:` URL, with a file name (OpenAI reads the type from it). */
function filePart(part: DocumentPart, target: Target): Json {
  const { source } = part;
  if (source.kind === 'url') throw unsupported(target.model, target.caps, 'document', "a document by URL (OpenAI's chat takes a file's bytes only: send it inline)");
  const filename = part.name ?? (source.mediaType === 'application/pdf' ? 'document.pdf' : 'document.txt');
  return { type: 'file', file: { file_data: `data:${source.mediaType};base64,${source.data}`, filename } };
}

/** Who the messages are written for: a refusal names the model and its upstream. */
interface Target {
  readonly model: CatalogueModel;
  readonly caps: Capabilities;
}

function wireContent(parts: readonly ContentPart[], target: Target): string | Json[] {
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part as { text: string }).text).join('');
  return parts.flatMap((part): Json[] => {
    if (part.type === 'text') return [{ type: 'text', text: part.text }];
    if (part.type === 'image') {
      const url = part.source.kind === 'url' ? part.source.url : `data:${part.source.mediaType};base64,${part.source.data}`;
      return [{ type: 'image_url', image_url: { url, ...(part.detail === undefined ? {} : { detail: part.detail }) } }];
    }
    if (part.type === 'document') return [filePart(part, target)];
    return [];
  });
}

function wireMessages(messages: readonly Message[], target: Target): Json[] {
  const out: Json[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      const text = message.content.filter((part) => part.type === 'text');
      const calls = message.content.flatMap((part) =>
        part.type === 'tool_call' ? [{ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } }] : [],
      );
      out.push({ role: 'assistant', content: text.length === 0 ? null : wireContent(text, target), ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    } else if (message.role === 'tool' || message.content.some((part) => part.type === 'tool_result')) {
      for (const part of message.content) {
        if (part.type === 'tool_result') out.push({ role: 'tool', tool_call_id: part.toolCallId, content: wireContent(part.content, target) });
        else if (part.type === 'text' || part.type === 'image' || part.type === 'document') out.push({ role: 'user', content: wireContent([part], target) });
      }
    } else {
      out.push({ role: message.role, content: wireContent(message.content, target) });
    }
  }
  return out;
}

/**
 * What a cloud serving OpenAI's wire changes of it (Azure OpenAI): the adapter's kind, how it proves
 * who it is, where each endpoint lives, and what its upstream takes. The mapping stays this module's.
 */
export interface OpenAIFlavour {
  readonly kind: string;
  readonly credentials: Record<string, string> | UpstreamAuth;
  /** The path (query included) of an endpoint (`/chat/completions`, as under an OpenAI base URL) for a model. */
  readonly path: (endpoint: string, model: CatalogueModel) => string;
  readonly capabilities: Capabilities;
  /** Whether streams may ask for their usage (`stream_options.include_usage`); an upstream that refuses the field is not sent it, and its streams are counted by the meter. */
  readonly streamUsage: boolean;
}

function plainOpenAI(config: ProviderConfig): OpenAIFlavour {
  return { kind: 'openai', credentials: config.api_key === undefined ? {} : { authorization: `Bearer ${config.api_key}` }, path: (endpoint) => endpoint, capabilities: OPENAI_CAPABILITIES, streamUsage: true };
}

/**
 * Any server that speaks OpenAI's API (vLLM, llama.cpp, Ollama, OpenAI). A caller speaking OpenAI's
 * own wire is relayed: its body goes upstream as it came, fields Sluice does not know included, with
 * only `model` rewritten and usage always asked for. Everything else is translated to chat.
 */
export class OpenAICompatibleProvider implements ProviderAdapter {
  readonly kind: string;
  readonly id: string;
  protected readonly client: UpstreamClient;
  private readonly caps: Capabilities;
  private readonly pathOf: OpenAIFlavour['path'];
  private readonly streamUsage: boolean;

  constructor(config: ProviderConfig, flavour: OpenAIFlavour = plainOpenAI(config)) {
    this.id = config.id;
    this.kind = flavour.kind;
    this.pathOf = flavour.path;
    this.streamUsage = flavour.streamUsage;
    this.caps = config.max_embedding_inputs === undefined ? flavour.capabilities : { ...flavour.capabilities, maxEmbeddingInputs: config.max_embedding_inputs };
    this.client = new UpstreamClient(config, flavour.credentials);
  }

  get origin(): string {
    return this.client.origin;
  }

  connections(): ConnectionUse | null {
    return this.client.connections();
  }

  capabilities(): Capabilities {
    return this.caps;
  }

  /**
   * `GET /models` as OpenAI, vLLM, llama.cpp and Ollama serve it: vLLM gives the served context in
   * `max_model_len` (its LoRA adapters are listed too, each with its `parent`), llama.cpp the
   * trained one in `meta.n_ctx_train`, Ollama none. One page, unless a server pages OpenAI's way
   * (`has_more` and `after`).
   */
  listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    return listAllPages(this.client, signal, (after) => (after === undefined ? '/models' : `/models?after=${encodeURIComponent(after)}`), (page) => {
      const models = listField(this.client, page, 'data').flatMap((item) => {
        const id = optionalString(item.id);
        if (id === undefined) return [];
        const meta = isObject(item.meta) ? item.meta : {};
        // vLLM serves a model under a name of the operator's choosing (--served-model-name) and names the weights in `root`: an embedding or reranking model is told by either.
        const root = optionalString(item.root);
        const endpoints = endpointsByName(id) === undefined && root !== undefined ? endpointsByName(root) : undefined;
        return [upstreamModel({ id, ownedBy: optionalString(item.owned_by), created: optionalCount(item.created), contextWindow: optionalCount(item.max_model_len) ?? optionalCount(meta.n_ctx_train), displayName: undefined, description: undefined, maxOutputTokens: undefined, endpoints })];
      });
      return { models, next: page.has_more === true ? (optionalString(page.last_id) ?? models.at(-1)?.id) : undefined };
    });
  }

  relays(operation: WireOperation | TransferOperation, model: CatalogueModel): boolean {
    switch (operation) {
      case 'openai.chat':
        return true;
      case 'openai.completions':
        return model.upstreamApi === 'completions';
      case 'openai.responses':
        return model.upstreamApi === 'responses';
      case 'openai.images.edits':
      case 'openai.audio.transcriptions':
      case 'openai.audio.translations':
      case 'openai.audio.speech':
      case 'openai.rerank':
      case 'openai.moderations':
      case 'openai.images.generations':
        // Relayed whatever the model's upstream_api: the catalogue's `endpoints` say whether the model serves them.
        return true;
      default:
        return false;
    }
  }

  async relay(call: RelayCall): Promise<RelayResponse> {
    const endpoint = RELAY_PATHS[call.operation];
    if (endpoint === undefined) throw new Error(`provider ${this.id} does not relay ${call.operation}`);
    const path = this.pathOf(endpoint, call.model);
    if (!call.stream) {
      const body = await this.client.postJson(path, { ...call.body, model: call.model.upstreamModel }, call);
      return { stream: false, body };
    }
    if (call.operation === 'openai.responses') {
      // Typed events that end with the response's last event, not [DONE]; usage is always in the final response.
      const response = await this.client.post(path, { ...call.body, model: call.model.upstreamModel, stream: true }, call);
      return { stream: true, events: this.responseEvents(response.body) };
    }
    const { stream_options: streamOptions, ...rest } = call.body;
    // An upstream that refuses `stream_options` (Azure before 2024-09-01-preview) is sent none, not even the caller's.
    const body = this.streamUsage
      ? { ...rest, model: call.model.upstreamModel, stream: true, stream_options: { ...(isObject(streamOptions) ? streamOptions : {}), include_usage: true } }
      : { ...rest, model: call.model.upstreamModel, stream: true };
    const response = await this.client.post(path, body, call);
    return { stream: true, events: new RelayedChunks(this.client, response.body) };
  }

  /**
   * A Responses API stream's events, each parsed once and passed on as they came, the upstream's
   * own `response.failed` and `error` events included (the caller's dialect is the upstream's).
   */
  private async *responseEvents(body: ResponseBody): AsyncGenerator<Json> {
    // Read to the end of the body, so the connection goes back to the pool; `response.failed` is followed by an `error` event.
    let ended = false;
    let failed = false;
    for await (const { data } of this.client.events(body)) {
      if (ended || data === '[DONE]') continue;
      const event = this.client.parseEvent(data);
      if (event.type === 'response.failed') failed = true;
      else if (event.type === 'response.completed' || event.type === 'response.incomplete' || event.type === 'error') ended = true;
      yield event;
    }
    if (!ended && !failed) throw unreadableUpstream(this.id, 'a Responses stream that ended before its response did');
  }

  private body(call: GenerationCall, stream: boolean): Json {
    const r = call.request;
    return {
      ...r.extensions,
      model: call.model.upstreamModel,
      messages: wireMessages(r.messages, { model: call.model, caps: this.caps }),
      ...this.tools(r),
      ...this.responseFormat(r),
      max_tokens: outputLimit(r, call.model),
      n: call.choices === 1 ? undefined : call.choices,
      temperature: r.temperature,
      top_p: r.topP,
      top_k: r.topK,
      stop: r.stop.length > 0 ? r.stop : undefined,
      presence_penalty: r.presencePenalty,
      frequency_penalty: r.frequencyPenalty,
      logit_bias: r.logitBias,
      seed: r.seed,
      user: r.user,
      reasoning_effort: r.reasoning?.effort,
      logprobs: r.logprobs === undefined ? undefined : true,
      top_logprobs: r.logprobs === undefined || r.logprobs.top === 0 ? undefined : r.logprobs.top,
      ...(stream ? { stream: true, ...(this.streamUsage ? { stream_options: { include_usage: true } } : {}) } : {}),
    };
  }

  private tools(r: GenerationRequest): Json {
    if (r.tools.length === 0) return {};
    const tools = r.tools.map((tool) => ({
      type: 'function',
      function: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        parameters: tool.parameters,
        ...(tool.strict === undefined ? {} : { strict: tool.strict }),
      },
    }));
    const choice = r.toolChoice;
    const toolChoice = choice === undefined ? undefined : choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type;
    return { tools, tool_choice: toolChoice, parallel_tool_calls: r.parallelToolCalls };
  }

  private responseFormat(r: GenerationRequest): Json {
    const format = r.responseFormat;
    if (format === undefined) return {};
    if (format.type !== 'json_schema') return { response_format: { type: format.type } };
    return {
      response_format: {
        type: 'json_schema',
        json_schema: { name: format.name, schema: format.schema, ...(format.strict === undefined ? {} : { strict: format.strict }), ...(format.description === undefined ? {} : { description: format.description }) },
      },
    };
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    const body = await this.client.postJson(this.pathOf('/chat/completions', call.model), this.body(call, false), call);
    if (!Array.isArray(body.choices)) throw unreadableUpstream(this.id, 'an answer without choices');
    const choices: GeneratedChoice[] = (body.choices as unknown[]).map((raw, i) => {
      const choice = isObject(raw) ? raw : {};
      const message = isObject(choice.message) ? choice.message : {};
      const content: ContentPart[] = [];
      const reasoning = reasoningOf(message);
      if (reasoning !== undefined) content.push({ type: 'reasoning', text: reasoning });
      if (typeof message.content === 'string') content.push({ type: 'text', text: message.content });
      const refusal = refusalOf(message);
      if (refusal !== undefined) content.push({ type: 'text', text: refusal });
      if (Array.isArray(message.tool_calls)) {
        for (const rawCall of message.tool_calls as unknown[]) {
          if (!isObject(rawCall) || !isObject(rawCall.function)) continue;
          content.push({ type: 'tool_call', id: String(rawCall.id ?? ''), name: String(rawCall.function.name ?? ''), arguments: String(rawCall.function.arguments ?? '') });
        }
      }
      const finish = finishOf(choice.finish_reason) ?? { reason: 'stop', raw: undefined };
      return {
        index: typeof choice.index === 'number' ? choice.index : i,
        content,
        finish: refusal === undefined ? finish : refusedFinish(finish),
        logprobs: tokenLogprobs(choice.logprobs),
      };
    });
    return {
      id: typeof body.id === 'string' ? body.id : '',
      created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
      choices,
      usage: usageFromOpenAI(body.usage),
    };
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    const response = await this.client.post(this.pathOf('/chat/completions', call.model), this.body(call, true), call);
    return this.parts(new RelayedChunks(this.client, response.body));
  }

  private async *parts(chunks: AsyncIterable<Json>): AsyncGenerator<StreamPart> {
    let started = false;
    let usage: Usage | null = null;
    /** Per choice, the tool-call indexes that have started and not yet ended. */
    const openCalls = new Map<number, Set<number>>();
    const refused = new Set<number>();
    for await (const chunk of chunks) {
      if (!started) {
        started = true;
        yield { type: 'start', id: typeof chunk.id === 'string' ? chunk.id : '', created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000) };
      }
      usage = usageFromOpenAI(chunk.usage) ?? usage;
      if (!Array.isArray(chunk.choices)) continue;
      for (const raw of chunk.choices as unknown[]) {
        if (!isObject(raw)) continue;
        const choice = typeof raw.index === 'number' ? raw.index : 0;
        const delta = isObject(raw.delta) ? raw.delta : {};
        const reasoning = reasoningOf(delta);
        if (reasoning !== undefined) yield { type: 'reasoning', choice, text: reasoning };
        const logprobs = tokenLogprobs(raw.logprobs);
        if (typeof delta.content === 'string' && (delta.content !== '' || logprobs !== undefined)) {
          yield logprobs === undefined ? { type: 'text', choice, text: delta.content } : { type: 'text', choice, text: delta.content, logprobs };
        }
        const refusal = refusalOf(delta);
        if (refusal !== undefined) {
          refused.add(choice);
          yield { type: 'text', choice, text: refusal };
        }
        if (Array.isArray(delta.tool_calls)) {
          let open = openCalls.get(choice);
          if (open === undefined) openCalls.set(choice, (open = new Set()));
          for (const rawCall of delta.tool_calls as unknown[]) {
            if (!isObject(rawCall)) continue;
            const index = typeof rawCall.index === 'number' ? rawCall.index : 0;
            const fn = isObject(rawCall.function) ? rawCall.function : {};
            if (!open.has(index)) {
              open.add(index);
              yield { type: 'tool_call_start', choice, index, id: String(rawCall.id ?? ''), name: String(fn.name ?? '') };
            }
            if (typeof fn.arguments === 'string' && fn.arguments !== '') yield { type: 'tool_call_delta', choice, index, arguments: fn.arguments };
          }
        }
        const finish = finishOf(raw.finish_reason);
        if (finish !== undefined) {
          for (const index of openCalls.get(choice) ?? []) yield { type: 'tool_call_end', choice, index };
          openCalls.delete(choice);
          yield { type: 'finish', choice, finish: refused.has(choice) ? refusedFinish(finish) : finish };
        }
      }
    }
    if (usage !== null) yield { type: 'usage', usage };
  }

  /**
   * `POST {base_url}/embeddings`: the caller's unknown fields first (vLLM's, TEI's own), then the
   * modelled ones; the vectors asked in the caller's encoding (a server that answers floats anyway
   * is converted later). An upstream that refuses `dimensions` (a model without shortening) is a
   * 400 naming it.
   */
  async embed(call: EmbedCall): Promise<EmbeddingResult> {
    const r = call.request;
    const input = r.input.kind === 'text' ? r.input.texts : r.input.tokens;
    const body = { ...r.extensions, model: call.model.upstreamModel, input, ...(r.dimensions === undefined ? {} : { dimensions: r.dimensions }), encoding_format: call.encoding };
    let answer: Json;
    try {
      answer = await this.client.postJson(this.pathOf('/embeddings', call.model), body, call);
    } catch (error) {
      throw r.dimensions === undefined ? error : namingDimensions(error);
    }
    const embeddings = embeddingsFromOpenAI(answer, input.length);
    if (typeof embeddings === 'string') throw unreadableUpstream(this.id, embeddings);
    return { embeddings, usage: usageFromOpenAIEmbeddings(answer.usage) };
  }

  /** The caller's bytes posted as they are (uploads, speech); the answer's bytes come back as they arrive, a streamed one uncapped. */
  transfer(call: TransferCall): Promise<Transferred> {
    return this.client.postBytes(this.pathOf(TRANSFER_PATHS[call.operation], call.model), call.body, call, !call.stream);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/**
 * A chat or legacy completion stream's chunks, each parsed once and carrying its upstream text
 * (UPSTREAM_TEXT) for a writer of the same wire to pass on; an upstream error chunk becomes a
 * thrown GatewayError. Azure opens a stream with a chunk of no choices whose `id` and `model` are
 * empty, carrying only its prompt filter results: those move onto the next chunk (which is then
 * Sluice's, without its upstream text), so that no caller (nor `parts`, which takes the stream's
 * id from its first chunk) sees a chunk without an id. An iterator of its own rather than
 * generators over the body's events: it is on every token's path.
 */
export class RelayedChunks implements AsyncIterableIterator<RelayedEvent> {
  private readonly events: SseReader;
  private done = false;
  private promptFilter: unknown;

  constructor(
    private readonly client: UpstreamClient,
    body: ResponseBody,
  ) {
    this.events = client.sseReader(body);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<RelayedEvent> {
    return this;
  }

  async next(): Promise<IteratorResult<RelayedEvent>> {
    try {
      for (;;) {
        const data = this.events.take()?.data;
        if (data === undefined) {
          // Read on past [DONE] to the end of the body, so the connection goes back to the pool.
          if (await this.events.fill()) continue;
          if (!this.done) throw unreadableUpstream(this.client.providerId, 'a stream that ended before [DONE]');
          return { value: undefined, done: true };
        }
        if (this.done) continue;
        if (data === '[DONE]') {
          this.done = true;
          continue;
        }
        const chunk = this.chunkOf(data);
        if (chunk !== undefined) return { value: chunk, done: false };
      }
    } catch (error) {
      this.events.cut();
      throw error;
    }
  }

  return(): Promise<IteratorResult<RelayedEvent>> {
    this.events.cut();
    return Promise.resolve({ value: undefined, done: true });
  }

  private chunkOf(data: string): RelayedEvent | undefined {
    const chunk = this.client.parseEvent(data);
    if (chunk.error !== undefined && chunk.error !== null) throw this.client.midStreamFailure(readErrorBody(data).message);
    if (chunk.id === '' && Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage == null) {
      this.promptFilter = chunk.prompt_filter_results;
      return undefined;
    }
    if (this.promptFilter !== undefined) {
      const merged = { ...chunk, prompt_filter_results: this.promptFilter };
      this.promptFilter = undefined;
      return merged;
    }
    return keepUpstreamText(chunk, data);
  }
}

/** An upstream's refusal that speaks of dimensions (OpenAI: "does not support specifying dimensions"; vLLM: "matryoshka") names the caller's `dimensions`. */
function namingDimensions(error: unknown): unknown {
  if (!(error instanceof GatewayError) || error.kind !== 'upstream_rejected_request' || error.param !== null || !/dimension|matryoshka/i.test(error.message)) return error;
  return new GatewayError(error.kind, error.message, {
    param: 'dimensions',
    status: error.status,
    ...(error.type === undefined ? {} : { type: error.type }),
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.upstreamFailure === undefined ? {} : { upstreamFailure: error.upstreamFailure }),
    ...(error.upstreamBody === undefined ? {} : { upstreamBody: error.upstreamBody }),
    cause: error,
  });
}
