import { DEFAULT_MAX_TOKENS, type ChatCapabilities, type ChatTurn } from '../completions/chat-translation.js';
import type { CompletionCall, CompletionEvent, FinishReason, Usage } from '../completions/completion.js';
import type { TurnResult } from '../completions/fan-out.js';
import type { ProviderConfig } from '../config/config-file.js';
import { ChatTranslatingProvider } from './chat-translating-provider.js';
import { isObject, UpstreamClient, type Json, type ResponseBody } from './upstream-client.js';
import { unreadableUpstream } from './upstream-errors.js';

export const ANTHROPIC_CAPABILITIES: ChatCapabilities = {
  upstream: 'the Anthropic Messages API',
  maxTemperature: 1,
  maxStopSequences: null,
  logprobs: false,
  logitBias: false,
  penalties: false,
  maxChoicesPerCall: 1, // no `n`: one call per choice
  forwardsUnknownFields: false,
  mappedFields: ['top_k'],
};

/** end_turn / stop_sequence → stop; max_tokens → length; refusal → content_filter. */
function finishReason(stopReason: unknown): FinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

function usageOf(raw: unknown, outputTokens?: number): Usage | null {
  if (!isObject(raw)) return null;
  // Cached input is still input the caller sent.
  const input = Number(raw.input_tokens ?? 0) + Number(raw.cache_creation_input_tokens ?? 0) + Number(raw.cache_read_input_tokens ?? 0);
  const output = outputTokens ?? Number(raw.output_tokens ?? 0);
  return Number.isFinite(input) && Number.isFinite(output) ? { promptTokens: input, completionTokens: output } : null;
}

/** Legacy completions through Anthropic's Messages API: each prompt is one user turn. */
export class AnthropicProvider extends ChatTranslatingProvider {
  readonly kind = 'anthropic';

  constructor(config: ProviderConfig) {
    const credentials = {
      ...(config.api_key === undefined ? {} : { 'x-api-key': config.api_key }),
      'anthropic-version': config.anthropic_version,
    };
    super(config.id, new UpstreamClient(config, credentials), ANTHROPIC_CAPABILITIES);
  }

  private body(turn: ChatTurn, call: CompletionCall, stream: boolean): Json {
    const r = call.request;
    return {
      model: call.model.upstreamModel,
      max_tokens: r.maxTokens ?? DEFAULT_MAX_TOKENS,
      messages: [{ role: 'user', content: turn.prompt }],
      stop_sequences: r.stop.length > 0 ? r.stop : undefined,
      temperature: r.temperature,
      top_p: r.topP,
      top_k: r.body.top_k,
      metadata: r.user === undefined ? undefined : { user_id: r.user },
      stream: stream || undefined,
    };
  }

  async completeTurn(turn: ChatTurn, call: CompletionCall): Promise<TurnResult> {
    const message = await this.client.postJson('/messages', this.body(turn, call, false), call);
    if (!Array.isArray(message.content)) throw unreadableUpstream(this.id, 'a message without content');
    const text = (message.content as unknown[])
      .filter((block): block is Json => isObject(block) && block.type === 'text')
      .map((block) => String(block.text ?? ''))
      .join('');
    return {
      choices: [{ index: 0, text, logprobs: null, finishReason: finishReason(message.stop_reason) }],
      usage: usageOf(message.usage),
    };
  }

  async streamTurn(turn: ChatTurn, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    const response = await this.client.post('/messages', this.body(turn, call, true), call);
    return this.events(response.body);
  }

  /** message_start → content_block_delta (text_delta)… → message_delta (stop_reason) → message_stop. */
  private async *events(body: ResponseBody): AsyncGenerator<CompletionEvent> {
    let inputUsage: unknown;
    let reason: FinishReason = 'stop';
    let outputTokens: number | undefined;
    let stopped = false;
    // Read on past message_stop to the end of the body, so the connection goes back to the pool.
    for await (const { data } of this.client.events(body)) {
      if (stopped) continue;
      const event = this.client.parseEvent(data);
      switch (event.type) {
        case 'message_start':
          inputUsage = isObject(event.message) ? event.message.usage : undefined;
          break;
        case 'content_block_delta': {
          const delta = isObject(event.delta) ? event.delta : {};
          if (delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') {
            yield { type: 'choice', index: 0, text: delta.text, logprobs: null, finishReason: null };
          }
          break;
        }
        case 'message_delta': {
          const delta = isObject(event.delta) ? event.delta : {};
          if (delta.stop_reason != null) reason = finishReason(delta.stop_reason);
          if (isObject(event.usage) && typeof event.usage.output_tokens === 'number') outputTokens = event.usage.output_tokens;
          break;
        }
        case 'message_stop': {
          yield { type: 'choice', index: 0, text: '', logprobs: null, finishReason: reason };
          const usage = usageOf(inputUsage, outputTokens);
          if (usage !== null && outputTokens !== undefined) yield { type: 'usage', usage };
          stopped = true;
          break;
        }
        case 'error': {
          const error = isObject(event.error) ? event.error : {};
          const message = typeof error.message === 'string' ? error.message : undefined;
          throw this.client.midStreamFailure(message, error.type === 'overloaded_error' ? 'upstream_overloaded' : 'upstream_error');
        }
        default:
          break; // ping, content_block_start/stop, and event types added later
      }
    }
    if (!stopped) throw unreadableUpstream(this.id, 'a stream that ended before message_stop');
  }
}
