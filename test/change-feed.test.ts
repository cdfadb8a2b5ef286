import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import type { Redis } from 'ioredis';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { Authenticator } from '../src/auth/authenticator.js';
import { SecretHasher } from '../src/auth/key-secret.js';
import { createKey as createKeyInStore } from '../src/auth/keys-service.js';
import { CHANGE_TOPICS, type ChangeFeed, type ChangeTopic } from '../src/changes/change-feed.js';
import { PostgresChangeFeed } from '../src/changes/postgres-change-feed.js';
import { RedisChangeFeed } from '../src/changes/redis-change-feed.js';
import type { Database } from '../src/store/schema.js';
import { SqlStore } from '../src/store/sql-store.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cleanRedisPrefix, closedPort, REDIS_URL, redisAdmin, uniqueRedisPrefix } from './support/redis.js';
import { cli, configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { PG_ADMIN_URL } from './support/store.js';

/** The stated guarantee: a change is in force everywhere this long after the command that made it returned. */
const NOTIFIED_WITHIN_MS = 100;
const ADMIN_PASSWORD = 'admin-password-1';

/** What a key gets from a replica's /v1/models: the status, and the model ids when it is let in. */
async function listModels(url: string, key: string): Promise<{ status: number; ids: string[] }> {
  const response = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await response.json()) as { data?: { id: string }[] };
  return { status: response.status, ids: (body.data ?? []).map((m) => m.id) };
}

/** The statuses of a few requests in a row (with several workers they reach different ones). */
async function statuses(url: string, key: string, times = 4): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; i < times; i++) seen.push((await listModels(url, key)).status);
  return seen;
}

