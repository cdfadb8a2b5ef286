import { createHash } from 'node:crypto';
import type { CatalogueModel } from '../../catalogue/catalogue.js';
import { unreadableUpstream } from '../../core/upstream-errors.js';
import { unsupported } from '../../generation/capabilities.js';
import type { ContentPart, DocumentMediaType, DocumentPart, Finish, GenerationRequest, GenerationResult, ImagePart, Message, StreamPart, ToolResultPart, Usage } from '../../generation/model.js';
import type { Capabilities } from '../../generation/provider.js';
import { isObject, toolArguments } from '../../wire/json.js';
import { parseBedrockModelId } from '../../config/cloud-model-ids.js';
import { CAPABILITIES as ANTHROPIC_CAPABILITIES, JSON_MODE_TOOL, JSON_OBJECT_ANSWER, answerMayBeText, claudeSampling, jsonModeFinish, thinkingBudget, toolOffer, type AnswerTool } from '../anthropic.js';
import { outputLimit } from '../translating-provider.js';
import type { Json } from '../upstream-client.js';

/**
 * Amazon Bedrock's Converse API, both ways: the body of `POST /model/{modelId}/converse` (and
 * `/converse-stream`) from the generation model, and whole answers and stream events back. Pure:
 * the provider owns signing, HTTP, the event-stream framing and exception frames.
 */

/**
 * What Converse honours. Claude's limits, since Claude is what most callers reach through it; a
 * model of another family is held to its own in `converseRequest` (no top_k, no reasoning).
 */
export const CONVERSE_CAPABILITIES: Capabilities = {
  ...ANTHROPIC_CAPABILITIES,
  upstream: 'the Amazon Bedrock Converse API',
  // Bedrock embeds through InvokeModel, not Converse: the provider says how many.
  maxEmbeddingInputs: 0,
};

/**
 * Whether a Bedrock model id names one of Anthropic's models: `anthropic.…`, an inference profile
 * (`us.anthropic.…`, `global.anthropic.…`), or an ARN of either. An application inference
 * profile's ARN names no model, and is taken for another family.
 */
export function isAnthropicModel(upstreamModel: string): boolean {
  return parseBedrockModelId(upstreamModel).vendor === 'anthropic';
}

/** Amazon Nova, by the same reading. */
function isNovaModel(upstreamModel: string): boolean {
  const { vendor, model } = parseBedrockModelId(upstreamModel);
  return vendor === 'amazon' && model !== undefined && model.startsWith('nova-');
}

/**
 * Claude takes all of Converse; so does Nova but for reasoning and top_k; the other families
 * (Llama, Mistral, …) go without cache points, a tool result's status and a named tool choice
 * (AWS's API reference: "only supported by Anthropic Claude and Amazon Nova models").
 */
type Family = 'anthropic' | 'nova' | 'other';

/** Converse's image formats by media type. */
const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

const CACHE_POINT: Json = { cachePoint: { type: 'default' } };

/** Who a request is mapped for: refusals name the model, and Claude takes what other families do not. */
interface Target {
  readonly model: CatalogueModel;
  readonly family: Family;
  /** The next document's name on Converse, unique in the request. */
  readonly nameDocument: (name: string | undefined) => string;
}

const TOOL_USE_ID = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Converse takes tool-use ids of 64 letters, digits, `_` and `-` at most; another vendor's id may
 * not be one. Rewritten the same way each time, so a call and its result still pair up; the digest
 * keeps apart two ids that would clean up alike.
 */
