import { performance } from 'node:perf_hooks';
import { identifyListingCaller } from '../../../wire/key-carriers.js';
import { GatewayError } from '../../../core/errors.js';
import { checkSupported, unsupported } from '../../../generation/capabilities.js';
import { newGenerationId, splitChoices, type SubCall } from '../../../generation/fan-out.js';
import { textOf, type Usage } from '../../../generation/model.js';
import type { CountTokensOperation, Exchange, GenerationOperation, WireRequest } from '../../../generation/operation.js';
import { unreadableUpstream } from '../../../core/upstream-errors.js';
import { countUsage } from '../../../generation/token-counter.js';
import { meterUsage, runStream, sendWhole } from '../../answer.js';
import { geminiDialect } from '../dialect.js';
import { countBodyForGoogle, generateBodyForGoogle, inputTexts, modelMethodOf, parseCountTokensRequest, parseGenerateRequest, type CountTokensRequest, type GenerateRequest } from './request.js';
import { geminiParam, showsThoughts, toGenerationRequest } from './translate.js';
import { generateContentBody, GeminiStreamWriter, geminiUsage, TranslatedStreamWriter } from './writer.js';
import { usageFromGemini } from '../../../wire/gemini/usage.js';
import { isObject } from '../../../wire/json.js';

/**
 * The key as Google's clients send it: `x-goog-api-key` (alias `x-gamma-api-key`), `?key=`, or
 * `Authorization: Bearer`. Two different keys are refused rather than one picked.
 */
function credential(wire: WireRequest): string | undefined {
  const caller = identifyListingCaller(wire.headers, wire.query, true);
  if (caller.conflicting) throw new GatewayError('conflicting_api_keys', 'The request carries two different API keys; send exactly one.');
  return caller.key;
}

/**
 * `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent` (also under /v1). A
 * Gemini upstream gets the caller's body relayed; any other the generation model, with
 * candidateCount fanned out where the upstream has fewer choices per call.
 */
export const geminiGenerateContent: GenerationOperation<GenerateRequest> = {
  endpoint: 'chat',
  operation: 'generate_content',
  dialect: geminiDialect,
  credential,
  parse: parseGenerateRequest,
  modelOf: (request) => request.model,
  modelNamed(wire) {
    try {
      return modelMethodOf(wire.path).model.slice(0, 200);
    } catch {
      return undefined;
    }
  },
  isStream: (request) => request.stream,
  outputBound: (request) => ({ maxTokens: request.body.generationConfig?.maxOutputTokens, choices: request.body.generationConfig?.candidateCount ?? 1 }),
  countUsage: (request, generated) => countUsage(inputTexts(request.body), generated),
  async serve(x) {
    if (x.provider.relays('gemini.generateContent', x.model)) return x.request.stream ? relayStream(x) : relayWhole(x);
    const caps = x.provider.capabilities(x.model);
    const generation = toGenerationRequest(x.request, (param, what) => unsupported(x.model, caps, param, what));
    checkSupported(generation, x.model, caps, geminiParam);
    const subCalls = splitChoices(generation, caps.maxChoicesPerCall);
    return x.request.stream ? translatedStream(x, subCalls) : translatedWhole(x, subCalls);
  },
};

/** The text of a GenerateContentResponse's candidates (thoughts included: they were generated), by candidate index. */
function candidateTexts(response: Readonly<Record<string, unknown>>, into: string[]): void {
  if (!Array.isArray(response.candidates)) return;
  response.candidates.forEach((candidate: unknown, i) => {
    if (!isObject(candidate)) return;
    const index = typeof candidate.index === 'number' ? candidate.index : i;
    const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
    for (const part of parts) {
      if (!isObject(part)) continue;
      const text = typeof part.text === 'string' ? part.text : isObject(part.functionCall) ? JSON.stringify(part.functionCall.args ?? {}) : '';
      into[index] = (into[index] ?? '') + text;
    }
  });
}

/**
 * The body as sent, in Google's JSON names (see generateBodyForGoogle); only a bare-string
 * systemInstruction (which Google's API would refuse) is made the Content it means.
 */
function relayCall(x: Exchange<GenerateRequest>, stream: boolean) {
  const sent = generateBodyForGoogle(x.request.raw);
  const body = typeof sent.systemInstruction === 'string' ? { ...sent, systemInstruction: { parts: [{ text: sent.systemInstruction }] } } : sent;
  return { operation: 'gemini.generateContent' as const, body, stream, model: x.model, requestId: x.requestId, signal: x.signal };
}

