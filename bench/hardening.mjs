// The fault and abuse figures of issue 24, measured on this build and, with BENCH_BASE_DIR (a
// checkout of an earlier commit with dist/ built), on the build before, in one run:
//   count     worst event-loop stall of a one-worker gateway while it counts 1 MB without spaces
//             (the longest /healthz answer while `count_tokens` runs), and the count's own time
//   metrics   /metrics bytes and series before and after 10,000 requests naming random models
//   budget    spend of one chat request (`n: 128, max_tokens: 1000`) against a $0.05 budget
//   redis     a key at --concurrency 4 under 20 requests/s through `CLIENT PAUSE 5000`: refusals
//             after the pause, time to the first admitted request, Redis's spend beside the ledger's
//   catalogue `GET /models`, `/models.json` and `/v1/models` with 100,000 discovered models: time, bytes, worker RSS
//             (a build that caps discovery, `discover.max_models`, is given a cap as large as the list)
// Run from the repository root after `npm run build`: `node bench/hardening.mjs` (BENCH_HARDENING_ONLY=count,metrics,…
// picks scenarios). Prints a table and writes bench/hardening-results.json. Every process it starts is stopped.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, processTree, round, run, sleep, spawnWithNofile, treeMemoryMB, waitForHttp } from './lib.mjs';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const ONLY = (process.env.BENCH_HARDENING_ONLY || 'count,metrics,budget,redis,catalogue').split(',');
const COUNT_CAP_MS = Number(process.env.BENCH_COUNT_CAP_MS || 60_000);
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';
const CATALOGUE_SIZE = Number(process.env.BENCH_CATALOGUE_SIZE || 100_000);
// `node` runs the build's gateway and CLI: BENCH_BASE_NODE for the build before (an older build may need an older runtime).
const builds = [{ name: 'this build', root: ROOT, node: process.execPath }];
if (process.env.BENCH_BASE_DIR) builds.push({ name: 'before', root: path.resolve(process.env.BENCH_BASE_DIR), node: process.env.BENCH_BASE_NODE || process.execPath });