/** A pino logger writing into an array, to count what a feed logs. */
function memoryLogger(): { logger: Logger; lines: { level: number; msg: string; [field: string]: unknown }[] } {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

/** What a feed's subscriber heard, with when. */
function record(feed: ChangeFeed): { heard: { topic: ChangeTopic; at: number }[]; next(topic: ChangeTopic, after: number, ms: number): Promise<number> } {
  const heard: { topic: ChangeTopic; at: number }[] = [];
  feed.subscribe((topic) => heard.push({ topic, at: Date.now() }));
  return {
    heard,
    /** Resolves with the delay of the first `topic` heard after `after`; fails after `ms`. */
    next: (topic, after, ms) => eventually(() => heard.find((h) => h.topic === topic && h.at >= after)?.at, ms, `'${topic}' to be heard`).then((at) => at - after),
  };
}

/** `ip:port` of a feed's subscriber connection as Redis's CLIENT LIST names it (the feed keeps that connection to itself). */
function subscriberAddress(feed: RedisChangeFeed): string {
  const { subscriber } = feed as unknown as { subscriber: Redis | undefined };
  const socket = subscriber?.stream as { localAddress?: string; localPort?: number } | undefined;
  assert.ok(socket?.localPort !== undefined, 'the feed has a subscriber connection');
  return `${socket.localAddress}:${socket.localPort}`;
}

describe('replicas on Redis (--redis): a change reaches every replica by notification', () => {
  let upstream: FakeUpstream;
  let prefix: string;
  let redisArgs: string[];
  let a: RunningSluice;
  let b: RunningSluice;

  before(async () => {
    upstream = await startFakeOpenAI();
    prefix = uniqueRedisPrefix();
    redisArgs = ['--redis', REDIS_URL, '--redis-prefix', prefix];
    const dataDir = tempDir();
    await createAccount(dataDir, 'admin', ADMIN_PASSWORD, true);
    a = await startSluice({ dataDir, config: configFor(upstream.url), args: ['--workers', '1', ...redisArgs] });
    // B runs two workers: each has its own caches, and each must hear.
    b = await startSluice({ dataDir, config: configFor(upstream.url), args: ['--workers', '2', ...redisArgs] });
  });

  after(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()]);
    await upstream?.close();
    await cleanRedisPrefix(prefix);
    assert.deepEqual(codes, [0, 0], 'both replicas stop cleanly');
  });

  test(`a key disabled, enabled, revoked with the CLI is refused or accepted by the other replica ${NOTIFIED_WITHIN_MS} ms after the command returns`, async () => {
    const { id, key } = await createKey(a.dataDir, 'acme', redisArgs);
    assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200], 'the new key is accepted (and cached) by every worker of B');
    // Several rounds: polling alone (every 250 ms) would pass one of them by luck now and then, not all.
    for (let round = 1; round <= 3; round++) {
      const disabled = await cli(['keys', 'disable', id, '--data', a.dataDir, ...redisArgs]);
      assert.equal(disabled.code, 0, disabled.stderr);
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [403, 403, 403, 403], `round ${round}: B refuses the disabled key`);
      const enabled = await cli(['keys', 'enable', id, '--data', a.dataDir, ...redisArgs]);
      assert.equal(enabled.code, 0, enabled.stderr);
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200], `round ${round}: B accepts the key enabled again`);
    }
    const revoked = await cli(['keys', 'revoke', id, '--data', a.dataDir, ...redisArgs]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await sleep(NOTIFIED_WITHIN_MS);
    assert.deepEqual(await statuses(b.url, key), [403, 403, 403, 403], 'B refuses the revoked key');
    assert.equal(revoked.stderr, '', 'the CLI reached Redis without a warning');
  });

  test('SLUICE_REDIS_URL and SLUICE_REDIS_PREFIX configure the CLI as the flags do', async () => {
    const { id, key } = await createKey(a.dataDir, 'acme');
    assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200]);
    for (let round = 1; round <= 3; round++) {
      const disabled = await cli(['keys', 'disable', id, '--data', a.dataDir], { SLUICE_REDIS_URL: REDIS_URL, SLUICE_REDIS_PREFIX: prefix });
      assert.equal(disabled.code, 0, disabled.stderr);
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [403, 403, 403, 403], `round ${round}: B refuses the disabled key`);
      const enabled = await cli(['keys', 'enable', id, '--data', a.dataDir], { SLUICE_REDIS_URL: REDIS_URL, SLUICE_REDIS_PREFIX: prefix });
      assert.equal(enabled.code, 0, enabled.stderr);
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200], `round ${round}: B accepts the key again`);
    }
  });

  test(`a key disabled in replica A's console is refused by replica B ${NOTIFIED_WITHIN_MS} ms after the console answers`, async () => {
    const { id, key } = await createKey(a.dataDir, 'acme');
    const console = new ConsoleClient(a.url);
    const csrf = await console.signIn('admin', ADMIN_PASSWORD);
    assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200]);
    for (let round = 1; round <= 3; round++) {
      assert.equal((await console.post(`/app/keys/${id}/disable`, { csrf })).status, 303, 'disabled in the console');
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [403, 403, 403, 403], `round ${round}: B refuses the disabled key`);
      assert.equal((await console.post(`/app/keys/${id}/enable`, { csrf })).status, 303, 'enabled in the console');
      await sleep(NOTIFIED_WITHIN_MS);
      assert.deepEqual(await statuses(b.url, key), [200, 200, 200, 200], `round ${round}: B accepts the key again`);
    }
  });

  test(`a model registered (and removed) in replica A's console is listed (and no longer) by replica B's /v1/models ${NOTIFIED_WITHIN_MS} ms later`, async () => {
    const { key } = await createKey(a.dataDir, 'acme');
    const console = new ConsoleClient(a.url);
    const csrf = await console.signIn('admin', ADMIN_PASSWORD);
    for (let round = 1; round <= 3; round++) {
      const id = `notified-model-${round}`;
      const saved = await console.post('/app/catalogue/models/new', { csrf, id, provider: 'fake-vllm', upstream_model: 'upstream-model', endpoints: 'completions' });
      assert.equal(saved.status, 303, saved.text);
      await sleep(NOTIFIED_WITHIN_MS);
      for (let i = 0; i < 4; i++) {
        const listed = await listModels(b.url, key);
        assert.ok(listed.ids.includes(id), `round ${round}: B lists ${id} (got ${listed.status} ${listed.ids.join(', ')})`);
      }
      assert.equal((await console.post(`/app/catalogue/models/${id}/delete`, { csrf })).status, 303, 'removed in the console');
      await sleep(NOTIFIED_WITHIN_MS);
      for (let i = 0; i < 4; i++) {
        const listed = await listModels(b.url, key);
        assert.ok(!listed.ids.includes(id), `round ${round}: B no longer lists ${id}`);
      }
    }
  });
});