async function relayWhole(x: Exchange<GenerateRequest>): Promise<void> {
  const relayed = await x.invoke.relay(relayCall(x, false));
  if (relayed.stream) throw new Error('a whole relay answered with a stream');
  const body = relayed.body;
  if (!Array.isArray(body.candidates) && !isObject(body.promptFeedback)) throw unreadableUpstream(x.provider.id, 'an answer without candidates');
  // The public model id: the upstream's own name for the model is the gateway's business.
  const wire: Record<string, unknown> = { ...body, modelVersion: x.request.model };
  const usage = await meterUsage(x, usageFromGemini(body.usageMetadata), () => {
    const texts: string[] = [];
    candidateTexts(body, texts);
    return countUsage(inputTexts(x.request.body), texts.filter((t) => t !== undefined));
  });
  if (x.meter.tokensCounted) wire.usageMetadata = geminiUsage(usage);
  sendWhole(x, JSON.stringify(wire), { 'content-type': 'application/json; charset=UTF-8' });
}

async function relayStream(x: Exchange<GenerateRequest>): Promise<void> {
  const relayed = await x.invoke.relay(relayCall(x, true));
  if (!relayed.stream) throw new Error('a streamed relay answered whole');
  const writer = new GeminiStreamWriter(x.res, x.signal, x.request.sse, x.request.model);
  const texts: string[] = [];
  await runStream(
    x,
    writer,
    async () => {
      let usage: Usage | null = null;
      for await (const chunk of relayed.events) {
        if (!writer.hasStarted) x.meter.firstByteAt = performance.now();
        candidateTexts(chunk, texts);
        // Google repeats the running totals on every chunk: the last ones count.
        usage = usageFromGemini(chunk.usageMetadata) ?? usage;
        await writer.relayed(chunk);
      }
      return usage;
    },
    () => countUsage(inputTexts(x.request.body), texts.filter((t) => t !== undefined)),
  );
}

async function translatedWhole(x: Exchange<GenerateRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const result = await x.invoke.generate(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const usage = await meterUsage(x, result.usage, () => countUsage(inputTexts(x.request.body), result.choices.map((choice) => textOf(choice.content))));
  const body = generateContentBody(result, x.request.model, newGenerationId(''), usage, showsThoughts(x.request.body));
  sendWhole(x, body, { 'content-type': 'application/json; charset=UTF-8' });
}

async function translatedStream(x: Exchange<GenerateRequest>, subCalls: readonly SubCall[]): Promise<void> {
  const { request } = x;
  const parts = await x.invoke.stream(subCalls, { model: x.model, requestId: x.requestId, signal: x.signal });
  const writer = new TranslatedStreamWriter(x.res, x.signal, request.sse, request.model, newGenerationId(''), showsThoughts(request.body));
  const texts: string[] = [];
  await runStream(
    x,
    writer,
    async () => {
      writer.openEmpty();
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
    () => countUsage(inputTexts(request.body), texts.filter((t) => t !== undefined)),
  );
}

/**
 * `POST …/models/{model}:countTokens`. A Gemini upstream counts (the body relayed); for any other
 * Sluice counts with its own tokenizer, the same count it would bill if that upstream reported none.
 */
export const geminiCountTokens: CountTokensOperation<CountTokensRequest> = {
  endpoint: 'chat',
  operation: 'gemini.countTokens',
  dialect: geminiDialect,
  credential,
  parse: parseCountTokensRequest,
  modelOf: (request) => request.model,
  modelNamed: geminiGenerateContent.modelNamed!,
  async serve(x) {
    if (x.provider.relays('gemini.countTokens', x.model)) {
      const relayed = await x.invoke.relay({ operation: 'gemini.countTokens', body: countBodyForGoogle(x.request.raw), stream: false, model: x.model, requestId: x.requestId, signal: x.signal });
      if (relayed.stream) throw new Error('a whole relay answered with a stream');
      if (typeof relayed.body.totalTokens !== 'number') throw unreadableUpstream(x.provider.id, 'a token count without totalTokens');
      x.res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(relayed.body));
      return;
    }
    const { input } = await countUsage(inputTexts(x.request.body), []);
    x.res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ totalTokens: input }));
  },
};
