// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI, WORDS, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { cli, configFor, createKey, eventually, startSluice, type CreatedKey, type RunningSluice } from './support/sluice.js';

let upstream: FakeUpstream;
let sluice: RunningSluice;
let key: CreatedKey;
let client: OpenAI;

async function post(path: string, body: string | object, headers: Record<string, string> = {}) {
  const response = await fetch(sluice.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

before(async () => {
  upstream = await startFakeOpenAI({ apiKey: 'upstream-secret-credential' });
  sluice = await startSluice({ config: configFor(upstream.url) });
  key = await createKey(sluice.dataDir, 'acme');
  // The SDK retries 429 and 5xx by default; these tests look at single answers.
  client = new OpenAI({ apiKey: key.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstream.close();
});

beforeEach(() => {
  upstream.behaviour = {};
  upstream.requests.length = 0;
});

describe('relaying to an OpenAI-compatible upstream', () => {
  test('a completion through the official SDK comes back under the public model id', async () => {
    const completion = await client.completions.create({ model: 'llama-8b', prompt: 'Say something', max_tokens: 4 });
    assert.equal(completion.object, 'text_completion');
    assert.equal(completion.model, 'llama-8b');
    assert.equal(completion.choices.length, 1);
    assert.equal(completion.choices[0]!.text, WORDS.slice(0, 4).join(''));
    assert.equal(completion.choices[0]!.finish_reason, 'length');
    assert.equal(completion.choices[0]!.index, 0);
    assert.deepEqual(completion.usage, { prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
    assert.match(completion.id, /^cmpl-/);
  });

  test('model is rewritten upstream, unknown fields pass untouched, credentials are swapped', async () => {
    await client.completions.create({
      model: 'llama-8b',
      prompt: ['a', 'b'],
      max_tokens: 2,
      // vLLM-only sampling fields the gateway does not know.
      ...({ top_k: 5, repetition_penalty: 1.1, stop_token_ids: [7] } as object),
    });
    const sent = upstream.requests[0]!;
    assert.equal(sent.path, '/v1/completions');
    assert.equal(sent.body.model, 'upstream-model');
    assert.deepEqual(sent.body.prompt, ['a', 'b']);
    assert.equal(sent.body.top_k, 5);
    assert.equal(sent.body.repetition_penalty, 1.1);
    assert.deepEqual(sent.body.stop_token_ids, [7]);
    assert.equal(sent.headers.authorization, 'Bearer upstream-secret-credential');
    assert.ok(!JSON.stringify(sent.headers).includes(key.key), 'the client key must never go upstream');
    assert.match(String(sent.headers['x-request-id']), /.+/);
  });

  test('several prompts and n keep the upstream indexes, prompt-major', async () => {
    const completion = await client.completions.create({ model: 'llama-8b', prompt: ['one', 'two'], n: 2, max_tokens: 1 });
    assert.deepEqual(
      completion.choices.map((c) => c.index),
      [0, 1, 2, 3],
    );
  });

  test('echo, logprobs and stop are honoured by the upstream and relayed whole', async () => {
    const completion = await client.completions.create({ model: 'llama-8b', prompt: 'Hi', echo: true, logprobs: 1, stop: [' fox'] });
    const choice = completion.choices[0]!;
    assert.equal(choice.text, 'Hi The quick brown');
    assert.equal(choice.finish_reason, 'stop');
    assert.deepEqual(choice.logprobs?.tokens, [' The', ' quick', ' brown']);
    assert.deepEqual(choice.logprobs?.text_offset, [0, 4, 10]);
    assert.equal((choice as any).stop_reason, ' fox', 'vLLM extras on the choice are kept');
  });

  test('token-id prompts, as evaluation harnesses send them, are accepted', async () => {
    const completion = await client.completions.create({ model: 'llama-8b', prompt: [[1, 2, 3]], max_tokens: 1, echo: true, logprobs: 1, temperature: 0, seed: 1234 });
    assert.equal(completion.usage?.prompt_tokens, 3);
    assert.deepEqual(upstream.requests[0]!.body.prompt, [[1, 2, 3]]);
  });

  test('a stream arrives chunk by chunk, ends with [DONE], and asks the upstream for usage', async () => {
    const stream = await client.completions.create({ model: 'llama-8b', prompt: 'Go', max_tokens: 5, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks.length, 5, 'one chunk per token, no usage chunk when not asked');
    assert.ok(chunks.every((c) => c.model === 'llama-8b' && c.object === 'text_completion'));
    assert.ok(chunks.every((c) => !('usage' in c)), 'no usage key unless include_usage');
    assert.equal(chunks.map((c) => c.choices[0]!.text).join(''), WORDS.slice(0, 5).join(''));
    assert.deepEqual(
      chunks.map((c) => c.choices[0]!.finish_reason),
      [null, null, null, null, 'length'],
    );
    assert.deepEqual(upstream.requests[0]!.body.stream_options, { include_usage: true });
    assert.equal(upstream.requests[0]!.body.model, 'upstream-model');
  });

  test('with include_usage the client gets usage: null on every chunk and a final usage chunk', async () => {
    const stream = await client.completions.create({
      model: 'llama-8b',
      prompt: 'Go',
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
  });

  test('finished streams hand their upstream connection back to the pool', async () => {
    const before = upstream.connections;
    for (let i = 0; i < 6; i++) {
      const stream = await client.completions.create({ model: 'llama-8b', prompt: 'Go', max_tokens: 2, stream: true });
      for await (const _ of stream) void _;
    }
    // One kept-alive connection per worker process at most.
    assert.ok(upstream.connections - before <= 2, `${upstream.connections - before} new upstream connections for 6 streams`);
  });

  test('raw stream framing is data-only SSE ending in data: [DONE]', async () => {
    const response = await fetch(`${sluice.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama-8b', prompt: 'x', max_tokens: 2, stream: true }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await response.text();
    const events = text.split('\n\n').filter(Boolean);
    assert.ok(events.every((e) => e.startsWith('data: ')));
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.equal(events.length, 3);
  });

  test('an upstream error mid-stream reaches the SDK as an error', async () => {
    upstream.behaviour = { errorAfterChunks: 2 };
    const stream = await client.completions.create({ model: 'llama-8b', prompt: 'Go', max_tokens: 8, stream: true });
    const texts: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const chunk of stream) texts.push(chunk.choices[0]?.text ?? '');
      })(),
      (error: any) => error instanceof OpenAI.APIError && /mid-stream/.test(error.message),
    );
    assert.equal(texts.length, 2);
  });

  test('when the upstream omits usage, Sluice counts tokens itself and marks the row', async () => {
    upstream.behaviour = { omitUsage: true };
    const completion = await client.completions.create({ model: 'llama-8b', prompt: 'Hello there', max_tokens: 3 });
    assert.ok(completion.usage!.prompt_tokens > 0);
    assert.ok(completion.usage!.completion_tokens > 0);
    const requestId = (completion as { _request_id?: string | null })._request_id;
    assert.ok(requestId, 'x-request-id reaches the SDK');
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.request_id === requestId), 3000, 'counted row');
    assert.equal(row.tokens_counted, 1);
    assert.equal(row.model, 'llama-8b');
    assert.equal(row.completion_tokens, completion.usage!.completion_tokens);
  });
});

describe('validation: malformed requests get 400 naming the parameter and never go upstream', () => {
  const cases: [string, string | object, string | null][] = [
    ['not JSON', '{"model": ', null],
    ['empty body', '', null],
    ['an array body', '[1,2]', null],
    ['missing model', { prompt: 'x' }, 'model'],
    ['missing prompt', { model: 'llama-8b' }, 'prompt'],
    ['missing prompt with n', { model: 'llama-8b', n: 2 }, 'prompt'],
    ['prompt of wrong type', { model: 'llama-8b', prompt: 5 }, 'prompt'],
    ['empty prompt array', { model: 'llama-8b', prompt: [] }, 'prompt'],
    ['max_tokens as a string', { model: 'llama-8b', prompt: 'x', max_tokens: '5' }, 'max_tokens'],
    ['max_tokens negative', { model: 'llama-8b', prompt: 'x', max_tokens: -1 }, 'max_tokens'],
    ['logprobs as a boolean', { model: 'llama-8b', prompt: 'x', logprobs: true }, 'logprobs'],
    ['logprobs above 5', { model: 'llama-8b', prompt: 'x', logprobs: 6 }, 'logprobs'],
    ['temperature above 2', { model: 'llama-8b', prompt: 'x', temperature: 2.5 }, 'temperature'],
    ['top_p above 1', { model: 'llama-8b', prompt: 'x', top_p: 1.5 }, 'top_p'],
    ['n of 0', { model: 'llama-8b', prompt: 'x', n: 0 }, 'n'],
    ['n above 128', { model: 'llama-8b', prompt: 'x', n: 129 }, 'n'],
    ['stop of wrong type', { model: 'llama-8b', prompt: 'x', stop: 3 }, 'stop'],
    ['presence_penalty below -2', { model: 'llama-8b', prompt: 'x', presence_penalty: -3 }, 'presence_penalty'],
    ['logit_bias with a non-token key', { model: 'llama-8b', prompt: 'x', logit_bias: { abc: 1 } }, 'logit_bias.abc'],
    ['logit_bias value out of range', { model: 'llama-8b', prompt: 'x', logit_bias: { '50256': -101 } }, 'logit_bias.50256'],
    ['best_of below n', { model: 'llama-8b', prompt: 'x', n: 3, best_of: 2 }, 'best_of'],
    ['streaming with best_of', { model: 'llama-8b', prompt: 'x', stream: true, best_of: 2 }, 'best_of'],
    ['stream_options without stream', { model: 'llama-8b', prompt: 'x', stream_options: { include_usage: true } }, 'stream_options'],
    ['echo of wrong type', { model: 'llama-8b', prompt: 'x', echo: 'yes' }, 'echo'],
    ['seed as a decimal', { model: 'llama-8b', prompt: 'x', seed: 1.5 }, 'seed'],
  ];
  for (const [name, body, param] of cases) {
    test(name, async () => {
      const response = await post('/v1/completions', body);
      assert.equal(response.status, 400);
      assert.deepEqual(Object.keys(response.body.error).sort(), ['code', 'message', 'param', 'type']);
      assert.equal(response.body.error.type, 'invalid_request_error');
      assert.equal(response.body.error.param, param);
      if (param !== null) assert.ok(response.body.error.message.includes(param.split('.')[0]!), response.body.error.message);
      if (name.startsWith('missing')) assert.equal(response.body.error.code, 'missing_required_parameter');
      assert.equal(upstream.requests.length, 0);
    });
  }

  test('the SDK raises BadRequestError', async () => {
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x', temperature: 3 }), OpenAI.BadRequestError);
  });
});

describe('keys, models and permissions', () => {
  test('missing and invalid keys are 401 invalid_api_key', async () => {
    const missing = await fetch(`${sluice.url}/v1/completions`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 401);
    assert.equal(((await missing.json()) as any).error.code, 'invalid_api_key');
    const bad = new OpenAI({ apiKey: 'sk-not-a-real-key', baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await assert.rejects(bad.completions.create({ model: 'llama-8b', prompt: 'x' }), (e: any) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key');
    assert.equal(upstream.requests.length, 0);
  });

  test('an unknown model is 404 model_not_found', async () => {
    await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }), (e: any) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.param === 'model');
  });

  test('a model the key may not use is 403', async () => {
    const restricted = await createKey(sluice.dataDir, 'acme', ['--models', 'other-model']);
    const limited = new OpenAI({ apiKey: restricted.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await assert.rejects(limited.completions.create({ model: 'llama-8b', prompt: 'x' }), OpenAI.PermissionDeniedError);
    const ok = await limited.completions.create({ model: 'other-model', prompt: 'x', max_tokens: 1 });
    assert.equal(ok.model, 'other-model');
  });

  test('a model that does not serve completions is 400 saying what it serves', async () => {
    const response = await post('/v1/completions', { model: 'chat-only', prompt: 'x' });
    assert.equal(response.status, 400);
    assert.equal(response.body.error.code, 'unsupported_endpoint');
    assert.match(response.body.error.message, /\/v1\/chat\/completions/);
  });

  test('a key disabled while the server runs is refused within a second, and accepted again when enabled', async () => {
    const temporary = await createKey(sluice.dataDir, 'acme', ['--name', 'temporary']);
    const tempClient = new OpenAI({ apiKey: temporary.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await tempClient.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 });
    assert.equal((await cli(['keys', 'disable', temporary.id, '--data', sluice.dataDir])).code, 0);
    const disabledAt = Date.now();
    await eventually(
      async () => {
        try {
          await tempClient.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 });
          return undefined;
        } catch (error) {
          return error instanceof OpenAI.PermissionDeniedError ? true : undefined;
        }
      },
      1000,
      'the disabled key to be refused',
    );
    assert.ok(Date.now() - disabledAt <= 1000);
    assert.equal((await cli(['keys', 'enable', temporary.id, '--data', sluice.dataDir])).code, 0);
    await eventually(async () => ((await tempClient.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 }).catch(() => undefined)) ? true : undefined), 1000, 'enabled again');
    assert.equal((await cli(['keys', 'revoke', temporary.id, '--data', sluice.dataDir])).code, 0);
    await eventually(async () => ((await tempClient.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 }).catch((e) => e)) instanceof OpenAI.PermissionDeniedError ? true : undefined), 1000, 'revoked');
  });

  test('an expired key is refused with 403', async () => {
    // Long enough for `keys create` to start on a busy machine (the suite runs files in parallel).
    const expiresAt = Date.now() + 4000;
    const expiring = await createKey(sluice.dataDir, 'acme', ['--expires', new Date(expiresAt).toISOString()]);
    const c = new OpenAI({ apiKey: expiring.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await c.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 });
    // Only the rest of the key's life: making it and the first request took part of it.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt + 100 - Date.now())));
    await assert.rejects(c.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 1 }), (e: any) => e instanceof OpenAI.PermissionDeniedError && e.code === 'key_expired');
  });
});

describe('upstream failures map to clear errors', () => {
  test('an upstream 4xx passes through with its status and message', async () => {
    const response = await post('/v1/completions', { model: 'llama-8b', prompt: 'x', suffix: 'tail' });
    assert.equal(response.status, 400);
    assert.equal(response.body.error.message, 'suffix is not currently supported');
    assert.equal(response.body.error.type, 'BadRequestError');
  });

  test('upstream 401 (our own credential is wrong) becomes 502 without revealing it', async () => {
    upstream.behaviour = { fail: { status: 401, body: '{"error":{"message":"Incorrect API key provided: upstream-secret-credential","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}' } };
    const response = await post('/v1/completions', { model: 'llama-8b', prompt: 'x' });
    assert.equal(response.status, 502);
    assert.equal(response.body.error.code, 'upstream_auth_failed');
    assert.ok(!JSON.stringify(response.body).includes('upstream-secret-credential'));
  });

  test('upstream 403 also becomes 502', async () => {
    upstream.behaviour = { fail: { status: 403, body: '{"error":"Forbidden"}' } };
    assert.equal((await post('/v1/completions', { model: 'llama-8b', prompt: 'x' })).status, 502);
  });

  test('upstream 429 keeps Retry-After', async () => {
    upstream.behaviour = { fail: { status: 429, body: '{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}', headers: { 'retry-after': '7' } } };
    const response = await post('/v1/completions', { model: 'llama-8b', prompt: 'x' });
    assert.equal(response.status, 429);
    assert.equal(response.headers.get('retry-after'), '7');
    assert.equal(response.body.error.code, 'rate_limit_exceeded');
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }), OpenAI.RateLimitError);
  });

  test('upstream 5xx is 502', async () => {
    upstream.behaviour = { fail: { status: 500, body: '{"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}' } };
    const response = await post('/v1/completions', { model: 'llama-8b', prompt: 'x' });
    assert.equal(response.status, 502);
    assert.equal(response.body.error.type, 'server_error');
  });

  test('an unreadable upstream answer is 502', async () => {
    upstream.behaviour = { garbage: true };
    const response = await post('/v1/completions', { model: 'llama-8b', prompt: 'x' });
    assert.equal(response.status, 502);
  });

  test('an upstream failure before the stream starts is an HTTP error, not a stream', async () => {
    upstream.behaviour = { fail: { status: 500, body: '{}' } };
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x', stream: true }), OpenAI.InternalServerError);
  });
});

describe('timeouts, unreachable upstreams and disconnects', () => {
  let slow: RunningSluice;
  let slowKey: CreatedKey;
  before(async () => {
    slow = await startSluice({
      config: `
providers:
  - id: slow
    kind: openai
    base_url: ${upstream.url}
    api_key: upstream-secret-credential
    response_timeout_ms: 300
  - id: dead
    kind: openai
    base_url: http://127.0.0.1:1/v1
models:
  - { id: slow-model, provider: slow, upstream_model: upstream-model }
  - { id: dead-model, provider: dead }
`,
    });
    slowKey = await createKey(slow.dataDir, 'acme');
  });
  after(async () => {
    assert.equal(await slow.stop(), 0);
  });

  test('no upstream answer in time is 504', async () => {
    upstream.behaviour = { headerDelayMs: 1500 };
    const response = await fetch(`${slow.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${slowKey.key}` },
      body: JSON.stringify({ model: 'slow-model', prompt: 'x' }),
    });
    assert.equal(response.status, 504);
    assert.equal(((await response.json()) as any).error.code, 'upstream_timeout');
  });

  test('connection refused is 502', async () => {
    const response = await fetch(`${slow.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${slowKey.key}` },
      body: JSON.stringify({ model: 'dead-model', prompt: 'x' }),
    });
    assert.equal(response.status, 502);
    assert.equal(((await response.json()) as any).error.code, 'upstream_unreachable');
  });

  test('a client that goes away mid-stream cancels the upstream request within a second', async () => {
    upstream.behaviour = { tokenDelayMs: 200 };
    const url = new URL(`${sluice.url}/v1/completions`);
    const gotFirstChunk = new Promise<http.ClientRequest>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => resolve(req));
      });
      req.on('error', () => undefined);
      req.once('error', reject);
      req.end(JSON.stringify({ model: 'llama-8b', prompt: 'x', max_tokens: 10, stream: true }));
    });
    const req = await gotFirstChunk;
    const upstreamRequest = upstream.requests.at(-1)!;
    const closedAt = Date.now();
    req.destroy();
    await eventually(() => (upstream.aborted.includes(upstreamRequest) ? true : undefined), 1000, 'the upstream request to be cancelled');
    assert.ok(Date.now() - closedAt < 1000);
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.status === 499), 2000, 'a client-closed ledger row');
    assert.equal(row.error_kind, 'client_closed');
    assert.ok(row.prompt_tokens > 0 && row.completion_tokens > 0, 'what was generated before the hang-up is billed');
    assert.equal(row.tokens_counted, 1);
  });
});

describe('usage ledger', () => {
  test('one row per request, streamed or not, with tokens, cost and timings', async () => {
    const ledgerKey = await createKey(sluice.dataDir, 'ledger-account', ['--name', 'ledger']);
    const c = new OpenAI({ apiKey: ledgerKey.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const { data: whole, request_id: wholeId } = await c.completions.create({ model: 'llama-8b', prompt: 'one two three', max_tokens: 4 }).withResponse();
    const { data: stream, request_id: streamId } = await c.completions.create({ model: 'llama-8b', prompt: 'one two', max_tokens: 2, stream: true }).withResponse();
    for await (const _ of stream) void _;
    const failure = await c.completions.create({ model: 'nope', prompt: 'x' }).catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    assert.ok(failure instanceof OpenAI.NotFoundError);
    // Rows are matched by request id: with several workers they are written in flush order.
    const rows = await eventually(async () => {
      const byId = new Map((await sluice.ledger()).filter((r) => r.key_id === ledgerKey.id).map((r) => [r.request_id, r]));
      const found = [wholeId, streamId, failure.requestID].map((id) => byId.get(id!));
      return byId.size === 3 && found.every(Boolean) ? found : undefined;
    }, 3000, 'three ledger rows');
    const [first, second, third] = rows as [any, any, any];
    assert.equal(first.stream, 0);
    assert.equal(first.status, 200);
    assert.equal(first.prompt_tokens, whole.usage!.prompt_tokens);
    assert.equal(first.completion_tokens, 4);
    assert.equal(first.provider_id, 'fake-vllm');
    assert.equal(first.tokens_counted, 0);
    assert.ok(Math.abs(first.cost_usd - (3 * 0.2 + 4 * 0.6) / 1e6) < 1e-12);
    assert.ok(first.latency_ms > 0 && first.ttfb_ms > 0);
    assert.equal(second.stream, 1);
    assert.equal(second.prompt_tokens, 2, 'stream usage comes from the usage chunk Sluice asked for');
    assert.equal(second.completion_tokens, 2);
    assert.equal(third.status, 404);
    assert.equal(third.error_kind, 'model_not_found');
    assert.equal(third.model, 'nope');
  });
});
