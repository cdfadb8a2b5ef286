/**
 * Per-key and per-account limits on one gateway (SQLite, this machine's counters), seen by the
 * official SDKs: refusals in each caller's dialect, the `x-ratelimit-*` headers, reservations
 * settled to real usage, budgets seeded from the ledger across a restart, the CLI that sets them,
 * and a gateway's workers sharing one count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { cli, createKey, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let dataDir: string;

const config = (providers: string) => `${providers}
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions], max_output_tokens: 1000, pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: gemini, provider: google, upstream_model: gemini-test, endpoints: [chat], pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: llama-out, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 10000 } }
`;

before(async () => {
  upstreams = await startThreeUpstreams();
  dataDir = tempDir();
  sluice = await startSluice({ config: config(upstreams.providersYaml), dataDir });
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await upstreams.close();
});

const openai = (key: string, url = sluice.url) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
const chat = (key: string, maxTokens = 5, url = sluice.url, model = 'llama') =>
  openai(key, url)
    .chat.completions.create({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: maxTokens })
    .withResponse()
    .then(({ data, response }) => ({ data, headers: response.headers }));

async function refusalOf(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('the request was admitted');
}

describe('the CLI', () => {
  test('sets, shows, changes and clears limits on keys and accounts', async () => {
    const created = await cli(['keys', 'create', '--account', 'cli-co', '--json', '--data', dataDir, '--rpm', '10', '--budget-usd', '2.5', '--budget-period', 'week']);
    assert.equal(created.code, 0, created.stderr);
    const key = JSON.parse(created.stdout) as { id: string; limits: unknown };
    assert.deepEqual(key.limits, { rpm: 10, budgetUsd: 2.5, budgetPeriod: 'week' }, 'stored as given');

    const changed = await cli(['keys', 'limits', key.id, '--tpm', '5000', '--rpm', 'none', '--json', '--data', dataDir]);
    assert.equal(changed.code, 0, changed.stderr);
    assert.deepEqual((JSON.parse(changed.stdout) as { limits: unknown }).limits, { tpm: 5000, budgetUsd: 2.5, budgetPeriod: 'week' }, 'only the flags given change');

    const account = await cli(['accounts', 'limits', 'cli-co', '--concurrency', '3', '--data', dataDir]);
    assert.equal(account.code, 0, account.stderr);
    assert.match(account.stdout, /Account cli-co: concurrency 3\./);
    const listed = await cli(['keys', 'list', '--json', '--data', dataDir]);
    const row = (JSON.parse(listed.stdout) as { id: string; account_limits: unknown }[]).find((k) => k.id === key.id);
    assert.deepEqual(row?.account_limits, { concurrency: 3 }, "a key shows its account's limits");

    const bad = await cli(['keys', 'limits', key.id, '--budget-usd', 'none', '--budget-period', 'day', '--data', dataDir]);
    assert.notEqual(bad.code, 0, 'a period without a budget is refused');
    assert.match(bad.stderr, /--budget-period needs --budget-usd/);
    const zero = await cli(['keys', 'limits', key.id, '--rpm', '0', '--data', dataDir]);
    assert.notEqual(zero.code, 0, 'rpm 0 is refused (none removes a limit)');
    const unknown = await cli(['accounts', 'limits', 'nobody-here', '--rpm', '5', '--data', dataDir]);
    assert.notEqual(unknown.code, 0, 'an unknown account is refused');
    assert.match(unknown.stderr, /No account is named 'nobody-here'/);
  });
});

describe('rate limits', () => {
  test('rpm: the limit admits exactly that many, with the x-ratelimit headers, then 429 with Retry-After', async () => {
    const { key } = await createKey(dataDir, 'rpm-co', ['--rpm', '3']);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { headers } = await chat(key);
      assert.equal(headers.get('x-ratelimit-limit-requests'), '3', 'the limit is announced');
      remaining.push(headers.get('x-ratelimit-remaining-requests')!);
      assert.match(headers.get('x-ratelimit-reset-requests') ?? '', /^\d+(\.\d+)?(ms|s)$|^\d+m\d+(\.\d+)?s$/, 'reset in OpenAI\'s duration form');
    }
    assert.deepEqual(remaining, ['2', '1', '0'], 'remaining counts down');
    const refused = await refusalOf(chat(key));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'rate_limit_exceeded', "OpenAI's code");
    assert.equal(refused.type, 'requests', "OpenAI's type for a request limit");
    const retryAfter = Number(refused.headers?.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After in seconds within the minute, got ${retryAfter}`);
    assert.equal(refused.headers?.get('x-ratelimit-remaining-requests'), '0', 'the refusal carries the headers too');

    const unlimited = await createKey(dataDir, 'free-co');
    const { headers } = await chat(unlimited.key);
    assert.equal(headers.get('x-ratelimit-limit-requests'), null, 'an unlimited key gets no rate-limit headers');
  });

  test('an account limit is shared by its keys, whatever the key', async () => {
    const first = await createKey(dataDir, 'shared-co');
    const second = await createKey(dataDir, 'shared-co');
    assert.equal((await cli(['accounts', 'limits', 'shared-co', '--rpm', '2', '--data', dataDir])).code, 0);
    // The change reaches the gateway's key cache through the store's change counter.
    await new Promise((r) => setTimeout(r, 400));
    await chat(first.key);
    const { headers } = await chat(second.key);
    assert.equal(headers.get('x-ratelimit-remaining-requests'), '0', "the second key used the account's last request");
    const refused = await refusalOf(chat(first.key));
    assert.equal(refused.status, 429);
    assert.match(refused.message, /account/, 'the message says the account is limited');
  });

  test('tpm: the prompt plus the output cap is reserved, then settled to what was used', async () => {
    const { key } = await createKey(dataDir, 'tpm-co', ['--tpm', '600']);
    const first = await chat(key, 200);
    const afterFirst = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '600');
    assert.ok(afterFirst <= 600 - 200 && afterFirst > 300, `the reservation (prompt + 200) is counted, got ${afterFirst} remaining`);
    const used = first.data.usage!.total_tokens;
    assert.ok(used <= 210, 'the fake used about max_tokens');
    // The first request's reservation has been replaced by its real usage before the second is admitted.
    const second = await chat(key, 10);
    const afterSecond = Number(second.headers.get('x-ratelimit-remaining-tokens'));
    assert.ok(afterSecond < afterFirst - 10 + 200, 'the second reservation is counted');
    const huge = await refusalOf(chat(key, 700));
    assert.equal(huge.status, 429);
    assert.equal(huge.type, 'tokens', "OpenAI's type for a token limit");
    assert.match(huge.message, /lower max_tokens/, 'a request larger than the limit is told why no retry helps');
    assert.equal(huge.headers?.get('retry-after'), null, 'and given no Retry-After');
  });

  test('concurrency: a slot is held while a request runs and released however it ends', async () => {
    const { key } = await createKey(dataDir, 'conc-co', ['--concurrency', '1']);
    upstreams.vllm.behaviour = { headerDelayMs: 600 };
    try {
      const running = chat(key);
      await new Promise((r) => setTimeout(r, 150));
      const refused = await refusalOf(chat(key));
      assert.equal(refused.status, 429, 'a second request in flight is refused');
      assert.ok(Number(refused.headers?.get('retry-after')) >= 1, 'with a Retry-After');
      await running;
      // A caller who goes away releases the slot too.
      const controller = new AbortController();
      const abandoned = openai(key).chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, { signal: controller.signal });
      await new Promise((r) => setTimeout(r, 150));
      controller.abort();
      await assert.rejects(abandoned);
    } finally {
      upstreams.vllm.behaviour = {};
    }
    await new Promise((r) => setTimeout(r, 100));
    const { data } = await chat(key);
    assert.ok(data.choices.length === 1, 'the slot is free again after an answer and an abandoned request');
  });
});

describe('spend budgets', () => {
  test('a concurrent burst ends within one request of the budget; every dialect is refused with its quota error; a restart keeps the spend', async () => {
    const { key, id } = await createKey(dataDir, 'budget-co', ['--budget-usd', '0.5', '--budget-period', 'day']);
    // Output only is priced, $0.01 a token, and the fake writes max_tokens of them: $0.05 reserved and spent per request.
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => chat(key, 5, sluice.url, 'llama-out')));
    const admitted = results.filter((r) => r.status === 'fulfilled').length;
    assert.ok(admitted >= 5 && admitted < 30, `some admitted, the rest refused (admitted ${admitted})`);
    const refusal = results.find((r) => r.status === 'rejected')!.reason as InstanceType<typeof OpenAI.APIError>;
    assert.equal(refusal.status, 429);
    assert.equal(refusal.code, 'insufficient_quota', "OpenAI's quota code");
    assert.equal(refusal.type, 'insufficient_quota');

    const rows = (await eventuallyRows(id, admitted)).filter((row) => row.status === 200);
    const spent = rows.reduce((sum, row) => sum + row.cost_usd, 0);
    const largest = Math.max(...rows.map((row) => row.cost_usd));
    assert.ok(spent >= 0.5 - largest && spent <= 0.5 + largest, `spend ${spent} within one request (${largest}) of the $0.50 budget`);

    await assert.rejects(
      new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 }).messages.create({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      (error: unknown) => error instanceof Anthropic.RateLimitError && (error.error as { error: { type: string } }).error.type === 'rate_limit_error',
      "Anthropic's caller gets its 429 rate_limit_error",
    );
    await assert.rejects(
      new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } }).models.generateContent({ model: 'gemini', contents: 'hi' }),
      (error: unknown) => (error as { status?: number }).status === 429 && /RESOURCE_EXHAUSTED/.test(String((error as Error).message)),
      "Gemini's caller gets its 429 RESOURCE_EXHAUSTED",
    );

    // A new process starts its counters from the ledger: the budget is still spent.
    await sluice.stop();
    sluice = await startSluice({ config: config(upstreams.providersYaml), dataDir });
    const again = await refusalOf(chat(key, 40));
    assert.equal(again.code, 'insufficient_quota', 'still refused after a restart');
    assert.ok(Number(again.headers?.get('retry-after')) > 0, 'Retry-After: when the day ends');
  });
});

describe('several workers without Redis', () => {
  test('share one count through their primary', async () => {
    const workersDir = tempDir();
    const workers = await startSluice({ config: config(upstreams.providersYaml), dataDir: workersDir, args: ['--workers', '2'] });
    try {
      const { key } = await createKey(workersDir, 'workers-co', ['--rpm', '10']);
      const results = await Promise.allSettled(Array.from({ length: 40 }, () => chat(key, 5, workers.url)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 10, 'exactly rpm admitted across the workers');
    } finally {
      assert.equal(await workers.stop(), 0, 'the workers stop cleanly');
    }
  });
});

async function eventuallyRows(keyId: string, atLeast: number) {
  for (let i = 0; i < 100; i++) {
    const rows = (await sluice.ledger()).filter((row) => row.key_id === keyId);
    if (rows.filter((row) => row.status === 200).length >= atLeast) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the ledger rows did not arrive');
}
