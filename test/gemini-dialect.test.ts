// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { ApiError, GoogleGenAI, Type, type Content, type GenerateContentResponse } from '@google/genai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { KNOWN_CACHE } from './fakes/fake-gemini.js';
import type { FakeUpstream, RecordedRequest } from './fakes/fake-server.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { PDF_BASE64 } from './support/documents.js';
import { cli, createKey, eventually, startSluice, type LedgerRow, type RunningSluice } from './support/sluice.js';

/**
 * Google's generateContent API spoken to Sluice by the official @google/genai SDK (and raw HTTP
 * where the SDK cannot say it), against a chat model of each upstream kind: a Gemini upstream gets
 * the caller's body relayed; Anthropic and OpenAI-compatible upstreams are translated through the
 * generation core. The fakes answer by the rules of test/fakes/chat-model.ts: `[<prompt>]` then one
 * word per token; "weather" calls get_weather {"city":"Paris"}; a function response gets
 * "Result: …"; a schema gets its minimal instance; thinking is "Let me think." (3 tokens).
 */
let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;

interface Upstream {
  readonly name: string;
  readonly model: string;
  readonly fake: () => FakeUpstream;
  readonly relayed: boolean;
  /** Upstream calls for candidateCount 2. */
  readonly callsForTwoCandidates: number;
  /** The system instruction's text as the upstream received it. */
  readonly sentSystem: (r: RecordedRequest) => unknown;
  /** How many turns (contents, messages) the upstream received, system aside. */
  readonly sentTurns: (r: RecordedRequest) => number;
  /** Whether the upstream signs its reasoning (so that thoughts carry a thoughtSignature). */
  readonly signsReasoning: boolean;
}

const UPSTREAMS: Upstream[] = [
  {
    name: 'a Gemini upstream (relayed)',
    model: 'gemini-flash',
    fake: () => upstreams.gemini,
    relayed: true,
    callsForTwoCandidates: 1,
    sentSystem: (r) => r.body.systemInstruction.parts[0].text,
    sentTurns: (r) => r.body.contents.length,
    signsReasoning: true,
  },
  {
    name: 'an Anthropic upstream (translated)',
    model: 'claude',
    fake: () => upstreams.anthropic,
    relayed: false,
    callsForTwoCandidates: 2,
    sentSystem: (r) => r.body.system[0].text,
    sentTurns: (r) => r.body.messages.length,
    signsReasoning: true,
  },
  {
    name: 'an OpenAI-compatible upstream (translated)',
    model: 'llama-chat',
    fake: () => upstreams.vllm,
    relayed: false,
    callsForTwoCandidates: 1,
    sentSystem: (r) => r.body.messages[0].content,
    sentTurns: (r) => r.body.messages.filter((m: any) => m.role !== 'system').length,
    signsReasoning: false,
  },
];

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 4000 }
  - { id: 'org/gem:v1', provider: google, upstream_model: gemini-test, endpoints: [chat] }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 2048 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
  - { id: legacy-only, provider: vllm, upstream_model: upstream-model, endpoints: [completions] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

const genai = (apiKey = key) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: sluice.url } });

const weatherTool = { functionDeclarations: [{ name: 'get_weather', description: 'Weather in a city', parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] } }] };

