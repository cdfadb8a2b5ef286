/**
 * Redis stopped and started again under a running gateway, and Redis missing when it starts: limits
 * fall back to this machine's counters with an alarm (the log, /status.json), never silently, and
 * go back to Redis when it returns. A private redis-server of this machine's, on a port of its own.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { closedPort, uniqueRedisPrefix } from './support/redis.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

let upstreams: ThreeUpstreams;
const servers: ChildProcess[] = [];

before(async () => {
  upstreams = await startThreeUpstreams();
});

after(async () => {
  for (const server of servers) server.kill('SIGKILL');
  await upstreams.close();
});

/** A redis-server of its own, keeping nothing on disk; resolves once it answers. */
async function startRedis(port: number, password?: string): Promise<ChildProcess> {
  const auth = password === undefined ? [] : ['--requirepass', password];
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tempDir(), ...auth], { stdio: 'ignore' });
  servers.push(server);
  const client = new Redis({ port, password, lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  client.on('error', () => undefined);
  try {
    await eventually(() => client.ping().then(() => true, () => undefined), 5000, 'redis-server to answer');
  } finally {
    client.disconnect();
  }
  return server;
}

async function stopRedis(server: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGTERM');
  await exited;
}

/**
 * One process: each watches its own Redis connection (and /status.json reports what the process
 * answering sees), so with several workers which one answers would decide what a step observes.
 */
const ONE_PROCESS = ['--workers', '1'];

const config = (providers: string) => `${providers}
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
`;

interface Degraded {
  component: string;
  message: string;
}

const METRICS_TOKEN = 'outage-metrics-token-0123';

/** `sluice_degraded{component}` as the gateway's /metrics says it; undefined when it has no such series. */
async function degradedGauge(sluice: RunningSluice, component: string): Promise<number | undefined> {
  const text = await (await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const line = new RegExp(`^sluice_degraded\\{component="${component}"\\} (\\S+)$`, 'm').exec(text);
  return line === null ? undefined : Number(line[1]);
}

async function status(sluice: RunningSluice): Promise<{ status: string; degraded: Degraded[] }> {
  return (await fetch(`${sluice.url}/status.json`)).json() as Promise<{ status: string; degraded: Degraded[] }>;
}

function chat(sluice: RunningSluice, key: string) {
  return new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 }).chat.completions
    .create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 })
    .withResponse();
}

