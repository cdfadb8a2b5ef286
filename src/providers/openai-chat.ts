import { DEFAULT_MAX_TOKENS, LEGACY_PARAMETERS, type ChatCapabilities, type ChatTurn } from '../completions/chat-translation.js';
import type { CompletionCall, CompletionChoice, CompletionEvent, FinishReason } from '../completions/completion.js';
import type { ChatTurnRunner, TurnResult } from '../completions/fan-out.js';
import { LegacyLogprobsBuilder, type TokenLogprob } from '../completions/legacy-logprobs.js';
import { toUsage } from './openai-wire.js';
import { isObject, readErrorBody, type Json, type ResponseBody, type UpstreamClient } from './upstream-client.js';
import { unreadableUpstream } from './upstream-errors.js';

export const OPENAI_CHAT_CAPABILITIES: ChatCapabilities = {
  upstream: "the upstream's chat completions API",
  maxTemperature: 2,
  maxStopSequences: null,
  logprobs: true,
  logitBias: true,
  penalties: true,
  maxChoicesPerCall: 128,
  // Same family of servers: their extensions (vLLM's top_k, min_p, …) work on chat too.
  forwardsUnknownFields: true,
  mappedFields: [],
};

function finishReason(reason: unknown): FinishReason | null {
  if (reason === null || reason === undefined) return null;
  if (reason === 'length' || reason === 'content_filter') return reason;
  return 'stop'; // stop, tool_calls, function_call, and anything newer
}

function tokenLogprobs(logprobs: unknown): TokenLogprob[] {
  if (!isObject(logprobs) || !Array.isArray(logprobs.content)) return [];
  return (logprobs.content as Json[]).map((item) => ({
    token: String(item.token ?? ''),
    logprob: Number(item.logprob),
    bytes: Array.isArray(item.bytes) ? (item.bytes as number[]) : null,
    top: Array.isArray(item.top_logprobs) ? (item.top_logprobs as Json[]).map((t) => ({ token: String(t.token), logprob: Number(t.logprob) })) : [],
  }));
}

/** A legacy completion as one user turn to `/chat/completions`, which has `n` of its own. */
export class OpenAIChatTurns implements ChatTurnRunner {
  readonly maxChoicesPerCall = OPENAI_CHAT_CAPABILITIES.maxChoicesPerCall;

  constructor(private readonly client: UpstreamClient) {}

  private body(turn: ChatTurn, call: CompletionCall, stream: boolean): Json {
    const r = call.request;
    const extensions = Object.fromEntries(Object.entries(r.body).filter(([field]) => !LEGACY_PARAMETERS.has(field)));
    return {
      ...extensions,
      model: call.model.upstreamModel,
      messages: [{ role: 'user', content: turn.prompt }],
      max_tokens: r.maxTokens ?? DEFAULT_MAX_TOKENS,
      n: turn.choices === 1 ? undefined : turn.choices,
      temperature: r.temperature,
      top_p: r.topP,
      stop: r.stop.length > 0 ? r.stop : undefined,
      presence_penalty: r.presencePenalty,
      frequency_penalty: r.frequencyPenalty,
      logit_bias: r.logitBias,
      seed: r.seed,
      user: r.user,
      logprobs: r.logprobs === null ? undefined : true,
      top_logprobs: r.logprobs === null || r.logprobs === 0 ? undefined : r.logprobs,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  }

  async completeTurn(turn: ChatTurn, call: CompletionCall): Promise<TurnResult> {
    const body = await this.client.postJson('/chat/completions', this.body(turn, call, false), call);
    if (!Array.isArray(body.choices)) throw unreadableUpstream(this.client.providerId, 'an answer without choices');
    const choices: CompletionChoice[] = (body.choices as unknown[]).map((raw, i) => {
      const choice = isObject(raw) ? raw : {};
      const message = isObject(choice.message) ? choice.message : {};
      return {
        index: typeof choice.index === 'number' ? choice.index : i,
        text: typeof message.content === 'string' ? message.content : '',
        logprobs: call.request.logprobs === null ? null : new LegacyLogprobsBuilder(call.request.logprobs).add(tokenLogprobs(choice.logprobs)),
        finishReason: finishReason(choice.finish_reason) ?? 'stop',
      };
    });
    return { choices, usage: toUsage(body.usage) };
  }

  async streamTurn(turn: ChatTurn, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    const response = await this.client.post('/chat/completions', this.body(turn, call, true), call);
    return this.events(response.body, call);
  }

  private async *events(body: ResponseBody, call: CompletionCall): AsyncGenerator<CompletionEvent> {
    const builders = new Map<number, LegacyLogprobsBuilder>();
    const topCount = call.request.logprobs;
    let done = false;
    // Read on past [DONE] to the end of the body, so the connection goes back to the pool.
    for await (const { data } of this.client.events(body)) {
      if (done) continue;
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const chunk = this.client.parseEvent(data);
      if (chunk.error !== undefined && chunk.error !== null) throw this.client.midStreamFailure(readErrorBody(data).message);
      const usage = toUsage(chunk.usage);
      if (usage !== null) yield { type: 'usage', usage };
      if (!Array.isArray(chunk.choices)) continue;
      for (const raw of chunk.choices as unknown[]) {
        if (!isObject(raw)) continue;
        const index = typeof raw.index === 'number' ? raw.index : 0;
        const delta = isObject(raw.delta) ? raw.delta : {};
        let logprobs = null;
        if (topCount !== null) {
          let builder = builders.get(index);
          if (builder === undefined) builders.set(index, (builder = new LegacyLogprobsBuilder(topCount)));
          logprobs = builder.add(tokenLogprobs(raw.logprobs));
        }
        const text = typeof delta.content === 'string' ? delta.content : '';
        const reason = finishReason(raw.finish_reason);
        if (text === '' && reason === null) continue; // role-only or empty deltas
        yield { type: 'choice', index, text, logprobs, finishReason: reason };
      }
    }
    if (!done) throw unreadableUpstream(this.client.providerId, 'a stream that ended before [DONE]');
  }
}
