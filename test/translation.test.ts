// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream, RecordedRequest } from './fakes/fake-server.js';
import { UNICODE_PROMPT } from './fakes/generation.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

let anthropic: FakeUpstream;
let gemini: FakeUpstream;
let chat: FakeUpstream;
let sluice: RunningSluice;
let client: OpenAI;
let key: string;

/** How each upstream spells what the conformance suite checks was sent. */
interface Adapter {
  readonly name: string;
  readonly model: string;
  readonly fake: () => FakeUpstream;
  readonly sentMaxTokens: (request: RecordedRequest) => unknown;
  readonly sentStops: (request: RecordedRequest) => unknown;
  readonly sentPrompt: (request: RecordedRequest) => unknown;
  /** Upstream calls for 2 prompts × n = 2: one per choice without `n`, one per prompt with it. */
  readonly callsForTwoByTwo: number;
  readonly rateLimited: { status: number; body: string };
  readonly credentialRefused: { status: number; body: string };
  readonly credential: string;
}

const ADAPTERS: Adapter[] = [
  {
    name: 'Anthropic Messages',
    model: 'claude',
    fake: () => anthropic,
    sentMaxTokens: (r) => r.body.max_tokens,
    sentStops: (r) => r.body.stop_sequences,
    sentPrompt: (r) => r.body.messages,
    callsForTwoByTwo: 4,
    rateLimited: { status: 429, body: '{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}' },
    credentialRefused: { status: 401, body: '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key anthropic-credential"}}' },
    credential: 'anthropic-credential',
  },
  {
    name: 'Gemini generateContent',
    model: 'gemini-flash',
    fake: () => gemini,
    sentMaxTokens: (r) => r.body.generationConfig.maxOutputTokens,
    sentStops: (r) => r.body.generationConfig.stopSequences,
    sentPrompt: (r) => r.body.contents,
    callsForTwoByTwo: 2,
    rateLimited: { status: 429, body: '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}' },
    credentialRefused: {
      status: 400,
      body: '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key. gemini-credential","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}',
    },
    credential: 'gemini-credential',
  },
  {
    name: 'OpenAI-style chat',
    model: 'chatty',
    fake: () => chat,
    sentMaxTokens: (r) => r.body.max_tokens,
    sentStops: (r) => r.body.stop,
    sentPrompt: (r) => r.body.messages,
    callsForTwoByTwo: 2,
    rateLimited: { status: 429, body: '{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}' },
    credentialRefused: { status: 401, body: '{"error":"Unauthorized: chat-credential"}' },
    credential: 'chat-credential',
  },
];

