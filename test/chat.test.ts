// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { FakeUpstream, RecordedRequest } from './fakes/fake-server.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

let anthropic: FakeUpstream;
let gemini: FakeUpstream;
let vllm: FakeUpstream;
let sluice: RunningSluice;
let client: OpenAI;
let key: string;

/** One chat-serving model per provider kind, and how its upstream spells what was sent. */
interface Upstream {
  readonly name: string;
  readonly model: string;
  readonly fake: () => FakeUpstream;
  readonly sentMaxTokens: (request: RecordedRequest) => unknown;
  /** Upstream calls for n = 3. */
  readonly callsForThreeChoices: number;
}

const UPSTREAMS: Upstream[] = [
  { name: 'an OpenAI-compatible upstream (relayed)', model: 'llama-chat', fake: () => vllm, sentMaxTokens: (r) => r.body.max_tokens, callsForThreeChoices: 1 },
  { name: 'Anthropic Messages', model: 'claude', fake: () => anthropic, sentMaxTokens: (r) => r.body.max_tokens, callsForThreeChoices: 3 },
  { name: 'Gemini generateContent', model: 'gemini-flash', fake: () => gemini, sentMaxTokens: (r) => r.body.generationConfig.maxOutputTokens, callsForThreeChoices: 1 },
];

let upstreams: ThreeUpstreams;