// ---------------------------------------------------------------- the fake upstream
/** OpenAI-compatible: chat answers every choice at its full `max_tokens`, the worst case a budget must expect; `/big/v1/models` lists CATALOGUE_SIZE models. */
function startUpstream(port) {
  let bigList;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/big/v1/models') {
        bigList ??= JSON.stringify({ object: 'list', data: Array.from({ length: CATALOGUE_SIZE }, (_, i) => ({ id: `family-${i % 97}/model-${i}`, object: 'model', created: 1700000000, owned_by: 'bench' })) });
        res.writeHead(200, { 'content-type': 'application/json' }).end(bigList);
        return;
      }
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'upstream-model', object: 'model', created: 0, owned_by: 'bench' }] }));
        return;
      }
      const request = JSON.parse(body || '{}');
      const n = request.n ?? 1;
      const max = request.max_completion_tokens ?? request.max_tokens ?? 16;
      const answer = () => {
        const choices = Array.from({ length: n }, (_, index) => ({ index, message: { role: 'assistant', content: 'ok' }, finish_reason: 'length' }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion', created: 0, model: request.model, choices, usage: { prompt_tokens: 10, completion_tokens: n * max, total_tokens: 10 + n * max } }),
        );
      };
      const delay = Number(req.headers['x-bench-delay-ms'] ?? request.bench_delay_ms ?? 0);
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

function writeConfig(dir, upstreamPort, { big = false, maxModels = false } = {}) {
  const file = path.join(dir, 'sluice.yaml');
  fs.writeFileSync(
    file,
    `providers:
  - id: up
    kind: openai
    base_url: http://127.0.0.1:${upstreamPort}/v1
${big ? `  - id: big\n    kind: openai\n    base_url: http://127.0.0.1:${upstreamPort}/big/v1\n    discover: { interval_ms: 3600000${maxModels ? `, max_models: ${CATALOGUE_SIZE}` : ''} }\n` : ''}models:
  - id: chat-model
    provider: up
    upstream_model: upstream-model
    endpoints: [completions, chat]
    pricing: { input_per_mtok: 1, output_per_mtok: 5 }
`,
  );
  return file;
}

// ---------------------------------------------------------------- gateways
const started = [];
async function startGateway(build, dataDir, configFile, { workers = 1, args = [] } = {}) {
  const port = await freePort();
  const child = spawnWithNofile(
    build.node,
    [path.join(build.root, 'bin', 'sluice.js'), 'serve', '--listen', `127.0.0.1:${port}`, '--data', dataDir, '--config', configFile, '--workers', String(workers), ...args],
    { env: { ...process.env, SLUICE_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'], cwd: build.root },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  started.push(child);
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 30_000);
  } catch (error) {
    throw new Error(`${build.name}: the gateway did not start: ${error.message}; ${stderr}`);
  }
  return { url: `http://127.0.0.1:${port}`, child, pid: child.pid };
}

/** SIGTERM, then SIGKILL for the whole tree when it does not stop (a worker frozen by a count ignores SIGTERM). */
async function stopGateway(gateway) {
  const tree = processTree(gateway.pid);
  gateway.child.kill('SIGTERM');
  for (let i = 0; i < 50 && tree.some(alive); i++) await sleep(100);
  for (const pid of tree) if (alive(pid)) process.kill(pid, 'SIGKILL');
}
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function createKey(build, dataDir, flags = []) {
  const r = await run(build.node, [path.join(build.root, 'bin', 'sluice.js'), 'keys', 'create', '--account', 'bench', ...flags, '--json', '--data', dataDir], { cwd: build.root });
  if (r.code !== 0) throw new Error(`${build.name}: keys create failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

function ledger(dataDir) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      `const {DatabaseSync}=require('node:sqlite');const d=new DatabaseSync(process.argv[1],{readOnly:true,timeout:5000});` +
        `console.log(JSON.stringify(d.prepare('SELECT count(*) AS rows, coalesce(sum(cost_usd),0) AS spend FROM usage_ledger').get()));`,
      path.join(dataDir, 'sluice.db'),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

async function post(url, key, body, headers = {}) {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, text, ms: performance.now() - started };
}

// ---------------------------------------------------------------- scenarios
async function countScenario(build, upstreamPort) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hardening-'));
  const gateway = await startGateway(build, dir, writeConfig(dir, upstreamPort));
  try {
    const { key } = await createKey(build, dir);
    const countTokens = (content, signal) =>
      fetch(`${gateway.url}/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content }] }),
        signal,
      });
    // The tokenizer's tables load on the first count (a one-off hold of the loop, ~0.1 s): not the count's own.
    await (await countTokens('warm up')).text();
    let done = false;
    let worstHealthMs = 0;
    let probeStarted = 0;
    const probe = (async () => {
      while (!done) {
        probeStarted = performance.now();
        try {
          await (await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(COUNT_CAP_MS + 5_000) })).arrayBuffer();
        } catch {}
        worstHealthMs = Math.max(worstHealthMs, performance.now() - probeStarted);
        probeStarted = 0;
        await sleep(10);
      }
    })();
    const t = performance.now();
    let count;
    try {
      const r = await countTokens('x'.repeat(1024 * 1024), AbortSignal.timeout(COUNT_CAP_MS));
      count = { status: r.status, body: (await r.text()).slice(0, 120) };
    } catch {
      count = { status: null, body: `no answer within ${COUNT_CAP_MS / 1000} s` };
    }
    const countMs = performance.now() - t;
    done = true;
    // A /healthz still unanswered (the worker frozen) has waited this long at least.
    if (probeStarted !== 0) worstHealthMs = Math.max(worstHealthMs, performance.now() - probeStarted);
    return { countMs: round(countMs, 0), countAnswer: count, worstHealthzMs: round(worstHealthMs, 1), capped: count.status === null };
  } finally {
    await stopGateway(gateway);
  }
}

