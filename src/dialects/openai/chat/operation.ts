import { bearerToken } from '../../../wire/key-carriers.js';
import { checkSupported } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices } from '../../../generation/fan-out.js';
import { textOf } from '../../../generation/model.js';
import type { Operation } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { ChatReading, chatTexts } from '../../../wire/openai/reading.js';
import { usageFromOpenAI } from '../../../wire/openai/usage.js';
import { relayedStream, rendered, translatedStream, wholeReply } from '../../reply.js';
import { parseChatRequest, toGenerationRequest, type ChatRequest } from './request.js';
import { chatCompletionBody, ChatStreamWriter, wireChatUsage } from './writer.js';

/**
 * `POST /v1/chat/completions`. An OpenAI-compatible upstream gets the caller's body relayed; any
 * other the generation model, with `n` fanned out where the upstream has fewer choices per call.
 */
export const chatCompletions: Operation<ChatRequest> = {
  endpoint: 'chat',
  dialect: 'openai',
  operation: 'chat',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseChatRequest,
  outputBound: (request) => ({ maxTokens: request.body.max_completion_tokens ?? request.body.max_tokens ?? undefined, choices: request.body.n ?? 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request), generated),
  plan(request, { model, provider }) {
    if (provider.relays('openai.chat', model)) return { kind: 'relay', operation: 'openai.chat', body: request.body, stream: request.stream };
    const generation = toGenerationRequest(request);
    const caps = provider.capabilities(model);
    checkSupported(generation, model, caps);
    return { kind: 'generate', subCalls: splitChoices(generation, caps.maxChoicesPerCall), stream: request.stream };
  },
  answer(request, answer, { provider, sink }) {
    switch (answer.kind) {
      case 'relayed': {
        const body = answer.body;
        return wholeReply(usageFromOpenAI(body.usage), () => chatTexts(body), (usage, counted) =>
          rendered(JSON.stringify({ ...body, model: request.model, ...(counted ? { usage: wireChatUsage(usage) } : {}) })),
        );
      }
      case 'relaying': {
        const writer = new ChatStreamWriter(sink, request.model, request.includeUsage);
        return relayedStream(answer.events, writer, new ChatReading(provider.id), async (chunk) => {
          if (!writer.hasStarted) writer.open(typeof chunk.id === 'string' ? chunk.id : newGenerationId('chatcmpl-'), typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000));
          await writer.relayed(chunk);
        });
      }
      case 'generated': {
        const result = answer.result;
        return wholeReply(result.usage, () => result.choices.map((choice) => textOf(choice.content)), (usage) => rendered(chatCompletionBody(newGenerationId('chatcmpl-'), result, request.model, usage)));
      }
      case 'generating': {
        const writer = new ChatStreamWriter(sink, request.model, request.includeUsage);
        return translatedStream(answer.parts, writer, () => writer.open(newGenerationId('chatcmpl-'), Math.floor(Date.now() / 1000)), (part) => writer.part(part));
      }
      case 'none':
      case 'embedded':
      case 'transferred':
        throw new Error('a chat completion always calls its upstream');
    }
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
