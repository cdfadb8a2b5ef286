import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { ProviderConfig } from '../config/config-file.js';
import { unsupported } from '../generation/capabilities.js';
import type { ContentPart, DocumentPart, Finish, GeneratedChoice, GenerationRequest, GenerationResult, ImagePart, JsonSchema, Message, ReasoningEffort, StreamPart, TextPart } from '../generation/model.js';
import type { Capabilities, GenerationCall, RelayCall, RelayResponse, WireOperation } from '../generation/provider.js';
import { TranslatingProvider, outputLimit } from './translating-provider.js';
import { UpstreamClient, type Json, type ResponseBody } from './upstream-client.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { listAllPages, listField, optionalString, upstreamModel } from './model-listing.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import { toolArguments, isObject } from '../wire/json.js';
import { usageFromAnthropic, withUsageDelta } from '../wire/anthropic/usage.js';
import { keepUpstreamText } from '../wire/relay-format.js';

export const CAPABILITIES: Capabilities = {
  upstream: 'the Anthropic Messages API',
  maxChoicesPerCall: 1, // no `n`: one call per choice
  maxTemperature: 1,
  maxStopSequences: null,
  logprobs: false,
  logitBias: false,
  penalties: false,
  topK: true,
  jsonWithoutSchema: true, // through a forced tool: see JSON_MODE_TOOL
  forwardsExtensions: false,
  // Anthropic has no embedding API.
  maxEmbeddingInputs: 0,
  embedsTokenIds: false,
};

/** Extended-thinking budgets for OpenAI's effort levels; Anthropic wants at least 1024. */
const THINKING_BUDGET = { minimal: 1024, low: 2048, medium: 8192, high: 24576 } as const;
const MIN_THINKING_BUDGET = 1024;

/**
 * Claude's extended-thinking budget for a request's effort, which must stay below max_tokens; the
 * same rule wherever Claude is reached (the Messages API, Bedrock's Converse). `caps` names the upstream in a refusal.
 */
export function thinkingBudget(effort: ReasoningEffort, model: CatalogueModel, caps: Capabilities, maxTokens: number): number {
  const budget = Math.min(THINKING_BUDGET[effort], maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET) {
    throw unsupported(model, caps, 'reasoning_effort', `reasoning with at most ${maxTokens} output tokens (extended thinking needs more than ${MIN_THINKING_BUDGET})`);
  }
  return budget;
}

/**
 * Extended thinking samples at temperature 1 with top_p of at least 0.95 and no top_k, and
 * Anthropic refuses anything else. A temperature or top_p the caller chose against that is refused
 * here by name; top_k is left out (undefined in the answer), since clients send it by default (the
 * Gemini CLI's 64) and thinking has no use for it. Shared with Claude's other homes (Bedrock's Converse).
 */
export function claudeSampling(r: GenerationRequest, model: CatalogueModel, caps: Capabilities): { temperature: number | undefined; topP: number | undefined; topK: number | undefined } {
  if (r.reasoning === undefined) return { temperature: r.temperature, topP: r.topP, topK: r.topK };
  if (r.temperature !== undefined && r.temperature !== 1) throw unsupported(model, caps, 'temperature', 'a temperature other than 1 with reasoning (extended thinking samples at 1)');
  if (r.topP !== undefined && r.topP < 0.95) throw unsupported(model, caps, 'top_p', 'a top_p below 0.95 with reasoning (extended thinking)');
  return { temperature: r.temperature, topP: r.topP, topK: undefined };
}

function finishOf(stopReason: unknown, stopSequence?: unknown): Finish {
  const raw = typeof stopReason === 'string' ? stopReason : undefined;
  switch (raw) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return { reason: 'length', raw };
    case 'tool_use':
      return { reason: 'tool_calls', raw };
    case 'refusal':
      return { reason: 'content_filter', raw };
    default:
      // end_turn, stop_sequence, pause_turn (the caller may continue the turn)
      return typeof stopSequence === 'string' ? { reason: 'stop', raw, stopSequence } : { reason: 'stop', raw };
  }
}

function imageBlock(part: ImagePart): Json {
  const { source } = part;
  return source.kind === 'url'
    ? { type: 'image', source: { type: 'url', url: source.url } }
    : { type: 'image', source: { type: 'base64', media_type: source.mediaType, data: source.data } };
}