async function scrape(url, token) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}: ${text.slice(0, 200)}`);
  return { bytes: Buffer.byteLength(text), series: text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length };
}

async function metricsScenario(build, upstreamPort) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hardening-'));
  const token = 'bench-metrics-token';
  const gateway = await startGateway(build, dir, writeConfig(dir, upstreamPort), { workers: 2, args: ['--metrics-token', token] });
  try {
    const { key } = await createKey(build, dir);
    for (let i = 0; i < 20; i++) await post(`${gateway.url}/v1/chat/completions`, key, { model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    // A scrape before every worker has started waits for them and fails (about 5 s after the start, in
    // builds before and after this issue alike): the baseline is taken once the cluster answers.
    let before;
    for (let tries = 0; before === undefined; tries++) {
      before = await scrape(gateway.url, token).catch((error) => {
        if (tries === 10) throw error;
      });
    }
    const rssBefore = treeMemoryMB(gateway.pid).rss;
    let next = 0;
    const names = 10_000;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < names) {
          next++;
          await post(`${gateway.url}/v1/chat/completions`, key, { model: `random-${Math.random().toString(36).slice(2)}`, messages: [{ role: 'user', content: 'hi' }] });
        }
      }),
    );
    const after = await scrape(gateway.url, token);
    const t = performance.now();
    await scrape(gateway.url, token);
    return { before, after, scrapeMs: round(performance.now() - t, 1), rssGrowthMB: round(treeMemoryMB(gateway.pid).rss - rssBefore, 1) };
  } finally {
    await stopGateway(gateway);
  }
}

async function budgetScenario(build, upstreamPort) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hardening-'));
  const gateway = await startGateway(build, dir, writeConfig(dir, upstreamPort));
  try {
    const { key } = await createKey(build, dir, ['--budget-usd', '0.05']);
    const big = await post(`${gateway.url}/v1/chat/completions`, key, { model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], n: 128, max_tokens: 1000 });
    const ordinary = await post(`${gateway.url}/v1/chat/completions`, key, { model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
    await sleep(1_500); // the ledger's writer flushes in batches
    const { spend } = ledger(dir);
    return { bigStatus: big.status, ordinaryAfterStatus: ordinary.status, spendUsd: round(spend, 4), budgetUsd: 0.05, overshoot: round(spend / 0.05, 2) };
  } finally {
    await stopGateway(gateway);
  }
}

async function redisScenario(build, upstreamPort) {
  const { default: Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  const prefix = `sluice-hardening-${process.pid}-${Date.now()}:`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hardening-'));
  const gateway = await startGateway(build, dir, writeConfig(dir, upstreamPort), { workers: 2, args: ['--redis', REDIS_URL, '--redis-prefix', prefix] });
  try {
    const created = await createKey(build, dir, ['--concurrency', '4', '--budget-usd', '1000']);
    const outcomes = [];
    let stop = false;
    const load = (async () => {
      const inFlight = [];
      while (!stop) {
        const at = performance.now();
        inFlight.push(
          post(`${gateway.url}/v1/chat/completions`, created.key, { model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, bench_delay_ms: 100 }).then(
            (r) => outcomes.push({ at, status: r.status, inFlightRefusal: r.status === 429 && /in flight/.test(r.text) }),
            () => outcomes.push({ at, status: 0 }),
          ),
        );
        await sleep(50);
      }
      await Promise.all(inFlight);
    })();
    await sleep(3_000);
    const pauseAt = performance.now();
    await redis.call('CLIENT', 'PAUSE', '5000', 'ALL');
    const pauseEnd = pauseAt + 5_000;
    await sleep(5_000 + 30_000);
    stop = true;
    await load;
    await sleep(2_000);
    const after = outcomes.filter((o) => o.at >= pauseEnd + 200);
    const firstAdmitted = after.find((o) => o.status === 200);
    let lastRefused = null;
    for (const o of after) if (o.status !== 200) lastRefused = o;
    const keys = await redis.keys(`${prefix}limit:key:${created.id}:spend:*`);
    const redisSpend = keys.length === 0 ? 0 : Number((await redis.get(keys[0])) ?? 0);
    const { spend } = ledger(dir);
    return {
      requestsAfterPause: after.length,
      refusedAfterPause: after.filter((o) => o.status !== 200).length,
      inFlightRefusalsAfterPause: after.filter((o) => o.inFlightRefusal).length,
      firstAdmittedAfterPauseMs: firstAdmitted ? round(firstAdmitted.at - pauseEnd, 0) : null,
      lastRefusalAfterPauseMs: lastRefused ? round(lastRefused.at - pauseEnd, 0) : null,
      redisSpendUsd: round(redisSpend, 5),
      ledgerSpendUsd: round(spend, 5),
    };
  } finally {
    await stopGateway(gateway);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

async function timedGet(url) {
  const t = performance.now();
  const response = await fetch(url);
  const bytes = (await response.arrayBuffer()).byteLength;
  return { status: response.status, ms: round(performance.now() - t, 0), bytes };
}

/** A build with a cap on discovery (`discover.max_models`) is given one as large as the list, so that both builds hold every model. */
const knowsDiscoveryCap = (build) => fs.readFileSync(path.join(build.root, 'dist', 'config', 'config-file.js'), 'utf8').includes('max_models');

async function catalogueScenario(build, upstreamPort) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-hardening-'));
  const gateway = await startGateway(build, dir, writeConfig(dir, upstreamPort, { big: true, maxModels: knowsDiscoveryCap(build) }), { workers: 1 });
  try {
    const { key } = await createKey(build, dir);
    // Discovery lists at start; wait until a model from the end of the list resolves.
    const last = `family-${(CATALOGUE_SIZE - 1) % 97}/model-${CATALOGUE_SIZE - 1}`;
    let seen = false;
    for (let i = 0; i < 240 && !seen; i++) {
      const r = await fetch(`${gateway.url}/v1/models/${last}`, { headers: { authorization: `Bearer ${key}` } });
      await r.arrayBuffer();
      seen = r.status === 200;
      if (!seen) await sleep(500);
    }
    const rssBefore = treeMemoryMB(gateway.pid).rss;
    const page = await timedGet(`${gateway.url}/models`);
    const json = await timedGet(`${gateway.url}/models.json`);
    const t = performance.now();
    const list = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const listBytes = (await list.arrayBuffer()).byteLength;
    const v1 = { status: list.status, ms: round(performance.now() - t, 0), bytes: listBytes };
    const rssAfter = treeMemoryMB(gateway.pid).rss;
    await sleep(10_000);
    return { discovered: seen, models: page, modelsJson: json, v1Models: v1, rssBeforeMB: rssBefore, rssAfterMB: rssAfter, rssTenSecondsLaterMB: treeMemoryMB(gateway.pid).rss };
  } finally {
    await stopGateway(gateway);
  }
}

// ---------------------------------------------------------------- main
const SCENARIOS = { count: countScenario, metrics: metricsScenario, budget: budgetScenario, redis: redisScenario, catalogue: catalogueScenario };
const upstreamPort = await freePort();
const upstream = await startUpstream(upstreamPort);
const results = {};
try {
  for (const name of ONLY) {
    for (const build of builds) {
      process.stdout.write(`${name} on ${build.name} … `);
      try {
        results[name] = { ...results[name], [build.name]: await SCENARIOS[name](build, upstreamPort) };
      } catch (error) {
        results[name] = { ...results[name], [build.name]: { error: String(error.message ?? error) } };
      }
      console.log(JSON.stringify(results[name][build.name]));
    }
  }
} finally {
  upstream.close();
  for (const child of started) for (const pid of processTree(child.pid)) if (alive(pid)) process.kill(pid, 'SIGKILL');
}
fs.writeFileSync(path.join(BENCH_DIR, 'hardening-results.json'), `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