/** A raw call of a model method, for what the SDK cannot send. */
async function call(path: string, body: unknown, headers: Record<string, string> = { 'x-goog-api-key': key }) {
  const response = await fetch(`${sluice.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: json };
}

async function ledgerRows(count: number, filter: (row: LedgerRow) => boolean): Promise<LedgerRow[]> {
  return eventually(async () => {
    const rows = (await sluice.ledger()).filter(filter);
    return rows.length >= count ? rows : undefined;
  });
}

async function collect(stream: AsyncGenerator<GenerateContentResponse>): Promise<GenerateContentResponse[]> {
  const chunks: GenerateContentResponse[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

for (const upstream of UPSTREAMS) {
  const { model } = upstream;
  describe(`generateContent through ${upstream.name}`, () => {
    test('a whole answer: text, MAX_TOKENS, usageMetadata, the public model id; a ledger row', async () => {
      const response = await genai().models.generateContent({ model, contents: 'hello', config: { maxOutputTokens: 3 } });
      assert.equal(response.text, '[hello] The quick');
      const candidate = response.candidates![0]!;
      assert.equal(candidate.content!.role, 'model');
      assert.equal(candidate.finishReason, 'MAX_TOKENS');
      assert.equal(response.modelVersion, model);
      assert.ok(response.responseId);
      assert.deepEqual({ ...response.usageMetadata }, { promptTokenCount: 1, candidatesTokenCount: 3, totalTokenCount: 4 });
      const sent = upstream.fake().requests.at(-1)!;
      assert.equal(upstream.relayed ? sent.body.generationConfig.maxOutputTokens : sent.body.max_tokens, 3);
      assert.doesNotMatch(JSON.stringify(sent.headers), new RegExp(key), "the caller's key never goes upstream");
      const [row] = await ledgerRows(1, (r) => r.model === model && r.operation === 'generate_content');
      assert.equal(row!.status, 200);
      assert.equal(row!.stream, 0);
      assert.equal(row!.prompt_tokens, 1);
      assert.equal(row!.completion_tokens, 3);
      assert.equal(row!.tokens_counted, 0);
      assert.equal(row!.provider_id, upstream.fake() === upstreams.gemini ? 'google' : upstream.fake() === upstreams.anthropic ? 'anthropic' : 'vllm');
    });

    test('a PDF as inlineData reaches the upstream as its own document', async () => {
      const response = await genai().models.generateContent({
        model,
        contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: PDF_BASE64 } }, { text: 'Summarise this document' }] }],
        config: { maxOutputTokens: 8 },
      });
      assert.match(response.text ?? '', /^\[Summarise this document\]/);
      const sent = upstream.fake().requests.at(-1)!.body;
      if (upstream.fake() === upstreams.gemini) assert.deepEqual(sent.contents[0].parts[0], { inlineData: { mimeType: 'application/pdf', data: PDF_BASE64 } });
      else if (upstream.fake() === upstreams.anthropic) assert.deepEqual(sent.messages[0].content[0], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 } });
      else assert.deepEqual(sent.messages[0].content[0], { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'document.pdf' } });
    });

    test('a stream: several chunks, the finish reason and usage on the last, which has content; streamed in the ledger', async () => {
      const chunks = await collect(await genai().models.generateContentStream({ model, contents: 'tell me', config: { maxOutputTokens: 4 } }));
      assert.ok(chunks.length > 1);
      assert.equal(chunks.map((c) => c.text ?? '').join(''), '[tell me] The quick brown');
      assert.ok(chunks.every((c) => c.modelVersion === model));
      const last = chunks.at(-1)!;
      assert.equal(last.candidates![0]!.finishReason, 'MAX_TOKENS');
      assert.ok(last.candidates![0]!.content!.parts!.length > 0, 'the last chunk carries content');
      assert.equal(last.usageMetadata!.candidatesTokenCount, 4);
      const [row] = await ledgerRows(1, (r) => r.model === model && r.stream === 1 && r.status === 200);
      assert.equal(row!.operation, 'generate_content');
      assert.equal(row!.completion_tokens, 4);
      assert.equal(row!.tokens_counted, 0);
    });

    test('a chat session keeps its history across whole and streamed turns', async () => {
      const chat = genai().chats.create({ model, config: { maxOutputTokens: 2 } });
      const first = await chat.sendMessage({ message: 'My name is Ada' });
      assert.equal(first.text, '[My name is Ada] The');
      let streamed = '';
      for await (const chunk of await chat.sendMessageStream({ message: 'And yours?' })) streamed += chunk.text ?? '';
      assert.equal(streamed, '[And yours?] The');
      const third = await chat.sendMessage({ message: 'Bye' });
      assert.equal(third.text, '[Bye] The');
      assert.equal(chat.getHistory(true).length >= 6, true, 'every turn was recorded');
      assert.equal(upstream.sentTurns(upstream.fake().requests.at(-1)!) >= 5, true, 'the upstream got the whole conversation');
      const sent = JSON.stringify(upstream.fake().requests.at(-1)!.body);
      assert.match(sent, /My name is Ada/);
      assert.match(sent, /\[And yours\?\]/, 'the streamed answer went back too');
    });

    test('function calling round trip: a functionCall with STOP, its functionResponse answered', async () => {
      const contents: Content[] = [{ role: 'user', parts: [{ text: 'What is the weather in Paris?' }] }];
      const first = await genai().models.generateContent({ model, contents, config: { tools: [weatherTool] } });
      assert.equal(first.functionCalls!.length, 1);
      assert.equal(first.functionCalls![0]!.name, 'get_weather');
      assert.deepEqual(first.functionCalls![0]!.args, { city: 'Paris' });
      assert.equal(first.candidates![0]!.finishReason, 'STOP');
      if (!upstream.relayed) {
        assert.ok(first.functionCalls![0]!.id, 'translated calls carry the upstream id');
        const sent = upstream.fake().requests.at(-1)!.body;
        const schema = upstream.fake() === upstreams.anthropic ? sent.tools[0].input_schema : sent.tools[0].function.parameters;
        assert.deepEqual(schema, { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, 'OpenAPI parameters become JSON Schema');
      }
      contents.push(first.candidates![0]!.content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Sunny, 22 degrees' } } }] });
      const second = await genai().models.generateContent({ model, contents, config: { tools: [weatherTool] } });
      assert.match(second.text!, /^Result: .*Sunny, 22 degrees/);
      assert.equal(second.candidates![0]!.finishReason, 'STOP');

      const streamed = await collect(await genai().models.generateContentStream({ model, contents: contents.slice(0, 1), config: { tools: [weatherTool] } }));
      const calls = streamed.flatMap((c) => c.functionCalls ?? []);
      assert.deepEqual(calls.map((c) => [c.name, c.args]), [['get_weather', { city: 'Paris' }]]);
    });

    test('JSON output: responseSchema (OpenAPI subset) and responseJsonSchema', async () => {
      const schema = { type: Type.OBJECT, properties: { name: { type: Type.STRING }, tags: { type: Type.ARRAY, items: { type: Type.INTEGER } } }, required: ['name', 'tags'] };
      const viaSchema = await genai().models.generateContent({ model, contents: 'a person', config: { responseMimeType: 'application/json', responseSchema: schema } });
      assert.deepEqual(JSON.parse(viaSchema.text!), { name: 'example', tags: [1] });
      const jsonSchema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer' } }, required: ['ok', 'n'], additionalProperties: false };
      const viaJsonSchema = await genai().models.generateContent({ model, contents: 'a thing', config: { responseMimeType: 'application/json', responseJsonSchema: jsonSchema } });
      assert.deepEqual(JSON.parse(viaJsonSchema.text!), { ok: true, n: 1 });
    });

    test('JSON output without a schema: a JSON object as the text, whole and streamed', async () => {
      const config = { responseMimeType: 'application/json' };
      const whole = await genai().models.generateContent({ model, contents: 'Answer in JSON: is it ok?', config });
      assert.equal(whole.candidates![0]!.finishReason, 'STOP');
      assert.equal(whole.functionCalls, undefined);
      assert.deepEqual(JSON.parse(whole.text!), { ok: true });
      const streamed = await collect(await genai().models.generateContentStream({ model, contents: 'Answer in JSON: is it ok?', config }));
      assert.deepEqual(JSON.parse(streamed.map((c) => c.text ?? '').join('')), { ok: true });
      assert.equal(streamed.at(-1)!.candidates![0]!.finishReason, 'STOP');
      assert.equal(streamed.at(-1)!.usageMetadata!.candidatesTokenCount, whole.usageMetadata!.candidatesTokenCount);
    });

    test('systemInstruction reaches the upstream and is counted', async () => {
      const response = await genai().models.generateContent({ model, contents: 'hello', config: { systemInstruction: 'Answer very briefly.', maxOutputTokens: 1 } });
      assert.equal(response.text, '[hello]');
      assert.equal(upstream.sentSystem(upstream.fake().requests.at(-1)!), 'Answer very briefly.');
      assert.equal(response.usageMetadata!.promptTokenCount, 4);
    });

    test('candidateCount 2: two indexed candidates, split over calls where the upstream has no n', async () => {
      const response = await genai().models.generateContent({ model, contents: 'pick', config: { maxOutputTokens: 2, candidateCount: 2 } });
      assert.deepEqual(response.candidates!.map((c) => [c.index ?? 0, c.content!.parts![0]!.text]), [[0, '[pick] The'], [1, '[pick] The']]);
      assert.equal(upstream.fake().requests.length, upstream.callsForTwoCandidates);
      assert.equal(response.usageMetadata!.candidatesTokenCount, 4);
    });

    test('thinking with includeThoughts: a thought part, thoughtsTokenCount apart from the candidates; reasoning in the ledger', async () => {
      const response = await genai().models.generateContent({ model, contents: 'why?', config: { maxOutputTokens: 3000, thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } } });
      const parts = response.candidates![0]!.content!.parts!;
      assert.deepEqual([parts[0]!.text, parts[0]!.thought], ['Let me think.', true]);
      assert.equal(response.text, '[why?] The quick brown fox jumps over the lazy dog.', 'the text leaves the thoughts out');
      const visible = parts.find((p) => p.thought !== true)!;
      assert.equal(visible.thoughtSignature !== undefined, upstream.signsReasoning);
      const usage = response.usageMetadata!;
      assert.equal(usage.thoughtsTokenCount, 3);
      assert.equal(usage.candidatesTokenCount, 11);
      assert.equal(usage.totalTokenCount, usage.promptTokenCount! + 14);
      const [row] = await ledgerRows(1, (r) => r.model === model && r.reasoning_tokens > 0);
      assert.equal(row!.reasoning_tokens, 3);
      assert.equal(row!.completion_tokens, 14, 'the ledger counts thoughts as output');

      const hidden = await genai().models.generateContent({ model, contents: 'why?', config: { maxOutputTokens: 3000, thinkingConfig: { thinkingBudget: 2048 } } });
      assert.ok(hidden.candidates![0]!.content!.parts!.every((p) => p.thought !== true), 'thoughts are shown only when asked for');
      assert.equal(hidden.usageMetadata!.thoughtsTokenCount, 3);

      const streamed = await collect(await genai().models.generateContentStream({ model, contents: 'why?', config: { maxOutputTokens: 3000, thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } } }));
      const streamedParts = streamed.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
      assert.equal(streamedParts.filter((p) => p.thought).map((p) => p.text).join(''), 'Let me think.');
      assert.equal(streamed.at(-1)!.usageMetadata!.thoughtsTokenCount, 3);
    });

    test('thinking and tools over two turns: the signatures Sluice wrote go back to the same upstream', async () => {
      const config = { tools: [weatherTool], maxOutputTokens: 3000, thinkingConfig: { thinkingBudget: 2048 } };
      const contents: Content[] = [{ role: 'user', parts: [{ text: 'weather in Paris?' }] }];
      const first = await genai().models.generateContent({ model, contents, config });
      const callPart = first.candidates![0]!.content!.parts!.find((p) => p.functionCall !== undefined)!;
      assert.equal(callPart.thoughtSignature !== undefined, upstream.signsReasoning);
      contents.push(first.candidates![0]!.content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Rainy' } } }] });
      const second = await genai().models.generateContent({ model, contents, config });
      assert.match(second.text!, /Rainy/);
      const sent = upstream.fake().requests.at(-1)!.body;
      if (upstream.fake() === upstreams.anthropic) {
        const assistant = sent.messages.find((m: any) => m.role === 'assistant');
        assert.equal(assistant.content[0].type, 'thinking', 'the thinking block is replayed first, whole, with its signature');
        assert.equal(assistant.content[0].thinking, 'Let me think.');
        assert.equal(assistant.content[1].type, 'tool_use');
      } else if (upstream.relayed) {
        assert.equal(sent.contents[1].parts[0].thoughtSignature, callPart.thoughtSignature, "Google's signature relayed as it came");
      }
    });

    test('the placeholder signature of replayed calls is never passed to another vendor', async () => {
      const contents: Content[] = [
        { role: 'user', parts: [{ text: 'weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Windy' } } }] },
      ];
      const response = await genai().models.generateContent({ model, contents, config: { tools: [weatherTool] } });
      assert.match(response.text!, /Windy/);
      const sent = JSON.stringify(upstream.fake().requests.at(-1)!.body);
      assert.equal(sent.includes('skip_thought_signature_validator'), upstream.relayed);
    });

    test('countTokens: contents (the SDK) and generateContentRequest (raw)', async () => {
      const counted = await genai().models.countTokens({ model, contents: 'Count these four words' });
      assert.ok(counted.totalTokens! >= 4);
      const whole = await call(`/v1beta/models/${model}:countTokens`, {
        generateContentRequest: { model: `models/${model}`, contents: [{ role: 'user', parts: [{ text: 'Count these four words' }] }], systemInstruction: { parts: [{ text: 'Be brief.' }] } },
      });
      assert.equal(whole.status, 200, whole.text);
      assert.ok(whole.body.totalTokens > counted.totalTokens!, 'the system instruction counts too');
      if (upstream.relayed) {
        assert.equal(counted.totalTokens, 4);
        const sent = upstream.fake().requests.at(-1)!;
        assert.equal(sent.path, '/v1beta/models/gemini-test:countTokens');
        assert.equal(sent.body.generateContentRequest.model, 'models/gemini-test', 'the inner model names the upstream model');
      } else {
        assert.equal(upstream.fake().requests.length, 0, 'Sluice counts for an upstream that cannot');
      }
      // Each count is admitted and leaves its ledger row, costing nothing: the upstream's count is its attempt, Sluice's has none.
      const rows = await eventually(async () => {
        const counts = (await sluice.ledger()).filter((r) => r.model === model && r.operation === 'gemini.countTokens');
        return counts.length >= 2 ? counts : undefined;
      }, 5000, 'the count rows');
      assert.deepEqual(
        rows.map((r) => [r.status, r.cost_usd, r.attempts]),
        [
          [200, 0, upstream.relayed ? 1 : 0],
          [200, 0, upstream.relayed ? 1 : 0],
        ],
      );
    });

    test('a non-SSE stream is one JSON array, as Google serves it', async () => {
      const response = await call(`/v1beta/models/${model}:streamGenerateContent`, { contents: [{ parts: [{ text: 'tell me' }] }], generationConfig: { maxOutputTokens: 3 } });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type')!, /^application\/json/);
      assert.match(response.text, /^\[\{.*\}\r\n(,\{.*\}\r\n)+\]$/s);
      const chunks = response.body as any[];
      assert.equal(chunks.map((c) => c.candidates[0].content.parts.map((p: any) => p.text).join('')).join(''), '[tell me] The quick');
      assert.equal(chunks.at(-1).candidates[0].finishReason, 'MAX_TOKENS');
      assert.equal(chunks.at(-1).usageMetadata.candidatesTokenCount, 3);
    });

    test('an upstream failure mid-stream: an error chunk in Google\'s shape ends the stream; the SDK raises it', async () => {
      upstream.fake().behaviour = { errorAfterChunks: 4 };
      const texts: string[] = [];
      await assert.rejects(
        (async () => {
          for await (const chunk of await genai().models.generateContentStream({ model, contents: 'tell me', config: { maxOutputTokens: 8 } })) texts.push(chunk.text ?? '');
        })(),
        (e: any) => e instanceof ApiError && e.status >= 500,
      );
      assert.ok(texts.join('').startsWith('[tell me]'), 'what came before the failure was delivered');
      const raw = await fetch(`${sluice.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
        method: 'POST',
        headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ parts: [{ text: 'tell me' }] }] }),
      });
      assert.equal(raw.status, 200);
      const events = (await raw.text()).split('\r\n\r\n').filter(Boolean);
      assert.ok(events.every((e) => e.startsWith('data: ')));
      const error = JSON.parse(events.at(-1)!.slice(6)).error;
      assert.equal(typeof error.code, 'number');
      assert.ok(error.code >= 500);
      assert.match(error.status, /^(UNAVAILABLE|INTERNAL)$/);
      const rows = await ledgerRows(2, (r) => r.model === model && r.stream === 1 && r.status >= 500);
      assert.ok(rows.every((r) => r.error_kind !== null));
    });

    test('an upstream failure before the first byte is an HTTP error in Google\'s shape', async () => {
      upstream.fake().behaviour = { fail: { status: 500, body: '{"error":{"message":"boom"}}' } };
      const response = await call(`/v1beta/models/${model}:streamGenerateContent?alt=sse`, { contents: [{ parts: [{ text: 'x' }] }] });
      assert.equal(response.status, 502);
      assert.equal(response.body.error.status, 'UNAVAILABLE');
      assert.equal(response.body.error.code, 502);
    });
  });
}