before(async () => {
  upstreams = await startThreeUpstreams();
  ({ anthropic, gemini, vllm } = upstreams);
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat, completions], max_output_tokens: 8000, pricing: { input_per_mtok: 3, output_per_mtok: 15 } }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat] }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions], pricing: { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 0.1 } }
  - { id: legacy-only, provider: vllm, upstream_model: upstream-model, endpoints: [completions] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

async function post(body: unknown) {
  const response = await fetch(`${sluice.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

for (const upstream of UPSTREAMS) {
  describe(`chat completions through ${upstream.name}`, () => {
    const { model } = upstream;

    test('a whole answer: assistant message, finish reason, usage, the public model id', async () => {
      const completion = await client.chat.completions.create({ model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }], max_tokens: 3 });
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.model, model);
      assert.match(completion.id, /^chatcmpl-/);
      assert.equal(completion.choices.length, 1);
      const [choice] = completion.choices;
      assert.equal(choice!.message.role, 'assistant');
      assert.equal(typeof choice!.message.content, 'string');
      assert.ok(choice!.message.content!.length > 0);
      assert.equal(choice!.finish_reason, 'length');
      assert.ok(completion.usage!.prompt_tokens > 0);
      assert.equal(completion.usage!.completion_tokens, 3);
      assert.equal(completion.usage!.total_tokens, completion.usage!.prompt_tokens + 3);
      const sent = upstream.fake().requests.at(-1)!;
      assert.equal(upstream.sentMaxTokens(sent), 3);
      assert.doesNotMatch(JSON.stringify(sent.headers), new RegExp(key), "the caller's key never goes upstream");
    });

    test('a stream: role first, content deltas, finish reason, usage chunk only when asked, [DONE]', async () => {
      for (const includeUsage of [true, false]) {
        const stream = await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'tell me' }],
          max_tokens: 4,
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        });
        let text = '';
        let role: string | undefined;
        const finishes: (string | null)[] = [];
        let usage: OpenAI.CompletionUsage | undefined;
        let usageChunks = 0;
        for await (const chunk of stream) {
          assert.equal(chunk.object, 'chat.completion.chunk');
          assert.equal(chunk.model, model);
          if (chunk.usage) {
            usage = chunk.usage;
            usageChunks++;
            assert.deepEqual(chunk.choices, []);
          }
          for (const choice of chunk.choices) {
            role ??= choice.delta.role ?? undefined;
            text += choice.delta.content ?? '';
            if (choice.finish_reason !== null) finishes.push(choice.finish_reason);
          }
        }
        assert.equal(role, 'assistant');
        assert.ok(text.length > 0);
        assert.deepEqual(finishes, ['length']);
        if (includeUsage) {
          assert.equal(usageChunks, 1);
          assert.equal(usage!.completion_tokens, 4);
        } else {
          assert.equal(usageChunks, 0);
        }
      }
      const rows = await eventually(async () => {
        const chat = (await sluice.ledger()).filter((row) => row.operation === 'chat' && row.model === model && row.stream === 1);
        return chat.length >= 2 ? chat : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200 && row.completion_tokens === 4 && row.tokens_counted === 0), 'usage is always obtained for the ledger');
    });

    test('n choices come back indexed, split over upstream calls where the upstream has no n', async () => {
      const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'pick' }], max_tokens: 2, n: 3 });
      assert.deepEqual(completion.choices.map((c) => c.index), [0, 1, 2]);
      assert.equal(upstream.fake().requests.length, upstream.callsForThreeChoices);
      assert.equal(completion.usage!.completion_tokens, 6);
    });

    test('a malformed request is a 400 naming the parameter, and never reaches the upstream', async () => {
      for (const [body, param] of [
        [{ model, messages: [] }, 'messages'],
        [{ model, messages: [{ role: 'user', content: 'x' }], temperature: 3 }, 'temperature'],
        [{ model, messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
        [{ model, messages: [{ role: 'user', content: 'x' }], tool_choice: 'required' }, 'tool_choice'],
        [{ model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] }, 'messages[0].content[0].image_url.url'],
        [{ messages: [{ role: 'user', content: 'x' }] }, 'model'],
      ] as const) {
        const { status, body: error } = await post(body);
        assert.equal(status, 400, JSON.stringify(error));
        assert.equal(error.error.type, 'invalid_request_error');
        assert.equal(error.error.param, param, JSON.stringify(error));
      }
      // A value outside a list is named, with the list, as OpenAI words it.
      const { body: badRole } = await post({ model, messages: [{ role: 'wizard', content: 'x' }] });
      assert.equal(badRole.error.code, 'invalid_value');
      assert.match(badRole.error.message, /^Invalid value: 'wizard'\. Supported values are: 'system', .*'user'/);
      assert.equal(upstream.fake().requests.length, 0);
    });
  });
}

describe('chat completions: what each upstream cannot do', () => {
  test('an upstream that cannot honour a parameter refuses it by name, naming the model', async () => {
    const cases: [string, object, string][] = [
      ['claude', { logprobs: true }, 'logprobs'],
      ['claude', { temperature: 1.5 }, 'temperature'],
      ['claude', { frequency_penalty: 0.5 }, 'frequency_penalty'],
      ['claude', { guided_json: { type: 'object' } }, 'guided_json'],
      ['gemini-flash', { stop: ['a', 'b', 'c', 'd', 'e', 'f'] }, 'stop'],
      ['gemini-flash', { logit_bias: { '42': 3 } }, 'logit_bias'],
    ];
    for (const [model, extra, param] of cases) {
      const { status, body } = await post({ model, messages: [{ role: 'user', content: 'x' }], ...extra });
      assert.equal(status, 400, `${model} ${param}`);
      assert.equal(body.error.param, param);
      assert.equal(body.error.code, 'unsupported_parameter');
      assert.match(body.error.message, new RegExp(`Model \`${model}\``));
    }
    assert.equal(anthropic.requests.length + gemini.requests.length, 0);
  });

  test('an OpenAI-compatible upstream gets the body as sent, fields Sluice does not model included', async () => {
    const completion = await client.chat.completions.create({
      model: 'llama-chat',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
      // vLLM extensions
      top_k: 5,
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.model, 'llama-chat');
    const sent = vllm.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.model, 'upstream-model');
    assert.equal(sent.body.top_k, 5);
    assert.deepEqual(sent.body.chat_template_kwargs, { enable_thinking: false });
    assert.equal(sent.headers.authorization, 'Bearer vllm-credential');
  });

  test('a model that does not serve chat says which operations it serves; legacy completions still work on chat models', async () => {
    const { status, body } = await post({ model: 'legacy-only', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(status, 400);
    assert.equal(body.error.code, 'unsupported_endpoint');
    assert.match(body.error.message, /\/v1\/completions/);
    for (const model of ['claude', 'llama-chat']) {
      const completion = await client.completions.create({ model, prompt: 'hello', max_tokens: 2 });
      assert.equal(completion.object, 'text_completion');
    }
  });

  test('the ledger prices cached input and records the operation', async () => {
    const completion = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'one two three' }], max_tokens: 2 });
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'chat' && r.model === 'claude' && r.stream === 0 && r.completion_tokens === 2));
    assert.equal(row.prompt_tokens, completion.usage!.prompt_tokens);
    assert.equal(row.provider_id, 'anthropic');
    assert.ok(Math.abs(row.cost_usd - (row.prompt_tokens * 3 + 2 * 15) / 1e6) < 1e-12);
  });
});

const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const LONG_PROMPT = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

for (const upstream of UPSTREAMS) {
  describe(`chat features through ${upstream.name}`, () => {
    const { model } = upstream;

    test('images by URL and inline bytes reach the upstream as images', async () => {
      const completion = await client.chat.completions.create({
        model,
        max_tokens: 20,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in these?' },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1X1}`, detail: 'low' } },
            ],
          },
        ],
      });
      assert.match(completion.choices[0]!.message.content ?? '', /I see 2 image\(s\)/);
    });

    test('reasoning: the effort reaches the upstream, its reasoning text and tokens come back', async () => {
      const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Think first.' }], max_completion_tokens: 4000, reasoning_effort: 'low' });
      const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
      assert.match(message.reasoning_content ?? '', /Let me think/);
      assert.ok(completion.usage!.completion_tokens_details!.reasoning_tokens! > 0);
      assert.ok(completion.usage!.completion_tokens >= completion.usage!.completion_tokens_details!.reasoning_tokens!);
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Think first.' }], max_completion_tokens: 4000, reasoning_effort: 'low', stream: true, stream_options: { include_usage: true } });
      let reasoning = '';
      let reasoningTokens = 0;
      for await (const chunk of stream) {
        for (const choice of chunk.choices) reasoning += (choice.delta as { reasoning_content?: string }).reasoning_content ?? '';
        reasoningTokens = chunk.usage?.completion_tokens_details?.reasoning_tokens ?? reasoningTokens;
      }
      assert.match(reasoning, /Let me think/);
      assert.ok(reasoningTokens > 0);
    });

    test('a JSON Schema answer is valid against the schema', async () => {
      const completion = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Give me a city.' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'city', strict: true, schema: { type: 'object', properties: { name: { type: 'string' }, population: { type: 'integer' } }, required: ['name', 'population'], additionalProperties: false } },
        },
      });
      const city = JSON.parse(completion.choices[0]!.message.content!);
      assert.equal(typeof city.name, 'string');
      assert.ok(Number.isInteger(city.population));
    });
  });
}