before(async () => {
  anthropic = await startFakeAnthropic({ apiKey: 'anthropic-credential' });
  gemini = await startFakeGemini({ apiKey: 'gemini-credential' });
  chat = await startFakeOpenAI({ apiKey: 'chat-credential' });
  sluice = await startSluice({
    config: `
providers:
  - { id: anthropic, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential }
  - { id: google, kind: gemini, base_url: '${gemini.url}', api_key: gemini-credential }
  - { id: vllm-chat, kind: openai, base_url: '${chat.url}', api_key: chat-credential }
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, pricing: { input_per_mtok: 3, output_per_mtok: 15 } }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test }
  - { id: chatty, provider: vllm-chat, upstream_model: upstream-model, upstream_api: chat }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([anthropic.close(), gemini.close(), chat.close()]);
});

beforeEach(() => {
  for (const fake of [anthropic, gemini, chat]) {
    fake.behaviour = {};
    fake.requests.length = 0;
  }
});

async function raw(body: object) {
  const response = await fetch(`${sluice.url}/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Collects a stream per choice: texts joined, finish reasons in order, the usage chunk. */
async function collect(stream: AsyncIterable<OpenAI.Completions.Completion>) {
  const texts: string[] = [];
  const finishes: (string | null)[][] = [];
  let usage: OpenAI.Completions.CompletionUsage | null | undefined;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
      (finishes[choice.index] ??= []).push(choice.finish_reason);
    }
  }
  return { texts, finishes, usage, chunks };
}

for (const adapter of ADAPTERS) {
  describe(`conformance: legacy completions through ${adapter.name}`, () => {
    const { model } = adapter;

    test('one prompt: text, finish_reason length, usage, the public model id', async () => {
      const completion = await client.completions.create({ model, prompt: 'hello', max_tokens: 3 });
      assert.equal(completion.object, 'text_completion');
      assert.equal(completion.model, model);
      assert.match(completion.id, /^cmpl-/);
      assert.ok(Math.abs(completion.created - Date.now() / 1000) < 60);
      assert.equal(completion.choices.length, 1);
      assert.deepEqual({ ...completion.choices[0] }, { index: 0, text: '[hello] The quick', logprobs: null, finish_reason: 'length' });
      assert.deepEqual(completion.usage, { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
      const sent = adapter.fake().requests[0]!;
      assert.equal(adapter.sentMaxTokens(sent), 3);
      assert.ok(JSON.stringify(adapter.sentPrompt(sent)).includes('hello'), 'the prompt is one user turn');
      assert.ok(!JSON.stringify(sent.headers).includes(key), "the client's key never goes upstream");
    });

    test('max_tokens defaults to 16, as in the legacy API', async () => {
      await client.completions.create({ model, prompt: 'long' });
      assert.equal(adapter.sentMaxTokens(adapter.fake().requests[0]!), 16);
    });

    test('stop sequences map to the upstream and end with finish_reason stop', async () => {
      const completion = await client.completions.create({ model, prompt: 'hi', stop: [' brown', ' dog'] });
      assert.equal(completion.choices[0]!.text, '[hi] The quick');
      assert.equal(completion.choices[0]!.finish_reason, 'stop');
      assert.deepEqual(adapter.sentStops(adapter.fake().requests[0]!), [' brown', ' dog']);
    });

    test('several prompts and n > 1 fan out and come back indexed prompt-major', async () => {
      const completion = await client.completions.create({ model, prompt: ['a', 'b'], n: 2, max_tokens: 2 });
      assert.deepEqual(
        completion.choices.map((c) => [c.index, c.text]),
        [
          [0, '[a] The'],
          [1, '[a] The'],
          [2, '[b] The'],
          [3, '[b] The'],
        ],
      );
      assert.equal(adapter.fake().requests.length, adapter.callsForTwoByTwo);
      assert.deepEqual(completion.usage, { prompt_tokens: adapter.callsForTwoByTwo === 4 ? 4 : 2, completion_tokens: 8, total_tokens: adapter.callsForTwoByTwo === 4 ? 12 : 10 });
    });

    test('echo is done by Sluice: the prompt leads each choice', async () => {
      const completion = await client.completions.create({ model, prompt: 'Q:', echo: true, max_tokens: 2 });
      assert.equal(completion.choices[0]!.text, 'Q:[Q:] The');
    });

    test('a stream arrives piece by piece, with finish_reason on the last chunk and [DONE] at the end', async () => {
      const whole = await client.completions.create({ model, prompt: 'go', max_tokens: 4 });
      const streamed = await collect(await client.completions.create({ model, prompt: 'go', max_tokens: 4, stream: true }));
      assert.deepEqual(streamed.texts, [whole.choices[0]!.text]);
      assert.ok(streamed.chunks >= 4, `text arrives as it is generated (${streamed.chunks} chunks)`);
      const finishes = streamed.finishes[0]!;
      assert.equal(finishes.at(-1), 'length');
      assert.ok(finishes.slice(0, -1).every((f) => f === null));
      assert.equal(streamed.usage, undefined, 'no usage chunk unless asked');
      const response = await raw({ model, prompt: 'go', max_tokens: 2, stream: true });
      assert.equal(response.status, 200);
      assert.ok(response.text.endsWith('data: [DONE]\n\n'));
      for (const event of response.text.split('\n\n').filter(Boolean).slice(0, -1)) {
        const chunk = JSON.parse(event.slice('data: '.length));
        assert.equal(chunk.object, 'text_completion');
        assert.equal(chunk.model, model);
      }
    });

    test('stream_options.include_usage adds the usage chunk', async () => {
      const streamed = await collect(await client.completions.create({ model, prompt: 'go', max_tokens: 3, stream: true, stream_options: { include_usage: true } }));
      assert.deepEqual(streamed.usage, { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
    });

    test('several streamed choices carry the right index, echo included', async () => {
      const streamed = await collect(await client.completions.create({ model, prompt: ['x', 'y'], n: 2, max_tokens: 3, echo: true, stream: true }));
      assert.deepEqual(streamed.texts, ['x[x] The quick', 'x[x] The quick', 'y[y] The quick', 'y[y] The quick']);
      for (const finishes of streamed.finishes) assert.equal(finishes.at(-1), 'length');
    });

    test('what no chat upstream can do is a 400 naming the parameter and the model, and nothing goes upstream', async () => {
      const cases: [object, string][] = [
        [{ prompt: [[1, 2, 3]] }, 'prompt'],
        [{ prompt: 'x', best_of: 2 }, 'best_of'],
        [{ prompt: 'x', suffix: 'tail' }, 'suffix'],
        [{ prompt: 'x', max_tokens: 0 }, 'max_tokens'],
        [{ prompt: Array.from({ length: 129 }, (_, i) => `p${i}`), n: 128 }, 'n'],
      ];
      for (const [body, param] of cases) {
        const response = await raw({ model, ...body });
        assert.equal(response.status, 400, JSON.stringify(body));
        const error = JSON.parse(response.text).error;
        assert.equal(error.param, param);
        assert.equal(error.code, 'unsupported_parameter');
        assert.ok(error.message.includes(model), error.message);
      }
      assert.equal(adapter.fake().requests.length, 0);
    });

    test('upstream 429 keeps Retry-After; a refused upstream credential is 502 and never shown', async () => {
      adapter.fake().behaviour = { fail: { ...adapter.rateLimited, headers: { 'retry-after': '12' } } };
      const limited = await raw({ model, prompt: 'x' });
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '12');
      adapter.fake().behaviour = { fail: adapter.credentialRefused };
      const refused = await raw({ model, prompt: 'x' });
      assert.equal(refused.status, 502);
      assert.equal(JSON.parse(refused.text).error.code, 'upstream_auth_failed');
      assert.ok(!refused.text.includes(adapter.credential));
      await assert.rejects(client.completions.create({ model, prompt: 'x', stream: true }), OpenAI.InternalServerError);
    });

    test('an upstream error mid-stream becomes an error event that the SDK raises', async () => {
      // After the first content (Anthropic's fourth event, its first delta): a stream is held until then.
      adapter.fake().behaviour = { errorAfterChunks: adapter.name === 'Anthropic Messages' ? 4 : 3 };
      const stream = await client.completions.create({ model, prompt: 'go', max_tokens: 8, stream: true });
      await assert.rejects(collect(stream), (e: any) => e instanceof OpenAI.APIError);
      const response = await raw({ model, prompt: 'go', max_tokens: 8, stream: true });
      const events = response.text.split('\n\n').filter(Boolean);
      assert.ok(JSON.parse(events.at(-1)!.slice('data: '.length)).error, 'the last event is the error');
      assert.ok(!response.text.includes('[DONE]'));
    });

    test('each request writes one ledger row with the provider and the upstream usage', async () => {
      const completion = await client.completions.create({ model, prompt: 'ledger please', max_tokens: 2 });
      const requestId = (completion as { _request_id?: string | null })._request_id!;
      const row = await eventually(async () => (await sluice.ledger()).find((r) => r.request_id === requestId), 3000, 'ledger row');
      assert.equal(row.model, model);
      assert.equal(row.status, 200);
      assert.equal(row.prompt_tokens, 2);
      assert.equal(row.completion_tokens, 2);
      assert.equal(row.tokens_counted, 0);
    });
  });
}

describe('Anthropic specifics', () => {
  test('credentials and version go in the headers Anthropic expects; sampling maps', async () => {
    await client.completions.create({ model: 'claude', prompt: 'x', temperature: 0.7, top_p: 0.9, user: 'u-1', seed: 42, ...({ top_k: 5 } as object) });
    const sent = anthropic.requests[0]!;
    assert.equal(sent.headers['x-api-key'], 'anthropic-credential');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers.authorization, undefined);
    assert.equal(sent.body.temperature, 0.7);
    assert.equal(sent.body.top_p, 0.9);
    assert.equal(sent.body.top_k, 5);
    assert.deepEqual(sent.body.metadata, { user_id: 'u-1' });
    assert.equal(sent.body.seed, undefined, 'seed is a best-effort hint Anthropic has no field for');
  });

  test('what Anthropic cannot do is refused', async () => {
    const cases: [object, string][] = [
      [{ temperature: 1.5 }, 'temperature'],
      [{ logprobs: 1 }, 'logprobs'],
      [{ logit_bias: { '50256': -100 } }, 'logit_bias'],
      [{ presence_penalty: 0.5 }, 'presence_penalty'],
      [{ frequency_penalty: -1 }, 'frequency_penalty'],
      [{ min_p: 0.1 }, 'min_p'],
    ];
    for (const [extra, param] of cases) {
      const response = await raw({ model: 'claude', prompt: 'x', ...extra });
      assert.equal(response.status, 400, param);
      assert.equal(JSON.parse(response.text).error.param, param);
    }
    assert.equal(anthropic.requests.length, 0);
    const zero = await raw({ model: 'claude', prompt: 'x', presence_penalty: 0, frequency_penalty: 0, temperature: 1 });
    assert.equal(zero.status, 200, 'default values are not refused');
  });

  test('a refusal is finish_reason content_filter, streamed or not', async () => {
    const whole = await client.completions.create({ model: 'claude', prompt: 'please refuse' });
    assert.equal(whole.choices[0]!.finish_reason, 'content_filter');
    const streamed = await collect(await client.completions.create({ model: 'claude', prompt: 'please refuse', stream: true }));
    assert.equal(streamed.finishes[0]!.at(-1), 'content_filter');
  });

  test('529 overloaded is 503', async () => {
    anthropic.behaviour = { fail: { status: 529, body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' } };
    const response = await raw({ model: 'claude', prompt: 'x' });
    assert.equal(response.status, 503);
    assert.equal(JSON.parse(response.text).error.code, 'upstream_overloaded');
  });

  test('a client that leaves mid-stream cancels every fanned-out upstream call', async () => {
    anthropic.behaviour = { tokenDelayMs: 150 };
    const controller = new AbortController();
    const stream = await client.completions.create({ model: 'claude', prompt: 'go', n: 3, max_tokens: 10, stream: true }, { signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    await eventually(() => (anthropic.aborted.length === 3 ? true : undefined), 1000, 'all three upstream calls to be cancelled');
  });
});

describe('Gemini specifics', () => {
  test('sampling maps into generationConfig; n up to 8 rides on candidateCount', async () => {
    await client.completions.create({ model: 'gemini-flash', prompt: 'x', temperature: 1.5, top_p: 0.5, seed: 7, presence_penalty: 0.5, frequency_penalty: 0.25, n: 10, max_tokens: 1 });
    assert.equal(gemini.requests.length, 2, '10 choices: 8 + 2');
    const config = gemini.requests[0]!.body.generationConfig;
    assert.deepEqual(
      { ...config },
      { maxOutputTokens: 1, candidateCount: 8, temperature: 1.5, topP: 0.5, seed: 7, presencePenalty: 0.5, frequencyPenalty: 0.25 },
    );
    assert.equal(gemini.requests[1]!.body.generationConfig.candidateCount, 2);
    assert.equal(gemini.requests[0]!.headers['x-goog-api-key'], 'gemini-credential');
    assert.match(gemini.requests[0]!.path, /^\/v1beta\/models\/gemini-test:generateContent$/);
  });

  test('more than 5 stop sequences, logit_bias and unknown fields are refused', async () => {
    for (const [extra, param] of [
      [{ stop: ['a', 'b', 'c', 'd', 'e', 'f'] }, 'stop'],
      [{ logit_bias: { '1': 1 } }, 'logit_bias'],
      [{ repetition_penalty: 1.2 }, 'repetition_penalty'],
    ] as const) {
      const response = await raw({ model: 'gemini-flash', prompt: 'x', ...extra });
      assert.equal(response.status, 400);
      assert.equal(JSON.parse(response.text).error.param, param);
    }
    assert.equal(gemini.requests.length, 0);
  });

  test('a blocked prompt is an empty choice with content_filter; a SAFETY stop too', async () => {
    const blocked = await client.completions.create({ model: 'gemini-flash', prompt: ['fine', 'forbidden'], n: 2 });
    assert.deepEqual(
      blocked.choices.map((c) => [c.index, c.finish_reason]),
      [
        [0, 'stop'],
        [1, 'stop'],
        [2, 'content_filter'],
        [3, 'content_filter'],
      ],
    );
    assert.equal(blocked.choices[2]!.text, '');
    const streamed = await collect(await client.completions.create({ model: 'gemini-flash', prompt: 'forbidden', stream: true }));
    assert.deepEqual(streamed.texts, ['']);
    assert.deepEqual(streamed.finishes[0], ['content_filter']);
    const unsafe = await client.completions.create({ model: 'gemini-flash', prompt: 'unsafe' });
    assert.equal(unsafe.choices[0]!.finish_reason, 'content_filter');
  });

  test('logprobs map to the legacy shape with character offsets', async () => {
    const completion = await client.completions.create({ model: 'gemini-flash', prompt: UNICODE_PROMPT, logprobs: 2 });
    const logprobs = completion.choices[0]!.logprobs!;
    assert.equal(completion.choices[0]!.text, ' café 😀!');
    assert.deepEqual(logprobs.tokens, [' caf', 'é', ' 😀', '!']);
    assert.deepEqual(logprobs.text_offset, [0, 4, 5, 7], 'offsets in characters (code points), not UTF-16 units');
    assert.deepEqual(logprobs.token_logprobs, [-0.1, -0.2, -0.30000000000000004, -0.4]);
    assert.deepEqual(logprobs.top_logprobs![0], { ' caf': -0.1, ' alt': -1.1 });
    const sent = gemini.requests[0]!.body.generationConfig;
    assert.equal(sent.responseLogprobs, true);
    assert.equal(sent.logprobs, 2);
    const streamed = await client.completions.create({ model: 'gemini-flash', prompt: UNICODE_PROMPT, logprobs: 1, stream: true });
    const offsets: number[] = [];
    for await (const chunk of streamed) offsets.push(...(chunk.choices[0]?.logprobs?.text_offset ?? []));
    assert.deepEqual(offsets, [0, 4, 5, 7], 'stream offsets continue across chunks');
  });
});

describe('OpenAI-style chat specifics', () => {
  test('extensions and logit_bias are forwarded; n rides on the upstream n', async () => {
    await client.completions.create({ model: 'chatty', prompt: 'x', n: 3, logit_bias: { '50256': -100 }, ...({ top_k: 20, min_p: 0.05 } as object) });
    const sent = chat.requests[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.body.n, 3);
    assert.deepEqual(sent.body.logit_bias, { '50256': -100 });
    assert.equal(sent.body.top_k, 20);
    assert.equal(sent.body.min_p, 0.05);
    assert.deepEqual(sent.body.messages, [{ role: 'user', content: 'x' }]);
    assert.equal(sent.body.prompt, undefined);
  });

  test('chat logprobs become legacy logprobs; a character split over two tokens is counted once', async () => {
    const completion = await client.completions.create({ model: 'chatty', prompt: UNICODE_PROMPT, logprobs: 1 });
    const logprobs = completion.choices[0]!.logprobs!;
    assert.equal(completion.choices[0]!.text, ' café 😀!');
    assert.equal(logprobs.tokens!.length, 5);
    assert.deepEqual(logprobs.text_offset, [0, 4, 5, 6, 7]);
    assert.equal(chat.requests[0]!.body.logprobs, true);
    assert.equal(chat.requests[0]!.body.top_logprobs, 1);
  });

  test('echo with logprobs is refused: a chat API cannot score the prompt', async () => {
    const response = await raw({ model: 'chatty', prompt: 'x', echo: true, logprobs: 1 });
    assert.equal(response.status, 400);
    assert.equal(JSON.parse(response.text).error.param, 'echo');
  });

  test('content_filter passes through', async () => {
    const completion = await client.completions.create({ model: 'chatty', prompt: 'forbidden topic' });
    assert.equal(completion.choices[0]!.finish_reason, 'content_filter');
  });
});

describe('configuration', () => {
  test('upstream_api on a provider that is not openai is a configuration error', async () => {
    await assert.rejects(
      startSluice({ config: `providers:\n  - { id: a, kind: anthropic, api_key: k }\nmodels:\n  - { id: m, provider: a, upstream_api: completions }\n` }),
      /models\[0\] \(id: m\): field 'upstream_api'/,
    );
  });
});