describe('generateContent: relaying to a Gemini upstream', () => {
  test('the body goes as sent: safety settings, thought signatures, cached content, unknown-to-Sluice config', async () => {
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'weather in Paris?' }] },
        { role: 'model', parts: [{ text: 'Let me look.', thought: true }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJl' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Sunny' } } }] },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
      cachedContent: KNOWN_CACHE,
      generationConfig: { maxOutputTokens: 50, temperature: 0.3, mediaResolution: 'MEDIA_RESOLUTION_LOW' },
    };
    const response = await call('/v1beta/models/gemini-flash:generateContent', body);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.candidates[0].content.parts[0].text, 'Result: Sunny');
    assert.equal(response.body.modelVersion, 'gemini-flash', 'the upstream model name is not shown');
    const sent = upstreams.gemini.requests.at(-1)!;
    assert.equal(sent.path, '/v1beta/models/gemini-test:generateContent');
    assert.deepEqual(sent.body, body);
    assert.equal(sent.headers['x-goog-api-key'], 'gemini-credential');
    assert.equal(response.body.usageMetadata.cachedContentTokenCount, 10);
    const [row] = await ledgerRows(1, (r) => r.model === 'gemini-flash' && r.cached_input_tokens === 10);
    assert.equal(row!.prompt_tokens, response.body.usageMetadata.promptTokenCount);
  });

  test("maxOutputTokens is capped to the catalogue's max_output_tokens, and set to it when missing", async () => {
    await call('/v1beta/models/gemini-flash:generateContent', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { maxOutputTokens: 9000 } });
    await call('/v1beta/models/gemini-flash:generateContent', { contents: [{ parts: [{ text: 'x' }] }] });
    await call('/v1beta/models/gemini-flash:generateContent', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { maxOutputTokens: 7 } });
    assert.deepEqual(upstreams.gemini.requests.map((r) => r.body.generationConfig.maxOutputTokens), [4000, 4000, 7]);
  });

  test("proto field names and single objects for lists, as Google's REST examples write them, go in JSON names and lists, capped", async () => {
    const parameters = { type: 'OBJECT', properties: { city_name: { type: 'STRING' } }, required: ['city_name'] };
    const response = await call('/v1beta/models/gemini-flash:generateContent', {
      system_instruction: { parts: { text: 'Be brief.' } },
      contents: { parts: { text: 'hi' } },
      tools: { function_declarations: { name: 'get_weather', parameters } },
      generation_config: { max_output_tokens: 9000 },
    });
    assert.equal(response.status, 200, response.text);
    // The fake reads JSON names only: the relay's own edits (the output cap) need them too.
    assert.deepEqual(upstreams.gemini.requests.at(-1)!.body, {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ parts: [{ text: 'hi' }] }],
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters }] }],
      generationConfig: { maxOutputTokens: 4000 },
    });
    const count = await call('/v1beta/models/gemini-flash:countTokens', { generate_content_request: { model: 'models/gemini-flash', contents: { parts: { text: 'hi' } } } });
    assert.equal(count.status, 200, count.text);
    assert.deepEqual(upstreams.gemini.requests.at(-1)!.body, { generateContentRequest: { model: 'models/gemini-test', contents: [{ parts: [{ text: 'hi' }] }] } });
  });

  test('model ids with slashes and colons, under /v1beta and /v1, with or without models/', async () => {
    const viaSdk = await genai().models.generateContent({ model: 'org/gem:v1', contents: 'hi', config: { maxOutputTokens: 1 } });
    assert.equal(viaSdk.modelVersion, 'org/gem:v1');
    for (const path of ['/v1beta/models/org%2Fgem%3Av1:generateContent', '/v1/models/models/org/gem:v1:generateContent']) {
      const response = await call(path, { contents: [{ parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 1 } }, { authorization: `Bearer ${key}` });
      assert.equal(response.status, 200, `${path}: ${response.text}`);
      assert.equal(response.body.modelVersion, 'org/gem:v1');
    }
    assert.ok(upstreams.gemini.requests.every((r) => r.path === '/v1beta/models/gemini-test:generateContent'));
  });

  test('usage the upstream did not report is counted by Sluice, and marked so', async () => {
    upstreams.gemini.behaviour = { omitUsage: true };
    const response = await call('/v1beta/models/gemini-flash:generateContent?key=' + key, { contents: [{ parts: [{ text: 'count me please' }] }], generationConfig: { maxOutputTokens: 2 } }, {});
    assert.equal(response.status, 200);
    assert.ok(response.body.usageMetadata.promptTokenCount > 0);
    const [row] = await ledgerRows(1, (r) => r.model === 'gemini-flash' && r.tokens_counted === 1);
    assert.ok(row!.prompt_tokens > 0 && row!.completion_tokens > 0);
  });
});

