import { identifyListingCaller } from '../../../wire/key-carriers.js';
import { GatewayError } from '../../../core/errors.js';
import { checkSupported, unsupported } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices } from '../../../generation/fan-out.js';
import { textOf } from '../../../generation/model.js';
import type { Operation, WireRequest } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { addCandidateTexts, GenerateContentReading } from '../../../wire/gemini/reading.js';
import { usageFromGemini } from '../../../wire/gemini/usage.js';
import { TextsByChoice } from '../../../wire/relay-format.js';
import { countTokensOperation } from '../../count-tokens.js';
import { relayedStream, rendered, translatedStream, wholeReply } from '../../reply.js';
import { countBodyForGoogle, generateBodyForGoogle, inputTexts, modelMethodOf, parseCountTokensRequest, parseGenerateRequest, type CountTokensRequest, type GenerateRequest } from './request.js';
import { geminiParam, showsThoughts, toGenerationRequest } from './translate.js';
import { generateContentBody, GeminiStreamWriter, geminiUsage, TranslatedStreamWriter } from './writer.js';

export const GOOGLE_JSON = { 'content-type': 'application/json; charset=UTF-8' } as const;

/**
 * The key as Google's clients send it: `x-goog-api-key` (alias `x-gamma-api-key`), `?key=`, or
 * `Authorization: Bearer`. Two different keys are refused rather than one picked.
 */
export function credential(wire: WireRequest): string | undefined {
  const caller = identifyListingCaller(wire.headers, wire.query, true);
  if (caller.conflicting) throw new GatewayError('conflicting_api_keys', 'The request carries two different API keys; send exactly one.');
  return caller.key;
}

/**
 * `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent` (also under /v1). A
 * Gemini upstream gets the caller's body relayed; any other the generation model, with
 * candidateCount fanned out where the upstream has fewer choices per call.
 */
export const geminiGenerateContent: Operation<GenerateRequest> = {
  endpoint: 'chat',
  operation: 'generate_content',
  dialect: 'gemini',
  credential,
  parse: parseGenerateRequest,
  modelNamed,
  outputBound: (request) => ({ maxTokens: request.body.generationConfig?.maxOutputTokens, choices: request.body.generationConfig?.candidateCount ?? 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request.body), generated),
  plan(request, { model, provider }) {
    if (provider.relays('gemini.generateContent', model)) return { kind: 'relay', operation: 'gemini.generateContent', body: relayBody(request), stream: request.stream };
    const caps = provider.capabilities(model);
    const generation = toGenerationRequest(request, (param, what) => unsupported(model, caps, param, what));
    checkSupported(generation, model, caps, geminiParam);
    return { kind: 'generate', subCalls: splitChoices(generation, caps.maxChoicesPerCall), stream: request.stream };
  },
  answer(request, answer, { sink }) {
    switch (answer.kind) {
      case 'relayed': {
        const body = answer.body;
        const generated = () => {
          const texts = new TextsByChoice();
          addCandidateTexts(body, texts);
          return texts.list();
        };
        // The public model id: the upstream's own name for the model is the gateway's business.
        return wholeReply(usageFromGemini(body.usageMetadata), generated, (usage, counted) =>
          rendered(JSON.stringify({ ...body, modelVersion: request.model, ...(counted ? { usageMetadata: geminiUsage(usage) } : {}) }), GOOGLE_JSON),
        );
      }
      case 'relaying': {
        const writer = new GeminiStreamWriter(sink, request.sse, request.model);
        return relayedStream(answer.events, writer, new GenerateContentReading(), (chunk) => writer.relayed(chunk));
      }
      case 'generated': {
        const result = answer.result;
        return wholeReply(result.usage, () => result.choices.map((choice) => textOf(choice.content)), (usage) =>
          rendered(generateContentBody(result, request.model, newGenerationId(''), usage, showsThoughts(request.body)), GOOGLE_JSON),
        );
      }
      case 'generating': {
        const writer = new TranslatedStreamWriter(sink, request.sse, request.model, newGenerationId(''), showsThoughts(request.body));
        return translatedStream(answer.parts, writer, () => writer.openEmpty(), (part) => writer.part(part));
      }
      case 'none':
      case 'embedded':
      case 'transferred':
        throw new Error('generateContent always calls its upstream');
    }
  },
};

/** The model named in the path, for the ledger row of a request refused before it parsed. */
export function modelNamed(wire: WireRequest): string | undefined {
  try {
    return modelMethodOf(wire.path).model.slice(0, 200);
  } catch {
    return undefined;
  }
}

/**
 * The body as sent, in Google's JSON names (see generateBodyForGoogle); only a bare-string
 * systemInstruction (which Google's API would refuse) is made the Content it means.
 */
function relayBody(request: GenerateRequest): Readonly<Record<string, unknown>> {
  const sent = generateBodyForGoogle(request.raw);
  return typeof sent.systemInstruction === 'string' ? { ...sent, systemInstruction: { parts: [{ text: sent.systemInstruction }] } } : sent;
}

/**
 * `POST …/models/{model}:countTokens`. A Gemini upstream counts (the body relayed); for any other
 * Sluice counts with its own tokenizer, the same count it would bill if that upstream reported none.
 */
export const geminiCountTokens = countTokensOperation<CountTokensRequest>({
  endpoint: 'chat',
  operation: 'gemini.countTokens',
  dialect: 'gemini',
  credential,
  parse: parseCountTokensRequest,
  modelNamed,
  relayOperation: 'gemini.countTokens',
  relayed: (request) => ({ body: countBodyForGoogle(request.raw) }),
  counted: async (request) => ({ totalTokens: (await countUsage(inputTexts(request.body), [])).input }),
  headers: GOOGLE_JSON,
});