/**
 * A `document` block: PDFs as base64 or by URL (Anthropic fetches it), plain text as the text
 * source Anthropic wants, decoded here once from the model's base64.
 */
function documentBlock(part: DocumentPart): Json {
  const { source } = part;
  const wireSource =
    source.kind === 'url'
      ? { type: 'url', url: source.url }
      : source.mediaType === 'text/plain'
        ? { type: 'text', media_type: 'text/plain', data: Buffer.from(source.data, 'base64').toString('utf8') }
        : { type: 'base64', media_type: source.mediaType, data: source.data };
  return { type: 'document', source: wireSource, ...(part.name === undefined ? {} : { title: part.name }), ...cacheMark(part) };
}

function cacheMark(part: TextPart | DocumentPart): Json {
  return part.cacheBreakpoint ? { cache_control: { type: 'ephemeral' } } : {};
}

function userBlock(part: ContentPart): Json {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text, ...cacheMark(part) };
    case 'image':
      return imageBlock(part);
    case 'document':
      return documentBlock(part);
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: part.toolCallId,
        content: part.content.map((inner) => (inner.type === 'text' ? { type: 'text', text: inner.text } : imageBlock(inner))),
        ...(part.isError ? { is_error: true } : {}),
      };
    default:
      throw new Error(`a ${part.type} part in a user turn`);
  }
}

function assistantBlock(part: ContentPart): Json | undefined {
  switch (part.type) {
    case 'text':
      return part.text === '' ? undefined : { type: 'text', text: part.text };
    case 'reasoning':
      if (part.redactedData !== undefined) return { type: 'redacted_thinking', data: part.redactedData };
      // A thinking block without its signature is refused upstream; one that came from elsewhere is dropped.
      return part.signature === undefined ? undefined : { type: 'thinking', thinking: part.text, signature: part.signature };
    case 'tool_call':
      return { type: 'tool_use', id: part.id, name: part.name, input: toolArguments(part.arguments) };
    default:
      return undefined;
  }
}

function isPlainText(block: Json): boolean {
  return block.type === 'text' && block.cache_control === undefined;
}

/**
 * Anthropic's conversation shape: system text apart, strictly alternating user and assistant turns
 * (consecutive turns of one role merged), tool results as user blocks that come first in their turn.
 */
