// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

// A megabyte without a space: the tokenizer's merge is quadratic in such a run, and took minutes
// of one worker's event loop on it (issue 24). These fail by their timeout when the loop is frozen.
const RUN = 'x'.repeat(1_000_000);

let upstream: FakeUpstream;
let sluice: RunningSluice;
let key: string;

before(async () => {
  upstream = await startFakeOpenAI();
  sluice = await startSluice({
    // One process, so the count and /healthz share one event loop.
    args: ['--workers', '1'],
    config: `
providers:
  - { id: vllm, kind: openai, base_url: '${upstream.url}', api_key: vllm-credential }
models:
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  // A frozen loop ignores SIGTERM; don't let that hang the test run.
  const exited = sluice.stop();
  const stuck = setTimeout(() => sluice.child.kill('SIGKILL'), 10_000);
  const code = await exited;
  clearTimeout(stuck);
  await upstream.close();
  assert.equal(code, 0, 'SIGTERM stopped the gateway');
});

/** POSTs JSON; `sent` resolves once the whole body is handed to the network, `answer` with the status and body. */
function post(path: string, headers: Record<string, string>, body: string) {
  let sent!: () => void;
  const whenSent = new Promise<void>((resolve) => (sent = resolve));
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(`${sluice.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body, sent);
  });
  return { sent: whenSent, answer };
}

describe('token counting on hostile text', () => {
  test('count_tokens of a megabyte without spaces answers, and /healthz is served while it counts', { timeout: 30_000 }, async () => {
    const order: string[] = [];
    const count = post(
      '/v1/messages/count_tokens',
      { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      JSON.stringify({ model: 'llama-chat', messages: [{ role: 'user', content: RUN }] }),
    );
    const counted = count.answer.then((answer) => (order.push('count'), answer));
    await count.sent;
    const health = await fetch(`${sluice.url}/healthz`);
    order.push('healthz');
    assert.equal(health.status, 200);

    const { status, body } = await counted;
    assert.equal(status, 200, body);
    const { input_tokens } = JSON.parse(body) as { input_tokens: number };
    // 'x' × 8 is one o200k token: 125,000 for the run, and a few for the message around it.
    assert.ok(input_tokens >= 125_000 && input_tokens < 125_100, `input_tokens ${input_tokens}`);
    assert.deepEqual(order, ['healthz', 'count'], '/healthz answered before the count');
    assert.equal(upstream.requests.length, 0, "Sluice's own count; nothing reached the upstream");
  });

  test('a client that leaves a stream of such text is billed for it, and the next request is served', { timeout: 30_000 }, async () => {
    // The fake's chat answer starts with `[prompt]`: the text generated so far is the run too.
    upstream.behaviour = { tokenDelayMs: 5_000 };
    const left = await new Promise<http.ClientRequest>((resolve, reject) => {
      const req = http.request(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
        let seen = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          seen += chunk;
          if (seen.includes('x'.repeat(10_000))) resolve(req);
        });
      });
      req.on('error', () => undefined);
      req.once('error', reject);
      req.end(JSON.stringify({ model: 'llama-chat', stream: true, messages: [{ role: 'user', content: RUN }] }));
    });
    left.destroy();

    const health = await fetch(`${sluice.url}/healthz`);
    assert.equal(health.status, 200);
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.status === 499), 20_000, 'the left stream’s ledger row');
    assert.equal(row.tokens_counted, 1);
    assert.ok(row.prompt_tokens >= 125_000 && row.prompt_tokens < 125_100, `prompt_tokens ${row.prompt_tokens}`);
    assert.ok(row.completion_tokens >= 125_000, `completion_tokens ${row.completion_tokens}: the text generated so far`);
  });
});
