import { checkTranslatable } from '../completions/chat-translation.js';
import type { Completion, CompletionCall, CompletionChoice, CompletionEvent, LegacyLogprobs, Usage } from '../completions/completion.js';
import { completeByTurns, streamByTurns } from '../completions/fan-out.js';
import type { ProviderConfig } from '../config/config-file.js';
import { OPENAI_CHAT_CAPABILITIES, OpenAIChatTurns } from './openai-chat.js';
import type { Provider } from './provider.js';
import { toUsage } from './openai-wire.js';
import { isObject, readErrorBody, UpstreamClient, type Json, type ResponseBody } from './upstream-client.js';
import { unreadableUpstream } from './upstream-errors.js';

/**
 * Any server that speaks OpenAI's API (vLLM, llama.cpp, Ollama, OpenAI). For a model with
 * `upstream_api: completions` the client's body is relayed as it came, fields Sluice does not know
 * included: only `model` is rewritten and, for streams, usage is always asked for so the ledger can
 * account. A model with `upstream_api: chat` is translated through `/chat/completions`.
 */
export class OpenAICompatibleProvider implements Provider {
  readonly kind = 'openai';
  readonly id: string;
  private readonly client: UpstreamClient;
  private readonly chat: OpenAIChatTurns;

  constructor(config: ProviderConfig) {
    this.id = config.id;
    this.client = new UpstreamClient(config, config.api_key === undefined ? {} : { authorization: `Bearer ${config.api_key}` });
    this.chat = new OpenAIChatTurns(this.client);
  }

  async complete(call: CompletionCall): Promise<Completion> {
    if (call.model.upstreamApi === 'chat') {
      checkTranslatable(call.request, call.model, OPENAI_CHAT_CAPABILITIES);
      return completeByTurns(this.chat, call);
    }
    const body = await this.client.postJson('/completions', { ...call.request.body, model: call.model.upstreamModel }, call);
    const choices = body.choices;
    if (!Array.isArray(choices)) throw unreadableUpstream(this.id, 'an answer without choices');
    return {
      id: typeof body.id === 'string' ? body.id : '',
      created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
      choices: choices.map((choice) => this.toChoice(choice)),
      usage: toUsage(body.usage),
      extra: body,
    };
  }

  async streamCompletion(call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    if (call.model.upstreamApi === 'chat') {
      checkTranslatable(call.request, call.model, OPENAI_CHAT_CAPABILITIES);
      return streamByTurns(this.chat, call);
    }
    const streamOptions = (call.request.body.stream_options as Json | null | undefined) ?? {};
    const body = {
      ...call.request.body,
      model: call.model.upstreamModel,
      stream: true,
      stream_options: { ...streamOptions, include_usage: true },
    };
    const response = await this.client.post('/completions', body, call);
    return this.events(response.body);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private toChoice(raw: unknown): CompletionChoice {
    if (!isObject(raw) || typeof raw.text !== 'string') throw unreadableUpstream(this.id, 'a choice without text');
    return {
      index: typeof raw.index === 'number' ? raw.index : 0,
      text: raw.text,
      logprobs: (raw.logprobs as LegacyLogprobs | null | undefined) ?? null,
      finishReason: typeof raw.finish_reason === 'string' ? raw.finish_reason : null,
      extra: raw,
    };
  }

  private async *events(body: ResponseBody): AsyncGenerator<CompletionEvent> {
    let started = false;
    let done = false;
    let usage: Usage | null = null;
    let usageSent = false;
    // Read on past [DONE] to the end of the body, so the connection goes back to the pool.
    for await (const { data } of this.client.events(body)) {
      if (done) continue;
      if (data === '[DONE]') {
        done = true;
        if (usage !== null && !usageSent) yield { type: 'usage', usage };
        continue;
      }
      const chunk = this.client.parseEvent(data);
      if (chunk.error !== undefined && chunk.error !== null) throw this.client.midStreamFailure(readErrorBody(data).message);
      const choices = chunk.choices;
      if (!Array.isArray(choices)) throw unreadableUpstream(this.id, 'a stream event without choices');
      if (!started) {
        started = true;
        yield {
          type: 'start',
          id: typeof chunk.id === 'string' ? chunk.id : '',
          created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000),
        };
      }
      for (let c = 0; c < choices.length; c++) yield { type: 'choice', ...this.toChoice(choices[c]) };
      const chunkUsage = toUsage(chunk.usage);
      if (chunkUsage !== null) {
        usage = chunkUsage;
        // A chunk with no choices is the final usage chunk; vLLM's continuous stats put running
        // totals on every chunk, of which only the last counts.
        if (choices.length === 0) {
          usageSent = true;
          yield { type: 'usage', usage };
        }
      }
    }
    if (!done) throw unreadableUpstream(this.id, 'a stream that ended before [DONE]');
  }
}
