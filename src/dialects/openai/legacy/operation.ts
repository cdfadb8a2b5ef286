import { bearerToken } from '../../../wire/key-carriers.js';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { unreadableUpstream } from '../../../core/upstream-errors.js';
import { checkSupported, MAX_CALLS_PER_REQUEST, unsupported } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices, type SubCall } from '../../../generation/fan-out.js';
import { generationRequest, textOf, type Finish, type GenerationRequest, type GenerationResult, type StreamPart } from '../../../generation/model.js';
import type { Operation } from '../../../generation/operation.js';
import type { Capabilities } from '../../../generation/provider.js';
import { countUsage } from '../../../generation/token-counter.js';
import { isObject } from '../../../wire/json.js';
import { CompletionReading } from '../../../wire/openai/reading.js';
import { usageFromOpenAI } from '../../../wire/openai/usage.js';
import type { EventReading } from '../../../wire/relay-format.js';
import { relayedStream, rendered, translatedStream, wholeReply } from '../../reply.js';
import type { Completion, CompletionChoice, CompletionRequest, FinishReason, LegacyLogprobs } from './completion.js';
import { LegacyLogprobsBuilder } from './logprobs.js';
import { parseCompletionRequest } from './request.js';
import { openAICompletionBody, OpenAICompletionStreamWriter } from './writer.js';

/** OpenAI's legacy completion parameters; anything else in a body is an extension. */
const LEGACY_PARAMETERS: ReadonlySet<string> = new Set([
  'model', 'prompt', 'suffix', 'max_tokens', 'temperature', 'top_p', 'n', 'best_of', 'stream', 'stream_options',
  'logprobs', 'echo', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'user', 'seed',
]);

/** Legacy `max_tokens` default, which chat APIs do not share (Anthropic requires a value). */
const DEFAULT_MAX_TOKENS = 16;

/**
 * `POST /v1/completions`. A model whose upstream serves legacy completions gets the caller's body
 * relayed; any other gets one chat turn per prompt through the generation model, with the legacy
 * features (several prompts, echo, legacy log-probabilities) done here.
 */
export const legacyCompletions: Operation<CompletionRequest> = {
  endpoint: 'completions',
  dialect: 'openai',
  operation: 'completions',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseCompletionRequest,
  outputBound: (request) => ({ maxTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS, choices: Math.max(request.n, request.bestOf ?? 1) }),
  countUsage: (request, generated) => countUsage(promptsOf(request), generated),
  plan(request, { model, provider }) {
    if (provider.relays('openai.completions', model)) return { kind: 'relay', operation: 'openai.completions', body: request.body, stream: request.stream };
    return { kind: 'generate', subCalls: translate(request, model, provider.capabilities(model)), stream: request.stream };
  },
  answer(request, answer, { provider, sink }) {
    switch (answer.kind) {
      case 'relayed': {
        const body = answer.body;
        const choices = (body.choices as unknown[]).map((choice) => relayedChoice(provider.id, choice));
        const completion: Completion = {
          id: typeof body.id === 'string' ? body.id : '',
          created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
          choices,
          extra: body,
        };
        return wholeReply(usageFromOpenAI(body.usage), () => generatedTexts(request, choices.map((c) => c.text), request.echo), (usage) => rendered(openAICompletionBody(completion, request.model, usage)));
      }
      case 'relaying': {
        const writer = new OpenAICompletionStreamWriter(sink, request.model, request.includeUsage);
        return relayedStream(answer.events, writer, new EchoAwareReading(request, new CompletionReading(provider.id)), async (chunk) => {
          if (!writer.hasStarted) writer.open(typeof chunk.id === 'string' ? chunk.id : '', typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000));
          const choices = chunk.choices as unknown[];
          if (choices.length === 1) return writer.relayed(chunk, relayedChoice(provider.id, choices[0]));
          for (const raw of choices) await writer.choice(relayedChoice(provider.id, raw));
        });
      }
      case 'generated':
        return translatedWhole(request, answer.result);
      case 'generating':
        return translatedCompletionStream(request, answer.parts, new OpenAICompletionStreamWriter(sink, request.model, request.includeUsage));
      case 'none':
      case 'embedded':
      case 'transferred':
        throw new Error('a completion always calls its upstream');
    }
  },
};

function promptsOf(request: CompletionRequest): (string | number | readonly number[])[] {
  return typeof request.prompt === 'string' ? [request.prompt] : request.prompt;
}

/** What was generated, without an echoed prompt (which is input, not output). */
function generatedTexts(request: CompletionRequest, texts: readonly (string | undefined)[], echoed: boolean): string[] {
  const prompts = promptsOf(request);
  const out: string[] = [];
  texts.forEach((text, index) => {
    if (text === undefined) return;
    const prompt = prompts[Math.floor(index / request.n)];
    out.push(echoed && typeof prompt === 'string' && text.startsWith(prompt) ? text.slice(prompt.length) : text);
  });
  return out;
}

/** A relayed stream's reading, its echoed prompts left out of what was generated. */
class EchoAwareReading implements EventReading {
  constructor(
    private readonly request: CompletionRequest,
    private readonly reading: CompletionReading,
  ) {}

  get reported() {
    return this.reading.reported;
  }

  see(event: Readonly<Record<string, unknown>>): void {
    this.reading.see(event);
  }

  generated(): readonly string[] {
    return generatedTexts(this.request, this.reading.byChoice(), this.request.echo);
  }
}