function conversation(messages: readonly Message[]): { system: Json[]; turns: { role: 'user' | 'assistant'; content: Json[] | string }[] } {
  const system: Json[] = [];
  const turns: { role: 'user' | 'assistant'; content: Json[] }[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      for (const part of message.content) if (part.type === 'text') system.push({ type: 'text', text: part.text, ...cacheMark(part) });
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks = role === 'assistant' ? message.content.map(assistantBlock).filter((b): b is Json => b !== undefined) : message.content.map(userBlock);
    if (blocks.length === 0) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  }
  for (const turn of turns) {
    if (turn.role === 'user') turn.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  // A lone plain text block is sent as a string, the API's shorthand.
  return { system, turns: turns.map((turn) => (turn.content.length === 1 && isPlainText(turn.content[0]!) ? { role: turn.role, content: turn.content[0]!.text as string } : turn)) };
}

/**
 * OpenAI's JSON mode (`json_object`, and Gemini's JSON MIME type without a schema) on Anthropic.
 * Structured outputs want every object closed (`additionalProperties: false`), so no schema there
 * stands for "any JSON object"; a tool's input schema may be open, and a tool's input is always
 * an object, as JSON mode's answer is. So the model is made to call this tool, and its input is
 * the answer's text. A caller's tool choice that asks for a call of its own leaves nothing to
 * answer in text, so the tool is not offered then.
 */
export const JSON_MODE_TOOL = 'json_answer';

/** Whether the tool choice lets the model answer in text rather than call a tool of the caller's. */
export function answerMayBeText(r: GenerationRequest): boolean {
  return r.toolChoice === undefined || r.toolChoice.type === 'auto' || r.toolChoice.type === 'none';
}

/** Whether the request's answer comes through JSON_MODE_TOOL. */
export function usesJsonModeTool(r: GenerationRequest): boolean {
  return r.responseFormat?.type === 'json_object' && answerMayBeText(r);
}

/** The tool whose input is the answer: its schema, and what it tells the model. */
export interface AnswerTool {
  readonly schema: JsonSchema;
  readonly description: string;
}

/** JSON mode's answer: any JSON object. */
export const JSON_OBJECT_ANSWER: AnswerTool = { schema: { type: 'object' }, description: 'Give your answer: the JSON object asked for, as this tool\'s input.' };

/**
 * The tools a request offers Claude and how it may use them, whatever the wire (the Messages API
 * here, Bedrock's Converse there). `choice` undefined leaves the upstream's default: auto, calls in parallel allowed.
 */
export interface ToolOffer {
  readonly tools: readonly { readonly name: string; readonly description: string | undefined; readonly schema: JsonSchema }[];
  readonly choice: { readonly type: 'auto' | 'any' | 'none' } | { readonly type: 'tool'; readonly name: string } | undefined;
  readonly parallel: boolean;
}

/**
 * The offer for a request, `answer` (JSON_MODE_TOOL) included when given. A forced tool cannot go
 * with extended thinking, and the tool's name must not be one of the caller's: each is a 400
 * naming `caps`' upstream. Undefined when there are no tools at all.
 */
export function toolOffer(r: GenerationRequest, model: CatalogueModel, caps: Capabilities, answer: AnswerTool | undefined): ToolOffer | undefined {
  if (r.tools.length === 0 && answer === undefined) return undefined;
  const tools = r.tools.map((tool) => ({ name: tool.name, description: tool.description, schema: tool.parameters }));
  const choice = r.toolChoice ?? { type: 'auto' };
  if (answer !== undefined) {
    if (r.reasoning !== undefined) throw unsupported(model, caps, 'response_format', 'JSON output through a tool together with reasoning (the answer is a forced tool call, which extended thinking does not allow)');
    if (r.tools.some((tool) => tool.name === JSON_MODE_TOOL)) throw unsupported(model, caps, 'tools', `JSON output beside a tool named '${JSON_MODE_TOOL}' (the name the answer's tool uses)`);
    // First, so that it leads the tools the model reads.
    tools.unshift({ name: JSON_MODE_TOOL, description: answer.description, schema: answer.schema });
    // With tools of the caller's it may use, the model calls one of them or answers; otherwise it answers.
    const callerToolsAllowed = r.tools.length > 0 && choice.type === 'auto';
    return callerToolsAllowed ? { tools, choice: { type: 'any' }, parallel: r.parallelToolCalls !== false } : { tools, choice: { type: 'tool', name: JSON_MODE_TOOL }, parallel: false };
  }
  const parallel = r.parallelToolCalls !== false;
  // The tools stay declared under `none`: a conversation holding tool_use blocks needs them.
  return { tools, choice: choice.type === 'auto' && parallel ? undefined : choice.type === 'required' ? { type: 'any' } : choice, parallel };
}

/** `tools` and `tool_choice` for a request on the Messages API, JSON mode's tool included. */
export function toolFields(r: GenerationRequest, model: CatalogueModel): Json {
  const offer = toolOffer(r, model, CAPABILITIES, usesJsonModeTool(r) ? JSON_OBJECT_ANSWER : undefined);
  if (offer === undefined) return {};
  const tools = offer.tools.map((tool) => ({ name: tool.name, ...(tool.description === undefined ? {} : { description: tool.description }), input_schema: tool.schema }));
  if (offer.choice === undefined) return { tools };
  return { tools, tool_choice: { ...offer.choice, ...(offer.parallel || offer.choice.type === 'none' ? {} : { disable_parallel_tool_use: true }) } };
}

/** A finish that says "tool_use" when the only tool called was JSON mode's is the end of an answer. */
export function jsonModeFinish(finish: Finish, callerToolCalls: number, jsonAnswers: number): Finish {
  return finish.reason === 'tool_calls' && callerToolCalls === 0 && jsonAnswers > 0 ? { reason: 'stop', raw: 'end_turn' } : finish;
}

/** Anthropic's own API: the key as `x-api-key`, the API version as `anthropic-version`. */
function anthropicApiClient(config: ProviderConfig): UpstreamClient {
  return new UpstreamClient(config, { ...(config.api_key === undefined ? {} : { 'x-api-key': config.api_key }), 'anthropic-version': config.anthropic_version });
}

/**
 * A relayed Messages stream's events as they came, however the upstream frames them (Anthropic's
 * server-sent events, Bedrock's event-stream chunks): an `error` event becomes a thrown
 * GatewayError, and a stream that ends before message_stop is unreadable. Reads on past
 * message_stop to the end of the body, so the connection goes back to the pool.
 */
export async function* relayedMessagesEvents(events: AsyncIterable<Json>, client: UpstreamClient): AsyncGenerator<Json> {
  let stopped = false;
  for await (const event of events) {
    if (stopped) continue;
    if (event.type === 'error') {
      const error = isObject(event.error) ? event.error : {};
      throw client.midStreamFailure(typeof error.message === 'string' ? error.message : undefined, error.type === 'overloaded_error' ? 'upstream_overloaded' : 'upstream_error');
    }
    if (event.type === 'message_stop') stopped = true;
    yield event;
  }
  if (!stopped) throw unreadableUpstream(client.providerId, 'a stream that ended before message_stop');
}

/** Chat through Anthropic's Messages API. */
export class AnthropicProvider extends TranslatingProvider {
  readonly kind = 'anthropic';
  /** Beta features the operator turned on for every call; a caller's are added to them. */
  private readonly configuredBeta: string | undefined;

  /** `client`: another home of Claude (Vertex AI) brings its own, with its own credentials. */
  constructor(config: ProviderConfig, client: UpstreamClient = anthropicApiClient(config)) {
    super(config.id, client);
    this.configuredBeta = config.headers?.['anthropic-beta'];
  }

  /**
   * Where a Messages call for `model` goes, and its body as the upstream takes it: Anthropic's own
   * API names the model in the body and reads the API version from a header. A cloud overrides both.
   */
  protected messagesRequest(model: CatalogueModel, body: Json, _stream: boolean): { path: string; body: Json } {
    return { path: '/messages', body: { ...body, model: model.upstreamModel } };
  }

  protected countTokensRequest(model: CatalogueModel, body: Json): { path: string; body: Json } {
    return { path: '/messages/count_tokens', body: { ...body, model: model.upstreamModel } };
  }

  /** Whether a relayed body goes with the caller's `anthropic-version` (it was written for that version); a cloud sets its own in the body. */
  protected readonly passesCallerVersion: boolean = true;

  capabilities(): Capabilities {
    return CAPABILITIES;
  }

  /** `GET /models`, a thousand a page (the most it gives), paged with `after_id` while `has_more`. */
  listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    return listAllPages(this.client, signal, (after) => `/models?limit=1000${after === undefined ? '' : `&after_id=${encodeURIComponent(after)}`}`, (page) => {
      const models = listField(this.client, page, 'data').flatMap((item) => {
        const id = optionalString(item.id);
        if (id === undefined) return [];
        const created = typeof item.created_at === 'string' ? Math.floor(Date.parse(item.created_at) / 1000) : NaN;
        return [upstreamModel({ id, displayName: optionalString(item.display_name), created: Number.isFinite(created) && created > 0 ? created : undefined, ownedBy: undefined, description: undefined, contextWindow: undefined, maxOutputTokens: undefined })];
      });
      return { models, next: page.has_more === true ? optionalString(page.last_id) : undefined };
    });
  }

  /** A caller speaking Anthropic's own API is relayed: thinking signatures, cache markers, beta features and all. */
  override relays(operation: WireOperation): boolean {
    return operation === 'anthropic.messages' || operation === 'anthropic.count_tokens';
  }

  override async relay(call: RelayCall): Promise<RelayResponse> {
    const upstreamCall = { requestId: call.requestId, signal: call.signal, headers: this.relayHeaders(call.headers ?? {}), traceHeaders: call.traceHeaders };
    if (call.operation === 'anthropic.count_tokens') {
      const counted = this.countTokensRequest(call.model, call.body);
      return { stream: false, body: await this.client.postJson(counted.path, counted.body, upstreamCall) };
    }
    if (call.operation !== 'anthropic.messages') throw new Error(`provider ${this.id} does not relay ${call.operation}`);
    const { path, body } = this.messagesRequest(call.model, call.body, call.stream);
    if (!call.stream) return { stream: false, body: await this.client.postJson(path, body, upstreamCall) };
    const response = await this.client.post(path, body, upstreamCall);
    return { stream: true, events: this.relayedEvents(response.body) };
  }

  /**
   * The body was written for the caller's API version, so that version goes upstream; beta features
   * the caller asked for are added to any the operator configured.
   */
  private relayHeaders(caller: Readonly<Record<string, string>>): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.passesCallerVersion && caller['anthropic-version'] !== undefined) headers['anthropic-version'] = caller['anthropic-version'];
    const betas = [this.configuredBeta, caller['anthropic-beta']].filter((beta): beta is string => beta !== undefined && beta !== '');
    if (betas.length > 0) headers['anthropic-beta'] = betas.join(',');
    return headers;
  }

  /** The upstream's server-sent events, each parsed once and keeping its upstream text (UPSTREAM_TEXT) for a writer of the same wire. */
  private async *relayedEvents(body: ResponseBody): AsyncGenerator<Json> {
    yield* relayedMessagesEvents(
      (async function* (client) {
        for await (const { data } of client.events(body)) {
          yield keepUpstreamText(client.parseEvent(data), data);
        }
      })(this.client),
      this.client,
    );
  }

  private body(call: GenerationCall, stream: boolean): Json {
    const r = call.request;
    const { system, turns } = conversation(r.messages);
    const maxTokens = outputLimit(r, call.model);
    return {
      max_tokens: maxTokens,
      ...(system.length > 0 ? { system } : {}),
      messages: turns,
      ...toolFields(r, call.model),
      ...this.thinking(r, call.model, maxTokens),
      ...(r.responseFormat?.type === 'json_schema' ? { output_config: { format: { type: 'json_schema', schema: r.responseFormat.schema } } } : {}),
      stop_sequences: r.stop.length > 0 ? r.stop : undefined,
      ...this.sampling(r, call.model),
      metadata: r.user === undefined ? undefined : { user_id: r.user },
      stream: stream || undefined,
    };
  }

  private sampling(r: GenerationRequest, model: CatalogueModel): Json {
    const { temperature, topP, topK } = claudeSampling(r, model, CAPABILITIES);
    return { temperature, top_p: topP, top_k: topK };
  }

  /** OpenAI's effort levels as an extended-thinking budget. */
  private thinking(r: GenerationRequest, model: CatalogueModel, maxTokens: number): Json {
    if (r.reasoning === undefined) return {};
    return { thinking: { type: 'enabled', budget_tokens: thinkingBudget(r.reasoning.effort, model, CAPABILITIES, maxTokens) } };
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    const { path, body } = this.messagesRequest(call.model, this.body(call, false), false);
    const message = await this.client.postJson(path, body, call);
    if (!Array.isArray(message.content)) throw unreadableUpstream(this.id, 'a message without content');
    const jsonMode = usesJsonModeTool(call.request);
    const content: ContentPart[] = [];
    let jsonAnswers = 0;
    for (const block of message.content as unknown[]) {
      if (!isObject(block)) continue;
      if (block.type === 'text') content.push({ type: 'text', text: String(block.text ?? '') });
      else if (jsonMode && block.type === 'tool_use' && block.name === JSON_MODE_TOOL) {
        jsonAnswers++;
        content.push({ type: 'text', text: JSON.stringify(block.input ?? {}) });
      } else if (block.type === 'thinking') content.push({ type: 'reasoning', text: String(block.thinking ?? ''), signature: String(block.signature ?? '') });
      else if (block.type === 'redacted_thinking') content.push({ type: 'reasoning', text: '', redactedData: String(block.data ?? '') });
      else if (block.type === 'tool_use') content.push({ type: 'tool_call', id: String(block.id), name: String(block.name), arguments: JSON.stringify(block.input ?? {}) });
    }
    const callerToolCalls = content.filter((part) => part.type === 'tool_call').length;
    const finish = jsonModeFinish(finishOf(message.stop_reason, message.stop_sequence), callerToolCalls, jsonAnswers);
    const choice: GeneratedChoice = { index: 0, content, finish, logprobs: undefined };
    return {
      id: typeof message.id === 'string' ? message.id : '',
      created: Math.floor(Date.now() / 1000),
      choices: [choice],
      usage: isObject(message.usage) ? usageFromAnthropic(message.usage) : null,
    };
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    const { path, body } = this.messagesRequest(call.model, this.body(call, true), true);
    const response = await this.client.post(path, body, call);
    return this.parts(response.body, usesJsonModeTool(call.request));
  }

  /** message_start → content_block_start / _delta / _stop … → message_delta → message_stop. */
  private async *parts(body: ResponseBody, jsonMode: boolean): AsyncGenerator<StreamPart> {
    let usage: Json = {};
    let outputTokens: number | undefined;
    let finish: Finish = { reason: 'stop', raw: undefined };
    let stopped = false;
    /** Content block index → tool-call index, for the blocks that are tool calls. */
    const toolCalls = new Map<number, number>();
    /** Content block index → whether JSON text came yet, for JSON mode's tool calls (their input is the answer's text). */
    const jsonAnswers = new Map<number, boolean>();
    // Read on past message_stop to the end of the body, so the connection goes back to the pool.
    for await (const { data } of this.client.events(body)) {
      if (stopped) continue;
      const event = this.client.parseEvent(data);
      switch (event.type) {
        case 'message_start': {
          const message = isObject(event.message) ? event.message : {};
          if (isObject(message.usage)) usage = message.usage;
          yield { type: 'start', id: typeof message.id === 'string' ? message.id : '', created: Math.floor(Date.now() / 1000) };
          break;
        }
        case 'content_block_start': {
          const block = isObject(event.content_block) ? event.content_block : {};
          const index = Number(event.index);
          if (jsonMode && block.type === 'tool_use' && block.name === JSON_MODE_TOOL) {
            jsonAnswers.set(index, false);
          } else if (block.type === 'tool_use') {
            const toolIndex = toolCalls.size;
            toolCalls.set(index, toolIndex);
            yield { type: 'tool_call_start', choice: 0, index: toolIndex, id: String(block.id), name: String(block.name) };
          } else if (block.type === 'redacted_thinking') {
            yield { type: 'redacted_reasoning', choice: 0, data: String(block.data ?? '') };
          } else if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
            yield { type: 'text', choice: 0, text: block.text };
          }
          break;
        }
        case 'content_block_delta': {
          const delta = isObject(event.delta) ? event.delta : {};
          if (delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') yield { type: 'text', choice: 0, text: delta.text };
          else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') yield { type: 'reasoning', choice: 0, text: delta.thinking };
          else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') yield { type: 'reasoning_signature', choice: 0, signature: delta.signature };
          else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
            if (jsonAnswers.has(Number(event.index))) {
              if (delta.partial_json !== '') {
                jsonAnswers.set(Number(event.index), true);
                yield { type: 'text', choice: 0, text: delta.partial_json };
              }
              break;
            }
            const toolIndex = toolCalls.get(Number(event.index));
            if (toolIndex !== undefined && delta.partial_json !== '') yield { type: 'tool_call_delta', choice: 0, index: toolIndex, arguments: delta.partial_json };
          }
          break;
        }
        case 'content_block_stop': {
          // An empty input streams no fragment at all; the answer is still an object.
          if (jsonAnswers.get(Number(event.index)) === false) yield { type: 'text', choice: 0, text: '{}' };
          const toolIndex = toolCalls.get(Number(event.index));
          if (toolIndex !== undefined) yield { type: 'tool_call_end', choice: 0, index: toolIndex };
          break;
        }
        case 'message_delta': {
          const delta = isObject(event.delta) ? event.delta : {};
          if (delta.stop_reason != null) finish = finishOf(delta.stop_reason, delta.stop_sequence);
          if (isObject(event.usage)) {
            // Cumulative: later figures replace earlier ones, input and cache included when present.
            usage = withUsageDelta(usage, event.usage);
            if (typeof event.usage.output_tokens === 'number') outputTokens = event.usage.output_tokens;
          }
          break;
        }
        case 'message_stop':
          yield { type: 'finish', choice: 0, finish: jsonModeFinish(finish, toolCalls.size, jsonAnswers.size) };
          if (outputTokens !== undefined) yield { type: 'usage', usage: usageFromAnthropic(usage, outputTokens) };
          stopped = true;
          break;
        case 'error': {
          const error = isObject(event.error) ? event.error : {};
          const message = typeof error.message === 'string' ? error.message : undefined;
          throw this.client.midStreamFailure(message, error.type === 'overloaded_error' ? 'upstream_overloaded' : 'upstream_error');
        }
        default:
          break; // ping, and event types added later
      }
    }
    if (!stopped) throw unreadableUpstream(this.id, 'a stream that ended before message_stop');
  }
}