function toolUseId(id: string): string {
  if (TOOL_USE_ID.test(id)) return id;
  return `${id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 40)}_${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;
}

function imageBlock(part: ImagePart, target: Target): Json {
  const { source } = part;
  if (source.kind === 'url') {
    throw unsupported(target.model, CONVERSE_CAPABILITIES, 'image_url', 'an image by URL (Converse takes image bytes only: send it as a base64 `data:` URL)');
  }
  const format = Object.hasOwn(IMAGE_FORMATS, source.mediaType) ? IMAGE_FORMATS[source.mediaType] : undefined;
  if (format === undefined) throw unsupported(target.model, CONVERSE_CAPABILITIES, 'image_url', `an image of type ${source.mediaType} (Converse takes PNG, JPEG, GIF and WebP)`);
  return { image: { format, source: { bytes: source.data } } };
}

/** Converse's limit on documents in one request. */
export const MAX_DOCUMENTS = 5;
const DOCUMENT_FORMATS: Readonly<Record<DocumentMediaType, string>> = { 'application/pdf': 'pdf', 'text/plain': 'txt' };

/**
 * A name Converse takes: letters, digits, single spaces, hyphens, parentheses and square brackets.
 * A file's extension is dropped (the format says it); a name left empty becomes `document k`.
 */
export function documentName(name: string | undefined, k: number): string {
  // Cut to 190 of Converse's 200 characters, room left for a ` (k)` that keeps names apart.
  const clean = (name ?? '')
    .slice(0, 400)
    .replace(/\.[a-z0-9]{1,5}$/i, '')
    .replace(/[^a-zA-Z0-9\-()[\]]+/g, ' ')
    .trim()
    .slice(0, 190)
    .trimEnd();
  return clean === '' ? `document ${k}` : clean;
}

/**
 * Names each document of a request, in order, distinct from the others' (a repeated one gets
 * ` (2)`, …); beyond Converse's five documents the request is refused here, before anything is sent.
 */
function documentNamer(model: CatalogueModel): (name: string | undefined) => string {
  const taken = new Set<string>();
  return (wanted) => {
    if (taken.size === MAX_DOCUMENTS) throw unsupported(model, CONVERSE_CAPABILITIES, 'document', `more than ${MAX_DOCUMENTS} documents in one request (Converse's limit)`);
    const base = documentName(wanted, taken.size + 1);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base} (${n})`;
    taken.add(name);
    return name;
  };
}

function documentBlock(part: DocumentPart, target: Target): Json {
  const { source } = part;
  if (source.kind === 'url') {
    throw unsupported(target.model, CONVERSE_CAPABILITIES, 'document', 'a document by URL (Converse takes document bytes only: send it inline, base64)');
  }
  return { document: { format: DOCUMENT_FORMATS[source.mediaType], name: target.nameDocument(part.name), source: { bytes: source.data } } };
}

function toolResultBlock(part: ToolResultPart, target: Target): Json {
  return {
    toolResult: {
      toolUseId: toolUseId(part.toolCallId),
      content: part.content.filter((inner) => inner.type !== 'text' || inner.text !== '').map((inner) => (inner.type === 'text' ? { text: inner.text } : imageBlock(inner, target))),
      ...(part.isError && target.family !== 'other' ? { status: 'error' } : {}),
    },
  };
}

/**
 * One part as Converse blocks, a cache point after it where the caller marked one. Empty text is
 * left out (Converse refuses a blank text block), as is reasoning it cannot take back: without its
 * signature, or on a model of another family, which could not check Claude's.
 */
function blocksOf(part: ContentPart, role: 'user' | 'assistant', target: Target): Json[] {
  switch (part.type) {
    case 'text':
      if (part.text === '') return [];
      return part.cacheBreakpoint === true && target.family !== 'other' ? [{ text: part.text }, CACHE_POINT] : [{ text: part.text }];
    case 'image':
      return [imageBlock(part, target)];
    case 'document': {
      const block = documentBlock(part, target);
      return part.cacheBreakpoint === true && target.family !== 'other' ? [block, CACHE_POINT] : [block];
    }
    case 'tool_result': {
      const marked = target.family !== 'other' && part.content.some((inner) => inner.type === 'text' && inner.cacheBreakpoint === true);
      return marked ? [toolResultBlock(part, target), CACHE_POINT] : [toolResultBlock(part, target)];
    }
    case 'tool_call':
      return role === 'assistant' ? [{ toolUse: { toolUseId: toolUseId(part.id), name: part.name, input: toolArguments(part.arguments) } }] : [];
    case 'reasoning':
      if (role !== 'assistant' || target.family !== 'anthropic') return [];
      if (part.redactedData !== undefined) return [{ reasoningContent: { redactedContent: part.redactedData } }];
      return part.signature === undefined || part.signature === '' ? [] : [{ reasoningContent: { reasoningText: { text: part.text, signature: part.signature } } }];
  }
}

interface Turn {
  readonly role: 'user' | 'assistant';
  /** Each part's blocks kept together, so that sorting tool results first keeps their cache points behind them. */
  readonly groups: Json[][];
}

/**
 * Converse's conversation: system text apart, user and assistant turns alternating (consecutive
 * turns of one role merged; tool messages are the user's), tool results first in their turn, as
 * Claude requires and the other families accept.
 */
function conversation(messages: readonly Message[], target: Target): { system: Json[]; messages: Json[] } {
  const system: Json[] = [];
  const turns: Turn[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      for (const part of message.content) if (part.type === 'text') system.push(...blocksOf(part, 'user', target));
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const groups = message.content.map((part) => blocksOf(part, role, target)).filter((blocks) => blocks.length > 0);
    if (groups.length === 0) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.groups.push(...groups);
    else turns.push({ role, groups });
  }
  return {
    system,
    messages: turns.map((turn) => {
      if (turn.role === 'assistant') return { role: turn.role, content: turn.groups.flat() };
      const isResult = (group: Json[]) => group[0]!.toolResult !== undefined;
      return { role: turn.role, content: [...turn.groups.filter(isResult), ...turn.groups.filter((group) => !isResult(group))].flat() };
    }),
  };
}

/**
 * The tool whose input is the answer, for JSON output (as on Anthropic's own API: see
 * JSON_MODE_TOOL): any object for `json_object`, the caller's schema for `json_schema`, which must
 * then describe an object, since a tool's input is one.
 */
function answerTool(r: GenerationRequest, target: Target): AnswerTool | undefined {
  const format = r.responseFormat;
  if (format === undefined || format.type === 'text' || !answerMayBeText(r)) return undefined;
  if (format.type === 'json_object') return JSON_OBJECT_ANSWER;
  if (format.schema.type !== 'object') {
    throw unsupported(target.model, CONVERSE_CAPABILITIES, 'response_format', 'a JSON schema whose top level is not an object (the answer is a tool call, whose input is an object)');
  }
  return { schema: format.schema, description: `Give your answer: the JSON object asked for${format.description === undefined ? '' : ` (${format.description})`}, as this tool's input.` };
}