function relayedChoice(providerId: string, raw: unknown): CompletionChoice {
  if (!isObject(raw) || typeof raw.text !== 'string') throw unreadableUpstream(providerId, 'a choice without text');
  return {
    index: typeof raw.index === 'number' ? raw.index : 0,
    text: raw.text,
    logprobs: (raw.logprobs as LegacyLogprobs | null | undefined) ?? null,
    finishReason: typeof raw.finish_reason === 'string' ? raw.finish_reason : null,
    extra: raw,
  };
}

/**
 * One chat turn per prompt, `n` choices each, as sub-calls of the generation model. Refuses, with a
 * 400 naming the parameter and the model, whatever the upstream cannot honour.
 */
export function translate(request: CompletionRequest, model: CatalogueModel, caps: Capabilities): SubCall[] {
  const refuse = (param: string, what: string) => unsupported(model, caps, param, what);
  if (typeof request.prompt !== 'string' && request.prompt.some((p) => typeof p !== 'string')) throw refuse('prompt', 'token-id prompts (send text)');
  const prompts = typeof request.prompt === 'string' ? [request.prompt] : (request.prompt as string[]);
  const calls = prompts.length * Math.ceil(request.n / caps.maxChoicesPerCall);
  if (calls > MAX_CALLS_PER_REQUEST) {
    throw refuse('n', `${prompts.length} prompt(s) × n = ${request.n}, which would take ${calls} upstream calls (at most ${MAX_CALLS_PER_REQUEST})`);
  }
  if (request.bestOf !== undefined && request.bestOf > 1) throw refuse('best_of', "'best_of' greater than 1");
  if (request.suffix !== null && request.suffix !== '') throw refuse('suffix', "'suffix' (no fill-in-the-middle)");
  if (request.maxTokens === 0) throw refuse('max_tokens', "'max_tokens' of 0");
  if (request.logprobs !== null && request.echo && caps.logprobs) throw refuse('echo', "'echo' together with 'logprobs' (the upstream cannot score prompt tokens)");
  const extensions = Object.fromEntries(Object.entries(request.body).filter(([field]) => !LEGACY_PARAMETERS.has(field) && field !== 'top_k'));
  const topK = request.body.top_k;
  const base = (prompt: string): GenerationRequest =>
    generationRequest({
      model: request.model,
      messages: [{ role: 'user', content: [{ type: 'text', text: prompt }] }],
      maxOutputTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
      temperature: request.temperature,
      topP: request.topP,
      topK: typeof topK === 'number' ? topK : undefined,
      stop: request.stop,
      n: request.n,
      presencePenalty: request.presencePenalty,
      frequencyPenalty: request.frequencyPenalty,
      logitBias: request.logitBias,
      seed: request.seed,
      user: request.user,
      logprobs: request.logprobs === null ? undefined : { top: request.logprobs },
      extensions,
    });
  const requests = prompts.map(base);
  checkSupported(requests[0]!, model, caps);
  return requests.flatMap((turn, p) => splitChoices(turn, caps.maxChoicesPerCall, p * request.n));
}

/** Legacy finish reasons: stop, length, content_filter; a call for tools still stopped the text. */
function legacyFinish(finish: Finish): FinishReason {
  return finish.reason === 'length' || finish.reason === 'content_filter' ? finish.reason : 'stop';
}


function translatedWhole(request: CompletionRequest, result: GenerationResult) {
  const prompts = promptsOf(request) as string[];
  const choices: CompletionChoice[] = result.choices.map((choice) => {
    const prompt = prompts[Math.floor(choice.index / request.n)]!;
    const text = textOf(choice.content);
    return {
      index: choice.index,
      text: request.echo ? prompt + text : text,
      logprobs: request.logprobs === null ? null : new LegacyLogprobsBuilder(request.logprobs).add(choice.logprobs ?? []),
      finishReason: legacyFinish(choice.finish),
    };
  });
  const completion: Completion = { id: newGenerationId('cmpl-'), created: Math.floor(Date.now() / 1000), choices };
  return wholeReply(result.usage, () => generatedTexts(request, choices.map((c) => c.text), request.echo), (usage) => rendered(openAICompletionBody(completion, request.model, usage)));
}

/** Each prompt echoed first where asked, then the parts as legacy choices with legacy log-probabilities. */
function translatedCompletionStream(request: CompletionRequest, parts: AsyncIterable<StreamPart>, writer: OpenAICompletionStreamWriter) {
  const prompts = promptsOf(request) as string[];
  const builders = new Map<number, LegacyLogprobsBuilder>();
  const logprobsOf = (choice: number, tokens: Parameters<LegacyLogprobsBuilder['add']>[0] | undefined): LegacyLogprobs | null => {
    if (request.logprobs === null) return null;
    let builder = builders.get(choice);
    if (builder === undefined) builders.set(choice, (builder = new LegacyLogprobsBuilder(request.logprobs)));
    return builder.add(tokens ?? []);
  };
  const open = async () => {
    writer.open(newGenerationId('cmpl-'), Math.floor(Date.now() / 1000));
    if (!request.echo) return;
    for (let choice = 0; choice < prompts.length * request.n; choice++) {
      await writer.choice({ index: choice, text: prompts[Math.floor(choice / request.n)]!, logprobs: null, finishReason: null });
    }
  };
  return translatedStream(parts, writer, open, async (part) => {
    if (part.type === 'text') {
      if (part.text === '' && part.logprobs === undefined) return;
      await writer.choice({ index: part.choice, text: part.text, logprobs: logprobsOf(part.choice, part.logprobs), finishReason: null });
    } else if (part.type === 'finish') {
      await writer.choice({ index: part.choice, text: '', logprobs: request.logprobs === null ? null : logprobsOf(part.choice, []), finishReason: legacyFinish(part.finish) });
    }
  });
}
