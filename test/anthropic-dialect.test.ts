// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { stepCountIs, streamText, tool } from 'ai';
import { weatherInTwoSteps } from './support/ai-sdk.js';
import { z } from 'zod';
import type { FakeUpstream, RecordedRequest } from './fakes/fake-server.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { PDF_BASE64 } from './support/documents.js';
import { cli, createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;
let client: Anthropic;

/** One chat model per upstream kind; Anthropic's is relayed, the others translated through the core. */
interface Upstream {
  readonly name: string;
  readonly model: string;
  readonly fake: () => FakeUpstream;
  readonly sentMaxTokens: (request: RecordedRequest) => unknown;
  readonly relayed: boolean;
}

const UPSTREAMS: Upstream[] = [
  { name: 'an Anthropic upstream (relayed)', model: 'claude', fake: () => upstreams.anthropic, sentMaxTokens: (r) => r.body.max_tokens, relayed: true },
  { name: 'an OpenAI-compatible upstream', model: 'llama-chat', fake: () => upstreams.vllm, sentMaxTokens: (r) => r.body.max_tokens ?? r.body.max_completion_tokens, relayed: false },
  { name: 'a Gemini upstream', model: 'gemini-flash', fake: () => upstreams.gemini, sentMaxTokens: (r) => r.body.generationConfig.maxOutputTokens, relayed: false },
];

const WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000, pricing: { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 } }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
  - { id: legacy-only, provider: vllm, upstream_model: upstream-model, endpoints: [completions] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  client = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

async function postMessages(body: unknown, headers: Record<string, string> = { 'x-api-key': key }, path = '/v1/messages') {
  const response = await fetch(`${sluice.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

for (const upstream of UPSTREAMS) {
  describe(`Anthropic Messages through ${upstream.name}`, () => {
    const { model } = upstream;

    test('messages.create: a whole message with Anthropic’s shape, usage, and the ledger row', async () => {
      const message = await client.messages.create({ model, max_tokens: 5, system: 'Be brief.', messages: [{ role: 'user', content: 'hello there' }] });
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.equal(message.model, model);
      assert.match(message.id, /^msg_/);
      assert.equal(message.content[0]!.type, 'text');
      assert.ok((message.content[0] as Anthropic.TextBlock).text.length > 0);
      assert.equal(message.stop_reason, 'max_tokens');
      assert.ok(message.usage.input_tokens > 0);
      assert.equal(message.usage.output_tokens, 5);
      const sent = upstream.fake().requests.at(-1)!;
      assert.equal(upstream.sentMaxTokens(sent), 5);
      assert.doesNotMatch(JSON.stringify(sent.headers), new RegExp(key), "the caller's key never goes upstream");
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'messages' && r.model === model && r.stream === 0));
      assert.equal(row.status, 200);
      assert.equal(row.completion_tokens, 5);
      assert.equal(row.tokens_counted, 0);
    });

    test('documents: a base64 PDF and a plain-text document reach the upstream in its own shape', async () => {
      const text = 'The grass is green.';
      const message = await client.messages.create({
        model,
        max_tokens: 20,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 }, title: 'report.pdf', cache_control: { type: 'ephemeral' } },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text } },
              { type: 'text', text: 'Summarise both.' },
            ],
          },
        ],
      });
      assert.equal(message.type, 'message');
      const sent = upstream.fake().requests.at(-1)!.body;
      const textBase64 = Buffer.from(text).toString('base64');
      if (upstream.fake() === upstreams.anthropic) {
        assert.deepEqual(sent.messages[0].content[0], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 }, title: 'report.pdf', cache_control: { type: 'ephemeral' } });
      } else if (upstream.fake() === upstreams.gemini) {
        assert.deepEqual(sent.contents[0].parts, [{ inlineData: { mimeType: 'application/pdf', data: PDF_BASE64 } }, { inlineData: { mimeType: 'text/plain', data: textBase64 } }, { text: 'Summarise both.' }]);
      } else {
        assert.deepEqual(sent.messages.at(-1).content, [
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'report.pdf' } },
          { type: 'file', file: { file_data: `data:text/plain;base64,${textBase64}`, filename: 'document.txt' } },
          { type: 'text', text: 'Summarise both.' },
        ]);
      }
    });

    test('messages.stream: events in order, the SDK’s helpers, usage in message_delta', async () => {
      const stream = client.messages.stream({ model, max_tokens: 4, messages: [{ role: 'user', content: 'tell me' }] });
      let streamed = '';
      stream.on('text', (delta) => (streamed += delta));
      const final = await stream.finalMessage();
      assert.ok(streamed.length > 0);
      assert.equal((final.content[0] as Anthropic.TextBlock).text, streamed);
      assert.equal(final.stop_reason, 'max_tokens');
      assert.equal(final.usage.output_tokens, 4);
      assert.ok(final.usage.input_tokens > 0, 'input tokens reach the SDK’s final message');
      const raw = await postMessages({ model, max_tokens: 3, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const events = [...raw.text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
      assert.equal(events[0], 'message_start');
      assert.deepEqual(events.slice(-2), ['message_delta', 'message_stop']);
      assert.ok(events.includes('content_block_start') && events.includes('content_block_delta') && events.includes('content_block_stop'));
      const start = JSON.parse(/^event: message_start\ndata: (.*)$/m.exec(raw.text)![1]!);
      assert.equal(start.message.model, model);
      assert.ok(start.message.usage.input_tokens > 0, 'message_start carries the input usage, which the SDKs require and LangChain reads only there');
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'messages' && r.model === model && r.stream === 1 && r.completion_tokens === 4));
      assert.equal(row.status, 200);
    });

    test('a tool-use round trip, whole and streamed', async () => {
      const asked: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
      const first = await client.messages.create({ model, max_tokens: 200, tools: [WEATHER_TOOL], messages: [asked] });
      assert.equal(first.stop_reason, 'tool_use');
      const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(call.input, { city: 'Paris' });

      const streamed = await client.messages.stream({ model, max_tokens: 200, tools: [WEATHER_TOOL], messages: [asked] }).finalMessage();
      const streamedCall = streamed.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      assert.deepEqual(streamedCall.input, { city: 'Paris' }, 'input_json_delta fragments add up to the input');
      assert.equal(streamed.stop_reason, 'tool_use');

      const second = await client.messages.create({
        model,
        max_tokens: 200,
        tools: [WEATHER_TOOL],
        messages: [asked, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18°C and sunny' }] }],
      });
      assert.equal(second.stop_reason, 'end_turn');
      assert.match((second.content[0] as Anthropic.TextBlock).text, /Result: 18°C and sunny/);
    });

    test('count_tokens answers a number for the model', async () => {
      const counted = await client.messages.countTokens({ model, system: 'Be brief.', messages: [{ role: 'user', content: 'How many tokens is this?' }] });
      assert.ok(Number.isInteger(counted.input_tokens) && counted.input_tokens > 0);
      if (upstream.relayed) {
        assert.equal(upstreams.anthropic.requests.at(-1)!.path, '/v1/messages/count_tokens', "Anthropic's own count");
      } else {
        assert.equal(upstream.fake().requests.length, 0, "Sluice's own count; nothing generated upstream");
      }
    });

    test('max_tokens above what the model accepts is capped, as clients send 128000 for a model they do not know', async () => {
      await client.messages.stream({ model, max_tokens: 128000, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
      assert.equal(upstream.sentMaxTokens(upstream.fake().requests.at(-1)!), 8000);
    });

    test('the Vercel AI SDK’s Anthropic provider: tools over several steps, and a stream', async () => {
      const provider = createAnthropic({ apiKey: key, baseURL: `${sluice.url}/v1` });
      const result = await weatherInTwoSteps(provider(model));
      assert.ok(result.totalUsage.inputTokens! > 0);
      const sent = upstream.fake().requests.at(-1)!;
      assert.ok(upstream.sentMaxTokens(sent)! as number <= 8000, 'the SDK’s max_tokens for a model it does not know is capped');
      // Streaming with tools, the SDK marks each tool eager_input_streaming (a hint only Anthropic acts on).
      const streamed = streamText({
        model: provider(model),
        prompt: 'What is the weather in Paris?',
        tools: { get_weather: tool({ description: 'Weather in a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `rain in ${city}` }) },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      let text = '';
      for await (const delta of streamed.textStream) text += delta;
      assert.match(text, /rain in Paris/);
      assert.ok((await streamed.totalUsage).outputTokens! > 0);
    });

    test('an upstream failure after the stream began is an `error` event the SDK raises', async () => {
      upstream.fake().behaviour = { errorAfterChunks: 2 };
      const stream = client.messages.stream({ model, max_tokens: 20, messages: [{ role: 'user', content: 'go on' }] });
      await assert.rejects(stream.finalMessage(), (error: Error) => {
        assert.ok(error instanceof Anthropic.APIError, String(error));
        return true;
      });
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'messages' && r.model === model && r.status >= 500));
      assert.ok(row.error_kind?.startsWith('upstream_'));
    });
  });
}

describe('Anthropic Messages: what goes to an Anthropic upstream untouched', () => {
  test('thinking blocks with their signatures and cache_control markers round-trip; cache tokens reach the ledger and the price', async () => {
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a weather assistant with a long and stable system prompt.', cache_control: { type: 'ephemeral' } }];
    const asked: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const params = { model: 'claude', max_tokens: 4000, system, tools: [WEATHER_TOOL], thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
    const first = await client.messages.create({ ...params, messages: [asked] });
    const thinking = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking')!;
    assert.ok(thinking.signature.length > 0);
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    // The fake refuses a thinking block whose signature it did not issue, and a tool turn without its thinking block.
    const second = await client.messages
      .stream({ ...params, messages: [asked, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }] })
      .finalMessage();
    assert.match(second.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), /Result: sunny/);
    assert.ok(second.usage.cache_read_input_tokens! > 0, 'the second call reads the cached system prompt');
    const sent = upstreams.anthropic.requests.at(-1)!;
    assert.deepEqual(sent.body.system, system, 'cache_control reaches the upstream');
    assert.equal(sent.body.messages[1].content[0].signature, thinking.signature);
    assert.equal(sent.headers['anthropic-version'], '2026-10-21', "the caller's API version goes upstream with its body");

    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((r) => r.operation === 'messages' && r.model === 'claude' && r.cached_input_tokens > 0);
      return found.length > 0 ? found : undefined;
    });
    const row = rows.at(-1)!;
    assert.equal(row.cached_input_tokens, second.usage.cache_read_input_tokens);
    assert.equal(row.prompt_tokens, second.usage.input_tokens + second.usage.cache_read_input_tokens! + second.usage.cache_creation_input_tokens!);
    const expected = ((row.prompt_tokens - row.cached_input_tokens - row.cache_write_tokens) * 3 + row.cached_input_tokens * 0.3 + row.cache_write_tokens * 3.75 + row.completion_tokens * 15) / 1e6;
    assert.ok(Math.abs(row.cost_usd - expected) < 1e-12, `cost ${row.cost_usd} = ${expected}`);
  });

  test('anthropic-beta goes upstream, and the key may come as x-api-key or a bearer token', async () => {
    const viaHeader = await postMessages({ model: 'claude', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': key, 'anthropic-beta': 'some-feature-2026-01-01' });
    assert.equal(viaHeader.status, 200, viaHeader.text);
    assert.equal(upstreams.anthropic.requests.at(-1)!.headers['anthropic-beta'], 'some-feature-2026-01-01');
    assert.equal(upstreams.anthropic.requests.at(-1)!.headers['anthropic-version'], '2023-06-01');
    const viaBearer = await postMessages({ model: 'claude', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` });
    assert.equal(viaBearer.status, 200);
  });

  test('a field only Anthropic knows reaches the Anthropic upstream, and its own refusal comes back in Anthropic’s shape', async () => {
    const refused = await postMessages({ model: 'claude', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], invented_field: true });
    assert.equal(refused.status, 400);
    const body = JSON.parse(refused.text);
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /invented_field/);
  });
});