describe('replicas without Redis (SQLite): changes are polled', () => {
  test('a key disabled with the CLI and a model registered in one replica reach the other within the poll interval', async () => {
    const upstream = await startFakeOpenAI();
    const dataDir = tempDir();
    await createAccount(dataDir, 'admin', ADMIN_PASSWORD, true);
    const a = await startSluice({ dataDir, config: configFor(upstream.url), args: ['--workers', '1'] });
    const b = await startSluice({ dataDir, config: configFor(upstream.url), args: ['--workers', '1'] });
    try {
      const { id, key } = await createKey(dataDir, 'acme');
      assert.equal((await listModels(b.url, key)).status, 200, 'B accepts the new key');
      assert.equal((await cli(['keys', 'disable', id, '--data', dataDir])).code, 0);
      await eventually(async () => ((await listModels(b.url, key)).status === 403 ? true : undefined), 1000, 'B to refuse the disabled key');
      assert.equal((await cli(['keys', 'enable', id, '--data', dataDir])).code, 0);
      await eventually(async () => ((await listModels(b.url, key)).status === 200 ? true : undefined), 1000, 'B to accept the key again');

      const console = new ConsoleClient(a.url);
      const csrf = await console.signIn('admin', ADMIN_PASSWORD);
      const saved = await console.post('/app/catalogue/models/new', { csrf, id: 'polled-model', provider: 'fake-vllm', upstream_model: 'upstream-model', endpoints: 'completions' });
      assert.equal(saved.status, 303, saved.text);
      await eventually(async () => ((await listModels(b.url, key)).ids.includes('polled-model') ? true : undefined), 1000, 'B to list polled-model');
      assert.doesNotMatch(a.stderr() + b.stderr(), /redis/i, 'nothing about Redis is logged without it');
    } finally {
      const codes = await Promise.all([a.stop(), b.stop()]);
      await upstream.close();
      assert.deepEqual(codes, [0, 0], 'both replicas stop cleanly');
    }
  });
});

