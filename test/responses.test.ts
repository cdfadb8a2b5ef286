import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import type { FakeUpstream } from './fakes/fake-server.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

/**
 * OpenAI's Responses API for callers, on every upstream: relayed to a native Responses upstream
 * (the OpenAI fake's /v1/responses, `upstream_api: responses`), translated through the core for an
 * OpenAI-compatible chat upstream, an Anthropic one and a Gemini one. The fakes answer as
 * test/fakes/chat-model.ts says ("weather" → get_weather {"city":"Paris"}; tool results →
 * "Result: <content>"; a JSON Schema → its minimal instance; reasoning "Let me think.").
 */
let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;
let otherKey: string;

interface Upstream {
  readonly name: string;
  readonly model: string;
  readonly fake: () => FakeUpstream;
  readonly native: boolean;
}

const UPSTREAMS: Upstream[] = [
  { name: 'a native Responses upstream (relayed)', model: 'gpt-native', fake: () => upstreams.vllm, native: true },
  { name: 'an OpenAI-compatible chat upstream', model: 'llama-chat', fake: () => upstreams.vllm, native: false },
  { name: 'an Anthropic upstream', model: 'claude', fake: () => upstreams.anthropic, native: false },
  { name: 'a Gemini upstream', model: 'gemini-flash', fake: () => upstreams.gemini, native: false },
];

