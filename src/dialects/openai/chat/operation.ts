import { performance } from 'node:perf_hooks';
import { bearerToken } from '../../../wire/key-carriers.js';
import { checkSupported } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices, type SubCall } from '../../../generation/fan-out.js';
import { textOf, type Usage } from '../../../generation/model.js';
import type { Exchange, GenerationOperation } from '../../../generation/operation.js';
import { unreadableUpstream } from '../../../core/upstream-errors.js';
import { countUsage } from '../../../generation/token-counter.js';
import { openAIDialect } from '../dialect.js';
import { meterUsage, runStream, sendWhole } from '../../answer.js';
import { parseChatRequest, toGenerationRequest, type ChatRequest } from './request.js';
import { chatCompletionBody, ChatStreamWriter, wireChatUsage } from './writer.js';
import { usageFromOpenAI } from '../../../wire/openai/usage.js';
import { isObject } from '../../../wire/json.js';

/**
 * `POST /v1/chat/completions`. An OpenAI-compatible upstream gets the caller's body relayed; any
 * other the generation model, with `n` fanned out where the upstream has fewer choices per call.
 */
export const chatCompletions: GenerationOperation<ChatRequest> = {
  endpoint: 'chat',
  dialect: openAIDialect,
  operation: 'chat',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseChatRequest,
  modelOf: (request) => request.model,
  isStream: (request) => request.stream,
  outputBound: (request) => ({ maxTokens: request.body.max_completion_tokens ?? request.body.max_tokens ?? undefined, choices: request.body.n ?? 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request), generated),
  async serve(x) {
    if (x.provider.relays('openai.chat', x.model)) return x.request.stream ? relayStream(x) : relayWhole(x);
    const generation = toGenerationRequest(x.request);
    const caps = x.provider.capabilities(x.model);
    checkSupported(generation, x.model, caps);
    const subCalls = splitChoices(generation, caps.maxChoicesPerCall);
    return x.request.stream ? translatedStream(x, subCalls) : translatedWhole(x, subCalls);
  },
};

/** Every text the caller sent, for Sluice's own count. */
function inputTexts(request: ChatRequest): string[] {
  const texts: string[] = [];
  for (const message of request.body.messages) {
    const content = message.content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) for (const part of content) if (part.type === 'text') texts.push((part as { text: string }).text);
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) texts.push(call.function.name, call.function.arguments);
  }
  return texts;
}

function messageText(message: unknown): string {
  if (!isObject(message)) return '';
  let text = typeof message.content === 'string' ? message.content : '';
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) if (isObject(call) && isObject(call.function)) text += String(call.function.arguments ?? '');
  }
  return text;
}

async function relayWhole(x: Exchange<ChatRequest>): Promise<void> {
  const relayed = await x.invoke.relay({ operation: 'openai.chat', body: x.request.body, stream: false, model: x.model, requestId: x.requestId, signal: x.signal });
  if (relayed.stream) throw new Error('a whole relay answered with a stream');
  const body = relayed.body;
  const choices: unknown = body.choices;
  if (!Array.isArray(choices)) throw unreadableUpstream(x.provider.id, 'an answer without choices');
  const wire: Record<string, unknown> = { ...body, model: x.request.model };
  const usage = await meterUsage(x, usageFromOpenAI(body.usage), () =>
    countUsage(inputTexts(x.request), choices.map((choice) => messageText(isObject(choice) ? choice.message : undefined))),
  );
  if (x.meter.tokensCounted) wire.usage = wireChatUsage(usage);
  sendWhole(x, JSON.stringify(wire));
}

async function relayStream(x: Exchange<ChatRequest>): Promise<void> {
  const { request } = x;
  const relayed = await x.invoke.relay({ operation: 'openai.chat', body: request.body, stream: true, model: x.model, requestId: x.requestId, signal: x.signal });
  if (!relayed.stream) throw new Error('a streamed relay answered whole');
  const writer = new ChatStreamWriter(x.res, request.model, request.includeUsage, x.signal);
  const texts: string[] = [];
  await runStream(
    x,
    writer,
    async () => {
      let usage: Usage | null = null;
      for await (const chunk of relayed.events) {
        if (!Array.isArray(chunk.choices)) throw unreadableUpstream(x.provider.id, 'a stream event without choices');
        if (!writer.hasStarted) {
          writer.open(typeof chunk.id === 'string' ? chunk.id : newGenerationId('chatcmpl-'), typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000));
          x.meter.firstByteAt = performance.now();
        }
        for (const choice of chunk.choices) {
          if (isObject(choice)) texts[Number(choice.index ?? 0)] = (texts[Number(choice.index ?? 0)] ?? '') + messageText(choice.delta);
        }
        // The last figures count: vLLM's continuous stats put running totals on every chunk.
        usage = usageFromOpenAI(chunk.usage) ?? usage;
        await writer.relayed(chunk);
      }
      return usage;
    },
    () => countUsage(inputTexts(request), texts.filter((t) => t !== undefined)),
  );
}

async function translatedWhole(x: Exchange<ChatRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const result = await x.invoke.generate(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const usage = await meterUsage(x, result.usage, () => countUsage(inputTexts(x.request), result.choices.map((choice) => textOf(choice.content))));
  sendWhole(x, chatCompletionBody(newGenerationId('chatcmpl-'), result, x.request.model, usage));
}

async function translatedStream(x: Exchange<ChatRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const { request } = x;
  const parts = await x.invoke.stream(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const writer = new ChatStreamWriter(x.res, request.model, request.includeUsage, x.signal);
  const texts: string[] = [];
  await runStream(
    x,
    writer,
    async () => {
      writer.open(newGenerationId('chatcmpl-'), Math.floor(Date.now() / 1000));
      x.meter.firstByteAt = performance.now();
      let usage: Usage | null = null;
      for await (const part of parts) {
        if (part.type === 'usage') usage = part.usage;
        else if (part.type === 'text' || part.type === 'reasoning') texts[part.choice] = (texts[part.choice] ?? '') + part.text;
        else if (part.type === 'tool_call_delta') texts[part.choice] = (texts[part.choice] ?? '') + part.arguments;
        await writer.part(part);
      }
      return usage;
    },
    () => countUsage(inputTexts(request), texts.filter((t) => t !== undefined)),
  );
}
