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
import { cli, createKey, eventually, startSluice, tempDir, type LedgerRow, type RunningSluice } from './support/sluice.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let dataDir: string;

const config = (providers: string) => `${providers}
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions], max_output_tokens: 1000, pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: gemini, provider: google, upstream_model: gemini-test, endpoints: [chat], pricing: { input_per_mtok: 1000, output_per_mtok: 1000 } }
  - { id: llama-out, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 10000 } }
  - { id: priced, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 5 } }
`;
const METRICS_TOKEN = 'limits-metrics-token';
const start = () => startSluice({ config: config(upstreams.providersYaml), dataDir, args: ['--metrics-token', METRICS_TOKEN] });

before(async () => {
  upstreams = await startThreeUpstreams();
  dataDir = tempDir();
  sluice = await start();
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
    // A request holds its slot once the upstream has it (admitted, and held there by the delay).
    const reachedUpstream = (before: number, what: string) => eventually(() => (upstreams.vllm.requests.length > before ? true : undefined), 5000, what);
    try {
      const first = upstreams.vllm.requests.length;
      const running = chat(key);
      await reachedUpstream(first, 'the first request to reach the upstream');
      const refused = await refusalOf(chat(key));
      assert.equal(refused.status, 429, 'a second request in flight is refused');
      assert.ok(Number(refused.headers?.get('retry-after')) >= 1, 'with a Retry-After');
      await running;
      // A caller who goes away releases the slot too.
      const controller = new AbortController();
      const sent = upstreams.vllm.requests.length;
      const abandoned = openai(key).chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }, { signal: controller.signal });
      await reachedUpstream(sent, 'the abandoned request to reach the upstream');
      controller.abort();
      await assert.rejects(abandoned);
    } finally {
      upstreams.vllm.behaviour = {};
    }
    // The gateway gives the slot back once it has seen the caller go, which takes no fixed time on a busy machine.
    const { data } = await eventually(() => chat(key).catch((error: unknown) => (error instanceof OpenAI.RateLimitError ? undefined : Promise.reject(error))), 5000, 'the slot to be free again');
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
    sluice = await start();
    const again = await refusalOf(chat(key, 40));
    assert.equal(again.code, 'insufficient_quota', 'still refused after a restart');
    assert.ok(Number(again.headers?.get('retry-after')) > 0, 'Retry-After: when the day ends');
  });
});

describe('a request larger than what is left of a budget', () => {
  test('refused before the upstream when it would pass the budget by more than an ordinary request; an ordinary one goes through at $0', async () => {
    const { key, id } = await createKey(dataDir, 'overshoot-co', ['--budget-usd', '0.05', '--budget-period', 'day']);
    const refusalsBefore = await budgetRefusals();
    const upstreamBefore = upstreams.vllm.requests.length;
    // Output at $5 per million tokens: 128 answers of up to 1,000 tokens reserve $0.64, 12.8 times the budget.
    const refused = await refusalOf(openai(key).chat.completions.create({ model: 'priced', n: 128, max_tokens: 1000, messages: [{ role: 'user', content: 'hello there' }] }));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'insufficient_quota', "a budget refusal, OpenAI's quota code");
    assert.match(refused.message, /reserves \$0\.635 more than an ordinary request .*whole spend budget \(\$0\.05\).*fewer choices/, 'the message says why and what to change');
    assert.equal(refused.headers?.get('retry-after'), null, 'no renewal of the budget would admit it');
    assert.equal(upstreams.vllm.requests.length, upstreamBefore, 'nothing reached the upstream');
    assert.equal(await budgetRefusals(), refusalsBefore + 1, 'counted in sluice_limit_refusals_total');

    const { data } = await chat(key, 1000, sluice.url, 'priced');
    assert.equal(data.choices.length, 1, 'an ordinary request (one answer, max_tokens 1000) is admitted at $0');

    const rows = await eventually(async () => {
      const mine = (await sluice.ledger()).filter((row) => row.key_id === id);
      return mine.length === 2 ? mine : undefined;
    }, 5000, 'two ledger rows');
    const refusalRow = rows.find((row) => row.status === 429)!;
    assert.deepEqual([refusalRow.error_kind, refusalRow.model, refusalRow.cost_usd, refusalRow.attempts], ['budget_exhausted', 'priced', 0, 0], 'the refusal leaves its row, as other refusals do');
    assert.ok(rows.some((row) => row.status === 200 && row.cost_usd > 0), 'the ordinary request is billed');
  });
});