function hasToolBlocks(messages: readonly Json[]): boolean {
  return messages.some((message) => (message.content as Json[]).some((block) => block.toolUse !== undefined || block.toolResult !== undefined));
}

/**
 * `toolConfig`. Converse has no `none` choice; without tools declared the model can call none, so
 * under `none` they are left out, but a conversation holding tool calls or results must declare
 * them (Converse refuses it otherwise), and then `none` cannot be honoured: refused. Converse has no
 * switch for calls in parallel either: `parallel_tool_calls: false` is not honoured (the model decides).
 */
function toolConfig(r: GenerationRequest, target: Target, messages: readonly Json[]): Json {
  const offer = toolOffer(r, target.model, CONVERSE_CAPABILITIES, answerTool(r, target));
  if (offer === undefined) return {};
  if (offer.choice?.type === 'none') {
    if (hasToolBlocks(messages)) {
      throw unsupported(target.model, CONVERSE_CAPABILITIES, 'tool_choice', "tool_choice 'none' in a conversation that holds tool calls (Converse needs the tools declared then, and cannot forbid their use)");
    }
    return {};
  }
  const choice = offer.choice;
  // A named tool is forced on the other families as `any` over that one tool, which comes to the same.
  const narrowed = choice?.type === 'tool' && target.family === 'other' ? offer.tools.filter((tool) => tool.name === choice.name) : offer.tools;
  const tools = narrowed.map((tool) => ({
    toolSpec: { name: tool.name, ...(tool.description === undefined ? {} : { description: tool.description }), inputSchema: { json: tool.schema } },
  }));
  const toolChoice = choice?.type === 'tool' ? (target.family === 'other' ? { any: {} } : { tool: { name: choice.name } }) : choice?.type === 'any' ? { any: {} } : undefined;
  return { toolConfig: { tools, ...(toolChoice === undefined ? {} : { toolChoice }) } };
}