describe('generateContent: keys and models', () => {
  test('a missing, wrong or doubled key is 401 UNAUTHENTICATED in Google\'s shape; the SDK raises ApiError', async () => {
    const body = { contents: [{ parts: [{ text: 'x' }] }] };
    for (const headers of <Record<string, string>[]>[{}, { 'x-goog-api-key': 'sk-wrong' }, { 'x-goog-api-key': key, authorization: 'Bearer sk-other' }, { 'x-gamma-api-key': 'sk-wrong' }]) {
      const response = await call('/v1beta/models/claude:generateContent', body, headers);
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.deepEqual(Object.keys(response.body.error).sort(), ['code', 'message', 'status']);
      assert.equal(response.body.error.code, 401);
      assert.equal(response.body.error.status, 'UNAUTHENTICATED');
    }
    const doubled = await call(`/v1beta/models/claude:generateContent?key=sk-other`, body);
    assert.match(doubled.body.error.message, /two different API keys/);
    await assert.rejects(genai('sk-wrong').models.generateContent({ model: 'claude', contents: 'x' }), (e: any) => e instanceof ApiError && e.status === 401);
    for (const carrier of <Record<string, string>[]>[{ 'x-gamma-api-key': key }, { authorization: `Bearer ${key}` }]) {
      const response = await call('/v1/models/claude:generateContent', { ...body, generationConfig: { maxOutputTokens: 1 } }, carrier);
      assert.equal(response.status, 200, JSON.stringify(carrier));
    }
    assert.equal(upstreams.anthropic.requests.length, 2);
  });

  test('a disabled key and a model the key may not use are 403 PERMISSION_DENIED; an unknown model 404 NOT_FOUND', async () => {
    const restricted = (await createKey(sluice.dataDir, 'acme', ['--models', 'claude'])).key;
    const toDisable = await createKey(sluice.dataDir, 'acme');
    await cli(['keys', 'disable', toDisable.id, '--data', sluice.dataDir]);
    const body = { contents: [{ parts: [{ text: 'x' }] }] };
    await eventually(async () => ((await call('/v1beta/models/claude:generateContent', body, { 'x-goog-api-key': toDisable.key })).status === 403 ? true : undefined), 5000, 'the key to be disabled');
    const disabled = await call('/v1beta/models/claude:generateContent', body, { 'x-goog-api-key': toDisable.key });
    assert.equal(disabled.body.error.status, 'PERMISSION_DENIED');
    const notPermitted = await call('/v1beta/models/llama-chat:generateContent', body, { 'x-goog-api-key': restricted });
    assert.equal(notPermitted.status, 403);
    assert.equal(notPermitted.body.error.status, 'PERMISSION_DENIED');
    assert.match(notPermitted.body.error.message, /llama-chat/);
    await assert.rejects(genai(restricted).models.generateContent({ model: 'llama-chat', contents: 'x' }), (e: any) => e instanceof ApiError && e.status === 403);
    const unknown = await call('/v1beta/models/no-such-model:generateContent', body);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.status, 'NOT_FOUND');
    await assert.rejects(genai().models.generateContent({ model: 'no-such-model', contents: 'x' }), (e: any) => e instanceof ApiError && e.status === 404);
    const legacy = await call('/v1beta/models/legacy-only:generateContent', body);
    assert.equal(legacy.status, 400);
    assert.match(legacy.body.error.message, /does not serve/);
    assert.equal(upstreams.vllm.requests.length, 0);
  });
});

