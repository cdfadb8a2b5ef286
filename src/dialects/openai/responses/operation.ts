import { performance } from 'node:perf_hooks';
import { bearerToken } from '../../../wire/key-carriers.js';
import { checkSupported, type ModelledField } from '../../../generation/capabilities.js';
import { splitChoices, type SubCall } from '../../../generation/fan-out.js';
import { textOf, type Usage } from '../../../generation/model.js';
import type { Exchange, GenerationOperation } from '../../../generation/operation.js';
import { unreadableUpstream } from '../../../core/upstream-errors.js';
import { countUsage } from '../../../generation/token-counter.js';
import { meterUsage, runStream, sendWhole } from '../../answer.js';
import { openAIDialect } from '../dialect.js';
import type { Conversations, Turn } from './conversation.js';
import { isSluiceReasoning } from './reasoning.js';
import { inputTexts, itemType, parseResponsesRequest, toGenerationRequest, type Item, type ResponsesRequest } from './request.js';
import { newResponseHead, RelayedResponsesWriter, ResponsesStreamWriter, translatedResponse } from './writer.js';
import { isObject } from '../../../wire/json.js';
import { usageFromResponses } from '../../../wire/openai/usage.js';

type Json = Record<string, unknown>;

/** The Responses API's names for the fields an upstream may refuse. */
const PARAMS: Partial<Record<ModelledField, string>> = { response_format: 'text.format', logprobs: 'top_logprobs' };
const responsesParam = (field: ModelledField) => PARAMS[field] ?? field;

/**
 * `POST /v1/responses`, on every model whose endpoints include `chat` or `responses`. A model of an
 * `openai` provider with `upstream_api: responses` gets the caller's body relayed to the provider's
 * own `/responses`; any other upstream the generation model. Either way Sluice keeps the
 * conversation (see conversation.ts): `previous_response_id` and `item_reference`s are resolved
 * here, and a native upstream is sent the whole conversation with `store: false`, so that a
 * conversation can move between upstreams and replicas.
 */
export function responsesOperation(conversations: Conversations): GenerationOperation<ResponsesRequest> {
  return {
    endpoint: ['responses', 'chat'],
    operation: 'responses',
    dialect: openAIDialect,
    credential: (wire) => bearerToken(wire.headers),
    parse: (body) => parseResponsesRequest(body),
    modelOf: (request) => request.model,
    isStream: (request) => request.stream,
    outputBound: (request) => ({ maxTokens: request.body.max_output_tokens ?? undefined, choices: 1 }),
    countUsage: (request, generated) => countUsage(inputTexts(request.body.instructions, request.input), generated),
    async serve(x) {
      const turn = await conversations.resolve(x.principal, x.request.previousResponseId, x.request.input);
      const keep = (response: Json, usage: Usage | null) =>
        x.request.store ? conversations.keep(x.principal, x.request.previousResponseId, turn.input, response, usage) : Promise.resolve();
      if (x.provider.relays('openai.responses', x.model)) return x.request.stream ? relayStream(x, turn, keep) : relayWhole(x, turn, keep);
      const items = [...turn.history, ...turn.input];
      const { request: generation, droppedTools } = toGenerationRequest(x.request, items, x.model, x.provider.kind);
      const caps = x.provider.capabilities(x.model);
      checkSupported(generation, x.model, caps, responsesParam);
      const headers: Record<string, string> = droppedTools.length > 0 ? { 'x-sluice-dropped-tools': droppedTools.join(', ') } : {};
      const subCalls = splitChoices(generation, caps.maxChoicesPerCall);
      const translated: Translated = { subCalls, texts: inputTexts(x.request.body.instructions, items), headers, keep };
      return x.request.stream ? translatedStream(x, translated) : translatedWhole(x, translated);
    },
  };
}

interface Translated {
  readonly subCalls: readonly SubCall[];
  /** Every input text of the conversation, for Sluice's own count. */
  readonly texts: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly keep: (response: Json, usage: Usage | null) => Promise<void>;
}

