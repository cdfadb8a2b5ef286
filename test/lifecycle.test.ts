import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { configFor, createKey, eventually, startSluice } from './support/sluice.js';

describe('serve', () => {
  test('healthz answers 200 and every response carries x-request-id', async () => {
    const sluice = await startSluice();
    try {
      const health = await fetch(`${sluice.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      assert.match(health.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      const missing = await fetch(`${sluice.url}/v1/models`);
      assert.ok(missing.headers.get('x-request-id'));
      const echoed = await fetch(`${sluice.url}/healthz`, { headers: { 'x-request-id': 'trace-123' } });
      assert.equal(echoed.headers.get('x-request-id'), 'trace-123');
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  test('SIGTERM lets a request in flight finish, writes its ledger row, and exits 0', async () => {
    const upstream = await startFakeOpenAI();
    const sluice = await startSluice({ config: configFor(upstream.url) });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    upstream.behaviour = { tokenDelayMs: 100 };
    const stream = await client.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 8, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const exited = sluice.stop('SIGTERM');
    let chunks = 1;
    while (!(await iterator.next()).done) chunks++;
    assert.equal(chunks, 8, 'the stream in flight completes');
    assert.equal(await exited, 0);
    const rows = (await sluice.ledger());
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status, 200);
    assert.equal(rows[0]!.completion_tokens, 8);
    await upstream.close();
  });

  test('a request still running when the drain timeout ends is cut, and its ledger row is still written', async () => {
    const upstream = await startFakeOpenAI();
    upstream.behaviour = { headerDelayMs: 10_000 };
    const sluice = await startSluice({ config: configFor(upstream.url), args: ['--drain-timeout', '300'] });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const pending = fetch(`${sluice.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-request-id': 'cut-at-drain' },
      body: JSON.stringify({ model: 'llama-8b', prompt: 'x' }),
    }).catch((error: unknown) => error);
    await eventually(() => (upstream.requests.length === 1 ? true : undefined), 3000, 'the request to reach the upstream');
    assert.equal(await sluice.stop('SIGTERM'), 0);
    await pending;
    const row = (await sluice.ledger()).find((r) => r.request_id === 'cut-at-drain');
    assert.ok(row, 'the cut request has its ledger row');
    assert.equal(row.status, 499);
    assert.ok(row.prompt_tokens > 0, 'the prompt the upstream received is billed');
    await upstream.close();
  });

  test('no key or upstream credential appears in the logs', async () => {
    const upstream = await startFakeOpenAI();
    upstream.behaviour = { fail: { status: 401, body: '{"error":"Unauthorized: upstream-secret-credential"}' } };
    const sluice = await startSluice({ config: configFor(upstream.url), env: { SLUICE_LOG_LEVEL: 'debug' } });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }));
    assert.equal(await sluice.stop(), 0);
    const logs = sluice.stderr();
    assert.match(logs, /upstream_auth_failed/, 'the failure is logged');
    assert.ok(!logs.includes(key));
    assert.ok(!logs.includes('upstream-secret-credential'));
    await upstream.close();
  });
});