describe('Redis unreachable', () => {
  test('at start: the gateway starts and serves, logs one warning (the password masked), and keeps polling', async () => {
    const url = `redis://:hunter2-redis-password@127.0.0.1:${await closedPort()}`;
    const sluice = await startSluice({ args: ['--workers', '1', '--redis', url] });
    const listeningAt = Date.now();
    try {
      const { id, key } = await createKey(sluice.dataDir, 'acme');
      assert.equal((await listModels(sluice.url, key)).status, 200, 'it serves');
      // The CLI cannot reach Redis either: it stores the change all the same, and says so once.
      const disabled = await cli(['keys', 'disable', id, '--data', sluice.dataDir, '--redis', url]);
      assert.equal(disabled.code, 0, disabled.stderr);
      assert.match(disabled.stdout, /is disabled/);
      assert.equal(disabled.stderr.match(/Redis unreachable/g)?.length, 1, `the CLI warns once: ${disabled.stderr}`);
      assert.ok(!disabled.stderr.includes('hunter2'), 'the CLI does not log the password');
      await eventually(async () => ((await listModels(sluice.url, key)).status === 403 ? true : undefined), 1000, 'the gateway to see the change by polling');
      // Several reconnection attempts: the feed retries after 100, 200, 400, 800, 1600 ms (redis-change-feed.ts),
      // so five have been made 3.1 s after the gateway listens; the CLI commands above took most of that already.
      await sleep(Math.max(0, listeningAt + 3_100 - Date.now()));
      const logs = sluice.stderr();
      assert.equal(logs.match(/Redis unreachable/g)?.length, 1, `one warning, not one per attempt: ${logs}`);
      assert.match(logs, /redis:\/\/:\*\*\*@127\.0\.0\.1/, 'the warning names the Redis, password masked');
      assert.ok(!logs.includes('hunter2'), 'the password is not logged');
    } finally {
      assert.equal(await sluice.stop(), 0, 'it stops cleanly while still retrying');
    }
  });

  test('a --redis that is not a redis:// URL is refused at start, without repeating it', async () => {
    const result = await cli(['serve', '--listen', '127.0.0.1:0', '--data', tempDir(), '--redis', 'http://user:secret-value@example.com']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /--redis: expected redis:\/\//);
    assert.ok(!result.stderr.includes('secret-value'), 'the value is not echoed');
  });
});

describe('the Redis feed', () => {
  test('a publish is heard by another feed on the prefix, and after its connection is killed it reconnects, catches up, and hears again', async () => {
    const prefix = uniqueRedisPrefix();
    const log = memoryLogger();
    const publisher = new RedisChangeFeed(REDIS_URL, prefix, log.logger);
    const listener = new RedisChangeFeed(REDIS_URL, prefix, log.logger);
    const other = new RedisChangeFeed(REDIS_URL, uniqueRedisPrefix(), log.logger);
    const admin = redisAdmin();
    try {
      const heard = record(listener);
      const elsewhere = record(other);
      await eventually(() => (listener.healthy && other.healthy && publisher.healthy ? true : undefined), 3000, 'the feeds to connect');
      assert.equal(listener.name, 'redis');

      let sent = Date.now();
      await publisher.publish('keys');
      await heard.next('keys', sent, 5000); // a raw feed has no poller: whatever is heard came by notification
      sent = Date.now();
      await publisher.publish('catalogue');
      await heard.next('catalogue', sent, 5000); // a raw feed has no poller: whatever is heard came by notification
      await sleep(100);
      assert.equal(elsewhere.heard.length, CHANGE_TOPICS.length, `a feed under another prefix hears only its own catch-up at subscription: ${JSON.stringify(elsewhere.heard)}`);

      const killedAt = Date.now();
      // Only this test's subscribers: the server's other ones may be other test files' gateways, running meanwhile.
      let killed = 0;
      for (const feed of [listener, other]) killed += Number(await admin.call('CLIENT', 'KILL', 'ADDR', subscriberAddress(feed)));
      assert.ok(killed >= 1, `the subscriber connection was killed (${killed})`);
      await eventually(() => (!listener.healthy ? true : undefined), 1000, 'the feed to notice').catch(() => undefined);
      await eventually(() => (listener.healthy ? true : undefined), 5000, 'the feed to reconnect');
      // Whatever was published while it was away is lost: it tells its listeners to look again.
      await heard.next('keys', killedAt, 1000);
      await heard.next('catalogue', killedAt, 1000);

      sent = Date.now();
      await publisher.publish('keys');
      await heard.next('keys', sent, 5000); // a raw feed has no poller: whatever is heard came by notification
      const lost = () => log.lines.filter((l) => /Redis unreachable/.test(l.msg)).length;
      const back = () => log.lines.filter((l) => /Redis reachable again/.test(l.msg)).length;
      // Every subscriber of this test was killed (the other prefix's too): wait for each to be back.
      await eventually(() => (back() === lost() ? true : undefined), 5000, 'every killed feed to log its return');
      assert.ok(lost() >= 1 && lost() <= 2, `the loss is logged once per feed killed: ${JSON.stringify(log.lines)}`);
      assert.equal(back(), lost(), 'and its end once');
    } finally {
      await Promise.all([publisher.close(), listener.close(), other.close()]);
      admin.disconnect();
      await cleanRedisPrefix(prefix);
    }
  });
});

describe('the PostgreSQL feed (LISTEN/NOTIFY)', () => {
  const database = `sluice_notify_test_${process.pid}_${randomBytes(3).toString('hex')}`;
  let databaseUrl: string;
  let admin: pg.Client;

  before(async () => {
    admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${database}`;
    databaseUrl = url.toString();
  });

  after(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  test('a publish is heard by another feed on the database, and after the server terminates the listening backend it reconnects and hears again', async () => {
    const log = memoryLogger();
    const publisher = new PostgresChangeFeed(databaseUrl, log.logger);
    const listener = new PostgresChangeFeed(databaseUrl, log.logger);
    try {
      const heard = record(listener);
      await eventually(() => (listener.healthy && publisher.healthy ? true : undefined), 3000, 'the feeds to connect');
      assert.equal(listener.name, 'postgres');
      let sent = Date.now();
      await publisher.publish('keys');
      await heard.next('keys', sent, 5000); // a raw feed has no poller: whatever is heard came by notification

      const terminatedAt = Date.now();
      const terminated = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = $1`, [database]);
      assert.ok(terminated.rowCount! >= 1, 'a listening backend was terminated');
      await eventually(() => (log.lines.some((l) => /paused/.test(l.msg)) ? true : undefined), 2000, 'the loss to be logged');
      await eventually(() => (listener.healthy && publisher.healthy ? true : undefined), 5000, 'the feeds to reconnect');
      await heard.next('catalogue', terminatedAt, 1000); // the catch-up after reconnecting

      sent = Date.now();
      await publisher.publish('catalogue');
      await heard.next('catalogue', sent, 5000); // a raw feed has no poller: whatever is heard came by notification
      assert.ok(log.lines.some((l) => /resumed/.test(l.msg)), 'the end of the outage is logged');
      assert.ok(log.lines.every((l) => !JSON.stringify(l).includes('password')), 'no password in the log');
    } finally {
      await Promise.all([publisher.close(), listener.close()]);
    }
  });

  test("the PostgreSQL store NOTIFYs in the change's transaction: a key created with no hook at all is heard by a feed", async () => {
    const log = memoryLogger();
    const listener = new PostgresChangeFeed(databaseUrl, log.logger);
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    // pool.end() resolves before its connections have closed; one that DROP DATABASE … WITH (FORCE)
    // terminates meanwhile is reported on the pool, which must have a listener or the process fails.
    pool.on('error', () => undefined);
    const store = new SqlStore(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres', 'test database');
    try {
      await store.migrate();
      const heard = record(listener);
      await eventually(() => (listener.healthy ? true : undefined), 3000, 'the feed to connect');
      const sent = Date.now();
      await createKeyInStore(store, SecretHasher.forDataDir(tempDir()), { accountName: 'acme' });
      await heard.next('keys', sent, 5000); // a raw feed has no poller: whatever is heard came by notification
    } finally {
      await listener.close();
      await store.close();
    }
  });
});