describe('Anthropic Messages: reasoning through other upstreams', () => {
  test('a Gemini thought signature comes back as a thinking block’s signature and returns to Gemini on the call it rode on', async () => {
    const asked: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const params = { model: 'gemini-flash', max_tokens: 4000, tools: [WEATHER_TOOL], thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
    const first = await client.messages.create({ ...params, messages: [asked] });
    const signed = first.content.filter((b): b is Anthropic.ThinkingBlock => b.type === 'thinking' && b.signature !== '');
    assert.equal(signed.length, 1, JSON.stringify(first.content));
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    await client.messages.create({ ...params, messages: [asked, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }] });
    const replayed = upstreams.gemini.requests.at(-1)!.body.contents[1].parts as Record<string, any>[];
    const callPart = replayed.find((part) => part.functionCall !== undefined)!;
    assert.equal(callPart.thoughtSignature, signed[0]!.signature);
  });
});

describe('Anthropic Messages: errors in Anthropic’s shape', () => {
  const hi = { max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] };

  test('401 without a key or with a wrong one; 403 for a disabled key or a model it may not use; 404 for an unknown model', async () => {
    const cases: [Record<string, string>, unknown, number, string][] = [
      [{}, { model: 'claude', ...hi }, 401, 'authentication_error'],
      [{ 'x-api-key': 'sk-wrong' }, { model: 'claude', ...hi }, 401, 'authentication_error'],
      [{ 'x-api-key': key }, { model: 'nope', ...hi }, 404, 'not_found_error'],
      [{ 'x-api-key': key, authorization: 'Bearer sk-other' }, { model: 'claude', ...hi }, 401, 'authentication_error'],
    ];
    for (const [headers, body, status, type] of cases) {
      const response = await postMessages(body, headers);
      assert.equal(response.status, status, response.text);
      const parsed = JSON.parse(response.text);
      assert.deepEqual(Object.keys(parsed).sort(), ['error', 'request_id', 'type']);
      assert.equal(parsed.error.type, type);
    }
    const limited = await createKey(sluice.dataDir, 'acme', ['--models', 'claude']);
    const notAllowed = await postMessages({ model: 'llama-chat', ...hi }, { 'x-api-key': limited.key });
    assert.equal(notAllowed.status, 403);
    assert.equal(JSON.parse(notAllowed.text).error.type, 'permission_error');
    const disabled = await createKey(sluice.dataDir, 'acme');
    assert.equal((await cli(['keys', 'disable', disabled.id, '--data', sluice.dataDir])).code, 0);
    const sdk = new Anthropic({ apiKey: disabled.key, baseURL: sluice.url, maxRetries: 0 });
    await eventually(async () => {
      try {
        await sdk.messages.create({ model: 'claude', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
        return undefined;
      } catch (error) {
        return error instanceof Anthropic.PermissionDeniedError ? true : undefined;
      }
    }, 5000, 'the disabled key to be refused');
    await assert.rejects(new Anthropic({ apiKey: 'sk-nope', baseURL: sluice.url, maxRetries: 0 }).messages.create({ model: 'claude', ...hi } as Anthropic.MessageCreateParamsNonStreaming), Anthropic.AuthenticationError);
  });

  test('a malformed body is a 400 invalid_request_error naming the field, and reaches no upstream', async () => {
    for (const [body, field] of [
      [{ model: 'claude', messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens'],
      [{ model: 'llama-chat', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens'],
      [{ model: 'llama-chat', max_tokens: 5, messages: [{ role: 'tool', content: 'hi' }] }, 'messages.0.role'],
      [{ model: 'llama-chat', max_tokens: 5, temperature: 1.5, messages: [{ role: 'user', content: 'hi' }] }, 'temperature'],
      [{ model: 'gemini-flash', max_tokens: 5, messages: [] }, 'messages'],
    ] as const) {
      const response = await postMessages(body);
      assert.equal(response.status, 400, response.text);
      const parsed = JSON.parse(response.text);
      assert.equal(parsed.error.type, 'invalid_request_error');
      assert.match(parsed.error.message, new RegExp(`^${field.replace(/\./g, '\\.')}`));
    }
    assert.equal(upstreams.anthropic.requests.length + upstreams.vllm.requests.length + upstreams.gemini.requests.length, 0);
  });

  test('what a translated upstream cannot carry is refused by name, never dropped', async () => {
    // A document is carried; its citations are Anthropic's own.
    const document = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'a text' }, citations: { enabled: true } };
    for (const [body, param] of [
      [{ model: 'llama-chat', max_tokens: 5, messages: [{ role: 'user', content: [document] }] }, 'messages.0.content.0.citations'],
      // A document by URL, which an OpenAI-compatible upstream cannot fetch.
      [{ model: 'llama-chat', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }, { type: 'text', text: 'Read it.' }] }] }, 'cannot take a document by URL'],
      [{ model: 'gemini-flash', max_tokens: 5, mcp_servers: [], messages: [{ role: 'user', content: 'hi' }] }, 'mcp_servers'],
      [{ model: 'gemini-flash', max_tokens: 5, stop_sequences: ['a', 'b', 'c', 'd', 'e', 'f'], messages: [{ role: 'user', content: 'hi' }] }, 'stop_sequences'],
    ] as const) {
      const response = await postMessages(body);
      assert.equal(response.status, 400, response.text);
      const parsed = JSON.parse(response.text);
      assert.equal(parsed.error.type, 'invalid_request_error');
      assert.match(parsed.error.message, new RegExp(param.replace(/\./g, '\\.')));
    }
    assert.equal(upstreams.vllm.requests.length + upstreams.gemini.requests.length, 0);
  });

  test('a server tool reaches an Anthropic upstream as sent; for any other it is refused by its type', async () => {
    const webSearch = { type: 'web_search_20250305', name: 'web_search', max_uses: 5 };
    const body = (model: string) => ({ model, max_tokens: 5, messages: [{ role: 'user', content: 'news?' }], tools: [webSearch] });
    const relayed = await postMessages(body('claude'));
    assert.equal(relayed.status, 200, relayed.text);
    assert.deepEqual(upstreams.anthropic.requests.at(-1)!.body.tools, [webSearch]);
    for (const model of ['llama-chat', 'gemini-flash']) {
      const response = await postMessages(body(model));
      assert.equal(response.status, 400, response.text);
      const parsed = JSON.parse(response.text);
      assert.equal(parsed.error.type, 'invalid_request_error');
      assert.match(parsed.error.message, /^tools\.0\.type: .*server tool `web_search_20250305`/);
    }
    assert.equal(upstreams.vllm.requests.length + upstreams.gemini.requests.length, 0);
  });

  test('a wrong method on an Anthropic path is answered in Anthropic’s shape', async () => {
    const response = await fetch(`${sluice.url}/v1/messages`, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } });
    assert.equal(response.status, 405);
    const body = (await response.json()) as { type: string; error: { type: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
  });

  test('every caller dialect’s output limit is capped at the model’s on a translated upstream', async () => {
    const chat = await fetch(`${sluice.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(chat.status, 200, await chat.text());
    assert.equal(upstreams.anthropic.requests.at(-1)!.body.max_tokens, 8000);
    const gemini = await fetch(`${sluice.url}/v1beta/models/llama-chat:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 100000 } }),
    });
    assert.equal(gemini.status, 200, await gemini.text());
    assert.equal(upstreams.vllm.requests.at(-1)!.body.max_tokens, 8000);
  });

  test('reasoning on an Anthropic model with a temperature other than 1 is refused by name, before the upstream', async () => {
    const response = await fetch(`${sluice.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude', reasoning_effort: 'low', temperature: 0.5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, 'temperature');
    assert.match(body.error.message, /temperature other than 1/);
    assert.equal(upstreams.anthropic.requests.length, 0);
  });

  test('a model that serves only legacy completions says so', async () => {
    const response = await postMessages({ model: 'legacy-only', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(response.status, 400);
    assert.match(JSON.parse(response.text).error.message, /\/v1\/completions/);
  });
});