test('Redis stopped mid-run: requests go on with local counters and an alarm; limits go back to Redis when it returns', async () => {
  const port = await closedPort();
  let redis = await startRedis(port);
  const prefix = uniqueRedisPrefix();
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: [...ONE_PROCESS, '--redis', `redis://127.0.0.1:${port}`, '--redis-prefix', prefix, '--metrics-token', METRICS_TOKEN] });
  const inspector = new Redis({ port, lazyConnect: true, retryStrategy: () => 100, maxRetriesPerRequest: null });
  inspector.on('error', () => undefined);
  try {
    const { key, id } = await createKey(sluice.dataDir, 'outage-co', ['--rpm', '1000']);
    const first = await chat(sluice, key);
    assert.equal(first.response.headers.get('x-ratelimit-remaining-requests'), '999');
    assert.equal(await inspector.zcard(`${prefix}limit:key:${id}:req`), 1, 'the request is counted in Redis');
    assert.deepEqual((await status(sluice)).degraded, [], 'nothing degraded while Redis answers');
    assert.equal(await degradedGauge(sluice, 'redis'), 0, 'sluice_degraded{component="redis"} is 0 while Redis answers');

    await stopRedis(redis);
    const during = await chat(sluice, key);
    assert.equal(during.response.status, 200, 'requests are still served');
    assert.equal(during.response.headers.get('x-ratelimit-remaining-requests'), '999', "counted on this machine's counters, which start afresh");
    const degraded = await status(sluice);
    assert.equal(degraded.status, 'degraded', 'the overall status says degraded');
    assert.equal(degraded.degraded[0]?.component, 'redis', '/status.json names Redis');
    assert.match(degraded.degraded[0]!.message, /Redis .* unreachable/);
    assert.ok(!degraded.degraded[0]!.message.includes(prefix), 'the message names no key prefix');
    assert.match(sluice.stderr(), /Redis is unreachable: rate limits and budgets fall back/, 'the log raises the alarm');
    assert.equal(await degradedGauge(sluice, 'redis'), 1, 'and so does sluice_degraded{component="redis"}, for the alert rules');

    redis = await startRedis(port);
    await eventually(async () => ((await status(sluice)).degraded.length === 0 ? true : undefined), 20_000, 'the alarm to clear');
    // The log line reaches this process through a pipe, after /status.json may already say it.
    await eventually(() => (/Redis is reachable again/.test(sluice.stderr()) ? true : undefined), 5000, 'the log to say so when it is back');
    assert.equal(await degradedGauge(sluice, 'redis'), 0, 'the gauge falls back to 0');
    const back = await chat(sluice, key);
    const inRedis = await inspector.zcard(`${prefix}limit:key:${id}:req`);
    assert.equal(inRedis, 1, `counted in Redis again; the gateway's log:\n${sluice.stderr()}`);
    assert.equal(back.response.headers.get('x-ratelimit-remaining-requests'), '999', "the headers are Redis's, whose count a restart started afresh");
  } finally {
    inspector.disconnect();
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('Redis unreachable at start: the gateway serves on local counters, degraded, and switches to Redis once it appears', async () => {
  const port = await closedPort();
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: [...ONE_PROCESS, '--redis', `redis://:hunter2@127.0.0.1:${port}`, '--redis-prefix', uniqueRedisPrefix()] });
  try {
    const { key } = await createKey(sluice.dataDir, 'late-co', ['--rpm', '2']);
    assert.equal((await chat(sluice, key)).response.status, 200, 'served from the start');
    const degraded = await status(sluice);
    assert.equal(degraded.degraded[0]?.component, 'redis', 'degraded from the start');
    assert.ok(!JSON.stringify(degraded).includes('hunter2') && !sluice.stderr().includes('hunter2'), "the URL's password is nowhere");
    await startRedis(port, 'hunter2');
    await eventually(async () => ((await status(sluice)).degraded.length === 0 ? true : undefined), 20_000, 'Redis to be used once it appears');
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('Redis too slow to answer on a connection that stays up: the alarm is raised, and clears once Redis answers again', async () => {
  const port = await closedPort();
  await startRedis(port);
  const prefix = uniqueRedisPrefix();
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: [...ONE_PROCESS, '--redis', `redis://127.0.0.1:${port}`, '--redis-prefix', prefix] });
  const admin = new Redis({ port });
  try {
    const { key, id } = await createKey(sluice.dataDir, 'slow-co', ['--rpm', '1000']);
    assert.equal((await chat(sluice, key)).response.status, 200, 'served while Redis answers');
    // Redis holds every command for 4 s: longer than the gateway waits for one (1 s).
    await admin.call('CLIENT', 'PAUSE', '4000', 'ALL');
    const slow = await chat(sluice, key);
    assert.equal(slow.response.status, 200, 'a request Redis does not answer in time is still served');
    assert.equal(slow.response.headers.get('x-ratelimit-remaining-requests'), '999', "counted on this machine's counters");
    assert.equal((await status(sluice)).degraded[0]?.component, 'redis', '/status.json raises the alarm');
    // No reconnection happens here, so nothing but the gateway's own probing can end the alarm.
    await eventually(async () => ((await status(sluice)).degraded.length === 0 ? true : undefined), 10_000, 'the alarm to clear');
    const back = await chat(sluice, key);
    // The admission Redis held ran when the pause ended: a request that fell back is counted twice, never less.
    assert.equal(back.response.headers.get('x-ratelimit-remaining-requests'), '997', 'counted in Redis again, after the first request and the held one');
    assert.equal(await admin.zcard(`${prefix}limit:key:${id}:req`), 3, 'Redis holds all three');
  } finally {
    admin.disconnect();
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('Redis paused under traffic: once it resumes the key is admitted up to its concurrency again, and the spend counted meanwhile reaches Redis', async () => {
  const port = await closedPort();
  await startRedis(port);
  const prefix = uniqueRedisPrefix();
  const priced = `${upstreams.providersYaml}
models:
  - { id: priced, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 10000 } }
`;
  const sluice = await startSluice({ config: priced, args: [...ONE_PROCESS, '--redis', `redis://127.0.0.1:${port}`, '--redis-prefix', prefix] });
  const admin = new Redis({ port });
  const waiter = new Redis({ port });
  // Every answer takes a while, so that requests are in flight when Redis stalls.
  upstreams.vllm.behaviour = { headerDelayMs: 150 };
  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
  // Output only is priced ($0.01 a token): each request reserves and spends $0.03.
  const send = (key: string) =>
    client(key)
      .chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 })
      .then(
        () => 200,
        (error: { status?: number; message?: string }) => error.status ?? 0,
      );
  try {
    const concurrency = 4;
    const { key, id } = await createKey(sluice.dataDir, 'paused-co', ['--concurrency', String(concurrency), '--budget-usd', '100']);
    assert.equal(await send(key), 200, 'served while Redis answers');

    // Four clients one request after another (about 20 a second), never more than the key's concurrency at once.
    let flowing = true;
    const statuses: number[] = [];
    const clients = Array.from({ length: concurrency }, async () => {
      while (flowing) statuses.push(await send(key));
    });
    await eventually(() => (statuses.length >= 8 ? true : undefined), 10_000, 'traffic to flow');
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    // Held by the pause like the gateway's commands: it answers once Redis runs commands again.
    await waiter.eval('return 1', 0);
    flowing = false;
    await Promise.all(clients);
    assert.ok(statuses.every((status) => status === 200), `every request of the traffic was served: ${statuses.join(' ')}`);
    await eventually(async () => ((await status(sluice)).degraded.length === 0 ? true : undefined), 10_000, 'the gateway to count on Redis again');

    // (1) No slot is left behind by an admission that timed out and that Redis ran when it resumed.
    const burst = await Promise.all(Array.from({ length: concurrency }, () => send(key)));
    assert.deepEqual(burst, Array(concurrency).fill(200), `${concurrency} requests at once are admitted right after the outage; in Redis: ${JSON.stringify(await admin.zrange(`${prefix}limit:key:${id}:fly`, '0', '-1'))}`);

    // (2) Redis's spend counter holds what the ledger holds: the spend counted on this machine meanwhile was added, once.
    const spendKeys = await admin.keys(`${prefix}limit:key:${id}:spend:*`);
    assert.equal(spendKeys.length, 1, 'one budget period counted in Redis');
    let inRedis = 0;
    let inLedger = -1;
    for (let tries = 0; tries < 100 && Math.abs(inRedis - inLedger) > 1e-9; tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      inRedis = Number(await admin.get(spendKeys[0]!));
      inLedger = (await sluice.ledger()).filter((row) => row.key_id === id).reduce((sum, row) => sum + Number(row.cost_usd), 0);
    }
    assert.ok(inLedger > 0.03 * 10, `the ledger holds the traffic's spend ($${inLedger})`);
    assert.ok(Math.abs(inRedis - inLedger) <= 1e-9, `Redis's budget counter ($${inRedis}) equals the ledger's spend ($${inLedger})`);
  } finally {
    upstreams.reset();
    admin.disconnect();
    waiter.disconnect();
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});
