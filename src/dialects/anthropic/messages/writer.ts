import type { AnswerSink } from '../../../generation/operation.js';
import type { GatewayError } from '../../../core/errors.js';
import { newGenerationId } from '../../../generation/fan-out.js';
import { usageOf, type ContentPart, type Finish, type GenerationResult, type StreamPart, type Usage } from '../../../generation/model.js';
import { ChunkedWriter, type StreamWriter } from '../../reply.js';
import { anthropicErrorObject } from '../dialect.js';
import { toolArguments } from '../../../wire/json.js';
import { UPSTREAM_TEXT, type RelayedEvent } from '../../../wire/relay-format.js';

const ANTHROPIC_STOP_REASONS = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded']);

/** Anthropic's stop reason for a finish: the upstream's own word when it is one of Anthropic's. */
export function stopReasonOf(finish: Finish): string {
  if (finish.raw !== undefined && ANTHROPIC_STOP_REASONS.has(finish.raw)) return finish.raw;
  switch (finish.reason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return finish.stopSequence === undefined ? 'end_turn' : 'stop_sequence';
  }
}

/** Anthropic counts cache reads and writes apart from `input_tokens`; Sluice's input holds them all. */
export function wireUsage(usage: Usage) {
  return {
    input_tokens: Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite),
    output_tokens: usage.output,
    cache_creation_input_tokens: usage.cacheWrite,
    cache_read_input_tokens: usage.cachedInput,
  };
}

function block(part: ContentPart): Record<string, unknown> | undefined {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'reasoning':
      if (part.redactedData !== undefined) return { type: 'redacted_thinking', data: part.redactedData };
      return { type: 'thinking', thinking: part.text, signature: part.signature ?? '' };
    case 'tool_call':
      return { type: 'tool_use', id: part.id, name: part.name, input: toolArguments(part.arguments) };
    default:
      return undefined;
  }
}

/** A whole translated answer as Anthropic's `message` object. */
export function messageBody(result: GenerationResult, publicModel: string, usage: Usage): string {
  const choice = result.choices[0];
  const content: Record<string, unknown>[] = [];
  for (const part of choice?.content ?? []) {
    const wire = block(part);
    // A reasoning signature alone (Gemini's, riding on the next part) joins the thinking block before it.
    if (wire !== undefined && !(part.type === 'text' && part.text === '')) content.push(wire);
  }
  const finish = choice?.finish ?? { reason: 'stop', raw: undefined };
  return JSON.stringify({
    id: newGenerationId('msg_'),
    type: 'message',
    role: 'assistant',
    model: publicModel,
    content,
    stop_reason: stopReasonOf(finish),
    stop_sequence: finish.stopSequence ?? null,
    usage: wireUsage(usage),
  });
}

type OpenBlock = { readonly kind: 'text' | 'thinking' | 'tool_use'; readonly index: number; readonly toolIndex?: number };