/** The body of POST /model/{modelId}/converse and /converse-stream (no modelId in it). */
export function converseRequest(request: GenerationRequest, model: CatalogueModel): Json {
  const r = request;
  const target: Target = {
    model,
    family: isAnthropicModel(model.upstreamModel) ? 'anthropic' : isNovaModel(model.upstreamModel) ? 'nova' : 'other',
    nameDocument: documentNamer(model),
  };
  // Answers are read without the request: a call of this name is always the answer's, never the caller's.
  if (r.tools.some((tool) => tool.name === JSON_MODE_TOOL)) throw unsupported(model, CONVERSE_CAPABILITIES, 'tools', `a tool named '${JSON_MODE_TOOL}' (the name Sluice gives the tool that carries JSON answers)`);
  if (target.family !== 'anthropic') {
    if (r.topK !== undefined) throw unsupported(model, CONVERSE_CAPABILITIES, 'top_k', "'top_k' (only Claude takes it through Converse)");
    if (r.reasoning !== undefined) throw unsupported(model, CONVERSE_CAPABILITIES, 'reasoning_effort', 'reasoning (through Converse, Sluice asks Claude models only for it)');
  }
  const { system, messages } = conversation(r.messages, target);
  // Claude gets the limit it gets on Anthropic's own API (its thinking budget must stay below it);
  // another family only the one the caller or the model's configuration set (Bedrock's default suits each).
  const maxTokens = target.family === 'anthropic' || r.maxOutputTokens !== undefined || model.maxOutputTokens !== undefined ? outputLimit(r, model) : undefined;
  const sampling = target.family === 'anthropic' ? claudeSampling(r, model, CONVERSE_CAPABILITIES) : { temperature: r.temperature, topP: r.topP, topK: undefined };
  const inferenceConfig = {
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(sampling.temperature === undefined ? {} : { temperature: sampling.temperature }),
    ...(sampling.topP === undefined ? {} : { topP: sampling.topP }),
    ...(r.stop.length > 0 ? { stopSequences: r.stop } : {}),
  };
  const additional = {
    ...(sampling.topK === undefined ? {} : { top_k: sampling.topK }),
    ...(r.reasoning === undefined || maxTokens === undefined ? {} : { thinking: { type: 'enabled', budget_tokens: thinkingBudget(r.reasoning.effort, model, CONVERSE_CAPABILITIES, maxTokens) } }),
  };
  return {
    messages,
    ...(system.length > 0 ? { system } : {}),
    ...(Object.keys(inferenceConfig).length > 0 ? { inferenceConfig } : {}),
    ...toolConfig(r, target, messages),
    ...(Object.keys(additional).length > 0 ? { additionalModelRequestFields: additional } : {}),
    // Converse says only that a stop sequence ended the text; Claude's own answer says which.
    ...(target.family === 'anthropic' && r.stop.length > 0 ? { additionalModelResponseFieldPaths: ['/stop_sequence'] } : {}),
  };
}

/**
 * Converse's stop reasons, with the stop sequence from the model's own fields where asked for. A
 * guardrail or the model's content filter ending the answer is a refusal.
 */
