// postgres-pass: skip (the start-up and outage tests make their own PostgreSQL database in either pass)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import pg from 'pg';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { closedPort } from './support/redis.js';
import { configFor, createKey, eventually, startSluice } from './support/sluice.js';
import { createDatabase, dropDatabase, PG_ADMIN_URL } from './support/store.js';
import { startTcpProxy } from './support/tcp-proxy.js';

const METRICS_TOKEN = 'probes-metrics-token';
/** Kysely's advisory lock for migrations on PostgreSQL (kysely/dist/dialect/postgres/postgres-adapter.js): held, a start-up waits in its migration. */
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

interface Probe {
  readonly status: number;
  readonly body: { status: string; reasons?: string[] };
}

/** A probe on a connection of its own, as a kubelet or a load balancer sends it; undefined when nothing answered. */
async function probe(url: string, path: '/livez' | '/readyz'): Promise<Probe | undefined> {
  try {
    const response = await fetch(`${url}${path}`, { headers: { connection: 'close' } });
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(response.headers.get('cache-control'), 'no-store');
    return { status: response.status, body: (await response.json()) as Probe['body'] };
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return undefined;
  }
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe('/livez and /readyz', () => {
  test('answer 200 without a key, to GET and HEAD; are counted under their own route, never in the ledger, and a 200 is not access-logged', async () => {
    const upstream = await startFakeOpenAI();
    const sluice = await startSluice({ config: configFor(upstream.url), args: ['--metrics-token', METRICS_TOKEN], env: { SLUICE_LOG_LEVEL: 'info' } });
    try {
      assert.deepEqual(await probe(sluice.url, '/livez'), { status: 200, body: { status: 'ok' } });
      assert.deepEqual(await probe(sluice.url, '/readyz'), { status: 200, body: { status: 'ready' } });
      for (const path of ['/livez', '/readyz']) {
        const head = await fetch(`${sluice.url}${path}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('content-type'), 'application/json');
        // A query string changes nothing, and is no label.
        assert.equal((await fetch(`${sluice.url}${path}?verbose=${Math.random()}`)).status, 200);
        assert.equal((await fetch(`${sluice.url}${path}`, { method: 'POST' })).status, 405);
      }
      // The key carriers are not read: a wrong key is no reason to fail a probe.
      assert.equal((await fetch(`${sluice.url}/readyz`, { headers: { authorization: 'Bearer sk-not-a-key' } })).status, 200);
      const metrics = await (await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      const probeSeries = metrics.split('\n').filter((line) => line.startsWith('sluice_http_requests_total{') && /z"/.test(line));
      assert.deepEqual(
        probeSeries.map((line) => /route="([^"]+)"/.exec(line)![1]).sort(),
        ['GET /livez', 'GET /readyz', 'HEAD /livez', 'HEAD /readyz'],
        'one series per method and probe, whatever the query string',
      );
      assert.match(metrics, /sluice_http_requests_total\{route="GET \/readyz",dialect="openai",status="200"\} 3/);
      assert.equal((await sluice.ledger()).length, 0, 'a probe writes no ledger row');
      // The refused POSTs are logged; the probes answered 200 are not.
      await eventually(() => (/"route":"unmatched","status":405/.test(sluice.stderr()) ? true : undefined), 5000, 'the 405s in the access log');
      assert.doesNotMatch(sluice.stderr(), /"route":"(GET|HEAD) \/(livez|readyz)"/);
    } finally {
      assert.equal(await sluice.stop(), 0);
      await upstream.close();
    }
  });

  test('during start-up (a migration waiting for its lock): /livez 200, /readyz 503 naming the step, every other route 503 `starting`; then ready', { timeout: 60_000 }, async () => {
    const database = await createDatabase();
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query(`select pg_advisory_lock(${KYSELY_MIGRATION_LOCK})`);
      const port = await closedPort();
      const url = `http://127.0.0.1:${port}`;
      const started = startSluice({ args: ['--listen', `127.0.0.1:${port}`], env: { SLUICE_DATABASE_URL: database.url } });
      started.catch(() => undefined);
      const unready = await eventually(async () => {
        const answer = await probe(url, '/readyz');
        return answer?.status === 503 ? answer : undefined;
      }, 30_000, '/readyz to answer while the migration waits');
      assert.deepEqual(unready.body, { status: 'unready', reasons: ['starting: opening and migrating the store'] });
      assert.deepEqual(await probe(url, '/livez'), { status: 200, body: { status: 'ok' } });
      const models = await fetch(`${url}/v1/models`);
      assert.equal(models.status, 503);
      assert.equal(models.headers.get('retry-after'), '1');
      assert.deepEqual(((await models.json()) as { error: { type: string; message: string } }).error.message, 'The gateway is starting; retry in a moment.');
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 503, '/healthz answers 200 only once the gateway serves, as when it listened only then');
      const messages = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'k', 'content-type': 'application/json' }, body: '{}' });
      assert.equal(messages.status, 503);
      assert.equal(((await messages.json()) as { type: string }).type, 'error', "an Anthropic caller reads the refusal in Anthropic's shape");
      // Still waiting: nothing else has moved it on.
      assert.equal((await probe(url, '/readyz'))?.status, 503);

      await holder.query(`select pg_advisory_unlock(${KYSELY_MIGRATION_LOCK})`);
      const sluice = await started;
      try {
        assert.equal(sluice.url, url);
        assert.deepEqual(await probe(url, '/readyz'), { status: 200, body: { status: 'ready' } });
        assert.equal((await fetch(`${url}/healthz`)).status, 200);
      } finally {
        assert.equal(await sluice.stop(), 0);
      }
    } finally {
      await holder.end();
      await dropDatabase(database.name);
    }
  });

  for (const workers of [1, 2]) {
    test(`--workers ${workers}: during a drain (SIGTERM while a stream is open) /readyz is 503 and /livez 200 on every worker left, and it exits 0 once the stream is gone`, { timeout: 60_000 }, async () => {
      const upstream = await startFakeOpenAI();
      // The stream stalls after its first tokens until the caller lets it go.
      upstream.behaviour = { stall: { beforeEvent: 2, ms: 120_000 } };
      const sluice = await startSluice({ config: configFor(upstream.url), args: ['--workers', String(workers), '--drain-timeout', '60000'] });
      let exited: Promise<number | null> | undefined;
      try {
        const { key } = await createKey(sluice.dataDir, 'acme');
        const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
        const abort = new AbortController();
        const stream = await client.completions.create({ model: 'llama-8b', prompt: 'hello', max_tokens: 8, stream: true }, { signal: abort.signal });
        const iterator = stream[Symbol.asyncIterator]();
        await iterator.next();
        const primary = sluice.child.pid!;
        exited = sluice.stop('SIGTERM');
        try {
          if (workers > 1) {
            // The worker without a request drains at once and exits: every probe then reaches the one still draining.
            await eventually(() => (childPids(primary).length === 1 ? true : undefined), 20_000, 'the idle worker to exit');
          }
          const draining = await eventually(async () => {
            const answer = await probe(sluice.url, '/readyz');
            return answer?.status === 503 ? answer : undefined;
          }, 20_000, '/readyz to turn 503');
          assert.deepEqual(draining.body, { status: 'unready', reasons: ['draining: the gateway is shutting down'] });
          for (let i = 0; i < 10; i++) {
            assert.deepEqual(await probe(sluice.url, '/readyz'), draining);
            assert.deepEqual(await probe(sluice.url, '/livez'), { status: 200, body: { status: 'ok' } });
          }
          const refused = await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
          assert.equal(refused.status, 503);
          assert.equal(((await refused.json()) as { error: { message: string } }).error.message, 'The gateway is shutting down; retry on another instance.');
          assert.equal(sluice.child.exitCode, null, 'still draining the stream');
        } finally {
          abort.abort();
          await iterator.next().catch(() => undefined);
        }
      } finally {
        assert.equal(await (exited ?? sluice.stop('SIGTERM')), 0);
        await upstream.close();
      }
    });
  }

  test('a store outage (PostgreSQL cut off, then back): /readyz 503 naming the store without its address, then 200 again; /livez stays 200', { timeout: 60_000 }, async () => {
    const database = await createDatabase();
    const proxy = await startTcpProxy(Number(new URL(PG_ADMIN_URL).port || 5432), new URL(PG_ADMIN_URL).hostname);
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    viaProxy.password = 'store-secret-password';
    const sluice = await startSluice({ env: { SLUICE_DATABASE_URL: viaProxy.toString() } });
    try {
      assert.deepEqual(await probe(sluice.url, '/readyz'), { status: 200, body: { status: 'ready' } });
      proxy.cut();
      const down = await eventually(async () => {
        const answer = await probe(sluice.url, '/readyz');
        return answer?.status === 503 ? answer : undefined;
      }, 20_000, '/readyz to see the store gone');
      assert.equal(down.body.status, 'unready');
      assert.equal(down.body.reasons?.length, 1);
      assert.match(down.body.reasons![0]!, /^store: (the check failed( \([A-Za-z0-9_]+\))?|no answer within 2000 ms)$/);
      for (const secret of ['store-secret-password', String(proxy.port), database.name, '127.0.0.1']) assert.ok(!JSON.stringify(down.body).includes(secret), `the answer does not show ${secret}`);
      assert.deepEqual(await probe(sluice.url, '/livez'), { status: 200, body: { status: 'ok' } });
      proxy.restore();
      await eventually(async () => ((await probe(sluice.url, '/readyz'))?.status === 200 ? true : undefined), 30_000, '/readyz to see the store back');
    } finally {
      assert.equal(await sluice.stop(), 0);
      await proxy.close();
      await dropDatabase(database.name);
    }
  });
});