describe('JSON mode (json_object) on Anthropic: a forced tool that takes any object', () => {
  const weatherTool: OpenAI.ChatCompletionTool = {
    type: 'function',
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
  };

  test('the answer is the tool input as text; Anthropic gets a forced tool of type object, never an open output schema', async () => {
    const completion = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'Answer in JSON.' }], response_format: { type: 'json_object' } });
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(JSON.parse(completion.choices[0]!.message.content!), { ok: true });
    const sent = anthropic.requests.at(-1)!.body;
    assert.deepEqual(sent.tools.map((t: { name: string; input_schema: unknown }) => [t.name, t.input_schema]), [['json_answer', { type: 'object' }]]);
    assert.deepEqual(sent.tool_choice, { type: 'tool', name: 'json_answer', disable_parallel_tool_use: true });
    assert.equal(sent.output_config, undefined);
  });

  test("beside the caller's tools (auto) the model calls one of them or answers in JSON", async () => {
    const call = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'The weather in Paris, in JSON.' }], tools: [weatherTool], response_format: { type: 'json_object' } });
    assert.equal(call.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(call.choices[0]!.message.tool_calls!.map((c) => (c as OpenAI.ChatCompletionMessageFunctionToolCall).function.name), ['get_weather']);
    assert.deepEqual(anthropic.requests.at(-1)!.body.tool_choice, { type: 'any' });

    const answered = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'Just JSON.' }], tools: [weatherTool], response_format: { type: 'json_object' }, stream: true });
    let content = '';
    let finish: string | null = null;
    for await (const chunk of answered) {
      for (const c of chunk.choices) {
        assert.equal(c.delta.tool_calls, undefined);
        content += c.delta.content ?? '';
        finish = c.finish_reason ?? finish;
      }
    }
    assert.deepEqual(JSON.parse(content), { ok: true });
    assert.equal(finish, 'stop');
  });

  test("a tool choice that asks for the caller's own call leaves JSON mode's tool out", async () => {
    const completion = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'Weather in Paris.' }], tools: [weatherTool], tool_choice: 'required', response_format: { type: 'json_object' } });
    assert.equal(completion.choices[0]!.finish_reason, 'tool_calls');
    const sent = anthropic.requests.at(-1)!.body;
    assert.deepEqual(sent.tools.map((t: { name: string }) => t.name), ['get_weather']);
    assert.deepEqual(sent.tool_choice, { type: 'any' });
  });

  test('with reasoning, or beside a tool of the same name, it is a 400 naming the parameter, and nothing goes upstream', async () => {
    const reasoning = await post({ model: 'claude', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' }, reasoning_effort: 'low', max_completion_tokens: 4000 });
    assert.equal(reasoning.status, 400);
    assert.equal(reasoning.body.error.param, 'response_format');
    assert.match(reasoning.body.error.message, /reasoning/);
    const clash = await post({ model: 'claude', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' }, tools: [{ type: 'function', function: { name: 'json_answer', parameters: { type: 'object' } } }] });
    assert.equal(clash.status, 400);
    assert.equal(clash.body.error.param, 'tools');
    assert.match(clash.body.error.message, /json_answer/);
    assert.equal(anthropic.requests.length, 0);
  });
});

describe('chat usage details', () => {
  test('cached input tokens are reported and priced at the cached price', async () => {
    for (const model of ['llama-chat', 'gemini-flash']) {
      const completion = await client.chat.completions.create({ model, messages: [{ role: 'user', content: LONG_PROMPT }], max_tokens: 2 });
      const cached = completion.usage!.prompt_tokens_details!.cached_tokens!;
      assert.ok(cached > 0, model);
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.model === model && r.cached_input_tokens === cached));
      assert.equal(row.prompt_tokens, completion.usage!.prompt_tokens);
      if (model === 'llama-chat') {
        const expected = ((row.prompt_tokens - cached) * 1 + cached * 0.1 + row.completion_tokens * 2) / 1e6;
        assert.ok(Math.abs(row.cost_usd - expected) < 1e-12, `${row.cost_usd} != ${expected}`);
      }
    }
  });
});