describe('generateContent: validation and what an upstream cannot do', () => {
  test('a malformed request is 400 INVALID_ARGUMENT naming the field, and never reaches an upstream', async () => {
    const ok = { contents: [{ parts: [{ text: 'x' }] }] };
    const cases: [object, RegExp][] = [
      [{ ...ok, generationConfig: { temperature: 3 } }, /'generationConfig\.temperature'/],
      [{ ...ok, foo: 1 }, /Unknown name "foo": Cannot find field/],
      [{ ...ok, generationConfig: { maxTokens: 5 } }, /Unknown name "maxTokens" at 'generationConfig'/],
      [{ contents: [{ parts: [{ text: 'x', bogus: true }] }] }, /Unknown name "bogus" at 'contents\[0\]\.parts\[0\]'/],
      [{ contents: [] }, /'contents'/],
      [{}, /'contents'/],
      [{ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }, /valid role: user, model/],
      [{ contents: [{ parts: [{ text: 'x', inlineData: { mimeType: 'image/png', data: 'AAAA' } }] }] }, /Oneof field 'data' is already set/],
      [{ contents: [{ parts: [{}] }] }, /'contents\[0\]\.parts\[0\]'/],
      [{ ...ok, generationConfig: { stopSequences: ['a', 'b', 'c', 'd', 'e', 'f'] } }, /'generationConfig\.stopSequences'/],
      [{ ...ok, generationConfig: { candidateCount: 9 } }, /'generationConfig\.candidateCount'/],
      [{ ...ok, generationConfig: { logprobs: 2 } }, /responseLogprobs/],
      [{ ...ok, generationConfig: { responseSchema: { type: 'OBJECT', properties: { a: { type: 'STRING' } } } } }, /responseMimeType/],
      [{ ...ok, safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_SOME' }] }, /'safetySettings\[0\]\.threshold'/],
      [{ ...ok, toolConfig: { functionCallingConfig: { mode: 'AUTO', allowedFunctionNames: ['f'] } } }, /allowedFunctionNames/],
      [{ contents: [{ role: 'user', parts: [{ functionCall: { name: 'f' } }] }] }, /functionCall part must be in a content with role "model"/],
      [{ ...ok, generationConfig: { topK: 5 }, generation_config: { top_k: 5 } }, /"generation_config" and "generationConfig" name the same field/],
      [{ contents: 'x' }, /'contents': expected an array, got "x"/],
    ];
    for (const model of ['gemini-flash', 'claude', 'llama-chat']) {
      for (const [body, message] of cases) {
        const response = await call(`/v1beta/models/${model}:generateContent`, body);
        assert.equal(response.status, 400, `${model} ${JSON.stringify(body)}: ${response.text}`);
        assert.equal(response.body.error.status, 'INVALID_ARGUMENT');
        assert.match(response.body.error.message, message, JSON.stringify(body));
      }
    }
    const badAlt = await call('/v1beta/models/claude:streamGenerateContent?alt=proto', ok);
    assert.equal(badAlt.status, 400);
    assert.match(badAlt.body.error.message, /'alt'/);
    assert.equal(upstreams.gemini.requests.length + upstreams.anthropic.requests.length + upstreams.vllm.requests.length, 0);
    // The refused requests' ledger rows name the model of the path, where Gemini callers name it.
    const refused = await eventually(async () => {
      const rows = (await sluice.ledger()).filter((row) => row.operation === 'generate_content' && row.status === 400 && row.model === 'claude');
      return rows.length >= cases.length ? rows : undefined;
    });
    assert.ok(refused.every((row) => row.error_kind === 'invalid_request' || row.error_kind === 'unsupported_parameter'));
  });

  test('what the upstream cannot honour is refused naming the parameter and the model', async () => {
    const ok = { contents: [{ parts: [{ text: 'x' }] }] };
    const cases: [string, object, RegExp][] = [
      ['claude', { ...ok, generationConfig: { temperature: 1.5 } }, /'generationConfig\.temperature' above 1/],
      ['claude', { ...ok, generationConfig: { presencePenalty: 0.5 } }, /generationConfig\.presencePenalty/],
      ['claude', { ...ok, generationConfig: { responseLogprobs: true } }, /generationConfig\.responseLogprobs/],
      ['claude', { ...ok, safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_LOW_AND_ABOVE' }] }, /'safetySettings' with threshold BLOCK_LOW_AND_ABOVE/],
      ['llama-chat', { ...ok, cachedContent: KNOWN_CACHE }, /'cachedContent'/],
      ['llama-chat', { ...ok, tools: [{ googleSearch: {} }] }, /the Gemini tool 'googleSearch'/],
      ['llama-chat', { contents: [{ parts: [{ inlineData: { mimeType: 'audio/wav', data: 'AAAA' } }] }] }, /audio\/wav media/],
      ['llama-chat', { ...ok, generationConfig: { responseModalities: ['IMAGE'] } }, /output other than TEXT/],
      ['llama-chat', { ...ok, generationConfig: { responseMimeType: 'text/x.enum', responseSchema: { type: 'STRING', enum: ['a'] } } }, /responseMimeType text\/x\.enum/],
    ];
    for (const [model, body, message] of cases) {
      const response = await call(`/v1beta/models/${model}:generateContent`, body);
      assert.equal(response.status, 400, `${model} ${JSON.stringify(body)}: ${response.text}`);
      assert.equal(response.body.error.status, 'INVALID_ARGUMENT');
      assert.match(response.body.error.message, message);
      assert.match(response.body.error.message, new RegExp(`Model \`${model}\``));
    }
    assert.equal(upstreams.anthropic.requests.length + upstreams.vllm.requests.length, 0);
    // Safety settings that turn filtering off change nothing elsewhere: accepted.
    const off = await call('/v1beta/models/claude:generateContent', { ...ok, safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }, { category: 'HARM_CATEGORY_HATE_SPEECH', threshold: 'OFF' }], generationConfig: { maxOutputTokens: 1 } });
    assert.equal(off.status, 200, off.text);
  });

  test('function responses in a `function` turn, as @google/generative-ai sends them, on every upstream', async () => {
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'function', parts: [{ functionResponse: { name: 'get_weather', response: { weather: 'sunny' } } }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'w', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] } }] }],
    };
    for (const model of ['gemini-flash', 'claude', 'llama-chat']) {
      const response = await call(`/v1beta/models/${model}:generateContent`, body);
      assert.equal(response.status, 200, `${model}: ${response.text}`);
      assert.match(response.body.candidates[0].content.parts.map((p: { text?: string }) => p.text ?? '').join(''), /Result: .*sunny/, model);
    }
  });

  test("Google's REST example with proto names and single objects is served on every upstream", async () => {
    // https://ai.google.dev/gemini-api/docs/system-instructions?lang=rest, as published.
    const body = { system_instruction: { parts: { text: 'You are Neko the cat respond like one' } }, contents: { parts: { text: 'Good morning! How are you?' } } };
    for (const upstream of UPSTREAMS) {
      const response = await call(`/v1beta/models/${upstream.model}:generateContent`, body);
      assert.equal(response.status, 200, `${upstream.model}: ${response.text}`);
      assert.match(response.body.candidates[0].content.parts[0].text, /^\[Good morning! How are you\?\]/, upstream.model);
      assert.equal(upstream.sentSystem(upstream.fake().requests.at(-1)!), 'You are Neko the cat respond like one', upstream.model);
    }
  });

  test('an image inline goes to a translated upstream as an image', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const response = await genai().models.generateContent({ model: 'claude', contents: [{ role: 'user', parts: [{ text: 'what is this' }, { inlineData: { mimeType: 'image/png', data: png } }] }], config: { maxOutputTokens: 2 } });
    assert.equal(response.text, '[what is this] I see 1 image(s).');
    const block = upstreams.anthropic.requests.at(-1)!.body.messages[0].content[1];
    assert.deepEqual(block, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } });
  });
});