async function translatedWhole(x: Exchange<ResponsesRequest>, t: Translated): Promise<void> {
  const result = await x.invoke.generate(t.subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const choice = result.choices[0];
  const content = choice?.content ?? [];
  const usage = await meterUsage(x, result.usage, () => countUsage(t.texts, [textOf(content)]));
  const response = translatedResponse(newResponseHead(x.request.body), content, choice?.finish ?? { reason: 'stop', raw: undefined }, usage, x.provider.kind);
  await t.keep(response, usage);
  sendWhole(x, JSON.stringify(response), { 'content-type': 'application/json', ...t.headers });
}

async function translatedStream(x: Exchange<ResponsesRequest>, t: Translated): Promise<void> {
  const parts = await x.invoke.stream(t.subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const writer = new ResponsesStreamWriter(x.res, x.signal, newResponseHead(x.request.body), x.provider.kind, t.headers, (response) => t.keep(response, x.meter.usage));
  let text = '';
  await runStream(
    x,
    writer,
    async () => {
      await writer.begin();
      x.meter.firstByteAt = performance.now();
      let usage: Usage | null = null;
      for await (const part of parts) {
        if (part.type === 'usage') usage = part.usage;
        else if ((part.type === 'text' || part.type === 'reasoning') && part.choice === 0) text += part.text;
        else if (part.type === 'tool_call_delta' && part.choice === 0) text += part.arguments;
        await writer.part(part);
      }
      return usage;
    },
    () => countUsage(t.texts, [text]),
  );
}

/**
 * The body for a native upstream: the caller's as it came, `model` aside, unless it continues a
 * stored conversation: then the earlier turns and the referenced items are written out in `input`
 * and `previous_response_id` goes. Nothing is kept upstream (`store: false`), so items go without
 * their ids, and reasoning goes only where it carries OpenAI's own encrypted content (the only
 * reasoning an upstream that keeps nothing can take back).
 */
function nativeBody(request: ResponsesRequest, turn: Turn): Json {
  const body: Json = { ...request.body, store: false };
  delete body.previous_response_id;
  const expanded = turn.history.length > 0 || request.input.some((item) => itemType(item) === 'item_reference');
  if (!expanded) return body;
  const items: Item[] = [];
  for (const item of [...turn.history, ...turn.input]) {
    const type = itemType(item);
    if (type === 'reasoning') {
      if (typeof item.encrypted_content === 'string' && !isSluiceReasoning(item.encrypted_content)) items.push(item);
      continue;
    }
    const { id: _id, ...rest } = item;
    items.push(rest);
  }
  body.input = items;
  return body;
}

/** The upstream's response as the caller's: the public model id, and the caller's own conversation fields. */
function rewriter(request: ResponsesRequest) {
  return (response: Json): Json => ({ ...response, model: request.model, store: request.store, previous_response_id: request.previousResponseId ?? null });
}

/** Output texts of a response, for Sluice's own count. */
function outputTexts(response: Json): string[] {
  return Array.isArray(response.output) ? inputTexts(undefined, response.output as Item[]) : [];
}

async function relayWhole(x: Exchange<ResponsesRequest>, turn: Turn, keep: Translated['keep']): Promise<void> {
  const body = nativeBody(x.request, turn);
  const relayed = await x.invoke.relay({ operation: 'openai.responses', body, stream: false, model: x.model, requestId: x.requestId, signal: x.signal });
  if (relayed.stream) throw new Error('a whole relay answered with a stream');
  if (!Array.isArray(relayed.body.output)) throw unreadableUpstream(x.provider.id, 'a response without output');
  const response = rewriter(x.request)(relayed.body);
  const usage = await meterUsage(x, usageFromResponses(relayed.body.usage), () => countUsage(inputTexts(x.request.body.instructions, [...turn.history, ...turn.input]), outputTexts(response)));
  await keep(response, usage);
  sendWhole(x, JSON.stringify(response));
}

async function relayStream(x: Exchange<ResponsesRequest>, turn: Turn, keep: Translated['keep']): Promise<void> {
  const body = nativeBody(x.request, turn);
  const relayed = await x.invoke.relay({ operation: 'openai.responses', body, stream: true, model: x.model, requestId: x.requestId, signal: x.signal });
  if (!relayed.stream) throw new Error('a streamed relay answered whole');
  let usage: Usage | null = null;
  const writer = new RelayedResponsesWriter(x.res, x.signal, rewriter(x.request), (response) => keep(response, usageFromResponses(response.usage)));
  let text = '';
  await runStream(
    x,
    writer,
    async () => {
      for await (const event of relayed.events) {
        if (!writer.hasStarted) x.meter.firstByteAt = performance.now();
        const type = event.type;
        if (typeof event.delta === 'string') text += event.delta;
        if (isObject(event.response)) usage = usageFromResponses(event.response.usage) ?? usage;
        // The upstream's own failure, passed on as it framed it; the ledger records it as the upstream's.
        if (type === 'response.failed' || type === 'error') x.meter.failure ??= { status: 502, kind: 'upstream_error', upstreamFailure: 502 };
        await writer.relayed(event);
      }
      return usage;
    },
    () => countUsage(inputTexts(x.request.body.instructions, [...turn.history, ...turn.input]), [text]),
  );
}
