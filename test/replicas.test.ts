// postgres-pass: skip (runs on a PostgreSQL database of its own in the SQLite pass, and skips itself in this one)
/**
 * Three `sluice serve` replicas on one PostgreSQL database and one Redis (this machine's real
 * servers; a database and a key prefix of the test's own): limits and budgets that hold across
 * them under concurrent bursts, a key disabled through one replica refused by the others, in-flight
 * slots of a killed replica given back by their lease, and PostgreSQL unreachable for a while
 * without losing a ledger row (a TCP relay in front of it is cut, so the machine's server keeps
 * serving every other test).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import { cliWithInput, ConsoleClient } from './support/console.js';
import { cli, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { cleanRedisPrefix, REDIS_URL, uniqueRedisPrefix } from './support/redis.js';
import { createDatabase, dropDatabase, pgQuery } from './support/store.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

const LEASE_MS = 1500;

/** The test's own database, straight (the replicas reach it through the relay). */
let database: { name: string; url: string };
const prefix = uniqueRedisPrefix();
let proxy: TcpProxy;
let databaseUrl: string;
let upstream: FakeUpstream;
let replicas: RunningSluice[] = [];
const dataDirs = [tempDir(), tempDir(), tempDir()];
/** Shared by every replica, as the README says they must be. */
const env = { SLUICE_KEY_PEPPER: randomBytes(24).toString('hex'), SLUICE_CREDENTIAL_KEY: randomBytes(24).toString('hex') };

const config = () => `
providers:
  - { id: vllm, kind: openai, base_url: '${upstream.url}', api_key: upstream-credential }
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
  - { id: priced, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 10000 } }
limits: { lease_ms: ${LEASE_MS} }
`;

function startReplica(index: number): Promise<RunningSluice> {
  return startSluice({
    config: config(),
    dataDir: dataDirs[index],
    env: { ...env, SLUICE_DATABASE_URL: databaseUrl },
    args: ['--redis', REDIS_URL, '--redis-prefix', prefix, '--workers', '1'],
  });
}

const sql = <Row>(query: string, values: unknown[] = []) => pgQuery<Row>(database.url, query, values);

async function createKey(account: string, flags: string[] = []): Promise<{ id: string; key: string }> {
  const result = await cli(['keys', 'create', '--account', account, '--json', '--data', dataDirs[0]!, ...flags], { ...env, SLUICE_DATABASE_URL: databaseUrl });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as { id: string; key: string };
}