function finishOf(stopReason: unknown, modelFields: unknown): Finish {
  const raw = typeof stopReason === 'string' ? stopReason : undefined;
  switch (raw) {
    case 'end_turn':
      return { reason: 'stop', raw };
    case 'stop_sequence': {
      const sequence = isObject(modelFields) ? modelFields.stop_sequence : undefined;
      return typeof sequence === 'string' ? { reason: 'stop', raw, stopSequence: sequence } : { reason: 'stop', raw };
    }
    case 'tool_use':
      return { reason: 'tool_calls', raw };
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return { reason: 'length', raw };
    case 'guardrail_intervened':
    case 'content_filtered':
      return { reason: 'content_filter', raw };
    default:
      // malformed_model_output, malformed_tool_use, and reasons added later: the upstream gave up.
      return { reason: 'error', raw };
  }
}

/** Converse counts input without the cached part (`inputTokens`) and reports cache reads and writes beside it; Sluice's input is all of them. */
function usageOf(raw: Json): Usage {
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);
  const cachedInput = count(raw.cacheReadInputTokens);
  const cacheWrite = count(raw.cacheWriteInputTokens);
  return { input: count(raw.inputTokens) + cachedInput + cacheWrite, output: count(raw.outputTokens), cachedInput, cacheWrite, reasoning: 0 };
}

/** A whole Converse answer. `providerId` for unreadable-upstream errors. */
export function converseResult(body: Json, providerId: string): GenerationResult {
  const output = isObject(body.output) ? body.output : undefined;
  const message = output !== undefined && isObject(output.message) ? output.message : undefined;
  if (message === undefined || !Array.isArray(message.content)) throw unreadableUpstream(providerId, 'a Converse answer without output.message.content');
  const content: ContentPart[] = [];
  let jsonAnswers = 0;
  for (const block of message.content as unknown[]) {
    if (!isObject(block)) continue;
    if (typeof block.text === 'string') content.push({ type: 'text', text: block.text });
    else if (isObject(block.toolUse)) {
      const use = block.toolUse;
      if (use.name === JSON_MODE_TOOL) {
        jsonAnswers++;
        content.push({ type: 'text', text: JSON.stringify(use.input ?? {}) });
      } else content.push({ type: 'tool_call', id: String(use.toolUseId ?? ''), name: String(use.name ?? ''), arguments: JSON.stringify(use.input ?? {}) });
    } else if (isObject(block.reasoningContent)) {
      const reasoning = block.reasoningContent;
      if (typeof reasoning.redactedContent === 'string') content.push({ type: 'reasoning', text: '', redactedData: reasoning.redactedContent });
      else if (isObject(reasoning.reasoningText)) {
        const { text, signature } = reasoning.reasoningText;
        content.push({ type: 'reasoning', text: typeof text === 'string' ? text : '', ...(typeof signature === 'string' ? { signature } : {}) });
      }
    }
  }
  const callerToolCalls = content.filter((part) => part.type === 'tool_call').length;
  return {
    id: '',
    created: Math.floor(Date.now() / 1000),
    choices: [{ index: 0, content, finish: jsonModeFinish(finishOf(body.stopReason, body.additionalModelResponseFields), callerToolCalls, jsonAnswers), logprobs: undefined }],
    usage: isObject(body.usage) ? usageOf(body.usage) : null,
  };
}

/** One decoded ConverseStream event: its `:event-type` header and its JSON payload. */
export interface ConverseStreamEvent {
  readonly eventType: string;
  readonly payload: Json;
}

/**
 * The stream's parts, in the order the other adapters yield them (start, content…, finish, usage).
 * messageStart → contentBlockStart / contentBlockDelta / contentBlockStop … → messageStop (the stop
 * reason) → metadata (usage): the finish goes out at messageStop, the usage when metadata comes.
 */