describe('token counts', () => {
  const countWith = (key: string, model = 'claude') =>
    new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 }).messages.countTokens({ model, messages: [{ role: 'user', content: 'How many tokens is this?' }] });
  const geminiCount = (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } }).models.countTokens({ model: 'gemini', contents: 'Count these four words' });
  const isAnthropic429 = (error: unknown) => error instanceof Anthropic.RateLimitError && (error.error as { error: { type: string } }).error.type === 'rate_limit_error';
  const isGemini429 = (error: unknown) => (error as { status?: number }).status === 429 && /RESOURCE_EXHAUSTED/.test(String((error as Error).message));

  test('rpm: Anthropic count_tokens and Gemini countTokens are admitted like any request; the refused never reach the upstream', async () => {
    const anthropicKey = await createKey(dataDir, 'count-rpm-co', ['--rpm', '2']);
    const anthropicBefore = upstreams.anthropic.requests.length;
    for (let i = 0; i < 2; i++) assert.ok((await countWith(anthropicKey.key)).input_tokens > 0, `count ${i + 1} answered`);
    await assert.rejects(countWith(anthropicKey.key), isAnthropic429, "the third count is refused with Anthropic's 429 rate_limit_error");
    assert.equal(upstreams.anthropic.requests.length - anthropicBefore, 2, 'only the two admitted counts reached Anthropic');
    await assert.rejects(
      new Anthropic({ apiKey: anthropicKey.key, baseURL: sluice.url, maxRetries: 0 }).messages.create({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      isAnthropic429,
      'the counts used the minute: a message is refused too',
    );

    const geminiKey = await createKey(dataDir, 'count-rpm-co', ['--rpm', '2']);
    const geminiBefore = upstreams.gemini.requests.length;
    for (let i = 0; i < 2; i++) assert.ok((await geminiCount(geminiKey.key)).totalTokens! > 0, `count ${i + 1} answered`);
    await assert.rejects(geminiCount(geminiKey.key), isGemini429, "the third count is refused with Gemini's 429 RESOURCE_EXHAUSTED");
    assert.equal(upstreams.gemini.requests.length - geminiBefore, 2, 'only the two admitted counts reached Gemini');

    const rows = await eventuallyRowsOf(anthropicKey.id, 4);
    const counts = rows.filter((row) => row.operation === 'anthropic.count_tokens');
    // Rows are compared in a fixed order: the ledger's own order is the order of writing, not of requests.
    const summary = (row: LedgerRow) => [row.operation, row.model, row.status, row.error_kind, row.cost_usd, row.prompt_tokens, row.attempts, row.deployment];
    assert.deepEqual(counts.map(summary).sort(), [
      ['anthropic.count_tokens', 'claude', 200, null, 0, 0, 1, 'anthropic/claude-test'],
      ['anthropic.count_tokens', 'claude', 200, null, 0, 0, 1, 'anthropic/claude-test'],
      ['anthropic.count_tokens', 'claude', 429, 'rate_limited', 0, 0, 0, null],
    ], "every count leaves a row costing nothing, the refused one too; a relayed count names Anthropic's deployment");
    const geminiRows = await eventuallyRowsOf(geminiKey.id, 3);
    assert.deepEqual(geminiRows.map(summary).sort(), [
      ['gemini.countTokens', 'gemini', 200, null, 0, 0, 1, 'google/gemini-test'],
      ['gemini.countTokens', 'gemini', 200, null, 0, 0, 1, 'google/gemini-test'],
      ['gemini.countTokens', 'gemini', 429, 'rate_limited', 0, 0, 0, null],
    ]);
  });

  test('a count Sluice makes itself is admitted and written to the ledger too; a slot in flight is counted', async () => {
    const { key, id } = await createKey(dataDir, 'count-conc-co', ['--concurrency', '1']);
    const vllmBefore = upstreams.vllm.requests.length;
    assert.ok((await countWith(key, 'llama')).input_tokens > 0, 'counted by Sluice for an OpenAI-compatible upstream');
    assert.equal(upstreams.vllm.requests.length, vllmBefore, 'nothing sent upstream');
    upstreams.vllm.behaviour = { headerDelayMs: 2000 };
    try {
      const running = chat(key);
      await eventually(() => (upstreams.vllm.requests.length > vllmBefore ? true : undefined), 5000, 'the chat request upstream');
      await assert.rejects(countWith(key), isAnthropic429, 'a count while the only slot is in flight is refused');
      await running;
    } finally {
      upstreams.vllm.behaviour = {};
    }
    assert.ok((await countWith(key)).input_tokens > 0, 'the slot was released: counts go through again');
    const rows = (await eventuallyRowsOf(id, 4)).filter((row) => row.operation === 'anthropic.count_tokens');
    assert.deepEqual(
      rows.map((row) => [row.model, row.status, row.attempts, row.deployment, row.cost_usd]).sort(),
      [
        ['claude', 200, 1, 'anthropic/claude-test', 0],
        ['claude', 429, 0, null, 0],
        ['llama', 200, 0, null, 0],
      ],
      "Sluice's own count has no attempt; the refused one has none either",
    );
  });

  test('a key whose budget is spent cannot count', async () => {
    const { key } = await createKey(dataDir, 'count-budget-co', ['--budget-usd', '0.05', '--budget-period', 'day']);
    // $0.01 an output token, and the fake writes max_tokens of them: $0.05, the whole budget.
    await chat(key, 5, sluice.url, 'llama-out');
    const anthropicBefore = upstreams.anthropic.requests.length;
    const geminiBefore = upstreams.gemini.requests.length;
    await assert.rejects(countWith(key), isAnthropic429, 'Anthropic count_tokens refused');
    await assert.rejects(geminiCount(key), isGemini429, 'Gemini countTokens refused');
    assert.equal(upstreams.anthropic.requests.length, anthropicBefore, 'nothing reached Anthropic');
    assert.equal(upstreams.gemini.requests.length, geminiBefore, 'nothing reached Gemini');
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

/** A key's ledger rows, once there are `count` of them, in the order they were written. */
function eventuallyRowsOf(keyId: string, count: number): Promise<LedgerRow[]> {
  return eventually(async () => {
    const rows = (await sluice.ledger()).filter((row) => row.key_id === keyId);
    return rows.length >= count ? rows : undefined;
  }, 5000, `${count} ledger rows`);
}

/** `sluice_limit_refusals_total{scope="key",reason="budget"}` as the gateway's /metrics says it. */
async function budgetRefusals(): Promise<number> {
  const response = await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(response.status, 200);
  const line = /^sluice_limit_refusals_total\{scope="key",reason="budget"\} (\S+)$/m.exec(await response.text());
  return line === null ? 0 : Number(line[1]);
}

async function eventuallyRows(keyId: string, atLeast: number) {
  for (let i = 0; i < 100; i++) {
    const rows = (await sluice.ledger()).filter((row) => row.key_id === keyId);
    if (rows.filter((row) => row.status === 200).length >= atLeast) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the ledger rows did not arrive');
}