describe('the Vercel AI SDK (@ai-sdk/google)', () => {
  for (const upstream of UPSTREAMS) {
    test(`generateText, streamText and a tool round trip on ${upstream.name}`, async () => {
      const google = createGoogleGenerativeAI({ apiKey: key, baseURL: `${sluice.url}/v1beta` });
      const plain = await generateText({ model: google(upstream.model), prompt: 'hello', maxOutputTokens: 3 });
      assert.equal(plain.text, '[hello] The quick');
      assert.equal(plain.usage.outputTokens, 3);
      const streamed = streamText({ model: google(upstream.model), prompt: 'tell me', maxOutputTokens: 4 });
      let text = '';
      for await (const delta of streamed.textStream) text += delta;
      assert.equal(text, '[tell me] The quick brown');
      const withTools = await generateText({
        model: google(upstream.model),
        prompt: 'What is the weather in Paris?',
        tools: { get_weather: tool({ description: 'Weather in a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ forecast: `Sunny in ${city}` }) }) },
        stopWhen: stepCountIs(3),
      });
      assert.match(withTools.text, /Sunny in Paris/);
      // With thinking, the calls the SDK replays carry the signatures Sluice wrote (an Anthropic
      // upstream refuses a tool-use turn without its thinking block).
      const thinking = await generateText({
        model: google(upstream.model),
        prompt: 'What is the weather in Paris?',
        tools: { get_weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ forecast: `Cloudy in ${city}` }) }) },
        providerOptions: { google: { thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } } },
        stopWhen: stepCountIs(3),
      });
      assert.match(thinking.text, /Cloudy in Paris/);
      assert.equal(thinking.steps[0]!.reasoningText, 'Let me think.');
      if (!upstream.relayed) assert.doesNotMatch(JSON.stringify(upstream.fake().requests.map((r) => r.body)), /skip_thought_signature_validator/);
    });
  }
});