describe('the authenticator when the store fails', () => {
  test('it logs one warning naming the store (not one per poll) and goes on serving the cached key', async () => {
    const dataDir = tempDir();
    // The real store on a real SQLite file, through Kysely's in-thread dialect (the gateway's runs in a worker thread, which tsx cannot load).
    const store = new SqlStore(new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dataDir, 'sluice.db')) }) }), 'sqlite', 'test file');
    await store.migrate();
    const hasher = SecretHasher.forDataDir(dataDir);
    const { secret } = await createKeyInStore(store, hasher, { accountName: 'acme' });
    const log = memoryLogger();
    const authenticator = new Authenticator(store.keys, hasher, log.logger, store.dialect);
    await authenticator.start();
    try {
      assert.equal((await authenticator.authenticate(secret)).accountName, 'acme');
      await store.close();
      await sleep(1_000); // four polls
      const warnings = log.lines.filter((l) => l.level === 40);
      assert.equal(warnings.length, 1, `one warning: ${JSON.stringify(log.lines)}`);
      assert.equal(warnings[0]!.store, 'sqlite', 'the warning names the store');
      assert.equal((await authenticator.authenticate(secret)).accountName, 'acme', 'the cached key is still accepted');
    } finally {
      authenticator.stop();
    }
  });
});