/** Anthropic's named server-sent events. */
abstract class AnthropicEventWriter extends ChunkedWriter implements StreamWriter {
  protected async event(type: string, data: unknown): Promise<void> {
    await this.write(`event: ${type}\ndata: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  abstract openEmpty(): void;
  abstract close(usage: Usage): Promise<void>;

  async fail(error: GatewayError): Promise<void> {
    await this.event('error', { type: 'error', error: anthropicErrorObject(error) });
  }
}

/**
 * A translated stream in Anthropic's framing: message_start (with usage, which the SDKs require),
 * then content blocks opened and closed as the parts change kind, then message_delta with the stop
 * reason and the whole usage, and message_stop.
 */
export class MessagesStreamWriter extends AnthropicEventWriter {
  private open: OpenBlock | undefined;
  private blocks = 0;
  private readonly toolBlocks = new Map<number, number>();
  private finish: Finish = { reason: 'stop', raw: undefined };

  constructor(
    sink: AnswerSink,
    private readonly publicModel: string,
  ) {
    super(sink);
  }

  /** `inputTokens`: what message_start reports, before the upstream has said (clients such as LangChain read input usage only there). */
  async begin(id: string, inputTokens: number): Promise<void> {
    this.start();
    const message = { id, type: 'message', role: 'assistant', model: this.publicModel, content: [], stop_reason: null, stop_sequence: null, usage: wireUsage(usageOf(inputTokens, 0)) };
    await this.event('message_start', { type: 'message_start', message });
  }

  openEmpty(): void {
    void this.begin(newGenerationId('msg_'), 0);
  }

  async part(part: StreamPart): Promise<void> {
    // Anthropic has no `n`: only the first choice is asked for.
    if ('choice' in part && part.choice !== 0) return;
    switch (part.type) {
      case 'text':
        if (part.text === '') return;
        await this.ensure('text', { type: 'text', text: '' });
        return this.delta({ type: 'text_delta', text: part.text });
      case 'reasoning':
        await this.ensure('thinking', { type: 'thinking', thinking: '', signature: '' });
        return this.delta({ type: 'thinking_delta', thinking: part.text });
      case 'reasoning_signature':
        await this.ensure('thinking', { type: 'thinking', thinking: '', signature: '' });
        await this.delta({ type: 'signature_delta', signature: part.signature });
        return this.closeOpen();
      case 'redacted_reasoning':
        await this.closeOpen();
        await this.event('content_block_start', { type: 'content_block_start', index: this.blocks, content_block: { type: 'redacted_thinking', data: part.data } });
        await this.event('content_block_stop', { type: 'content_block_stop', index: this.blocks++ });
        return;
      case 'tool_call_start':
        await this.closeOpen();
        this.toolBlocks.set(part.index, this.blocks);
        this.open = { kind: 'tool_use', index: this.blocks, toolIndex: part.index };
        await this.event('content_block_start', { type: 'content_block_start', index: this.blocks++, content_block: { type: 'tool_use', id: part.id, name: part.name, input: {} } });
        return;
      case 'tool_call_delta': {
        const index = this.toolBlocks.get(part.index);
        if (index !== undefined && part.arguments !== '') await this.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part.arguments } });
        return;
      }
      case 'tool_call_end':
        if (this.open?.toolIndex === part.index) await this.closeOpen();
        return;
      case 'finish':
        this.finish = part.finish;
        return;
      default:
        return; // start and usage: the operation handles them
    }
  }

  async close(usage: Usage): Promise<void> {
    await this.closeOpen();
    await this.event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(this.finish), stop_sequence: this.finish.stopSequence ?? null },
      usage: wireUsage(usage),
    });
    await this.event('message_stop', { type: 'message_stop' });
    this.endWith('');
  }

  private async ensure(kind: 'text' | 'thinking', contentBlock: Record<string, unknown>): Promise<void> {
    if (this.open?.kind === kind) return;
    await this.closeOpen();
    this.open = { kind, index: this.blocks };
    await this.event('content_block_start', { type: 'content_block_start', index: this.blocks++, content_block: contentBlock });
  }

  private async delta(delta: Record<string, unknown>): Promise<void> {
    await this.event('content_block_delta', { type: 'content_block_delta', index: this.open!.index, delta });
  }

  private async closeOpen(): Promise<void> {
    if (this.open === undefined) return;
    const { index } = this.open;
    this.open = undefined;
    await this.event('content_block_stop', { type: 'content_block_stop', index });
  }
}

/** An Anthropic upstream's own events, passed on as they came but for the model's name. */
export class RelayedMessagesWriter extends AnthropicEventWriter {
  private stopped = false;

  constructor(
    sink: AnswerSink,
    private readonly publicModel: string,
  ) {
    super(sink);
  }

  async relayed(event: Readonly<Record<string, unknown>>): Promise<void> {
    this.start();
    const type = String(event.type);
    if (type === 'message_start' && typeof event.message === 'object' && event.message !== null) {
      await this.event(type, { ...event, message: { ...event.message, model: this.publicModel } });
      return;
    }
    if (type === 'message_stop') this.stopped = true;
    // Every other event as the upstream wrote it, where its data is one line; else serialised again.
    const text = (event as RelayedEvent)[UPSTREAM_TEXT];
    await this.event(type, text !== undefined && !text.includes('\n') ? text : JSON.stringify(event));
  }

  openEmpty(): void {
    this.start();
  }

  async close(): Promise<void> {
    if (!this.stopped) await this.event('message_stop', { type: 'message_stop' });
    this.endWith('');
  }
}
