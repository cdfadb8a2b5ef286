import { z } from 'zod';
import { anthropicKey } from '../../../wire/key-carriers.js';
import { GatewayError } from '../../../core/errors.js';
import { checkSupported, type ModelledField } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices } from '../../../generation/fan-out.js';
import { textOf } from '../../../generation/model.js';
import type { Operation } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { contentText, MessagesReading } from '../../../wire/anthropic/reading.js';
import { usageFromAnthropic } from '../../../wire/anthropic/usage.js';
import { isObject } from '../../../wire/json.js';
import { countTokensOperation } from '../../count-tokens.js';
import { JSON_HEADERS, relayedStream, rendered, translatedStream, wholeReply } from '../../reply.js';
import { anthropicHeaders, cappedBody, inputTexts, parseMessagesRequest, toGenerationRequest, type MessagesRequest } from './request.js';
import { messageBody, MessagesStreamWriter, RelayedMessagesWriter, wireUsage } from './writer.js';

/** Anthropic's names for the fields an upstream may refuse. */
const PARAMS: Partial<Record<ModelledField, string>> = { stop: 'stop_sequences', response_format: 'output_config.format' };
const anthropicParam = (field: ModelledField) => PARAMS[field] ?? field;

/**
 * `POST /v1/messages`, on every chat model. An Anthropic upstream gets the caller's body relayed
 * (max_tokens capped at the model's limit); any other the generation model.
 */
export const anthropicMessages: Operation<MessagesRequest> = {
  endpoint: 'chat',
  operation: 'messages',
  dialect: 'anthropic',
  credential: (wire) => anthropicKey(wire.headers),
  parse: parseMessagesRequest,
  outputBound: (request) => ({ maxTokens: request.maxTokens, choices: 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request.body), generated),
  plan(request, { model, provider }) {
    if (provider.relays('anthropic.messages', model)) return { kind: 'relay', operation: 'anthropic.messages', body: cappedBody(request, model), stream: request.stream, headers: request.headers };
    const generation = toGenerationRequest(request, model);
    const caps = provider.capabilities(model);
    checkSupported(generation, model, caps, anthropicParam);
    return { kind: 'generate', subCalls: splitChoices(generation, caps.maxChoicesPerCall), stream: request.stream };
  },
  answer(request, answer, { sink }) {
    switch (answer.kind) {
      case 'relayed': {
        const body = answer.body;
        return wholeReply(isObject(body.usage) ? usageFromAnthropic(body.usage) : null, () => [contentText(body.content)], (usage, counted) =>
          rendered(JSON.stringify({ ...body, model: request.model, ...(counted ? { usage: wireUsage(usage) } : {}) })),
        );
      }
      case 'relaying': {
        const writer = new RelayedMessagesWriter(sink, request.model);
        return relayedStream(answer.events, writer, new MessagesReading(), (event) => writer.relayed(event));
      }
      case 'generated': {
        const result = answer.result;
        return wholeReply(result.usage, () => result.choices.map((choice) => textOf(choice.content)), (usage) => rendered(messageBody(result, request.model, usage)));
      }
      case 'generating': {
        const writer = new MessagesStreamWriter(sink, request.model);
        // Anthropic reports the input in message_start; the other upstreams only at the end, so Sluice's count stands in until message_delta.
        const open = async () => writer.begin(newGenerationId('msg_'), (await countUsage(inputTexts(request.body), [])).input);
        return translatedStream(answer.parts, writer, open, (part) => writer.part(part));
      }
      case 'none':
      case 'embedded':
      case 'transferred':
        throw new Error('a message always calls its upstream');
    }
  },
};

/** A count_tokens body, as validated (also the OpenAPI document's request schema). */
export const countTokensBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']) })),
});

interface CountTokensRequest {
  readonly body: Readonly<Record<string, unknown>>;
  readonly model: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** `POST /v1/messages/count_tokens`: Anthropic's own count where the model is Anthropic's, Sluice's tokenizer elsewhere. */
export const anthropicCountTokens = countTokensOperation<CountTokensRequest>({
  endpoint: 'chat',
  operation: 'anthropic.count_tokens',
  dialect: 'anthropic',
  credential: (wire) => anthropicKey(wire.headers),
  parse(body, wire) {
    const parsed = countTokensBody.safeParse(body, { reportInput: true });
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const param = issue.path.map(String).join('.') || 'body';
      throw new GatewayError('invalid_request', `${param}: ${issue.code === 'invalid_type' && issue.input === undefined ? 'Field required' : issue.message}`, { param });
    }
    return { body: parsed.data, model: parsed.data.model, headers: anthropicHeaders(wire) };
  },
  relayOperation: 'anthropic.count_tokens',
  relayed: (request) => ({ body: request.body, headers: request.headers }),
  counted: async (request) => ({ input_tokens: (await countUsage(inputTexts(request.body), [])).input }),
  headers: JSON_HEADERS,
});