export async function* converseStreamParts(events: AsyncIterable<ConverseStreamEvent>, providerId: string): AsyncGenerator<StreamPart> {
  let started = false;
  let stopped = false;
  /** Usage is reported once, after the finish: metadata follows messageStop. */
  let usage: Usage | undefined;
  let usageSent = false;
  /** Content block index → tool-call index, for the blocks that are the caller's tool calls. */
  const toolCalls = new Map<number, number>();
  /** Content block index → whether JSON text came yet, for the answer tool's calls (their input is the answer's text). */
  const jsonAnswers = new Map<number, boolean>();
  for await (const { eventType, payload } of events) {
    if (!started && eventType !== 'messageStart') throw unreadableUpstream(providerId, `a Converse stream that began with ${eventType} rather than messageStart`);
    // Only usage may follow the finish.
    if (stopped && eventType !== 'metadata') continue;
    const index = Number(payload.contentBlockIndex);
    switch (eventType) {
      case 'messageStart':
        if (!started) yield { type: 'start', id: '', created: Math.floor(Date.now() / 1000) };
        started = true;
        break;
      case 'contentBlockStart': {
        const start = isObject(payload.start) ? payload.start : {};
        if (!isObject(start.toolUse)) break;
        if (start.toolUse.name === JSON_MODE_TOOL) {
          jsonAnswers.set(index, false);
          break;
        }
        const toolIndex = toolCalls.size;
        toolCalls.set(index, toolIndex);
        yield { type: 'tool_call_start', choice: 0, index: toolIndex, id: String(start.toolUse.toolUseId ?? ''), name: String(start.toolUse.name ?? '') };
        break;
      }
      case 'contentBlockDelta': {
        const delta = isObject(payload.delta) ? payload.delta : {};
        if (typeof delta.text === 'string') {
          if (delta.text !== '') yield { type: 'text', choice: 0, text: delta.text };
        } else if (isObject(delta.toolUse) && typeof delta.toolUse.input === 'string' && delta.toolUse.input !== '') {
          const fragment = delta.toolUse.input;
          if (jsonAnswers.has(index)) {
            jsonAnswers.set(index, true);
            yield { type: 'text', choice: 0, text: fragment };
          } else {
            const toolIndex = toolCalls.get(index);
            if (toolIndex !== undefined) yield { type: 'tool_call_delta', choice: 0, index: toolIndex, arguments: fragment };
          }
        } else if (isObject(delta.reasoningContent)) {
          const reasoning = delta.reasoningContent;
          if (typeof reasoning.text === 'string' && reasoning.text !== '') yield { type: 'reasoning', choice: 0, text: reasoning.text };
          else if (typeof reasoning.signature === 'string') yield { type: 'reasoning_signature', choice: 0, signature: reasoning.signature };
          else if (typeof reasoning.redactedContent === 'string') yield { type: 'redacted_reasoning', choice: 0, data: reasoning.redactedContent };
        }
        break;
      }
      case 'contentBlockStop': {
        // An empty input streams no fragment at all; the answer is still an object.
        if (jsonAnswers.get(index) === false) yield { type: 'text', choice: 0, text: '{}' };
        const toolIndex = toolCalls.get(index);
        if (toolIndex !== undefined) yield { type: 'tool_call_end', choice: 0, index: toolIndex };
        break;
      }
      case 'messageStop':
        if (stopped) break;
        stopped = true;
        yield { type: 'finish', choice: 0, finish: jsonModeFinish(finishOf(payload.stopReason, payload.additionalModelResponseFields), toolCalls.size, jsonAnswers.size) };
        break;
      case 'metadata':
        if (isObject(payload.usage)) usage ??= usageOf(payload.usage);
        break;
      default:
        break; // event types added later
    }
    if (stopped && usage !== undefined && !usageSent) {
      usageSent = true;
      yield { type: 'usage', usage };
    }
  }
  if (!stopped) throw unreadableUpstream(providerId, 'a Converse stream that ended before messageStop');
}