const weatherTool: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: gpt-native, provider: vllm, upstream_model: upstream-model, endpoints: [responses], upstream_api: responses, pricing: { input_per_mtok: 1, output_per_mtok: 4 } }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-agent, provider: vllm, upstream_model: upstream-model, endpoints: [chat], drop_hosted_tools: true }
  - { id: llama-strict, provider: vllm, upstream_model: upstream-model, endpoints: [chat], hosted_tools: refuse }
  - { id: legacy-only, provider: vllm, upstream_model: upstream-model, endpoints: [completions] }
  - { id: gpt-5-mini, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
responses:
  retention_days: 7
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  otherKey = (await createKey(sluice.dataDir, 'globex')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

const client = (apiKey = key) => new OpenAI({ apiKey, baseURL: `${sluice.url}/v1`, maxRetries: 0 });

async function post(body: unknown, apiKey = key) {
  const response = await fetch(`${sluice.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as any };
}

/** The last request the fake received, as JSON text (to find what was sent upstream). */
const lastSent = (fake: FakeUpstream) => JSON.stringify(fake.requests.at(-1)?.body ?? null);

for (const upstream of UPSTREAMS) {
  describe(`Responses through ${upstream.name}`, () => {
    const { model } = upstream;

    test('responses.create: a response object with a message, status, usage and the ledger row', async () => {
      const response = await client().responses.create({
        model,
        instructions: 'Be brief.',
        input: [
          { role: 'developer', content: 'Answer in English.' },
          { role: 'user', content: [{ type: 'input_text', text: 'hello there' }] },
        ],
      });
      assert.equal(response.object, 'response');
      assert.match(response.id, /^resp_/);
      assert.equal(response.model, model);
      assert.equal(response.status, 'completed');
      assert.equal(response.incomplete_details, null);
      const message = response.output.find((item) => item.type === 'message') as OpenAI.Responses.ResponseOutputMessage;
      assert.match(message.id, /^msg_/);
      assert.equal(message.role, 'assistant');
      assert.equal(message.content[0]!.type, 'output_text');
      assert.match(response.output_text, /hello there/);
      assert.ok(response.usage!.input_tokens > 0);
      assert.ok(response.usage!.output_tokens > 0);
      assert.equal(response.usage!.total_tokens, response.usage!.input_tokens + response.usage!.output_tokens);
      assert.equal(typeof response.usage!.input_tokens_details.cached_tokens, 'number');
      assert.equal(typeof response.usage!.output_tokens_details.reasoning_tokens, 'number');
      const sent = lastSent(upstream.fake());
      assert.match(sent, /Be brief\./);
      assert.match(sent, /Answer in English\./);
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'responses' && r.model === model && r.stream === 0 && r.status === 200), 3000, 'the ledger row');
      assert.ok(row.prompt_tokens > 0);
      assert.ok(row.completion_tokens > 0);
    });

    test('responses.stream: the typed events in order, numbered, and the final response', async () => {
      const stream = client().responses.stream({ model, input: 'tell me a story' });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      const final = await stream.finalResponse();
      assert.equal(events[0]!.type, 'response.created');
      assert.equal(events[1]!.type, 'response.in_progress');
      assert.equal(events.at(-1)!.type, 'response.completed');
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i + (events[0]!.sequence_number ?? 0)));
      const types = events.map((e) => e.type);
      for (const type of ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done']) {
        assert.ok(types.includes(type as never), `a ${type} event`);
      }
      assert.ok(types.indexOf('response.output_item.added') < types.indexOf('response.output_text.delta'));
      const deltas = events.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === 'response.output_text.delta').map((e) => e.delta);
      assert.ok(deltas.length > 1, 'text arrives in several deltas');
      assert.equal(deltas.join(''), final.output_text);
      assert.match(final.output_text, /tell me a story/);
      assert.equal(final.status, 'completed');
      assert.equal(final.model, model);
      assert.ok(final.usage!.output_tokens > 0);
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'responses' && r.model === model && r.stream === 1 && r.status === 200), 3000, 'the ledger row');
      assert.ok(row.completion_tokens > 0);
    });

    test('function tools over several turns with previous_response_id, the conversation kept by Sluice', async () => {
      const first = await client().responses.create({ model, input: 'What is the weather in Paris?', tools: [weatherTool] });
      const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      assert.ok(call, 'a function call');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.match(call.id!, /^fc_/);
      assert.ok(call.call_id.length > 0);
      assert.notEqual(call.call_id, call.id);
      const second = await client().responses.create({
        model,
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '22 degrees and sunny' }],
        tools: [weatherTool],
      });
      assert.equal(second.previous_response_id, first.id);
      assert.match(second.output_text, /Result: 22 degrees and sunny/);
      // Tools go with every request, as in OpenAI's API (Anthropic refuses a history of tool calls without them).
      const third = await client().responses.create({ model, previous_response_id: second.id, input: 'Thank you kindly', tools: [weatherTool] });
      assert.match(third.output_text, /Thank you kindly/);
      // The upstream saw the whole conversation, earlier turns included.
      const sent = lastSent(upstream.fake());
      assert.match(sent, /What is the weather in Paris\?/);
      assert.match(sent, /22 degrees and sunny/);
      if (upstream.native) {
        const body = upstream.fake().requests.at(-1)!.body;
        assert.equal(body.store, false);
        assert.equal(body.previous_response_id, undefined);
      }
    });

    test('function tools with the full input history and store: false, which keeps nothing', async () => {
      const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await client().responses.create({ model, input, tools: [weatherTool], store: false });
      assert.equal((first as unknown as { store: boolean }).store, false);
      const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: '18 degrees and cloudy' });
      const second = await client().responses.create({ model, input, tools: [weatherTool], store: false });
      assert.match(second.output_text, /Result: 18 degrees and cloudy/);
      await assert.rejects(client().responses.retrieve(first.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
      await assert.rejects(client().responses.create({ model, previous_response_id: second.id, input: 'more' }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError);
        assert.equal(error.code, 'previous_response_not_found');
        return true;
      });
    });

    test('responses.parse with a zod schema', async () => {
      const Event = z.object({ name: z.string(), attendees: z.array(z.string()), confirmed: z.boolean() });
      const response = await client().responses.parse({
        model,
        input: 'Alice and Bob meet on Friday; extract the event.',
        text: { format: zodTextFormat(Event, 'event') },
      });
      assert.deepEqual(response.output_parsed, { name: 'example', attendees: ['example'], confirmed: true });
    });

    test('text.format json_object: the JSON object as the output text, whole and streamed', async () => {
      const request = { model, input: 'Answer in JSON: is it ok?', text: { format: { type: 'json_object' as const } } };
      const whole = await client().responses.create(request);
      assert.equal(whole.status, 'completed');
      assert.deepEqual(JSON.parse(whole.output_text), { ok: true });
      assert.ok(whole.output.every((item) => item.type !== 'function_call'));
      let text = '';
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of client().responses.stream(request)) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      assert.deepEqual(JSON.parse(text), { ok: true });
      assert.equal(completed!.status, 'completed');
      assert.equal(completed!.usage!.output_tokens, whole.usage!.output_tokens);
    });

    test('a stored response is retrieved and deleted by its account only', async () => {
      const created = await client().responses.create({ model, input: 'remember me' });
      const retrieved = await client().responses.retrieve(created.id);
      assert.equal(retrieved.id, created.id);
      assert.equal(retrieved.output_text, created.output_text);
      assert.deepEqual(retrieved.usage, created.usage);
      await assert.rejects(client(otherKey).responses.retrieve(created.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
      await assert.rejects(client(otherKey).responses.delete(created.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
      const continued = await post({ model, previous_response_id: created.id, input: 'again' }, otherKey);
      assert.equal(continued.status, 400);
      assert.equal(continued.json.error.code, 'previous_response_not_found');
      const deleted = await fetch(`${sluice.url}/v1/responses/${created.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
      assert.equal(deleted.status, 200);
      assert.deepEqual(await deleted.json(), { id: created.id, object: 'response', deleted: true });
      await assert.rejects(client().responses.retrieve(created.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
    });

    test('a stream that fails after it began ends with response.failed, then an error event', async () => {
      // After the first content (a native upstream's fifth event and Anthropic's fourth, their first delta): a stream is held until then.
      upstream.fake().behaviour = { errorAfterChunks: upstream.native ? 5 : upstream.fake() === upstreams.anthropic ? 4 : 3 };
      const response = await fetch(`${sluice.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model, input: 'tell me a long story', stream: true }),
      });
      assert.equal(response.status, 200);
      const events = (await response.text())
        .split('\n\n')
        .filter((frame) => frame.includes('data: '))
        .map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)));
      assert.equal(events[0].type, 'response.created');
      assert.equal(events.at(-2).type, 'response.failed');
      assert.equal(events.at(-2).response.status, 'failed');
      assert.equal(events.at(-1).type, 'error');
      assert.equal(typeof events.at(-1).message, 'string');
      const numbers = events.map((e) => e.sequence_number);
      assert.deepEqual(numbers, numbers.map((_, i) => numbers[0] + i));
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'responses' && r.model === model && r.stream === 1 && r.status >= 500), 3000, 'the failed row');
      assert.ok(row.error_kind);
    });

    describe(`the Vercel AI SDK's default OpenAI model`, () => {
      /** The bodies the SDK sent, to see what it sent rather than assume it. */
      const sent: any[] = [];
      const openai = () =>
        createOpenAI({
          apiKey: key,
          baseURL: `${sluice.url}/v1`,
          fetch: async (url, init) => {
            if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
            return fetch(url, init);
          },
        });

      test('generateText with tools over several steps (item references to stored items)', async () => {
        const seen: string[] = [];
        const result = await generateText({
          model: openai()(model),
          system: 'You are a weather assistant.',
          prompt: 'What is the weather in Paris?',
          tools: {
            get_weather: tool({
              description: 'The weather in a city',
              inputSchema: z.object({ city: z.string() }),
              execute: async ({ city }) => {
                seen.push(city);
                return `21 degrees in ${city}`;
              },
            }),
          },
          stopWhen: stepCountIs(3),
        });
        assert.deepEqual(seen, ['Paris']);
        assert.equal(result.steps.length, 2);
        assert.match(result.text, /21 degrees in Paris/);
        assert.equal(result.finishReason, 'stop');
        assert.ok(result.totalUsage.inputTokens! > 0);
        // Its second step sends the whole conversation back: the call and its output.
        const second = sent.at(-1);
        assert.ok(second.input.some((item: any) => item.type === 'function_call' && item.name === 'get_weather'));
        assert.ok(second.input.some((item: any) => item.type === 'function_call_output' && item.output === '21 degrees in Paris'));
      });

      test('a conversation continued with the response messages refers to the stored answer by id', async () => {
        const first = await generateText({ model: openai()(model), prompt: 'first question' });
        const second = await generateText({
          model: openai()(model),
          messages: [{ role: 'user', content: 'first question' }, ...first.response.messages, { role: 'user', content: 'second question' }],
        });
        assert.match(second.text, /second question/);
        const input = sent.at(-1).input;
        assert.ok(input.some((item: any) => item.type === 'item_reference' && /^msg_/.test(item.id)), 'an item_reference to the stored message');
        assert.match(lastSent(upstream.fake()), new RegExp(first.text.slice(0, 20).replace(/[[\]().?*+]/g, '\\$&')));
      });

      test('streamText', async () => {
        const result = streamText({ model: openai()(model), prompt: 'stream this please' });
        let text = '';
        for await (const delta of result.textStream) text += delta;
        assert.match(text, /stream this please/);
        assert.equal(await result.finishReason, 'stop');
        assert.ok((await result.usage).outputTokens! > 0);
      });
    });
  });
}

describe('Responses across upstreams and models', () => {
  test('a conversation moves from an Anthropic model to a Gemini one, and reasoning signatures stay with their upstream', async () => {
    const first = await client().responses.create({ model: 'claude', input: 'What is the weather in Paris?', tools: [weatherTool], reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    const reasoning = first.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    assert.ok(reasoning, 'a reasoning item');
    assert.match(reasoning.id, /^rs_/);
    assert.equal(reasoning.summary[0]!.text, 'Let me think.');
    assert.ok(reasoning.encrypted_content, 'the signature rides in encrypted_content');
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    // Back to Anthropic with thinking on: its fake refuses a tool_use turn without the signed thinking block.
    const onClaude = await client().responses.create({
      model: 'claude',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'warm' }],
      tools: [weatherTool],
      reasoning: { effort: 'low' },
      max_output_tokens: 4000,
    });
    assert.match(onClaude.output_text, /Result: warm/);
    const sentToAnthropic = upstreams.anthropic.requests.at(-1)!.body;
    assert.ok(JSON.stringify(sentToAnthropic.messages).includes('"type":"thinking"'));
    // The same conversation on Gemini: Anthropic's signature is not sent there.
    const onGemini = await client().responses.create({
      model: 'gemini-flash',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'mild' }],
      tools: [weatherTool],
    });
    assert.match(onGemini.output_text, /Result: mild/);
    const sentToGemini = JSON.stringify(upstreams.gemini.requests.at(-1)!.body);
    assert.match(sentToGemini, /What is the weather in Paris\?/);
    assert.doesNotMatch(sentToGemini, /thoughtSignature/);
  });

  test('the AI SDK on a reasoning-model name: a developer message, and reasoning items referenced across steps', async () => {
    const sent: any[] = [];
    const openai = createOpenAI({
      apiKey: key,
      baseURL: `${sluice.url}/v1`,
      fetch: async (url, init) => {
        if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
        return fetch(url, init);
      },
    });
    const result = await generateText({
      model: openai('gpt-5-mini'),
      system: 'You are a weather assistant.',
      prompt: 'What is the weather in Paris?',
      tools: { get_weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `cold in ${city}` }) },
      providerOptions: { openai: { reasoningEffort: 'low', reasoningSummary: 'auto' } },
      stopWhen: stepCountIs(3),
    });
    assert.match(result.text, /cold in Paris/);
    assert.equal(sent[0].input[0].role, 'developer');
    assert.ok(sent[1].input.some((item: any) => item.type === 'item_reference' && /^rs_/.test(item.id)), 'the reasoning item referenced');
    // The Anthropic fake takes a tool result only after a thinking block it signed itself.
    const messages = upstreams.anthropic.requests.at(-1)!.body.messages;
    assert.equal(messages[1].content[0].type, 'thinking');
    assert.equal(messages[1].content[0].thinking, 'Let me think.');
    assert.equal(result.reasoningText, 'Let me think.');
  });

  test('hosted tools are refused by name on a translated model configured with hosted_tools: refuse', async () => {
    const { status, json } = await post({ model: 'llama-strict', input: 'search the web', tools: [weatherTool, { type: 'web_search' }] });
    assert.equal(status, 400);
    assert.equal(json.error.param, 'tools[1].type');
    assert.equal(json.error.code, 'unsupported_parameter');
    assert.match(json.error.message, /`web_search`/);
    assert.equal(upstreams.vllm.requests.length, 0);
  });

  for (const model of ['llama-chat', 'llama-agent']) {
    test(`hosted tools are left out, and named in a header, by default and with the old drop_hosted_tools (${model})`, async () => {
      const { status, headers, json } = await post({
        model,
        input: 'What is the weather in Paris?',
        tools: [weatherTool, { type: 'web_search' }, { type: 'file_search', vector_store_ids: ['vs_1'] }],
      });
      assert.equal(status, 200);
      assert.equal(headers.get('x-sluice-dropped-tools'), 'web_search, file_search');
      assert.equal(json.output.find((item: any) => item.type === 'function_call').name, 'get_weather');
      const sent = upstreams.vllm.requests.at(-1)!.body;
      assert.deepEqual(sent.tools.map((t: any) => t.function.name), ['get_weather']);
    });
  }

  test('a namespace’s function is called by its flat name upstream and answered as a function_call with its namespace; a malformed namespace is a 400', async () => {
    const weather = { type: 'namespace', name: 'forecast', description: 'Weather tools.', tools: [{ ...weatherTool, strict: undefined }] };
    const { status, json } = await post({ model: 'claude', input: 'Look it up: call tool forecast__get_weather', tools: [weather] });
    assert.equal(status, 200);
    assert.deepEqual(upstreams.anthropic.requests.at(-1)!.body.tools.map((t: any) => t.name), ['forecast__get_weather']);
    const call = json.output.find((item: any) => item.type === 'function_call');
    assert.deepEqual([call.name, call.namespace, call.arguments], ['get_weather', 'forecast', '{"city":"example"}']);
    const bad = await post({ model: 'claude', input: 'hi', tools: [{ type: 'namespace', name: 'forecast' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'tools[0].tools');
  });

  test('hosted tools go to a native Responses upstream untouched', async () => {
    const { status, headers } = await post({ model: 'gpt-native', input: 'hello', tools: [weatherTool, { type: 'web_search' }] });
    assert.equal(status, 200);
    assert.equal(headers.get('x-sluice-dropped-tools'), null);
    assert.deepEqual(upstreams.vllm.requests.at(-1)!.body.tools.map((t: any) => t.type), ['function', 'web_search']);
  });

  test('a relayed stream ends with its last event, so a client that hangs up on response.completed (as Codex does) is served, not gone early', async () => {
    // The upstream closes its stream a second after response.completed; the caller's answer must not wait for that.
    upstreams.vllm.behaviour = { endDelayMs: 1_000 };
    const controller = new AbortController();
    const response = await fetch(`${sluice.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'gpt-native', input: 'hello', stream: true }),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    let text = '';
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    while (!text.includes('event: response.completed')) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'the stream carried response.completed');
      text += decoder.decode(value, { stream: true });
    }
    // The caller hangs up at once, as Codex does, well before the upstream's own end.
    controller.abort();
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'responses' && r.model === 'gpt-native' && r.stream === 1 && r.prompt_tokens > 0), 3000, 'the ledger row');
    assert.equal(row.status, 200, 'served, not a client that left');
    assert.equal(row.tokens_counted, 0, 'the usage is the upstream’s');
  });

  test('a bad field is a 400 naming it, in OpenAI’s shape', async () => {
    const hot = await post({ model: 'llama-chat', input: 'hi', temperature: 5 });
    assert.equal(hot.status, 400);
    assert.equal(hot.json.error.param, 'temperature');
    assert.equal(hot.json.error.type, 'invalid_request_error');
    const noCallId = await post({ model: 'claude', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] });
    assert.equal(noCallId.status, 400);
    assert.equal(noCallId.json.error.param, 'input[0].call_id');
    const background = await post({ model: 'gemini-flash', input: 'hi', background: true });
    assert.equal(background.status, 400);
    assert.equal(background.json.error.param, 'background');
    const unknownItem = await post({ model: 'llama-chat', input: [{ type: 'item_reference', id: 'msg_nothing' }] });
    assert.equal(unknownItem.status, 404);
    assert.match(unknownItem.json.error.message, /msg_nothing/);
    const wrongModel = await post({ model: 'legacy-only', input: 'hi' });
    assert.equal(wrongModel.status, 400);
    assert.match(wrongModel.json.error.message, /\/v1\/responses/);
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((r) => r.operation === 'responses' && r.status === 400);
      return found.length >= 4 ? found : undefined;
    });
    assert.ok(rows.length >= 4);
  });

  test('unknown fields are ignored on translated upstreams and passed to a native one', async () => {
    const extra = { client_metadata: { session: 'abc' }, prompt_cache_key: 'k1', include: ['reasoning.encrypted_content'] };
    const translated = await post({ model: 'llama-chat', input: 'hi', ...extra });
    assert.equal(translated.status, 200);
    assert.equal(upstreams.vllm.requests.at(-1)!.body.client_metadata, undefined);
    const native = await post({ model: 'gpt-native', input: 'hi', ...extra });
    assert.equal(native.status, 200);
    const sent = upstreams.vllm.requests.at(-1)!.body;
    assert.deepEqual(sent.client_metadata, { session: 'abc' });
    assert.equal(sent.prompt_cache_key, 'k1');
    assert.equal(sent.model, 'upstream-model');
    assert.equal(native.json.model, 'gpt-native');
  });

  test('a Codex-style stream: store false, developer messages, hosted tools dropped, reasoning summary', async () => {
    const response = await fetch(`${sluice.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        model: 'llama-agent',
        instructions: 'You are a coding agent.',
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: read-only.' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What is the weather in Paris?' }] },
        ],
        tools: [{ ...weatherTool, strict: false }, { type: 'web_search' }, { type: 'namespace', name: 'mcp', description: '', tools: [] }, { type: 'image_generation' }],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        reasoning: { effort: 'medium', summary: 'auto' },
        store: false,
        stream: true,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: 'session-1',
        client_metadata: { originator: 'codex_cli_rs' },
      }),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-sluice-dropped-tools'), 'web_search, image_generation', 'an empty namespace is no tool left out');
    const events = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.includes('data: '))
      .map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)));
    const types = events.map((e) => e.type);
    assert.ok(types.includes('response.reasoning_summary_text.delta'));
    assert.ok(types.includes('response.function_call_arguments.delta'));
    assert.equal(types.at(-1), 'response.completed');
    const final = events.at(-1).response;
    assert.deepEqual(final.output.map((item: any) => item.type), ['reasoning', 'function_call']);
    assert.equal(final.store, false);
    await assert.rejects(client().responses.retrieve(final.id), (error: unknown) => error instanceof OpenAI.NotFoundError);
  });

  test('the model pages list /v1/responses for chat models', async () => {
    const response = await fetch(`${sluice.url}/models/llama-chat?format=json`);
    assert.equal(response.status, 200);
    const model = (await response.json()) as { operations: string[] };
    assert.ok(model.operations.includes('/v1/responses'));
    const native = (await (await fetch(`${sluice.url}/models/gpt-native?format=json`)).json()) as { operations: string[] };
    assert.deepEqual(native.operations, ['/v1/responses']);
  });

  test('the ledger prices a native response from its usage', async () => {
    await client().responses.create({ model: 'gpt-native', input: 'price me' });
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'responses' && r.model === 'gpt-native' && r.cost_usd > 0), 3000, 'a priced row');
    assert.equal(row.provider_id, 'vllm');
    assert.ok(Math.abs(row.cost_usd - (row.prompt_tokens * 1 + row.completion_tokens * 4) / 1e6) < 1e-12);
  });
});
