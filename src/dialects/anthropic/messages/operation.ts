import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { anthropicKey } from '../../../wire/key-carriers.js';
import { GatewayError } from '../../../core/errors.js';
import { checkSupported, type ModelledField } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices, type SubCall } from '../../../generation/fan-out.js';
import { textOf, type Usage } from '../../../generation/model.js';
import type { CountTokensOperation, Exchange, GenerationOperation } from '../../../generation/operation.js';
import { unreadableUpstream } from '../../../core/upstream-errors.js';
import { countUsage } from '../../../generation/token-counter.js';
import { meterUsage, runStream, sendWhole } from '../../answer.js';
import { anthropicDialect } from '../dialect.js';
import { anthropicHeaders, cappedBody, inputTexts, parseMessagesRequest, toGenerationRequest, type MessagesRequest } from './request.js';
import { messageBody, MessagesStreamWriter, RelayedMessagesWriter, wireUsage } from './writer.js';
import { usageFromAnthropic, withUsageDelta } from '../../../wire/anthropic/usage.js';
import { isObject } from '../../../wire/json.js';

/** Anthropic's names for the fields an upstream may refuse. */
const PARAMS: Partial<Record<ModelledField, string>> = { stop: 'stop_sequences', response_format: 'output_config.format' };
const anthropicParam = (field: ModelledField) => PARAMS[field] ?? field;

/**
 * `POST /v1/messages`, on every chat model. An Anthropic upstream gets the caller's body relayed
 * (max_tokens capped at the model's limit); any other the generation model.
 */
export const anthropicMessages: GenerationOperation<MessagesRequest> = {
  endpoint: 'chat',
  operation: 'messages',
  dialect: anthropicDialect,
  credential: (wire) => anthropicKey(wire.headers),
  parse: parseMessagesRequest,
  modelOf: (request) => request.model,
  isStream: (request) => request.stream,
  outputBound: (request) => ({ maxTokens: request.maxTokens, choices: 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request.body), generated),
  async serve(x) {
    if (x.provider.relays('anthropic.messages', x.model)) return x.request.stream ? relayStream(x) : relayWhole(x);
    const generation = toGenerationRequest(x.request, x.model);
    const caps = x.provider.capabilities(x.model);
    checkSupported(generation, x.model, caps, anthropicParam);
    const subCalls = splitChoices(generation, caps.maxChoicesPerCall);
    return x.request.stream ? translatedStream(x, subCalls) : translatedWhole(x, subCalls);
  },
};

function relayCall(x: Exchange<MessagesRequest>, stream: boolean) {
  return { operation: 'anthropic.messages' as const, body: cappedBody(x.request, x.model), stream, model: x.model, requestId: x.requestId, signal: x.signal, headers: x.request.headers };
}

/** The text blocks and tool inputs of an Anthropic message, for Sluice's own count. */
function contentText(content: unknown): string {
  let text = '';
  if (Array.isArray(content)) {
    for (const block of content) {
      if (!isObject(block)) continue;
      if (typeof block.text === 'string') text += block.text;
      else if (typeof block.thinking === 'string') text += block.thinking;
      else if (block.type === 'tool_use') text += JSON.stringify(block.input ?? {});
    }
  }
  return text;
}

async function relayWhole(x: Exchange<MessagesRequest>): Promise<void> {
  const relayed = await x.invoke.relay(relayCall(x, false));
  if (relayed.stream) throw new Error('a whole relay answered with a stream');
  const body = relayed.body;
  if (!Array.isArray(body.content)) throw unreadableUpstream(x.provider.id, 'a message without content');
  const wire: Record<string, unknown> = { ...body, model: x.request.model };
  const usage = await meterUsage(x, isObject(body.usage) ? usageFromAnthropic(body.usage) : null, () => countUsage(inputTexts(x.request.body), [contentText(body.content)]));
  if (x.meter.tokensCounted) wire.usage = wireUsage(usage);
  sendWhole(x, JSON.stringify(wire));
}

async function relayStream(x: Exchange<MessagesRequest>): Promise<void> {
  const relayed = await x.invoke.relay(relayCall(x, true));
  if (!relayed.stream) throw new Error('a streamed relay answered whole');
  const writer = new RelayedMessagesWriter(x.res, x.request.model, x.signal);
  let text = '';
  await runStream(
    x,
    writer,
    async () => {
      // message_start holds the input and cache figures, message_delta cumulative ones (input too, on newer API versions).
      let usage: Record<string, unknown> | undefined;
      for await (const event of relayed.events) {
        if (!writer.hasStarted) x.meter.firstByteAt = performance.now();
        if (event.type === 'message_start' && isObject(event.message) && isObject(event.message.usage)) usage = { ...event.message.usage };
        else if (event.type === 'message_delta' && isObject(event.usage)) usage = withUsageDelta(usage ?? {}, event.usage);
        else if (event.type === 'content_block_delta' && isObject(event.delta)) {
          const delta = event.delta;
          text += typeof delta.text === 'string' ? delta.text : typeof delta.thinking === 'string' ? delta.thinking : typeof delta.partial_json === 'string' ? delta.partial_json : '';
        }
        await writer.relayed(event);
      }
      return usage === undefined ? null : usageFromAnthropic(usage);
    },
    () => countUsage(inputTexts(x.request.body), [text]),
  );
}

async function translatedWhole(x: Exchange<MessagesRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const result = await x.invoke.generate(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const usage = await meterUsage(x, result.usage, () => countUsage(inputTexts(x.request.body), result.choices.map((choice) => textOf(choice.content))));
  sendWhole(x, messageBody(result, x.request.model, usage));
}

async function translatedStream(x: Exchange<MessagesRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const parts = await x.invoke.stream(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const writer = new MessagesStreamWriter(x.res, x.request.model, x.signal);
  // Anthropic reports the input in message_start; the other upstreams only at the end, so Sluice's count stands in until message_delta.
  const inputEstimate = (await countUsage(inputTexts(x.request.body), [])).input;
  let text = '';
  await runStream(
    x,
    writer,
    async () => {
      await writer.begin(newGenerationId('msg_'), inputEstimate);
      x.meter.firstByteAt = performance.now();
      let usage: Usage | null = null;
      for await (const part of parts) {
        if (part.type === 'usage') usage = part.usage;
        else if (part.type === 'text' || part.type === 'reasoning') text += part.text;
        else if (part.type === 'tool_call_delta') text += part.arguments;
        await writer.part(part);
      }
      return usage;
    },
    () => countUsage(inputTexts(x.request.body), [text]),
  );
}

const countTokensBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']) })),
});

interface CountTokensRequest {
  readonly body: Readonly<Record<string, unknown>>;
  readonly model: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** `POST /v1/messages/count_tokens`: Anthropic's own count where the model is Anthropic's, Sluice's tokenizer elsewhere. */
export const anthropicCountTokens: CountTokensOperation<CountTokensRequest> = {
  endpoint: 'chat',
  operation: 'anthropic.count_tokens',
  dialect: anthropicDialect,
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
  modelOf: (request) => request.model,
  async serve(x) {
    let answer: Readonly<Record<string, unknown>>;
    if (x.provider.relays('anthropic.count_tokens', x.model)) {
      const relayed = await x.invoke.relay({ operation: 'anthropic.count_tokens', body: x.request.body, stream: false, model: x.model, requestId: x.requestId, signal: x.signal, headers: x.request.headers });
      if (relayed.stream) throw new Error('a count answered with a stream');
      answer = relayed.body;
    } else {
      answer = { input_tokens: (await countUsage(inputTexts(x.request.body), [])).input };
    }
    x.res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  },
};
