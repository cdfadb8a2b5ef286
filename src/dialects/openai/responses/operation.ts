import { bearerToken } from '../../../wire/key-carriers.js';
import { checkSupported, type ModelledField } from '../../../generation/capabilities.js';
import { splitChoices } from '../../../generation/fan-out.js';
import { textOf, type Usage } from '../../../generation/model.js';
import type { Operation, ProviderCall } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { ResponsesReading } from '../../../wire/openai/reading.js';
import { usageFromResponses } from '../../../wire/openai/usage.js';
import { relayedStream, rendered, translatedStream, wholeReply } from '../../reply.js';
import type { Conversations, Turn } from './conversation.js';
import { isSluiceReasoning } from './reasoning.js';
import { inputTexts, itemType, parseResponsesRequest, toGenerationRequest, type Item, type ResponsesRequest } from './request.js';
import { responsesTools, type ResponsesTools } from './tools.js';
import { newResponseHead, RelayedResponsesWriter, ResponsesStreamWriter, translatedResponse } from './writer.js';

type Json = Record<string, unknown>;

/** The Responses API's names for the fields an upstream may refuse. */
const PARAMS: Partial<Record<ModelledField, string>> = { response_format: 'text.format', logprobs: 'top_logprobs' };
const responsesParam = (field: ModelledField) => PARAMS[field] ?? field;

/** A request with the conversation it continues, once admitted. */
export interface ContinuedRequest extends ResponsesRequest {
  readonly turn?: Turn;
  /** Its tools and the conversation's as functions, for a translated upstream, and how its calls map back. */
  readonly tools?: ResponsesTools;
  /** Stores the response for the caller's account, when the request asked for it to be kept. */
  readonly keep?: (response: Json, usage: Usage | null) => Promise<void>;
}

/**
 * `POST /v1/responses`, on every model whose endpoints include `chat` or `responses`. A model of an
 * `openai` provider with `upstream_api: responses` gets the caller's body relayed to the provider's
 * own `/responses`; any other upstream the generation model. Either way Sluice keeps the
 * conversation (see conversation.ts): `previous_response_id` and `item_reference`s are resolved
 * once the request is admitted, and a native upstream is sent the whole conversation with
 * `store: false`, so that a conversation can move between upstreams and replicas.
 */
export function responsesOperation(conversations: Conversations): Operation<ContinuedRequest> {
  return {
    endpoint: ['responses', 'chat'],
    operation: 'responses',
    dialect: 'openai',
    credential: (wire) => bearerToken(wire.headers),
    parse: (body) => parseResponsesRequest(body),
    outputBound: (request) => ({ maxTokens: request.body.max_output_tokens ?? undefined, choices: 1 }),
    // Once the conversation is known, all of it was the upstream's input.
    countUsage: (request, generated) => countUsage(inputTexts(request.body.instructions, conversationItems(request)), generated),
    async prepare(request, principal) {
      const turn = await conversations.resolve(principal, request.previousResponseId, request.input);
      const keep = request.store ? (response: Json, usage: Usage | null) => conversations.keep(principal, request.previousResponseId, turn.input, response, usage) : undefined;
      return { ...request, turn, keep, tools: responsesTools(request.body.tools ?? [], [...turn.history, ...turn.input]) };
    },
    plan(request, { model, provider }) {
      if (provider.relays('openai.responses', model)) return { kind: 'relay', operation: 'openai.responses', body: nativeBody(request, request.turn!), stream: request.stream };
      const tools = toolsOf(request);
      const generation = toGenerationRequest(request, conversationItems(request), model, provider.kind, tools);
      const caps = provider.capabilities(model);
      checkSupported(generation, model, caps, responsesParam);
      const replyHeaders: Record<string, string> = tools.dropped.length > 0 ? { 'x-sluice-dropped-tools': tools.dropped.join(', ') } : {};
      return { kind: 'generate', subCalls: splitChoices(generation, caps.maxChoicesPerCall), stream: request.stream, replyHeaders };
    },
    answer(request, answer, { provider, call, sink }) {
      const keep = request.keep ?? (() => Promise.resolve());
      switch (answer.kind) {
        case 'relayed': {
          const response = rewriter(request)(answer.body);
          return wholeReply(usageFromResponses(answer.body.usage), () => outputTexts(response), async (usage) => {
            await keep(response, usage);
            return rendered(JSON.stringify(response));
          });
        }
        case 'relaying': {
          const writer = new RelayedResponsesWriter(sink, rewriter(request), (response) => keep(response, usageFromResponses(response.usage)));
          return relayedStream(answer.events, writer, new ResponsesReading(), (event) => writer.relayed(event));
        }
        case 'generated': {
          const choice = answer.result.choices[0];
          const content = choice?.content ?? [];
          const headers = droppedToolsHeaders(call);
          return wholeReply(answer.result.usage, () => [textOf(content)], async (usage) => {
            const response = translatedResponse(newResponseHead(request.body), content, choice?.finish ?? { reason: 'stop', raw: undefined }, usage, provider.kind, toolsOf(request));
            await keep(response, usage);
            return rendered(JSON.stringify(response), { 'content-type': 'application/json', ...headers });
          });
        }
        case 'generating': {
          const writer = new ResponsesStreamWriter(sink, newResponseHead(request.body), provider.kind, toolsOf(request), droppedToolsHeaders(call), keep);
          return translatedStream(answer.parts, writer, () => writer.begin(), (part) => writer.part(part));
        }
        case 'none':
      case 'embedded':
      case 'transferred':
          throw new Error('a response always calls its upstream');
      }
    },
  };
}

/** The earlier turns and this one's input, once resolved; the request's own input before. */
function conversationItems(request: ContinuedRequest): readonly Item[] {
  return request.turn === undefined ? request.input : [...request.turn.history, ...request.turn.input];
}

/** The request's tools as functions: found once the conversation is known, from its own input before. */
function toolsOf(request: ContinuedRequest): ResponsesTools {
  return request.tools ?? responsesTools(request.body.tools ?? [], conversationItems(request));
}

/** The hosted tools the translation left out, named for the caller. */
function droppedToolsHeaders(call: ProviderCall): Readonly<Record<string, string>> {
  return (call.kind === 'generate' ? call.replyHeaders : undefined) ?? {};
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

