import { DEFAULT_MAX_TOKENS, type ChatCapabilities, type ChatTurn } from '../completions/chat-translation.js';
import type { CompletionCall, CompletionChoice, CompletionEvent, FinishReason, Usage } from '../completions/completion.js';
import type { TurnResult } from '../completions/fan-out.js';
import { LegacyLogprobsBuilder, type TokenLogprob } from '../completions/legacy-logprobs.js';
import type { ProviderConfig } from '../config/config-file.js';
import { ChatTranslatingProvider } from './chat-translating-provider.js';
import { isObject, readErrorBody, UpstreamClient, type Json, type ResponseBody } from './upstream-client.js';
import { unreadableUpstream } from './upstream-errors.js';

export const GEMINI_CAPABILITIES: ChatCapabilities = {
  upstream: 'the Gemini generateContent API',
  maxTemperature: 2,
  maxStopSequences: 5,
  logprobs: true,
  logitBias: false,
  penalties: true,
  maxChoicesPerCall: 8, // candidateCount
  forwardsUnknownFields: false,
  mappedFields: ['top_k'],
};

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

function finishReason(reason: unknown): FinishReason | null {
  if (typeof reason !== 'string' || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return null;
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return 'stop';
}

function textOf(candidate: Json): string {
  const content = isObject(candidate.content) ? candidate.content : {};
  if (!Array.isArray(content.parts)) return '';
  return (content.parts as unknown[])
    .filter((part): part is Json => isObject(part) && typeof part.text === 'string' && part.thought !== true)
    .map((part) => part.text as string)
    .join('');
}

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

function usageOf(raw: unknown): Usage | null {
  if (!isObject(raw) || typeof raw.promptTokenCount !== 'number') return null;
  // Thinking tokens are generated and billed as output.
  return { promptTokens: raw.promptTokenCount, completionTokens: Number(raw.candidatesTokenCount ?? 0) + Number(raw.thoughtsTokenCount ?? 0) };
}

/** A prompt the upstream's safety system blocked: empty choices that say so. */
function blockedChoices(turn: ChatTurn): CompletionChoice[] {
  return Array.from({ length: turn.choices }, (_, index) => ({ index, text: '', logprobs: null, finishReason: 'content_filter' }));
}

/** Legacy completions through Gemini's generateContent; `candidateCount` serves `n` up to 8 a call. */
export class GeminiProvider extends ChatTranslatingProvider {
  readonly kind = 'gemini';

  constructor(config: ProviderConfig) {
    const client = new UpstreamClient(
      config,
      config.api_key === undefined ? {} : { 'x-goog-api-key': config.api_key },
      (status, body) => status === 400 && body.includes('API_KEY_INVALID'),
    );
    super(config.id, client, GEMINI_CAPABILITIES);
  }

  private path(call: CompletionCall, method: string): string {
    return `/models/${call.model.upstreamModel.replace(/^models\//, '')}:${method}`;
  }

  private body(turn: ChatTurn, call: CompletionCall): Json {
    const r = call.request;
    return {
      contents: [{ role: 'user', parts: [{ text: turn.prompt }] }],
      generationConfig: {
        maxOutputTokens: r.maxTokens ?? DEFAULT_MAX_TOKENS,
        stopSequences: r.stop.length > 0 ? r.stop : undefined,
        candidateCount: turn.choices === 1 ? undefined : turn.choices,
        temperature: r.temperature,
        topP: r.topP,
        topK: r.body.top_k,
        seed: r.seed,
        presencePenalty: r.presencePenalty,
        frequencyPenalty: r.frequencyPenalty,
        responseLogprobs: r.logprobs === null ? undefined : true,
        logprobs: r.logprobs === null || r.logprobs === 0 ? undefined : r.logprobs,
      },
    };
  }

  async completeTurn(turn: ChatTurn, call: CompletionCall): Promise<TurnResult> {
    const response = await this.client.postJson(this.path(call, 'generateContent'), this.body(turn, call), call);
    const candidates = Array.isArray(response.candidates) ? (response.candidates as unknown[]).filter(isObject) : [];
    const usage = usageOf(response.usageMetadata);
    if (candidates.length === 0) {
      if (isObject(response.promptFeedback) && response.promptFeedback.blockReason) return { choices: blockedChoices(turn), usage };
      throw unreadableUpstream(this.id, 'an answer without candidates');
    }
    const choices = blockedChoices(turn); // a candidate withheld by the safety system stays filtered
    candidates.forEach((candidate) => {
      // Proto3 JSON leaves out a zero: a candidate without an index is candidate 0.
      const index = typeof candidate.index === 'number' ? candidate.index : 0;
      if (index >= choices.length) return;
      choices[index] = {
        index,
        text: textOf(candidate),
        logprobs: call.request.logprobs === null ? null : new LegacyLogprobsBuilder(call.request.logprobs).add(tokenLogprobs(candidate.logprobsResult)),
        finishReason: finishReason(candidate.finishReason) ?? 'stop',
      };
    });
    return { choices, usage };
  }

  async streamTurn(turn: ChatTurn, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    const response = await this.client.post(`${this.path(call, 'streamGenerateContent')}?alt=sse`, this.body(turn, call), call);
    return this.events(response.body, turn, call);
  }

  /** Each event is a partial GenerateContentResponse; the stream just ends (no [DONE]). */
  private async *events(body: ResponseBody, turn: ChatTurn, call: CompletionCall): AsyncGenerator<CompletionEvent> {
    const builders = new Map<number, LegacyLogprobsBuilder>();
    const finished = new Set<number>();
    let usage: Usage | null = null;
    for await (const { data } of this.client.events(body)) {
      const event = this.client.parseEvent(data);
      if (isObject(event.error)) throw this.client.midStreamFailure(readErrorBody(data).message);
      usage = usageOf(event.usageMetadata) ?? usage;
      const candidates = Array.isArray(event.candidates) ? (event.candidates as unknown[]).filter(isObject) : [];
      if (candidates.length === 0 && isObject(event.promptFeedback) && event.promptFeedback.blockReason) {
        for (const choice of blockedChoices(turn)) if (!finished.has(choice.index)) yield { type: 'choice', ...choice };
        if (usage !== null) yield { type: 'usage', usage };
        return;
      }
      for (const candidate of candidates) {
        const index = typeof candidate.index === 'number' ? candidate.index : 0;
        const reason = finishReason(candidate.finishReason);
        let logprobs = null;
        if (call.request.logprobs !== null) {
          let builder = builders.get(index);
          if (builder === undefined) builders.set(index, (builder = new LegacyLogprobsBuilder(call.request.logprobs)));
          logprobs = builder.add(tokenLogprobs(candidate.logprobsResult));
        }
        const text = textOf(candidate);
        if (text === '' && reason === null) continue;
        if (reason !== null) finished.add(index);
        yield { type: 'choice', index, text, logprobs, finishReason: reason };
      }
    }
    if (finished.size === 0) throw unreadableUpstream(this.id, 'a stream that ended without a finish reason');
    // A candidate the upstream stopped reporting (withheld by its safety system) ends filtered.
    for (let index = 0; index < turn.choices; index++) {
      if (!finished.has(index)) yield { type: 'choice', index, text: '', logprobs: null, finishReason: 'content_filter' };
    }
    if (usage !== null) yield { type: 'usage', usage };
  }
}
