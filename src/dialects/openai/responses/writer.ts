import type { AnswerSink } from '../../../generation/operation.js';
import type { GatewayError } from '../../../core/errors.js';
import { newGenerationId } from '../../../generation/fan-out.js';
import type { ContentPart, Finish, StreamPart, Usage } from '../../../generation/model.js';
import { ChunkedWriter, SSE_HEADERS, type StreamWriter } from '../../reply.js';
import { openAIErrorObject } from '../errors.js';
import { sealReasoning } from './reasoning.js';
import type { Item, ResponsesBody } from './request.js';
import { CustomInputStream, customInput, type ResponsesTools } from './tools.js';
import { isObject } from '../../../wire/json.js';

type Json = Record<string, unknown>;

/** What a response object repeats of its request, and its identity. */
export interface ResponseHead {
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
  /** The public model id. */
  readonly model: string;
  readonly body: ResponsesBody;
}

export function newResponseHead(body: ResponsesBody, id = newGenerationId('resp_'), createdAt = Math.floor(Date.now() / 1000)): ResponseHead {
  return { id, createdAt, model: body.model, body };
}

/** OpenAI's usage of a response: input includes the cached tokens, output the reasoning ones. */
export function wireUsage(usage: Usage) {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cachedInput },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
}

type Status = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Status and incomplete_details of a finished answer. */
function ending(finish: Finish): { status: Status; incomplete: Json | null } {
  if (finish.reason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish.reason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The whole `response` object, as OpenAI frames it. */
export function responseObject(head: ResponseHead, status: Status, output: readonly Item[], usage: Usage | null, extra: { incomplete?: Json | null; error?: Json | null } = {}): Json {
  const b = head.body;
  return {
    id: head.id,
    object: 'response',
    created_at: head.createdAt,
    status,
    background: false,
    error: extra.error ?? null,
    incomplete_details: extra.incomplete ?? null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: head.model,
    output,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    prompt_cache_key: b.prompt_cache_key ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: b.reasoning?.summary ?? null },
    store: b.store !== false,
    temperature: b.temperature ?? 1,
    text: { format: b.text?.format ?? { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage: usage === null ? null : wireUsage(usage),
    user: b.user ?? null,
    metadata: b.metadata ?? {},
  };
}

const outputText = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });
const messageItem = (id: string, status: string, text: string | undefined) => ({ id, type: 'message', status, role: 'assistant', content: text === undefined ? [] : [outputText(text)] });
const reasoningItem = (id: string, text: string, encrypted: string | null) => ({ id, type: 'reasoning', summary: text === '' ? [] : [{ type: 'summary_text', text }], encrypted_content: encrypted });

/**
 * A tool call as the caller offered the tool: a `function_call` (with its `namespace` when the
 * function was in one), or a `custom_tool_call` whose `input` is the text the upstream gave its
 * function; `args` are the whole arguments (empty while a stream has yet to bring them).
 */
function callItem(tools: ResponsesTools, callId: string, flatName: string, args: string, status: 'in_progress' | 'completed'): Json {
  const origin = tools.origin(flatName);
  const namespace = origin?.namespace === undefined ? {} : { namespace: origin.namespace };
  if (origin?.kind === 'custom') {
    return { id: newGenerationId('ctc_'), type: 'custom_tool_call', status, call_id: callId, name: origin.name, ...namespace, input: status === 'completed' ? customInput(args) : '' };
  }
  return { id: newGenerationId('fc_'), type: 'function_call', status, arguments: args, call_id: callId, name: origin?.name ?? flatName, ...namespace };
}

/**
 * The output items of a translated answer: runs of text become one message, each reasoning part a
 * reasoning item (a signature alone, as Gemini sends it on the part after the thought, joins the
 * unsigned reasoning before it), each tool call the caller's own shape of it (callItem) under the
 * upstream's `call_id`.
 */
export function outputItems(content: readonly ContentPart[], providerKind: string, finish: Finish, tools: ResponsesTools): Item[] {
  const items: Json[] = [];
  let text: string | undefined;
  const flushText = () => {
    if (text !== undefined) items.push(messageItem(newGenerationId('msg_'), finish.reason === 'length' ? 'incomplete' : 'completed', text));
    text = undefined;
  };
  for (const part of content) {
    if (part.type === 'text') {
      if (part.text !== '' || text !== undefined) text = (text ?? '') + part.text;
    } else if (part.type === 'reasoning') {
      flushText();
      const last = items.at(-1);
      if (part.text === '' && part.signature !== undefined && last?.type === 'reasoning' && last.encrypted_content === null) {
        last.encrypted_content = sealReasoning(providerKind, part);
        continue;
      }
      items.push(reasoningItem(newGenerationId('rs_'), part.text, sealReasoning(providerKind, part)));
    } else if (part.type === 'tool_call') {
      flushText();
      items.push(callItem(tools, part.id, part.name, part.arguments, 'completed'));
    }
  }
  flushText();
  return items;
}

/** A whole translated response. */
export function translatedResponse(head: ResponseHead, content: readonly ContentPart[], finish: Finish, usage: Usage, providerKind: string, tools: ResponsesTools): Json {
  const { status, incomplete } = ending(finish);
  return responseObject(head, status, outputItems(content, providerKind, finish, tools), usage, { incomplete });
}

/** Responses' typed server-sent events, numbered in order. */
abstract class ResponsesEventWriter extends ChunkedWriter implements StreamWriter {
  protected sequence = 0;

  constructor(sink: AnswerSink, extraHeaders: Readonly<Record<string, string>>) {
    super(sink, { ...SSE_HEADERS, ...extraHeaders });
  }

  protected async event(type: string, data: Json): Promise<void> {
    await this.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: this.sequence++ })}\n\n`);
  }

  abstract openEmpty(): void;
  abstract close(usage: Usage): Promise<void>;
  abstract fail(error: GatewayError): Promise<void>;

  /** A failure after the stream began, as OpenAI reports one: `response.failed`, then `error`. */
  protected async failWith(response: Json, error: GatewayError): Promise<void> {
    const wire = openAIErrorObject(error);
    const code = wire.code ?? (error.status >= 500 ? 'server_error' : wire.type);
    await this.event('response.failed', { response: { ...response, status: 'failed', error: { code, message: wire.message } } });
    await this.event('error', { code, message: wire.message, param: wire.param });
    this.endWith('');
  }
}

interface OpenItem {
  readonly kind: 'message' | 'reasoning';
  readonly index: number;
  readonly id: string;
  text: string;
  /** Whether the summary part (reasoning) has been announced. */
  partAdded: boolean;
  encrypted: string | null;
}

/**
 * A translated stream in the Responses API's framing. Items open and close as the parts change
 * kind; every event names its item's `output_index` (and `content_index` / `summary_index`) in the
 * order the items were added, which the openai SDK's stream helper checks. `complete` is given the
 * final response before `response.completed` goes out, so that it is stored by the time a caller
 * who saw it continues the conversation.
 */
export class ResponsesStreamWriter extends ResponsesEventWriter {
  private readonly items: Json[] = [];
  private open: OpenItem | undefined;
  /** Open tool calls by the upstream's index, their arguments so far; a custom tool's input is told from them as it comes. */
  private readonly calls = new Map<number, { index: number; id: string; item: Json; args: string; input: CustomInputStream | undefined }>();
  private finish: Finish = { reason: 'stop', raw: undefined };
  /** A signature that came while a message was open: a reasoning item of its own once the message closes. */
  private signatureAfterText: string | undefined;

  constructor(
    sink: AnswerSink,
    private readonly head: ResponseHead,
    private readonly providerKind: string,
    private readonly tools: ResponsesTools,
    extraHeaders: Readonly<Record<string, string>>,
    private readonly complete: (response: Json, usage: Usage) => Promise<void>,
  ) {
    super(sink, extraHeaders);
  }

  async begin(): Promise<void> {
    this.start();
    const response = responseObject(this.head, 'in_progress', [], null);
    await this.event('response.created', { response });
    await this.event('response.in_progress', { response });
  }

  openEmpty(): void {
    void this.begin();
  }

  async part(part: StreamPart): Promise<void> {
    // The Responses API has no `n`: one answer is asked for.
    if ('choice' in part && part.choice !== 0) return;
    switch (part.type) {
      case 'text':
        if (part.text === '') return;
        await this.ensure('message');
        this.open!.text += part.text;
        await this.event('response.output_text.delta', { item_id: this.open!.id, output_index: this.open!.index, content_index: 0, delta: part.text, logprobs: [] });
        return;
      case 'reasoning': {
        if (part.text === '') return;
        const open = await this.ensure('reasoning');
        if (!open.partAdded) {
          open.partAdded = true;
          await this.event('response.reasoning_summary_part.added', { item_id: open.id, output_index: open.index, summary_index: 0, part: { type: 'summary_text', text: '' } });
        }
        open.text += part.text;
        await this.event('response.reasoning_summary_text.delta', { item_id: open.id, output_index: open.index, summary_index: 0, delta: part.text });
        return;
      }
      case 'reasoning_signature': {
        // Gemini signs the last part of its answer, text too: the message is not cut for it, the signature follows it.
        if (this.open?.kind === 'message') {
          this.signatureAfterText = part.signature;
          return;
        }
        return this.sealed(part.signature);
      }
      case 'redacted_reasoning': {
        const open = await this.ensure('reasoning', true);
        open.encrypted = sealReasoning(this.providerKind, { redactedData: part.data });
        return this.closeOpen();
      }
      case 'tool_call_start': {
        await this.closeOpen();
        const index = this.items.length;
        const item = callItem(this.tools, part.id, part.name, '', 'in_progress');
        this.items.push(item);
        this.calls.set(part.index, { index, id: item.id as string, item, args: '', input: item.type === 'custom_tool_call' ? new CustomInputStream() : undefined });
        await this.event('response.output_item.added', { output_index: index, item });
        return;
      }
      case 'tool_call_delta': {
        const call = this.calls.get(part.index);
        if (call === undefined || part.arguments === '') return;
        call.args += part.arguments;
        if (call.input !== undefined) {
          const told = call.input.next(call.args);
          if (told !== '') await this.event('response.custom_tool_call_input.delta', { item_id: call.id, output_index: call.index, delta: told });
          return;
        }
        call.item.arguments = call.args;
        await this.event('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: part.arguments });
        return;
      }
      case 'tool_call_end':
        return this.closeCall(part.index);
      case 'finish':
        this.finish = part.finish;
        return;
      default:
        return; // start and usage: the operation handles them
    }
  }

  /** The final response, as it stands: what `complete` stores and `response.completed` carries. */
  private final(usage: Usage): Json {
    const { status, incomplete } = ending(this.finish);
    return responseObject(this.head, status, this.items, usage, { incomplete });
  }

  async close(usage: Usage): Promise<void> {
    await this.closeOpen();
    for (const index of [...this.calls.keys()]) await this.closeCall(index);
    const response = this.final(usage);
    await this.complete(response, usage);
    await this.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
    this.endWith('');
  }

  async fail(error: GatewayError): Promise<void> {
    await this.failWith(responseObject(this.head, 'failed', this.items, null), error);
  }

  private async ensure(kind: 'message' | 'reasoning', fresh = false): Promise<OpenItem> {
    if (!fresh && this.open?.kind === kind) return this.open;
    await this.closeOpen();
    const index = this.items.length;
    const id = newGenerationId(kind === 'message' ? 'msg_' : 'rs_');
    const item = kind === 'message' ? messageItem(id, 'in_progress', undefined) : reasoningItem(id, '', null);
    this.items.push(item);
    this.open = { kind, index, id, text: '', partAdded: false, encrypted: null };
    await this.event('response.output_item.added', { output_index: index, item });
    if (kind === 'message') await this.event('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: outputText('') });
    return this.open;
  }

  private async closeOpen(): Promise<void> {
    const open = this.open;
    if (open === undefined) return;
    this.open = undefined;
    const base = { item_id: open.id, output_index: open.index };
    let item: Json;
    if (open.kind === 'message') {
      await this.event('response.output_text.done', { ...base, content_index: 0, text: open.text, logprobs: [] });
      await this.event('response.content_part.done', { ...base, content_index: 0, part: outputText(open.text) });
      item = messageItem(open.id, this.finish.reason === 'length' ? 'incomplete' : 'completed', open.text);
    } else {
      if (open.partAdded) {
        await this.event('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: open.text });
        await this.event('response.reasoning_summary_part.done', { ...base, summary_index: 0, part: { type: 'summary_text', text: open.text } });
      }
      item = reasoningItem(open.id, open.text, open.encrypted);
    }
    this.items[open.index] = item;
    await this.event('response.output_item.done', { output_index: open.index, item });
    const signature = this.signatureAfterText;
    this.signatureAfterText = undefined;
    if (signature !== undefined) await this.sealed(signature);
  }

  /** The open reasoning sealed with its signature, or a reasoning item of the signature alone. */
  private async sealed(signature: string): Promise<void> {
    const open = this.open?.kind === 'reasoning' && this.open.encrypted === null ? this.open : await this.ensure('reasoning', true);
    open.encrypted = sealReasoning(this.providerKind, { signature });
    await this.closeOpen();
  }

  private async closeCall(toolIndex: number): Promise<void> {
    const call = this.calls.get(toolIndex);
    if (call === undefined) return;
    this.calls.delete(toolIndex);
    call.item.status = 'completed';
    const base = { item_id: call.id, output_index: call.index };
    if (call.input !== undefined) {
      const input = customInput(call.args);
      call.item.input = input;
      // What the stream did not tell (arguments of another shape: all of it); `done` has the whole input either way.
      const rest = input.startsWith(call.input.told) ? input.slice(call.input.told.length) : '';
      if (rest !== '') await this.event('response.custom_tool_call_input.delta', { ...base, delta: rest });
      await this.event('response.custom_tool_call_input.done', { ...base, input });
    } else await this.event('response.function_call_arguments.done', { ...base, name: call.item.name, arguments: call.item.arguments });
    await this.event('response.output_item.done', { output_index: call.index, item: call.item });
  }
}

/**
 * A native Responses upstream's own events, passed on as they came, numbered as they came, but
 * for the response objects: the public model id, and the caller's own `store` and
 * `previous_response_id` (Sluice keeps the conversation and asks the upstream to keep nothing).
 * The final response goes to `complete` before its event is passed on.
 */
export class RelayedResponsesWriter extends ResponsesEventWriter {
  private snapshot: Json | undefined;
  private ended = false;

  constructor(
    sink: AnswerSink,
    private readonly rewrite: (response: Json) => Json,
    private readonly complete: (response: Json) => Promise<void>,
  ) {
    super(sink, {});
  }

  async relayed(event: Json): Promise<void> {
    // The caller's answer ended with its last event; what the upstream sends after it is not the caller's.
    if (this.sink.ended) return;
    this.start();
    if (typeof event.sequence_number === 'number') this.sequence = event.sequence_number + 1;
    const type = String(event.type);
    let out = event;
    if (isObject(event.response)) {
      const response = this.rewrite(event.response);
      this.snapshot = response;
      out = { ...event, response };
      if (type === 'response.completed' || type === 'response.incomplete') await this.complete(response);
    }
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed' || type === 'error') this.ended = true;
    const frame = `event: ${type}\ndata: ${JSON.stringify(out)}\n\n`;
    // The answer ends with its last event, in one write, not when the upstream gets round to closing its
    // stream: a client may hang up as soon as it has `response.completed` (Codex does), and that is no early leave.
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'error') this.endWith(frame);
    else await this.write(frame);
  }

  openEmpty(): void {
    this.start();
  }

  async close(): Promise<void> {
    this.endWith('');
  }

  async fail(error: GatewayError): Promise<void> {
    if (this.ended) return this.endWith('');
    await this.failWith(this.snapshot ?? {}, error);
  }
}