function chat(replica: RunningSluice, key: string, model = 'llama', maxTokens = 3): Promise<Response> {
  return fetch(`${replica.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: maxTokens }),
  });
}

// It makes its own database whatever the pass; the PostgreSQL pass need not run it again.
describe('three replicas on one PostgreSQL and one Redis', { skip: process.env.SLUICE_TEST_STORE === 'postgres' ? 'runs in the SQLite pass, on a PostgreSQL database of its own' : false }, () => {
  before(async () => {
    database = await createDatabase();
    const relayed = new URL(database.url);
    proxy = await startTcpProxy(Number(relayed.port || 5432), relayed.hostname);
    relayed.port = String(proxy.port);
    databaseUrl = relayed.toString();
    upstream = await startFakeOpenAI({ apiKey: 'upstream-credential' });
    // Started together: the migrations run once.
    replicas = await Promise.all([0, 1, 2].map(startReplica));
  });

  after(async () => {
    for (const replica of replicas) await replica.stop('SIGKILL');
    await upstream.close();
    await proxy.close();
    await dropDatabase(database.name);
    await cleanRedisPrefix(prefix);
  });

  test('a burst of 500 concurrent requests against rpm 100, spread over the three, admits exactly 100', async () => {
    const { key } = await createKey('burst-co', ['--rpm', '100']);
    const statuses = await Promise.all(Array.from({ length: 500 }, (_, i) => chat(replicas[i % 3]!, key).then(async (response) => (await response.arrayBuffer(), response.status))));
    assert.equal(statuses.filter((s) => s === 200).length, 100, 'exactly 100 admitted');
    assert.equal(statuses.filter((s) => s === 429).length, 400, 'the other 400 refused with 429');
  });

  test('a budget under a concurrent burst ends within one request of its limit', async () => {
    const { key, id } = await createKey('budget-co', ['--budget-usd', '0.5', '--budget-period', 'month']);
    // Output only is priced ($0.01 a token) and the fake writes max_tokens: $0.05 a request, reserved and spent.
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(replicas[i % 3]!, key, 'priced', 5).then(async (response) => (await response.arrayBuffer(), response.status))));
    const admitted = statuses.filter((s) => s === 200).length;
    assert.ok(statuses.every((s) => s === 200 || s === 429), 'only admissions and refusals');
    let rows: { cost_usd: number }[] = [];
    for (let i = 0; i < 100 && rows.length < admitted; i++) {
      rows = await sql<{ cost_usd: number }>('select cost_usd from usage_ledger where key_id = $1 and status = 200', [id]);
      await new Promise((r) => setTimeout(r, 50));
    }
    const spent = rows.reduce((sum, row) => sum + Number(row.cost_usd), 0);
    const largest = Math.max(...rows.map((row) => Number(row.cost_usd)));
    assert.ok(Math.abs(spent - 0.5) <= largest + 1e-9, `spent ${spent} within one request (${largest}) of $0.50 (${admitted} admitted)`);
  });

  test('a key disabled through one replica is refused by the others 100 ms later', async () => {
    const { key, id } = await createKey('disable-co');
    const password = 'correct horse battery staple';
    const made = await cliWithInput(['accounts', 'create', 'replica-admin', '--admin', '--password-stdin', '--data', dataDirs[0]!, '--database', databaseUrl], `${password}\n`);
    assert.equal(made.code, 0, made.stderr);
    for (const replica of replicas) assert.equal((await chat(replica, key)).status, 200, 'accepted (and cached) everywhere first');
    const console = new ConsoleClient(replicas[0]!.url);
    const csrf = await console.signIn('replica-admin', password);
    assert.equal((await console.post(`/app/keys/${id}/disable`, { csrf })).status, 303, 'disabled through replica 0');
    await new Promise((r) => setTimeout(r, 100));
    for (const replica of replicas.slice(1)) assert.equal((await chat(replica, key)).status, 403, 'refused by the other replicas');
  });

  test("a killed replica's in-flight slot is given back when its lease runs out", async () => {
    const { key } = await createKey('lease-co', ['--concurrency', '1']);
    upstream.behaviour = { headerDelayMs: 20_000, only: (request) => JSON.stringify(request.body).includes('hold this slot') };
    try {
      const held = fetch(`${replicas[2]!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hold this slot' }], max_tokens: 3 }),
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await chat(replicas[0]!, key)).status, 429, 'the slot is held by replica 2');
      await replicas[2]!.stop('SIGKILL');
      await held;
      const killedAt = Date.now();
      let status = 0;
      while (status !== 200 && Date.now() - killedAt < 5 * LEASE_MS) {
        status = (await chat(replicas[0]!, key)).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(status, 200, 'admitted again once the lease ran out');
    } finally {
      upstream.behaviour = {};
      replicas[2] = await startReplica(2);
    }
  });

  test('PostgreSQL unreachable for a while: cached keys are served and no ledger row is lost', async () => {
    const { key, id } = await createKey('outage-co');
    // Once the key's creation has reached every replica's cache (a lookup that straddles a change is used once, not kept).
    await new Promise((r) => setTimeout(r, 500));
    for (const replica of replicas) assert.equal((await chat(replica, key)).status, 200, 'the key is cached by every replica');
    proxy.cut();
    let served = 0;
    try {
      for (let i = 0; i < 30; i++) if ((await chat(replicas[i % 3]!, key)).status === 200) served++;
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      proxy.restore();
    }
    assert.equal(served, 30, 'every request was served while PostgreSQL was unreachable');
    let count = 0;
    for (let i = 0; i < 200 && count < 33; i++) {
      count = Number((await sql<{ n: string }>('select count(*) as n from usage_ledger where key_id = $1', [id]))[0]!.n);
      if (count < 33) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(count, 33, 'every row reached PostgreSQL once it was back');
  });
});
