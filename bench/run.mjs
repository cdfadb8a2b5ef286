// Sluice benchmark harness (issue 5). Run from the repository root with `npm run bench`
// (builds, installs bench/ dependencies, then runs this), or `node bench/run.mjs [--quick]`.
//
// Targets, all in front of the same fake upstream (bench/upstream.mjs) in the same run:
//   direct : the upstream reached directly
//   nginx  : nginx as a plain reverse proxy, when /usr/sbin/nginx exists
//   floor  : bench/floor.mjs, a minimal node:http + undici proxy with the same workers (issue 31)
//   sluice : `node bin/sluice.js serve --workers N` (the real CLI)
//   before : with BENCH_BASE_DIR, the build before, a gateway of its own with the same workers
// The benchmark model serves /v1/completions and /v1/chat/completions; the closed-loop and
// streaming scenarios measure both operations in the same run, so that the chat relay can be set
// beside the legacy completions relay.
// The limits scenario sets gateways with per-key limits (in memory, over IPC, on Redis) beside a
// key without limits, to report what the admit stage costs per request.
// The usage scenario (opt-in) times the console's usage page and its CSV over 10 million ledger rows.
// The mcp scenario sets an MCP tools/call through Sluice beside calling the upstream MCP server directly.
// Writes bench/RESULTS.md and bench/results.json. See bench/README.md for the knobs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  cpuSeconds,
  freePort,
  machineCpu,
  processTree,
  round,
  run,
  sleep,
  spawnWithNofile,
  treeCpuSeconds,
  treeMemoryMB,
  waitForHttp,
  waitedChildrenCpuSeconds,
  dropRedisPrefix,
  percentile,
} from './lib.mjs';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const SLUICE_BIN = path.join(ROOT, 'bin', 'sluice.js');
const NGINX = '/usr/sbin/nginx';
// Where RESULTS.md and results.json go (default bench/; BENCH_RESULTS_DIR for trial runs).
const OUT_DIR = process.env.BENCH_RESULTS_DIR || BENCH_DIR;

// ---------------------------------------------------------------- settings
const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const env = (name, fallback) => (process.env[name] !== undefined && process.env[name] !== '' ? process.env[name] : fallback);
const num = (name, full, quick) => Number(env(name, QUICK ? quick : full));
const S = {
  quick: QUICK,
  seconds: num('BENCH_SECONDS', 8, 3),
  warmupSeconds: num('BENCH_WARMUP_SECONDS', 2, 1),
  rounds: num('BENCH_ROUNDS', 3, 1),
  connections: env('BENCH_CONNECTIONS', '1,32,256').split(',').map(Number),
  openRate: num('BENCH_OPEN_RATE', 2000, 1000),
  openSeconds: num('BENCH_OPEN_SECONDS', 30, 8),
  // N@R: N concurrent streams at R tokens/s each, for streamSeconds of tokens.
  streams: env('BENCH_STREAMS', QUICK ? '1000@20,2000@2' : '1000@20,10000@20,10000@2').split(',').map((x) => {
    const [n, r] = x.split('@').map(Number);
    return { n, tps: r || 20 };
  }),
  streamSeconds: num('BENCH_STREAM_SECONDS', 5, 3),
  // Streams started per second at most in the streaming points (a 10,000-stream point then ramps over 10,000 / this s).
  streamRampRate: num('BENCH_STREAM_RAMP_RATE', 2000, 2000),
  streamStartStreams: num('BENCH_STREAM_START', 1000, 1000),
  // CPU per relayed stream token (issue 31): N streams × T tokens at R tokens/s each, started over N/1000 s.
  tokenPoint: (() => {
    const m = /^(\d+)x(\d+)@(\d+)$/.exec(env('BENCH_TOKEN_STREAMS', '200x500@250'));
    if (!m) throw new Error('BENCH_TOKEN_STREAMS: streams x tokens @ tokens-per-second, e.g. 200x500@250');
    return { n: Number(m[1]), tokens: Number(m[2]), tps: Number(m[3]) };
  })(),
  // /v1/chat/completions beside /v1/completions (closed loop and streams); BENCH_CHAT=0 leaves it
  // out (and the model's endpoints are then [completions] only, for builds without chat).
  chat: env('BENCH_CHAT', '1') !== '0',
  chatStreams: (env('BENCH_CHAT_STREAMS', '1000@20') === 'none' ? [] : env('BENCH_CHAT_STREAMS', '1000@20').split(',')).map((x) => {
    const [n, r] = x.split('@').map(Number);
    return { n, tps: r || 20 };
  }),
  keys: num('BENCH_KEYS', 100_000, 20_000),
  keysRounds: num('BENCH_KEYS_ROUNDS', 2, 1),
  ledgerSeconds: num('BENCH_LEDGER_SECONDS', 8, 3),
  workers: num('BENCH_WORKERS', os.availableParallelism(), os.availableParallelism()),
  upstreamLatencyMs: num('BENCH_UPSTREAM_LATENCY_MS', 0, 0),
  wrkThreads: num('BENCH_WRK_THREADS', 1, 1),
  // Routing scenario: the happy path's connection counts (bench-model vs bench-routed, S.rounds
  // rounds of S.seconds), and the half-failing deployment's closed-loop runs.
  routingConnections: env('BENCH_ROUTING_CONNECTIONS', env('BENCH_CONNECTIONS', '1,32,256')).split(',').map(Number),
  flakySeconds: num('BENCH_FLAKY_SECONDS', 40, 10),
  flakyConnections: num('BENCH_FLAKY_CONNECTIONS', 32, 32),
  flakyFailEvery: num('BENCH_FLAKY_FAIL_EVERY', 2, 2),
  flakyStreamTokens: num('BENCH_FLAKY_STREAM_TOKENS', 16, 16),
  flakyStreamRate: num('BENCH_FLAKY_STREAM_RATE', 1000, 1000),
  // bench-flaky's own `routing:` block, a YAML flow mapping (empty: the defaults of ROUTING_DEFAULTS).
  flakyRouting: env('BENCH_FLAKY_ROUTING', ''),
  // Seconds between /status.json samples during those runs (0: none). Each takes the answering
  // worker a few hundred ms (it reads up to 20,000 ledger rows), which weighs on the run itself.
  flakyStatusEvery: num('BENCH_FLAKY_STATUS_EVERY', 5, 5),
  // Limits scenario (the admit stage): closed-loop points of its own, rounds interleaving the
  // configurations (no limits, limits in memory, limits on Redis; with --workers 2 too).
  limitsConnections: env('BENCH_LIMITS_CONNECTIONS', '1,32').split(',').map(Number),
  limitsSeconds: num('BENCH_LIMITS_SECONDS', 4, 2),
  limitsRounds: num('BENCH_LIMITS_ROUNDS', 3, 1),
  limitsWorkers2: env('BENCH_LIMITS_WORKERS2', '1') !== '0',
  // The limits configurations measured (ids of limitsConfigurations), e.g. `none,redis-none,redis`; empty: all.
  limitsConfigurations: env('BENCH_LIMITS_CONFIGURATIONS', '').split(',').filter(Boolean),
  // Telemetry scenario: rounds like the limits scenario's; BENCH_BASE_DIR, a checkout of an earlier
  // commit with dist/ built, is the build before (left out when unset).
  telemetryRounds: num('BENCH_TELEMETRY_ROUNDS', 3, 1),
  telemetrySeconds: num('BENCH_TELEMETRY_SECONDS', 4, 2),
  telemetryScrapes: num('BENCH_TELEMETRY_SCRAPES', 50, 20),
  baseDir: env('BENCH_BASE_DIR', ''),
  // The node that runs the build before (its gateway and its CLI): an older build may need an older
  // runtime, e.g. a native addon compiled for it. Default: the node running the bench.
  baseNode: env('BENCH_BASE_NODE', process.execPath),
  // Port-sharing scenario: `--port-sharing reuseport` against `handoff` on gateways of
  // portSharingWorkers workers, interleaved rounds of a short whole chat request.
  portSharingConnections: env('BENCH_PORTSHARING_CONNECTIONS', '32,128').split(',').map(Number),
  portSharingSeconds: num('BENCH_PORTSHARING_SECONDS', 4, 2),
  portSharingRounds: num('BENCH_PORTSHARING_ROUNDS', 3, 1),
  portSharingWorkers: num('BENCH_PORTSHARING_WORKERS', 2, 2),
  redisUrl: env('BENCH_REDIS_URL', 'redis://127.0.0.1:6379'),
  // Seconds of uninterrupted load on one limited key (c=32), in 10 s slices, after the rounds (0: none).
  limitsSustainedSeconds: num('BENCH_LIMITS_SUSTAINED_SECONDS', 0, 0),
  // Seconds per point of the admit stage alone (bench/limits-admit.mjs; 0: not run).
  limitsMicroSeconds: num('BENCH_LIMITS_MICRO_SECONDS', 1.5, 0.5),
  // Usage scenario (opt-in: BENCH_ONLY=usage): a store filled with this many ledger rows over
  // usageDays days, the usage page and its CSV timed on it, usageRequests times per point.
  usageRows: num('BENCH_USAGE_ROWS', 10_000_000, 1_000_000),
  usageDays: num('BENCH_USAGE_DAYS', 120, 120),
  usageAccounts: num('BENCH_USAGE_ACCOUNTS', 20, 20),
  usageKeysPerAccount: num('BENCH_USAGE_KEYS_PER_ACCOUNT', 10, 10),
  usageModels: num('BENCH_USAGE_MODELS', 12, 12),
  usageRequests: num('BENCH_USAGE_REQUESTS', 30, 10),
  // Embeddings scenario: /v1/embeddings (a batch of short inputs, relayed) beside a whole chat
  // request, closed loop on the main gateway; BENCH_EMBEDDINGS=0 leaves it out (builds without embeddings).
  embeddings: env('BENCH_EMBEDDINGS', '1') !== '0',
  embeddingsConnections: env('BENCH_EMBEDDINGS_CONNECTIONS', '32').split(',').map(Number),
  embeddingsBatch: num('BENCH_EMBEDDINGS_BATCH', 16, 16),
  // base64 is what the openai SDK (and LangChain through it) asks by default; the AI SDK asks float.
  embeddingsEncodings: env('BENCH_EMBEDDINGS_ENCODINGS', 'base64,float').split(','),
  embeddingDimensions: num('BENCH_EMBEDDING_DIMENSIONS', 384, 384),
  // MCP scenario: `tools/call` of an upstream MCP server's `echo` tool, direct and through a
  // one-worker gateway (its /mcp and /mcp/{server}), interleaved rounds at these connection counts.
  mcpConnections: env('BENCH_MCP_CONNECTIONS', '1,32').split(',').map(Number),
  mcpSeconds: num('BENCH_MCP_SECONDS', 4, 2),
  mcpRounds: num('BENCH_MCP_ROUNDS', 3, 1),
  mcpText: env('BENCH_MCP_TEXT', 'hello from the bench'),
};
const BODY = JSON.stringify({ model: 'bench-model', prompt: 'Say hi', max_tokens: 16 });
const streamBody = (tokens, tps) =>
  JSON.stringify({ model: 'bench-model', prompt: 'Say hi', max_tokens: tokens, stream: true, stream_options: { include_usage: true }, bench_tokens_per_second: tps });
const CHAT_MESSAGES = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Say hi' },
];
const CHAT_BODY = JSON.stringify({ model: 'bench-model', messages: CHAT_MESSAGES, max_tokens: 16 });
const chatStreamBody = (tokens, tps) =>
  JSON.stringify({ model: 'bench-model', messages: CHAT_MESSAGES, max_tokens: tokens, stream: true, stream_options: { include_usage: true }, bench_tokens_per_second: tps });
/** A batch of short inputs, as a retrieval pipeline embeds the chunks of a document. */
const EMBEDDING_INPUTS = Array.from({ length: S.embeddingsBatch }, (_, i) => `Chunk ${i + 1} of a short document about rivers and sluices.`);
const embeddingsBody = (encoding) => JSON.stringify({ model: 'bench-embed', input: EMBEDDING_INPUTS, encoding_format: encoding });
/** The operations compared: path, request bodies and what marks one token in a stream; `embeddings-<encoding>` whole only. */
const OPERATIONS = {
  completions: { path: '/v1/completions', body: BODY, streamBody, tokenMarker: '"text"' },
  chat: { path: '/v1/chat/completions', body: CHAT_BODY, streamBody: chatStreamBody, tokenMarker: '"delta":{"content":"' },
  ...Object.fromEntries(S.embeddingsEncodings.map((encoding) => [`embeddings-${encoding}`, { path: '/v1/embeddings', body: embeddingsBody(encoding) }])),
};

// ---------------------------------------------------------------- progress and cleanup
const t0 = Date.now();
const stamp = () => {
  const s = Math.floor((Date.now() - t0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};
const log = (msg) => console.log(`[bench ${stamp()}] ${msg}`);
const failures = []; // gateway problems and failed checks, reported at the end
const fail = (msg) => {
  failures.push(msg);
  console.log(`[bench ${stamp()}] !!! ${msg}`);
};

const owned = new Set(); // every long-lived child we started: { name, child, stop() }
async function cleanup() {
  for (const p of [...owned].reverse()) {
    try {
      await p.stop();
    } catch {
      /* best effort */
    }
  }
}
let cleaningUp = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (cleaningUp) return;
    cleaningUp = true;
    console.log(`[bench] ${signal}: stopping everything started by the bench`);
    cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', () => {
  // Last resort, synchronous: kill by pid only what we started and is still alive.
  for (const p of owned) {
    for (const pid of processTree(p.child.pid).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
});

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** A long-lived process: started through bash with a raised open-files limit, stderr kept. */
function startProcess(name, command, args, extraEnv = {}, stopSignal = 'SIGTERM') {
  const child = spawnWithNofile(command, args, { env: { ...process.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  const proc = { name, child, stdout: '', stderr: '', stderrLines: 0, exited: false, expectedExit: false };
  child.stdout.on('data', (d) => {
    if (proc.stdout.length < 65536) proc.stdout += d;
  });
  child.stderr.on('data', (d) => {
    proc.stderrLines += String(d).split('\n').length - 1;
    proc.stderr = (proc.stderr + d).slice(-16384);
  });
  child.on('exit', (code, signal) => {
    proc.exited = true;
    proc.exitCode = code;
    proc.exitSignal = signal;
    owned.delete(proc);
    if (!proc.expectedExit && !cleaningUp) fail(`${name} (pid ${child.pid}) exited unexpectedly: code ${code}, signal ${signal}; stderr tail: ${proc.stderr.slice(-1500)}`);
  });
  proc.stop = async (graceMs = 40_000) => {
    proc.expectedExit = true;
    if (proc.exited) return proc.exitCode;
    try {
      child.kill(stopSignal);
    } catch {
      /* gone */
    }
    if (!(await waitExit(child, graceMs))) {
      for (const pid of processTree(child.pid).reverse()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      await waitExit(child, 5000);
      return 'killed';
    }
    return proc.exitCode;
  };
  owned.add(proc);
  return proc;
}

// ---------------------------------------------------------------- telemetry (issue 15)

/** An OTLP/HTTP trace receiver that keeps nothing but counts: where the traced gateway exports. */
async function startOtlpSink() {
  const sink = { posts: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (chunk) => (sink.bytes += chunk.length));
    req.on('end', () => {
      sink.posts++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.url = `http://127.0.0.1:${server.address().port}`;
  sink.close = () => new Promise((resolve) => server.close(resolve));
  return sink;
}

function telemetryConfigurations(baseCommit) {
  const before = baseCommit === null ? [] : [{ id: 'before', label: `the build before, commit ${baseCommit.slice(0, 12)}`, bin: path.join(S.baseDir, 'bin', 'sluice.js'), args: [], env: {}, base: null }];
  const base = before.length ? 'before' : null;
  return [
    ...before,
    { id: 'metrics', label: 'metrics (always on), access log off', args: ['--no-access-log'], env: {}, base },
    { id: 'default', label: 'metrics and the access log at info (the default)', args: [], env: { SLUICE_LOG_LEVEL: 'info' }, base },
    { id: 'traced', label: 'metrics and traces (OTLP/HTTP protobuf to a local sink), access log off', args: ['--no-access-log'], env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'SINK' }, base },
  ];
}

/** Sequential scrapes of /metrics: how long one takes and how big it is. */
async function scrapeTimes(url, headers, n) {
  const ms = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const body = await new Promise((resolve, reject) => {
      http.get(url, { headers }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`${url}: ${res.statusCode} ${text.slice(0, 200)}`))));
      }).on('error', reject);
    });
    ms.push(performance.now() - t0);
    bytes = body.length;
  }
  return { scrapes: n, p50Ms: median(ms), maxMs: Math.max(...ms), bytes };
}

/**
 * What telemetry costs on the request path: the same non-streaming load as the limits scenario
 * (completions and chat, c=1 and c=32, interleaved rounds) through one-worker gateways that differ
 * only in telemetry, beside the build before it when BENCH_BASE_DIR names one; then the time a
 * scrape takes, with one worker and with two (the primary adding both up).
 */
async function scenarioTelemetry(work, state) {
  let baseCommit = null;
  if (S.baseDir) {
    // The entry bin/sluice.js loads: dist/cli/main.js, or dist/cli.js in a build from before the CLI's split.
    const entries = [path.join('dist', 'cli', 'main.js'), path.join('dist', 'cli.js')];
    if (!entries.some((entry) => fs.existsSync(path.join(S.baseDir, entry)))) throw new Error(`BENCH_BASE_DIR ${S.baseDir} has no dist/: build it first`);
    baseCommit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: S.baseDir }).toString().trim();
  }
  const sink = await startOtlpSink();
  const configurations = telemetryConfigurations(baseCommit);
  const out = {
    settings: { connections: S.limitsConnections, seconds: S.telemetrySeconds, rounds: S.telemetryRounds, baseDir: S.baseDir || null, baseNode: S.baseDir ? S.baseNode : null },
    configurations,
    gateways: {},
    rows: [],
    scrapes: {},
    sink: null,
  };
  state.telemetry = out;
  const gateways = {};
  const token = 'bench-metrics-token-0123456789';
  try {
    for (const c of configurations) {
      const dataDir = path.join(work, `data-telemetry-${c.id}`);
      fs.mkdirSync(dataDir, { recursive: true });
      const config = writeConfig(dataDir, upstream.port);
      const key = await createKeyWithCli(dataDir, c.bin);
      const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v === 'SINK' ? sink.url : v]));
      const metricsPort = c.id === 'metrics' ? await freePort() : null;
      const args = [...c.args, ...(c.id === 'before' ? [] : ['--metrics-token', token]), ...(metricsPort ? ['--metrics-listen', `127.0.0.1:${metricsPort}`] : [])];
      const gw = await startSluice(`sluice (telemetry, ${c.id})`, dataDir, config, await freePort(), { workers: 1, args, env, bin: c.bin });
      gateways[c.id] = { gw, key, metricsPort };
      out.gateways[c.id] = { command: `sluice serve --workers 1 ${args.join(' ').replace(token, '<token>')}`, env: Object.keys(env).join(' ') || null };
      log(`telemetry: gateway ${c.id} on ${gw.url} (pid ${gw.pid()})`);
    }
    const operations = S.chat ? ['completions', 'chat'] : ['completions'];
    log(`telemetry: warm-up pass, 1 s at each point, not measured`);
    for (const cn of S.limitsConnections) for (const operation of operations) for (const c of configurations) await closedLoopRun(gateways[c.id].gw, cn, 1, { key: gateways[c.id].key, operation });
    for (let r = 1; r <= S.telemetryRounds; r++) {
      const shift = (r - 1) % configurations.length;
      const order = [...configurations.slice(shift), ...configurations.slice(0, shift)];
      const ops = r % 2 === 1 ? operations : [...operations].reverse();
      log(`telemetry, round ${r}/${S.telemetryRounds}: order ${order.map((c) => c.id).join(', ')}`);
      for (const cn of S.limitsConnections) {
        for (const operation of ops) {
          for (const c of order) {
            const g = gateways[c.id];
            if (!alive(g.gw)) continue;
            const row = await measureClosed(g.gw, cn, { key: g.key, operation }, `${c.id}${operation === 'chat' ? ' chat' : ''}`, { warmupSeconds: 0, seconds: S.telemetrySeconds });
            out.rows.push({ round: r, config: c.id, ...row });
          }
        }
      }
    }
    out.sink = { posts: sink.posts, bytes: sink.bytes };
    // One worker: its own registry. Two: the primary asks both and adds them up.
    const one = gateways.metrics;
    out.scrapes.oneWorkerListener = await scrapeTimes(`http://127.0.0.1:${one.metricsPort}/metrics`, {}, S.telemetryScrapes);
    out.scrapes.oneWorkerGatewayPort = await scrapeTimes(`${one.gw.url}/metrics`, { authorization: `Bearer ${token}` }, S.telemetryScrapes);
    for (const g of Object.values(gateways)) await stopGateway(g.gw);
    const dataDir = path.join(work, 'data-telemetry-w2');
    fs.mkdirSync(dataDir, { recursive: true });
    const metricsPort = await freePort();
    const two = await startSluice('sluice (telemetry, w2)', dataDir, writeConfig(dataDir, upstream.port), await freePort(), { workers: 2, args: ['--metrics-token', token, '--metrics-listen', `127.0.0.1:${metricsPort}`] });
    const key = await createKeyWithCli(dataDir);
    await closedLoopRun(two, 32, 2, { key, operation: 'completions' });
    out.scrapes.twoWorkersListener = await scrapeTimes(`http://127.0.0.1:${metricsPort}/metrics`, {}, S.telemetryScrapes);
    out.scrapes.twoWorkersGatewayPort = await scrapeTimes(`${two.url}/metrics`, { authorization: `Bearer ${token}` }, S.telemetryScrapes);
    await stopGateway(two);
    for (const [where, x] of Object.entries(out.scrapes)) log(`telemetry: scrape ${where}: p50 ${f(x.p50Ms, 2)} ms, max ${f(x.maxMs, 2)} ms, ${x.bytes} bytes`);
  } finally {
    for (const g of Object.values(gateways)) if (alive(g.gw)) await stopGateway(g.gw);
    await sink.close();
  }
}

function telemetryReport(L, t) {
  L.push('## Telemetry: what metrics, the access log and traces cost', '');
  L.push(
    'The same non-streaming load as the closed loop (completions and chat, wrk) through one-worker gateways that differ only in telemetry, in interleaved rounds ' +
      `(${t.settings.rounds} round(s) of ${t.settings.seconds} s per point after a discarded 1 s pass; the configurations rotate and the operations swap from one round to the next).` +
      (t.settings.baseDir
        ? ' `before` is the build of the previous commit named below, built in its own checkout (`BENCH_BASE_DIR`), on the same harness, upstream and machine' +
          (t.settings.baseNode ? `, run by \`${t.settings.baseNode}\`${results.machine.baseNode ? ` (Node ${results.machine.baseNode.version})` : ''} (\`BENCH_BASE_NODE\`)` : '') +
          '.'
        : ' No build before was given (`BENCH_BASE_DIR`), so the differences are between telemetry settings only.'),
    '',
  );
  L.push('| configuration | command | environment |', '|---|---|---|');
  for (const c of t.configurations) L.push(`| ${c.id}: ${c.label} | \`${t.gateways[c.id]?.command ?? ''}\` | ${t.gateways[c.id]?.env ?? ''} |`);
  L.push('');
  const rows = roundsTable(t);
  if (rows.length) {
    L.push('| conns | operation | configuration | req/s | p50 ms | p99 ms | Sluice CPU µs/req | Δ p50 µs | Δ CPU µs/req | req/s vs base | Δ p50 per round | Δ CPU per round | other CPU | non-2xx+errors |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const x of rows) {
      const hasBase = x.base !== null;
      L.push(
        `| ${x.connections} | ${x.operation} | ${x.config} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${f(x.cpuUsPerReq, 0)} | ${hasBase ? signed(x.dP50Us, 0) : ''} | ${hasBase ? signed(x.dCpuUs, 0) : ''} | ${hasBase ? signedPct(x.rpsRatio, 1) : ''} | ` +
          `${x.dP50UsPerRound.map((v) => signed(v, 0)).join(', ')} | ${x.dCpuUsPerRound.map((v) => signed(v, 0)).join(', ')} | ${f(x.otherCpuPct, 0)}% | ${x.bad} |`,
      );
    }
    L.push('', 'Medians of the rounds; "Δ" = this configuration minus its base in the same round, median over the rounds, then each round\'s. "Sluice CPU" = utime+stime of the gateway process per request.', '');
  }
  if (t.sink) L.push(`The traced gateway exported ${t.sink.posts} OTLP requests (${f(t.sink.bytes / 1e6, 1)} MB) to the sink during the run.`, '');
  const scrapes = Object.entries(t.scrapes);
  if (scrapes.length) {
    L.push('| /metrics scrape | p50 ms | max ms | bytes |', '|---|---|---|---|');
    const names = { oneWorkerListener: 'one worker, --metrics-listen', oneWorkerGatewayPort: 'one worker, gateway port with the token', twoWorkersListener: 'two workers, --metrics-listen (the primary adds both up)', twoWorkersGatewayPort: 'two workers, gateway port (the worker asks the primary)' };
    for (const [where, x] of scrapes) L.push(`| ${names[where] ?? where} | ${f(x.p50Ms, 2)} | ${f(x.maxMs, 2)} | ${x.bytes} |`);
    L.push('', `Sequential scrapes after the load, ${scrapes[0][1].scrapes} each.`, '');
  }
}

// ---------------------------------------------------------------- clouds
/** The cloud kinds beside the OpenAI-compatible relay: one model each, on providers that all reach the bench upstream. */
const CLOUD_CONFIGURATIONS = [
  { id: 'openai', label: 'OpenAI-compatible relay (api_key)', model: 'bench-model', base: null },
  { id: 'azure', label: 'Azure OpenAI relay (api-key, api_version 2024-10-21)', model: 'bench-azure', base: 'openai' },
  { id: 'bedrock', label: 'Bedrock Converse, translated, SigV4-signed per request', model: 'bench-bedrock', base: 'openai' },
];

function writeCloudConfig(dir, upstreamPort) {
  const file = path.join(dir, 'sluice.yaml');
  const pricing = '{ input_per_mtok: 0.2, output_per_mtok: 0.6 }';
  fs.writeFileSync(
    file,
    `# generated by bench/run.mjs (clouds)
providers:
  - id: bench-upstream
    kind: openai
    base_url: http://127.0.0.1:${upstreamPort}/v1
    api_key: bench-upstream-credential
    max_connections: 16384
  - id: bench-azure
    kind: azure
    base_url: http://127.0.0.1:${upstreamPort}
    api_key: bench-azure-credential
    api_version: 2024-10-21
    max_connections: 16384
  - id: bench-bedrock
    kind: bedrock
    region: us-east-1
    base_url: http://127.0.0.1:${upstreamPort}
    access_key_id: AKIABENCHBENCHBENCH0
    secret_access_key: bench-secret-access-key-0123456789abcdefgh
    max_connections: 16384
models:
  - { id: bench-model, provider: bench-upstream, upstream_model: upstream-model, endpoints: [chat], pricing: ${pricing} }
  - { id: bench-azure, provider: bench-azure, upstream_model: bench-deployment, endpoints: [chat], pricing: ${pricing} }
  - { id: bench-bedrock, provider: bench-bedrock, upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', endpoints: [chat], pricing: ${pricing} }
`,
  );
  return file;
}

/**
 * What the cloud kinds cost on the request path: the same non-streaming chat load through one
 * one-worker gateway, to the same bench upstream, as an OpenAI-compatible relay, an Azure OpenAI
 * relay and a Bedrock Converse translation (signed on every request), in interleaved rounds; then
 * SigV4 signing alone, timed in a process of its own with the gateway's own signer.
 */
async function scenarioClouds(work, state) {
  const dataDir = path.join(work, 'data-clouds');
  fs.mkdirSync(dataDir, { recursive: true });
  const config = writeCloudConfig(dataDir, upstream.port);
  const key = await createKeyWithCli(dataDir);
  const gw = await startSluice('sluice (clouds)', dataDir, config, await freePort(), { workers: 1 });
  const out = { settings: { connections: S.limitsConnections, seconds: S.telemetrySeconds, rounds: S.telemetryRounds }, configurations: CLOUD_CONFIGURATIONS, rows: [], signing: null };
  state.clouds = out;
  const bodyOf = (model) => JSON.stringify({ model, messages: CHAT_MESSAGES, max_tokens: 16 });
  try {
    log('clouds: warm-up pass, 1 s at each point, not measured');
    for (const cn of S.limitsConnections) for (const c of CLOUD_CONFIGURATIONS) await closedLoopRun(gw, cn, 1, { key, operation: 'chat', body: bodyOf(c.model) });
    for (let r = 1; r <= S.telemetryRounds; r++) {
      const shift = (r - 1) % CLOUD_CONFIGURATIONS.length;
      const order = [...CLOUD_CONFIGURATIONS.slice(shift), ...CLOUD_CONFIGURATIONS.slice(0, shift)];
      log(`clouds, round ${r}/${S.telemetryRounds}: order ${order.map((c) => c.id).join(', ')}`);
      for (const cn of S.limitsConnections) {
        for (const c of order) {
          const row = await measureClosed(gw, cn, { key, operation: 'chat', body: bodyOf(c.model) }, `${c.id} chat`, { warmupSeconds: 0, seconds: S.telemetrySeconds });
          out.rows.push({ round: r, config: c.id, ...row });
        }
      }
    }
  } finally {
    await stopGateway(gw);
  }
  out.signing = await signingCost();
}

/** Microseconds per SigV4 signature of a chat-sized request, by the gateway's own Bedrock signer, after a warm-up. */
async function signingCost() {
  const script = `
    const { AwsIdentity, RequestSigner } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist', 'providers', 'bedrock', 'request-signer.js')).href)});
    const identity = new AwsIdentity({ id: 'bench-bedrock', kind: 'bedrock', access_key_id: 'AKIABENCHBENCHBENCH0', secret_access_key: 'bench-secret-access-key-0123456789abcdefgh' }, {});
    const auth = new RequestSigner(identity, 'us-east-1', 'https://bedrock-runtime.us-east-1.amazonaws.com');
    const body = ${JSON.stringify(JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Say hello in one short sentence.' }] }], inferenceConfig: { maxTokens: 16 } }))};
    const request = { method: 'POST', path: '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse', headers: { 'content-type': 'application/json' }, body };
    const signal = new AbortController().signal;
    for (let i = 0; i < 2000; i++) await auth.headersFor(request, signal);
    const n = 20000;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await auth.headersFor(request, signal);
    console.log(JSON.stringify({ signatures: n, usPerSignature: Number(process.hrtime.bigint() - t0) / 1000 / n }));`;
  const r = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  if (r.code !== 0) {
    fail(`clouds: timing the signer failed: ${r.stderr.slice(-800)}`);
    return null;
  }
  const signing = JSON.parse(r.stdout.trim().split('\n').at(-1));
  log(`clouds: SigV4 signing alone: ${f(signing.usPerSignature, 1)} µs per request (${signing.signatures} signatures)`);
  return signing;
}

function cloudsReport(L, c) {
  L.push('## Cloud providers: what Azure and Bedrock cost beside an OpenAI-compatible relay', '');
  L.push(
    `Non-streaming chat (16 tokens) through one one-worker gateway to the same bench upstream, one model per kind, in interleaved rounds (${c.settings.rounds} round(s) of ${c.settings.seconds} s per point after a discarded 1 s pass; the order rotates each round). ` +
      'The upstream does not check credentials or signatures: only the gateway\'s cost is measured. "Δ" = the kind minus the OpenAI-compatible relay in the same round, median over the rounds.',
    '',
  );
  L.push('| conns | kind | req/s | p50 ms | p99 ms | Sluice CPU µs/req | Δ p50 µs | Δ CPU µs/req | Δ CPU per round | non-2xx+errors |', '|---|---|---|---|---|---|---|---|---|---|');
  for (const x of roundsTable(c)) {
    const hasBase = x.base !== null;
    L.push(`| ${x.connections} | ${x.label} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${f(x.cpuUsPerReq, 0)} | ${hasBase ? signed(x.dP50Us, 0) : ''} | ${hasBase ? signed(x.dCpuUs, 0) : ''} | ${x.dCpuUsPerRound.map((v) => signed(v, 0)).join(', ')} | ${x.bad} |`);
  }
  L.push('');
  if (c.signing) L.push(`SigV4 signing alone (the gateway's Bedrock signer, a chat-sized Converse request, ${c.signing.signatures} signatures after a warm-up): **${f(c.signing.usPerSignature, 1)} µs per request** (target: under 50 µs).`, '');
}

// ---------------------------------------------------------------- port sharing
/** Inodes of the TCP sockets on a local port (this network namespace): listening, and accepted connections. */
function portSockets(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const listening = new Set();
  const established = new Set();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || cols[1].split(':')[1] !== hex) continue;
      if (cols[3] === '0A') listening.add(cols[9]);
      else if (cols[3] === '01') established.add(cols[9]);
    }
  }
  return { listening, established };
}

/** The primary, then its workers by pid. */
function gatewayProcesses(gw) {
  const [primary, ...workers] = processTree(gw.pid());
  return [primary, ...workers.sort((a, b) => a - b)];
}

/** Each process of a gateway (the primary first, then the workers by pid): how many of its port's listening sockets and connections it holds. */
function portHolders(gw) {
  const { listening, established } = portSockets(gw.port);
  return gatewayProcesses(gw).map((pid) => {
    const held = { pid, listening: 0, connections: 0 };
    let fds = [];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      return held;
    }
    for (const fd of fds) {
      let link = '';
      try {
        link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode === undefined) continue;
      if (listening.has(inode)) held.listening += 1;
      else if (established.has(inode)) held.connections += 1;
    }
    return held;
  });
}

/** utime+stime of each process of a gateway (the primary first, then the workers by pid). */
function cpuByProcess(gw) {
  return gatewayProcesses(gw).map((pid) => ({ pid, seconds: cpuSeconds(pid) }));
}

/** A ratio as a signed percentage with one decimal (finer than signedPct). */
const ratioPct = (r) => (Number.isFinite(r) ? `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)}%` : 'n/a');

const PORT_SHARING_MODES = [
  { id: 'handoff', label: "node:cluster's primary accepts each connection and passes it to a worker in turn", base: null },
  { id: 'reuseport', label: 'each worker listens on a socket of its own (SO_REUSEPORT), the kernel spreads the connections', base: 'handoff' },
];

/**
 * How the workers share the port: two gateways of S.portSharingWorkers workers, one per
 * `--port-sharing` mode, under the closed loop's whole chat request (completions with BENCH_CHAT=0)
 * in interleaved rounds. Besides the usual figures, which process holds the listening sockets
 * (checked: one in the primary for handoff, one per worker for reuseport), how the connections
 * were spread over the workers (sampled halfway through each run) and each worker's CPU share.
 */
async function scenarioPortSharing(work, state) {
  const operation = S.chat ? 'chat' : 'completions';
  const help = execFileSync(process.execPath, [SLUICE_BIN, 'serve', '--help'], { cwd: ROOT }).toString();
  const out = {
    settings: { connections: S.portSharingConnections, seconds: S.portSharingSeconds, rounds: S.portSharingRounds, workers: S.portSharingWorkers, operation },
    loadgen: LOADGEN,
    configurations: PORT_SHARING_MODES,
    gateways: {},
    rows: [],
  };
  state.portSharing = out;
  if (!help.includes('--port-sharing')) {
    out.skipped = 'this build has no --port-sharing flag';
    return log(`port sharing: skipped (${out.skipped})`);
  }
  const gateways = {};
  try {
    for (const c of PORT_SHARING_MODES) {
      const dataDir = path.join(work, `data-portsharing-${c.id}`);
      fs.mkdirSync(dataDir, { recursive: true });
      const config = writeConfig(dataDir, upstream.port);
      const key = await createKeyWithCli(dataDir);
      const args = ['--port-sharing', c.id];
      const gw = await startSluice(`sluice (port sharing, ${c.id})`, dataDir, config, await freePort(), { workers: S.portSharingWorkers, args });
      gateways[c.id] = { gw, key };
      // /healthz answers once one worker listens: wait (10 s at most) for every worker to be up.
      const expected = c.id === 'handoff' ? 1 : S.portSharingWorkers;
      let holders = portHolders(gw);
      for (let i = 0; i < 100 && (holders.length < S.portSharingWorkers + 1 || holders.reduce((a, x) => a + x.listening, 0) < expected); i++) {
        await sleep(100);
        holders = portHolders(gw);
      }
      const listening = holders.map((x) => x.listening);
      const idle = await idleMemory(gw, 1000);
      out.gateways[c.id] = { command: `sluice serve --workers ${S.portSharingWorkers} ${args.join(' ')}`, listening, idle };
      log(`port sharing: gateway ${c.id} on ${gw.url} (pid ${gw.pid()}), listening sockets per process (primary first): ${listening.join(', ')}`);
      const primaryListens = listening[0] === 1 && listening.slice(1).every((n) => n === 0);
      const everyWorkerListens = listening[0] === 0 && listening.length === S.portSharingWorkers + 1 && listening.slice(1).every((n) => n === 1);
      if (!(c.id === 'handoff' ? primaryListens : everyWorkerListens)) fail(`port sharing: ${c.id} gateway holds its listening sockets as ${listening.join(', ')} (primary first), not as ${c.id} does: its figures do not measure ${c.id}`);
    }
    log(`port sharing: warm-up pass, 1 s at each point, not measured`);
    for (const cn of S.portSharingConnections) for (const c of PORT_SHARING_MODES) await closedLoopRun(gateways[c.id].gw, cn, 1, { key: gateways[c.id].key, operation });
    for (let r = 1; r <= S.portSharingRounds; r++) {
      const order = r % 2 === 1 ? PORT_SHARING_MODES : [...PORT_SHARING_MODES].reverse();
      log(`port sharing, round ${r}/${S.portSharingRounds}: order ${order.map((c) => c.id).join(', ')}`);
      for (const cn of S.portSharingConnections) {
        for (const c of order) {
          const { gw, key } = gateways[c.id];
          if (!alive(gw)) continue;
          // The load generator opens its connections at the start: halfway, they are all spread.
          let spread = null;
          const sample = setTimeout(() => (spread = portHolders(gw)), S.portSharingSeconds * 500);
          const cpu0 = cpuByProcess(gw);
          const row = await measureClosed(gw, cn, { key, operation }, c.id, { warmupSeconds: 0, seconds: S.portSharingSeconds });
          const cpu1 = cpuByProcess(gw);
          clearTimeout(sample);
          const used = ({ pid, seconds }) => (cpu1.find((x) => x.pid === pid)?.seconds ?? NaN) - seconds;
          const [primary, ...workers] = cpu0;
          const workersCpu = workers.map(used);
          const workersTotal = workersCpu.reduce((a, x) => a + x, 0);
          out.rows.push({
            round: r,
            config: c.id,
            ...row,
            primaryCpuUsPerReq: (used(primary) * 1e6) / Math.max(1, row.requests),
            workerCpuShare: workersCpu.map((x) => x / workersTotal),
            connectionsPerWorker: spread === null ? null : spread.slice(1).map((x) => x.connections),
          });
          log(`    connections per worker ${spread === null ? 'n/a' : spread.slice(1).map((x) => x.connections).join('/')}, worker CPU split ${workersCpu.map((x) => pct(x, workersTotal)).join('/')}`);
        }
      }
    }
    for (const line of portSharingSummaryLines(out)) log(`port sharing: ${line}`);
  } finally {
    for (const g of Object.values(gateways)) if (alive(g.gw)) await stopGateway(g.gw);
  }
}

function portSharingSummaryLines(p) {
  const t = roundsTable(p);
  const lines = [];
  for (const cn of p.settings.connections) {
    const x = t.find((row) => row.config === 'reuseport' && row.connections === cn);
    if (!x) continue;
    lines.push(`c=${cn}: reuseport against handoff: req/s ${ratioPct(x.rpsRatio)}, p50 ${signed(x.dP50Us, 0)} µs, p99 ${signed(x.dP99Us, 0)} µs, Sluice CPU ${signed(x.dCpuUs, 1)} µs/req (medians of the differences within each round)`);
  }
  return lines;
}

function portSharingReport(L, p) {
  L.push('## Port sharing: `--port-sharing reuseport` against `handoff`', '');
  if (p.skipped) return L.push(`Not measured: ${p.skipped}.`, '');
  L.push(
    `Two gateways of ${p.settings.workers} workers each, one per mode, both running throughout; the closed loop's whole ${p.settings.operation} request (${p.loadgen ?? LOADGEN}) at ${p.settings.connections.join(' and ')} connections, ` +
      `${p.settings.rounds} interleaved round(s) of ${p.settings.seconds} s per point after a discarded 1 s pass (the order of the modes swaps from one round to the next). ` +
      'The load generator opens its connections at the start of each run and keeps them, so handing connections over costs the primary once per connection; what the mode changes afterwards is how the connections are spread over the workers: ' +
      'handoff deals them out in turn (to the next worker ready for one), reuseport leaves it to the kernel (a hash of each connection\'s addresses and ports). The connections per worker are counted from `/proc` halfway through each run.',
    '',
  );
  L.push('| mode | command | listening sockets (primary, workers) | idle RSS MB |', '|---|---|---|---|');
  for (const c of p.configurations) {
    const g = p.gateways[c.id];
    L.push(`| ${c.id}: ${c.label} | \`${g?.command ?? ''}\` | ${g?.listening.join(', ') ?? ''} | ${f(g?.idle?.rss, 1)} |`);
  }
  L.push('');
  const rows = roundsTable(p);
  if (rows.length) {
    const perRound = (config, cn, pick) => p.rows.filter((x) => x.config === config && x.connections === cn).map(pick);
    L.push(
      '| conns | mode | req/s | p50 ms | p99 ms | Sluice CPU µs/req | primary CPU µs/req | req/s vs handoff | Δ p50 µs | Δ p99 µs | req/s per round | p99 ms per round | connections per worker, per round | worker CPU split, per round | other CPU | non-2xx+errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const x of rows) {
      const hasBase = x.base !== null;
      const primary = median(perRound(x.config, x.connections, (row) => row.primaryCpuUsPerReq));
      L.push(
        `| ${x.connections} | ${x.config} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${f(x.cpuUsPerReq, 0)} | ${f(primary, 1)} | ${hasBase ? ratioPct(x.rpsRatio) : ''} | ${hasBase ? signed(x.dP50Us, 0) : ''} | ${hasBase ? signed(x.dP99Us, 0) : ''} | ` +
          `${perRound(x.config, x.connections, (row) => f(row.rps, 0)).join(', ')} | ${perRound(x.config, x.connections, (row) => f(row.p99, 2)).join(', ')} | ` +
          `${perRound(x.config, x.connections, (row) => row.connectionsPerWorker?.join('/') ?? 'n/a').join(', ')} | ${perRound(x.config, x.connections, (row) => row.workerCpuShare.map((s) => f(s * 100, 0)).join('/')).join(', ')} | ` +
          `${f(x.otherCpuPct, 0)}% | ${x.bad} |`,
      );
    }
    L.push(
      '',
      'Medians of the rounds; "vs handoff" and "Δ" = reuseport minus handoff in the same round, median over the rounds. "Sluice CPU" = utime+stime of the gateway\'s process tree per request, "primary CPU" the primary\'s alone; "worker CPU split" = each worker\'s share of the workers\' CPU (%).',
      '',
    );
    for (const line of portSharingSummaryLines(p)) L.push(`- ${line}`);
    L.push('');
  }
}

// ---------------------------------------------------------------- MCP tool calls (issue 30)
const MCP_SERVER_ID = 'bench';
const MCP_PROTOCOL = '2025-11-25';
const MCP_ACCEPT = 'application/json, text/event-stream';

/** The bench's upstream MCP server (bench/mcp-upstream.mjs: the SDK's Server, Streamable HTTP, an `echo` tool). */
async function startMcpUpstream() {
  const port = await freePort();
  const p = startProcess('mcp upstream', process.execPath, [path.join(BENCH_DIR, 'mcp-upstream.mjs'), '--port', String(port)]);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return { url: `http://127.0.0.1:${port}`, port, proc: p, pid: () => p.child.pid };
}

/** The JSON-RPC answer to request `id` in a Streamable HTTP response body: a JSON body, or the `data:` of an SSE event. */
function jsonRpcAnswer(contentType, text, id) {
  if (!/text\/event-stream/.test(contentType ?? '')) return JSON.parse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data === '') continue;
    const message = JSON.parse(data);
    if (message.id === id) return message;
  }
  throw new Error(`no answer to request ${id} in the event stream: ${text.slice(0, 500)}`);
}

/** One JSON-RPC request (or, without `id`, a notification) on an MCP endpoint; the answer's `result`, or an Error with what came back. */
async function mcpRequest(url, { key, session, protocol }, method, params, id) {
  const headers = { 'content-type': 'application/json', accept: MCP_ACCEPT, ...authHeaders(key) };
  if (session) headers['mcp-session-id'] = session;
  if (protocol) headers['mcp-protocol-version'] = protocol;
  const body = { jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }), ...(id === undefined ? {} : { id }) };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  const text = await response.text();
  if (id === undefined) {
    if (response.status !== 202 && response.status !== 200) throw new Error(`${method}: HTTP ${response.status}: ${text.slice(0, 500)}`);
    return { response };
  }
  if (response.status !== 200) throw new Error(`${method}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  const answer = jsonRpcAnswer(response.headers.get('content-type'), text, id);
  if (answer.error) throw new Error(`${method}: JSON-RPC error ${answer.error.code}: ${answer.error.message}`);
  return { response, result: answer.result };
}

/** An initialized session on an MCP endpoint: `initialize`, then `notifications/initialized`, as every client opens one. */
async function mcpSession(url, key) {
  const { response, result } = await mcpRequest(url, { key }, 'initialize', { protocolVersion: MCP_PROTOCOL, capabilities: {}, clientInfo: { name: 'sluice-bench', version: '1.0.0' } }, 0);
  const session = { key, session: response.headers.get('mcp-session-id') ?? '', protocol: result.protocolVersion };
  await mcpRequest(url, session, 'notifications/initialized');
  return session;
}

/** One closed-loop `tools/call` run with wrk (bench/mcp.lua: a new JSON-RPC id per request, answers checked for a result). */
async function mcpLoopRun(target, connections, seconds) {
  if (!HAVE_WRK) throw new Error('the mcp scenario needs wrk (a new JSON-RPC id per request); autocannon cannot stand in');
  const cut0 = waitedChildrenCpuSeconds();
  const threads = Math.min(S.wrkThreads, connections);
  const r = await run('bash', ['-c', `ulimit -n 20000 2>/dev/null; exec wrk -t${threads} -c${connections} -d${seconds}s --timeout 10s -s '${path.join(BENCH_DIR, 'mcp.lua')}' '${target.url}'`], {
    env: { ...process.env, BENCH_KEY: target.session.key ?? '', BENCH_MCP_SESSION: target.session.session, BENCH_MCP_PROTOCOL: target.session.protocol, BENCH_MCP_TOOL: target.tool, BENCH_MCP_TEXT: S.mcpText },
  });
  const loadgenCpu = waitedChildrenCpuSeconds() - cut0;
  const m = /WRKJSON (\{.*\})/.exec(r.stdout);
  if (!m) throw new Error(`wrk failed (code ${r.code}): ${r.stderr.slice(-1000)} ${r.stdout.slice(-1000)}`);
  const j = JSON.parse(m[1]);
  const errors = j.connect_errors + j.read_errors + j.write_errors + j.timeouts;
  // Answered with a result: the bad ones (non-200, a JSON-RPC error, isError) are counted apart.
  const good = j.requests - j.bad;
  if (target.gateway) target.gateway.answered += good;
  return { ...j, errors, wall: j.duration_us / 1e6, good, loadgenCpu };
}

/** One measured point: wrk's figures, and the CPU of the target's process tree (direct: the upstream's) and of the upstream per call. */
async function measureMcp(target, upstreamPid, connections, seconds) {
  const cpu0 = treeCpuSeconds(target.pid());
  const up0 = treeCpuSeconds(upstreamPid);
  const m0 = machineCpu();
  const r = await mcpLoopRun(target, connections, seconds);
  const cpu1 = treeCpuSeconds(target.pid());
  const up1 = treeCpuSeconds(upstreamPid);
  const m1 = machineCpu();
  const calls = Math.max(1, r.requests);
  const machineBusyPct = ((m1.busy - m0.busy) / Math.max(1, m1.all - m0.all)) * 100;
  const targetCpuPct = ((cpu1 - cpu0) / r.wall) * 100;
  const upstreamCpuPct = ((up1 - up0) / r.wall) * 100;
  const loadgenCpuPct = (r.loadgenCpu / r.wall) * 100;
  const row = {
    target: target.id,
    connections,
    rps: r.good / r.wall,
    requests: r.requests,
    good: r.good,
    bad: r.bad,
    non2xx: r.non2xx,
    errors: r.errors,
    p50Ms: r.p50_us / 1000,
    p99Ms: r.p99_us / 1000,
    targetCpuUsPerCall: ((cpu1 - cpu0) * 1e6) / calls,
    upstreamCpuUsPerCall: ((up1 - up0) * 1e6) / calls,
    loadgenCpuPct,
    machineBusyPct,
    // What processes outside the measurement used meanwhile (others' work on a shared machine), % of one core.
    otherCpuPct: Math.max(0, machineBusyPct * os.availableParallelism() - upstreamCpuPct - loadgenCpuPct - (target.id === 'direct' ? 0 : targetCpuPct)),
  };
  log(
    `  mcp ${target.id.padEnd(16)} c=${String(connections).padEnd(3)} ${Math.round(row.rps)} calls/s  p50 ${row.p50Ms.toFixed(3)} ms  p99 ${row.p99Ms.toFixed(3)} ms  ` +
      `${target.id === 'direct' ? 'upstream' : 'Sluice'} CPU ${Math.round(row.targetCpuUsPerCall)} µs/call  upstream ${Math.round(row.upstreamCpuUsPerCall)} µs/call  ` +
      `wrk ${Math.round(loadgenCpuPct)}%  machine ${Math.round(machineBusyPct)}% busy (other processes ${Math.round(row.otherCpuPct)}% of a core)${r.bad + r.errors > 0 ? `  BAD ${r.bad} (non-2xx ${r.non2xx}) ERRORS ${r.errors}` : ''}`,
  );
  if (r.bad + r.errors > 0) fail(`mcp ${target.id} c=${connections}: ${r.bad} answers without a result (${r.non2xx} non-2xx) and ${r.errors} socket errors/timeouts out of ${r.requests}`);
  return row;
}

/** usage_ledger's `mcp.tools/call` rows of a data directory, by status. */
function mcpLedgerRows(dataDir) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      READ_STORE +
        `const s=d.prepare("SELECT status, count(*) AS n FROM usage_ledger WHERE operation = 'mcp.tools/call' GROUP BY status").all();` +
        `console.log(JSON.stringify(Object.fromEntries(s.map(r=>[r.status,r.n]))));d.close();`,
      path.join(dataDir, 'sluice.db'),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

/**
 * What an MCP `tools/call` costs through Sluice: the bench's upstream MCP server called directly
 * and through a one-worker gateway (the aggregated `/mcp`, tool `bench__echo`, and `/mcp/bench`,
 * tool `echo`), each over a session initialized beforehand, a key allowed that server; rounds
 * interleave the three targets (the order rotates), closed loop with wrk.
 */
async function scenarioMcp(work, state) {
  // autocannon sends one fixed body, and a session's requests need ids of their own.
  if (!HAVE_WRK) return log('mcp: skipped: it needs wrk (a new JSON-RPC id per call), which is not on PATH');
  const mcpUpstream = await startMcpUpstream();
  const dataDir = path.join(work, 'data-mcp');
  fs.mkdirSync(dataDir, { recursive: true });
  const configFile = path.join(dataDir, 'sluice.yaml');
  fs.writeFileSync(configFile, `# generated by bench/run.mjs (mcp)\nmcp_servers:\n  - id: ${MCP_SERVER_ID}\n    url: ${mcpUpstream.url}/mcp\n`);
  const key = (await createKeyRecordWithCli(dataDir, 'bench-mcp', ['--mcp', MCP_SERVER_ID])).key;
  const gw = await startSluice('sluice (mcp)', dataDir, configFile, await freePort(), { workers: 1 });
  const out = { settings: { connections: S.mcpConnections, seconds: S.mcpSeconds, rounds: S.mcpRounds, text: S.mcpText, workers: 1 }, rows: [], ledger: null, answered: 0 };
  state.mcp = out;
  try {
    const gateway = { answered: 0 };
    const targets = [
      { id: 'direct', label: 'direct (the upstream MCP server)', url: `${mcpUpstream.url}/mcp`, tool: 'echo', key: undefined, pid: mcpUpstream.pid },
      { id: 'sluice /mcp', label: `Sluice /mcp (${MCP_SERVER_ID}__echo)`, url: `${gw.url}/mcp`, tool: `${MCP_SERVER_ID}__echo`, key, pid: () => gw.pid(), gateway },
      { id: `sluice /mcp/${MCP_SERVER_ID}`, label: `Sluice /mcp/${MCP_SERVER_ID} (echo)`, url: `${gw.url}/mcp/${MCP_SERVER_ID}`, tool: 'echo', key, pid: () => gw.pid(), gateway },
    ];
    out.targets = targets.map((t) => ({ id: t.id, label: t.label }));
    for (const t of targets) {
      t.session = await mcpSession(t.url, t.key);
      // The gateway's first list waits for its upstream session; the tool must be listed before load.
      const deadline = Date.now() + 15_000;
      for (let id = 1; ; id++) {
        const { result } = await mcpRequest(t.url, t.session, 'tools/list', {}, id);
        if (result.tools.some((tool) => tool.name === t.tool)) break;
        if (Date.now() > deadline) throw new Error(`${t.label}: tools/list never listed ${t.tool}: ${JSON.stringify(result).slice(0, 500)}`);
        await sleep(200);
      }
      const { result } = await mcpRequest(t.url, t.session, 'tools/call', { name: t.tool, arguments: { text: S.mcpText } }, 999_999);
      if (result.isError || result.content?.[0]?.text !== S.mcpText) throw new Error(`${t.label}: tools/call did not echo: ${JSON.stringify(result).slice(0, 500)}`);
      if (t.gateway) gateway.answered++;
      log(`mcp: ${t.label}: session ${t.session.session || '(none)'}, protocol ${t.session.protocol}, ${t.tool} echoes`);
    }
    log('mcp: warm-up pass, 1 s at each point, not measured');
    for (const cn of S.mcpConnections) for (const t of targets) await mcpLoopRun(t, cn, 1);
    for (let r = 1; r <= S.mcpRounds; r++) {
      const shift = (r - 1) % targets.length;
      const order = [...targets.slice(shift), ...targets.slice(0, shift)];
      log(`mcp, round ${r}/${S.mcpRounds}: order ${order.map((t) => t.id).join(', ')}`);
      for (const cn of S.mcpConnections) for (const t of order) out.rows.push({ round: r, ...(await measureMcp(t, mcpUpstream.pid(), cn, S.mcpSeconds)) });
    }
    out.answered = gateway.answered;
  } finally {
    await stopGateway(gw);
    await mcpUpstream.proc.stop();
  }
  const byStatus = mcpLedgerRows(dataDir);
  const rows = Object.values(byStatus).reduce((a, b) => a + b, 0);
  // wrk stops with calls in flight: those have rows too (the caller gone), so rows may exceed the answered calls, never fall short.
  out.ledger = { rows, byStatus, answered: out.answered, pass: rows >= out.answered && (byStatus[200] ?? 0) >= out.answered };
  log(`mcp: ledger: ${rows} mcp.tools/call rows ${JSON.stringify(byStatus)} for ${out.answered} calls answered with a result through Sluice`);
  if (!out.ledger.pass) fail(`mcp: ${rows} mcp.tools/call ledger rows (${JSON.stringify(byStatus)}) for ${out.answered} calls answered through Sluice`);
}

/** Medians over the rounds per target and connection count, with Sluice minus direct taken within each round. */
function mcpTable(m) {
  const out = [];
  for (const cn of m.settings.connections) {
    for (const t of m.targets) {
      const rows = m.rows.filter((x) => x.target === t.id && x.connections === cn);
      if (!rows.length) continue;
      const deltas = (field) =>
        rows.map((x) => {
          const d = m.rows.find((y) => y.target === 'direct' && y.connections === cn && y.round === x.round);
          return d ? x[field] - d[field] : NaN;
        });
      out.push({
        connections: cn,
        id: t.id,
        label: t.label,
        rps: median(rows.map((x) => x.rps)),
        p50Ms: median(rows.map((x) => x.p50Ms)),
        p99Ms: median(rows.map((x) => x.p99Ms)),
        targetCpuUsPerCall: median(rows.map((x) => x.targetCpuUsPerCall)),
        upstreamCpuUsPerCall: median(rows.map((x) => x.upstreamCpuUsPerCall)),
        addedP50Ms: t.id === 'direct' ? NaN : median(deltas('p50Ms')),
        addedP99Ms: t.id === 'direct' ? NaN : median(deltas('p99Ms')),
        rpsRatio: t.id === 'direct' ? NaN : median(rows.map((x) => x.rps / (m.rows.find((y) => y.target === 'direct' && y.connections === cn && y.round === x.round)?.rps ?? NaN))),
        bad: rows.reduce((a, x) => a + x.bad + x.errors, 0),
        otherCpuPct: median(rows.map((x) => x.otherCpuPct)),
        addedP50PerRound: t.id === 'direct' ? [] : deltas('p50Ms'),
      });
    }
  }
  return out;
}

function mcpReport(L, m) {
  L.push('## MCP tool calls', '');
  L.push(
    `\`tools/call\` of the \`echo\` tool (argument \`{"text":"${m.settings.text}"}\`) of an upstream MCP server built with the official SDK (\`bench/mcp-upstream.mjs\`: its \`Server\` over its Streamable HTTP transport, answers as SSE), ` +
      `over a session initialized beforehand, called directly and through a one-worker gateway (a key allowed that server): at its aggregated \`/mcp\` (tool \`${MCP_SERVER_ID}__echo\`) and at \`/mcp/${MCP_SERVER_ID}\` (tool \`echo\`). ` +
      `Closed loop with wrk (\`bench/mcp.lua\`, a new JSON-RPC id per call, every answer checked for a result), ${m.settings.rounds} round(s) of ${m.settings.seconds} s per point after a discarded 1 s pass, the targets' order rotating each round. ` +
      '"added" = through Sluice minus direct within the same round, median over the rounds; "Sluice CPU" = utime+stime of the gateway\'s processes (primary and its one worker) per call; "upstream CPU" = the upstream MCP server\'s per call.',
    '',
  );
  L.push('| conns | target | calls/s | p50 ms | p99 ms | added p50 ms | added p50 per round | added p99 ms | calls/s vs direct | Sluice CPU µs/call | upstream CPU µs/call | other CPU | bad+errors |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const x of mcpTable(m)) {
    const direct = x.id === 'direct';
    L.push(
      `| ${x.connections} | ${x.label} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${direct ? '' : signed(x.addedP50Ms, 3)} | ${(x.addedP50PerRound ?? []).map((v) => signed(v, 3)).join(', ')} | ${direct ? '' : signed(x.addedP99Ms, 3)} | ${direct ? '' : pct(x.rpsRatio, 1)} | ${direct ? '' : f(x.targetCpuUsPerCall, 0)} | ${f(direct ? x.targetCpuUsPerCall : x.upstreamCpuUsPerCall, 0)} | ${Number.isFinite(x.otherCpuPct) ? `${f(x.otherCpuPct, 0)}%` : 'n/a'} | ${x.bad} |`,
    );
  }
  L.push('', '"other CPU" = what processes outside the measurement (the load generator, the upstream and the target excepted) used meanwhile, % of one core: other work on a shared machine.', '');
  if (m.ledger) {
    L.push(
      `Ledger: ${m.ledger.rows} \`mcp.tools/call\` rows (by status ${JSON.stringify(m.ledger.byStatus)}) for ${m.ledger.answered} calls answered with a result through Sluice (warm-up and checks included; wrk stops with calls in flight, whose rows are there too): ${m.ledger.pass ? '**pass**' : '**FAIL**'}.`,
      '',
    );
  }
}

// ---------------------------------------------------------------- machine
function machine() {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? 'unknown';
  const memKb = Number(/MemTotal:\s+(\d+)/.exec(fs.readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0);
  let commit = 'unknown';
  let dirty = false;
  try {
    const gitEnv = { ...process.env, GIT_OPTIONAL_LOCKS: '0' };
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, env: gitEnv }).toString().trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, env: gitEnv }).toString().trim() !== '';
  } catch {
    /* not a git checkout */
  }
  let nofile = 'unknown';
  try {
    nofile = execFileSync('bash', ['-c', 'ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); ulimit -n']).toString().trim();
  } catch {
    /* ignore */
  }
  return {
    cpu: model,
    cores: os.availableParallelism(),
    memoryGB: round(memKb / 1024 / 1024, 1),
    linux: os.release(),
    distro: (/PRETTY_NAME="([^"]*)"/.exec(fs.existsSync('/etc/os-release') ? fs.readFileSync('/etc/os-release', 'utf8') : '') ?? [])[1] ?? 'unknown',
    node: process.version,
    date: new Date().toISOString(),
    commit,
    workingTreeDirty: dirty,
    openFilesLimit: nofile,
  };
}

// ---------------------------------------------------------------- the pieces
async function startUpstream() {
  const port = await freePort();
  const p = startProcess('fake upstream', process.execPath, [
    path.join(BENCH_DIR, 'upstream.mjs'),
    '--port',
    String(port),
    '--latency-ms',
    String(S.upstreamLatencyMs),
    '--embedding-dimensions',
    String(S.embeddingDimensions),
  ]);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return { name: 'direct', url: `http://127.0.0.1:${port}`, port, proc: p, pid: () => p.child.pid };
}

async function startNginx(work, upstreamPort) {
  if (!fs.existsSync(NGINX)) return null;
  const dir = path.join(work, 'nginx');
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = `# generated by bench/run.mjs: nginx as a plain reverse proxy
worker_processes ${S.workers};
worker_rlimit_nofile 20000;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 16384; multi_accept on; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_timeout 120s;
  keepalive_requests 1000000;
  upstream fake_upstream {
    server 127.0.0.1:${upstreamPort};
    keepalive 512;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://fake_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const p = startProcess('nginx', NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], {}, 'SIGQUIT');
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return { name: 'nginx', url: `http://127.0.0.1:${port}`, port, proc: p, pid: () => p.child.pid };
}

/** The floor (issue 31): bench/floor.mjs, a minimal node:http + undici proxy with Sluice's workers. */
async function startFloor(port) {
  port ??= await freePort();
  const p = startProcess('floor', process.execPath, [path.join(BENCH_DIR, 'floor.mjs'), '--port', String(port), '--upstream', upstream.url, '--workers', String(S.workers), '--upstream-model', 'upstream-model']);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  const target = { name: 'floor', url: `http://127.0.0.1:${port}`, port, proc: p };
  target.pid = () => target.proc.child.pid;
  /** A fresh start on the same port, as Sluice gets before each streaming point (its RSS "just before" is then its idle RSS). */
  target.restart = async () => {
    await target.proc.stop();
    target.proc = (await startFloor(port)).proc;
  };
  return target;
}

/** The key a target is called with: its own (the build before's), the main gateway's for sluice, none for the others. */
const keyOf = (target, key) => target.key ?? (target.name === 'sluice' ? key : undefined);

let workersFlag = null;
function supportsWorkers() {
  if (workersFlag === null) {
    const help = execFileSync(process.execPath, [SLUICE_BIN, 'serve', '--help'], { cwd: ROOT }).toString();
    workersFlag = help.includes('--workers');
    if (!workersFlag) log(`note: this build of sluice has no --workers flag; running it without (single process)`);
  }
  return workersFlag;
}

/**
 * The bench's Sluice configuration: `bench-model` on the bench upstream, and `bench-routed`, the
 * same upstream model behind two provider entries that both point at that upstream (two
 * deployments, so routing chooses among two). With `flaky` (the routing scenario's gateway),
 * also `bench-flaky`: deployments on a healthy upstream and on one that fails every Nth request.
 */
function writeConfig(dir, upstreamPort, flaky = null, { embeddings = false } = {}) {
  const file = path.join(dir, 'sluice.yaml');
  const endpoints = `[${S.chat ? 'completions, chat' : 'completions'}]`;
  const provider = (id, port) => `  - id: ${id}
    kind: openai
    base_url: http://127.0.0.1:${port}/v1
    api_key: bench-upstream-credential
    max_connections: 16384
`;
  fs.writeFileSync(
    file,
    `# generated by bench/run.mjs
providers:
${provider('bench-upstream', upstreamPort)}${provider('bench-upstream-b', upstreamPort)}${flaky ? provider('bench-healthy', flaky.healthyPort) + provider('bench-flaky', flaky.flakyPort) : ''}models:
  - id: bench-model
    provider: bench-upstream
    upstream_model: upstream-model
    endpoints: ${endpoints}
    pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6 }
${
  embeddings
    ? `  - id: bench-embed
    provider: bench-upstream
    upstream_model: upstream-embedding-model
    endpoints: [embeddings]
    pricing: { input_per_mtok: 0.02, output_per_mtok: 0 }
`
    : ''
}  - id: bench-routed
    deployments:
      - { provider: bench-upstream, upstream_model: upstream-model, weight: 1 }
      - { provider: bench-upstream-b, upstream_model: upstream-model, weight: 1 }
    endpoints: ${endpoints}
    pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6 }
${
  flaky
    ? `  - id: bench-flaky
    deployments:
      - { provider: bench-healthy, upstream_model: upstream-model, weight: 1 }
      - { provider: bench-flaky, upstream_model: upstream-model, weight: 1 }
    endpoints: ${endpoints}
    pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6 }
${S.flakyRouting ? `    routing: ${S.flakyRouting}\n` : ''}`
    : ''
}`,
  );
  return file;
}

/** The node that runs a build's bin/sluice.js: this one for this build, BENCH_BASE_NODE for the build before. */
const nodeFor = (bin) => (bin === SLUICE_BIN ? process.execPath : S.baseNode);

/** `bin`: another build's CLI, for a gateway of that build (a newer CLI would migrate its store beyond what it knows). */
async function createKeyWithCli(dataDir, bin = SLUICE_BIN) {
  return (await createKeyRecordWithCli(dataDir, 'bench', [], bin)).key;
}

/** `sluice keys create … --json`: the key's JSON (id, limits, …) with its secret in `key`; `flags` are more CLI flags (limits). */
async function createKeyRecordWithCli(dataDir, name = 'bench', flags = [], bin = SLUICE_BIN) {
  const r = await run(nodeFor(bin), [bin, 'keys', 'create', '--account', 'bench', '--name', name, ...flags, '--json', '--data', dataDir], { cwd: ROOT });
  if (r.code !== 0) throw new Error(`sluice keys create failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

/** `options.workers` overrides BENCH_WORKERS; `options.args` are more `serve` flags (e.g. --redis). */
async function startSluice(name, dataDir, configFile, port, options = {}) {
  // options.bin: another build's bin/sluice.js (the telemetry scenario's build before).
  const bin = options.bin ?? SLUICE_BIN;
  const args = [bin, 'serve', '--listen', `127.0.0.1:${port}`, '--data', dataDir, '--config', configFile, ...(options.args ?? [])];
  if (supportsWorkers()) args.push('--workers', String(options.workers ?? S.workers));
  const p = startProcess(name, nodeFor(bin), args, { SLUICE_LOG_LEVEL: 'warn', ...options.env });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 30_000);
  } catch (error) {
    throw new Error(`${name} did not become ready: ${error.message}; stderr: ${p.stderr.slice(-2000)}`);
  }
  const target = { name: 'sluice', url: `http://127.0.0.1:${port}`, port, proc: p, dataDir, configFile };
  target.pid = () => target.proc.child.pid;
  /** Graceful stop and a fresh start on the same port and data directory. */
  target.restart = async () => {
    await stopGateway(target);
    const again = await startSluice(name, dataDir, configFile, port, options);
    target.proc = again.proc;
  };
  return target;
}

/**
 * The start of a `node -e` script that opens the store named by its first argument read-only (it
 * must exist; a writer's lock is waited for up to 5 s) as `d`, with Node's own SQLite, the
 * gateway's driver. A child process, so that a long read never holds the bench's event loop.
 */
const READ_STORE = "const {DatabaseSync}=require('node:sqlite');const d=new DatabaseSync(process.argv[1],{readOnly:true,timeout:5000});";

function ledgerCount(dataDir) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      READ_STORE +
        `const t=d.prepare('SELECT count(*) AS n FROM usage_ledger').get().n;` +
        `const s=d.prepare('SELECT status, count(*) AS n FROM usage_ledger GROUP BY status').all();` +
        `console.log(JSON.stringify({total:t,byStatus:Object.fromEntries(s.map(r=>[r.status,r.n]))}));d.close();`,
      path.join(dataDir, 'sluice.db'),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

// ---------------------------------------------------------------- load generators
const HAVE_WRK = env('BENCH_LOADGEN', '') !== 'autocannon' && (() => {
  try {
    execFileSync('bash', ['-c', 'command -v wrk'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const LOADGEN = HAVE_WRK ? 'wrk' : 'autocannon';

/** One closed-loop run; returns the summary plus the load generator's own CPU seconds. */
async function closedLoopRun(target, connections, seconds, { key, keysFile, operation = 'completions', body } = {}) {
  const op = OPERATIONS[operation];
  const requestBody = body ?? op.body;
  const url = `${target.url}${op.path}`;
  const cut0 = waitedChildrenCpuSeconds();
  let r;
  if (HAVE_WRK) {
    const script = keysFile ? path.join(BENCH_DIR, 'random-keys.lua') : path.join(BENCH_DIR, 'post.lua');
    const threads = Math.min(S.wrkThreads, connections);
    r = await run('bash', ['-c', `ulimit -n 20000 2>/dev/null; exec wrk -t${threads} -c${connections} -d${seconds}s --timeout 10s -s '${script}' '${url}'`], {
      env: { ...process.env, BENCH_BODY: requestBody, BENCH_KEY: key ?? '', BENCH_KEYS_FILE: keysFile ?? '' },
    });
  } else {
    r = await run(process.execPath, [path.join(BENCH_DIR, 'autocannon-run.mjs'), JSON.stringify({ url, connections, seconds, body: requestBody, key, keysFile })]);
  }
  const loadgenCpu = waitedChildrenCpuSeconds() - cut0;
  const m = /(?:WRKJSON|RESULT) (\{.*\})/.exec(r.stdout);
  if (!m) throw new Error(`${LOADGEN} failed (code ${r.code}): ${r.stderr.slice(-1000)} ${r.stdout.slice(-1000)}`);
  const j = JSON.parse(m[1]);
  const errors = j.connect_errors + j.read_errors + j.write_errors + j.timeouts;
  const wall = j.duration_us / 1e6;
  return { ...j, errors, wall, ok: j.requests - j.non2xx, loadgenCpu };
}

/**
 * One closed-loop point after a warm-up. `options`: `warmupSeconds` and `seconds` (default the
 * closed-loop settings), and `probe`, an async reading taken just before and just after the
 * measured run (outside the CPU readings), kept as `probe: { before, after }`.
 */
async function measureClosed(target, connections, extra = {}, label = '', options = {}) {
  const warmupSeconds = options.warmupSeconds ?? S.warmupSeconds;
  if (warmupSeconds > 0) await closedLoopRun(target, connections, warmupSeconds, extra);
  const before = options.probe ? await options.probe() : undefined;
  const cpu0 = treeCpuSeconds(target.pid());
  const up0 = treeCpuSeconds(upstream.pid());
  const m0 = machineCpu();
  const r = await closedLoopRun(target, connections, options.seconds ?? S.seconds, extra);
  const cpu1 = treeCpuSeconds(target.pid());
  const up1 = treeCpuSeconds(upstream.pid());
  const m1 = machineCpu();
  const after = options.probe ? await options.probe() : undefined;
  const res = {
    target: target.name,
    operation: extra.operation ?? 'completions',
    connections,
    label,
    rps: r.ok / r.wall,
    requests: r.requests,
    ok: r.ok,
    non2xx: r.non2xx,
    errors: r.errors,
    p50: r.p50_us / 1000,
    p90: r.p90_us / 1000,
    p99: r.p99_us / 1000,
    p999: r.p999_us / 1000,
    max: r.max_us / 1000,
    mean: r.mean_us / 1000,
    targetCpuMsPerReq: ((cpu1 - cpu0) * 1000) / Math.max(1, r.requests),
    targetCpuPct: ((cpu1 - cpu0) / r.wall) * 100,
    upstreamCpuPct: ((up1 - up0) / r.wall) * 100,
    loadgen: LOADGEN,
    loadgenCpuPct: (r.loadgenCpu / r.wall) * 100,
    machineBusyPct: ((m1.busy - m0.busy) / Math.max(1, m1.all - m0.all)) * 100,
    ...(options.probe ? { probe: { before, after } } : {}),
  };
  // CPU used by processes outside this measurement (other work on the machine), % of one core.
  res.otherCpuPct = Math.max(0, res.machineBusyPct * os.availableParallelism() - res.upstreamCpuPct - res.loadgenCpuPct - (target.name === 'direct' ? 0 : res.targetCpuPct));
  log(
    `  ${target.name.padEnd(6)} c=${String(connections).padEnd(3)} ${label ? `${label} ` : ''}${Math.round(res.rps)} req/s  p50 ${res.p50.toFixed(3)} ms  p99 ${res.p99.toFixed(3)} ms  ` +
      `${target.name} CPU ${res.targetCpuMsPerReq.toFixed(3)} ms/req (${Math.round(res.targetCpuPct)}% of a core)  upstream ${Math.round(res.upstreamCpuPct)}%  ${LOADGEN} ${Math.round(res.loadgenCpuPct)}%  ` +
      `machine ${Math.round(res.machineBusyPct)}% busy (other processes ${Math.round(res.otherCpuPct)}% of a core)${res.non2xx + res.errors > 0 ? `  NON-2XX ${res.non2xx} ERRORS ${res.errors}` : ''}`,
  );
  if (res.non2xx + res.errors > 0 && target.name === 'sluice') fail(`sluice c=${connections}${label ? ` ${label}` : ''}: ${res.non2xx} non-2xx responses and ${res.errors} socket errors/timeouts out of ${res.requests}`);
  return res;
}

async function runClient(options, onStderrLine) {
  const cut0 = waitedChildrenCpuSeconds();
  const started = Date.now();
  const child = spawnWithNofile(process.execPath, [path.join(BENCH_DIR, 'client.mjs'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  let stdout = '';
  let buffered = '';
  let stderrTail = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => {
    buffered += d;
    stderrTail = (stderrTail + d).slice(-4000);
    let nl;
    while ((nl = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      onStderrLine?.(line);
    }
  });
  const client = { child, name: 'load client', stop: async () => child.kill('SIGKILL') };
  owned.add(client);
  const code = await new Promise((resolve) => child.on('close', resolve));
  owned.delete(client);
  const wall = (Date.now() - started) / 1000;
  const cpu = waitedChildrenCpuSeconds() - cut0;
  const m = /RESULT (\{.*\})/.exec(stdout);
  if (!m) throw new Error(`load client failed (code ${code}): ${stderrTail}`);
  return { ...JSON.parse(m[1]), clientCpuSeconds: cpu, clientWall: wall, clientCpuPct: (cpu / wall) * 100 };
}

function authHeaders(key) {
  return key ? { authorization: `Bearer ${key}` } : {};
}

// ---------------------------------------------------------------- scenarios
const results = { settings: S, machine: machine(), loadgen: LOADGEN, scenarios: {} };
let upstream;

async function idleMemory(target, settleMs = 3000) {
  await sleep(settleMs);
  const mem = treeMemoryMB(target.pid());
  log(`  ${target.name}: idle resident memory ${mem.rss.toFixed(1)} MB RSS (sum of ${mem.processes} processes), ${mem.pss.toFixed(1)} MB PSS`);
  return mem;
}

/**
 * Every round measures each connection count for each operation (completions, then chat; the
 * order flips from one round to the next) against every target, so that chat and completions
 * are compared under the same conditions. Completion rows and chat rows are returned apart.
 */
async function scenarioClosed(targets, key) {
  const rows = { completions: [], chat: [] };
  const operations = S.chat ? ['completions', 'chat'] : ['completions'];
  for (let r = 1; r <= S.rounds; r++) {
    log(`closed loop, round ${r}/${S.rounds} (${S.seconds} s per point, ${S.warmupSeconds} s warm-up, ${LOADGEN}; ${operations.join(' and ')})`);
    const order = r % 2 === 1 ? operations : [...operations].reverse();
    for (const c of S.connections) {
      for (const operation of order) {
        for (const t of targets) {
          if (!alive(t)) continue;
          rows[operation].push({ round: r, ...(await measureClosed(t, c, { key: keyOf(t, key), operation }, operation === 'chat' ? 'chat' : '')) });
        }
      }
    }
  }
  if (S.chat) for (const line of chatVsCompletionsClosed(rows.completions, rows.chat)) log(line);
  return rows;
}

function alive(target) {
  if (target.proc.exited) {
    log(`  ${target.name} is not running; skipped`);
    return false;
  }
  return true;
}

/**
 * Embeddings beside chat: closed loop at BENCH_EMBEDDINGS_CONNECTIONS (32), a batch of
 * BENCH_EMBEDDINGS_BATCH (16) short inputs per request relayed to the bench upstream (vectors of
 * BENCH_EMBEDDING_DIMENSIONS floats), in each encoding of BENCH_EMBEDDINGS_ENCODINGS, and a whole
 * chat request, in rounds that rotate the operations; the target's CPU per request beside chat's.
 */
async function scenarioEmbeddings(targets, key) {
  const operations = [...S.embeddingsEncodings.map((encoding) => `embeddings-${encoding}`), 'chat'];
  const rows = [];
  for (let r = 1; r <= S.rounds; r++) {
    log(`embeddings beside chat, round ${r}/${S.rounds} (${S.seconds} s per point, batches of ${S.embeddingsBatch} inputs, ${S.embeddingDimensions} dimensions)`);
    const order = operations.map((_, i) => operations[(i + r - 1) % operations.length]);
    for (const c of S.embeddingsConnections) {
      for (const operation of order) {
        for (const t of targets) {
          if (!alive(t)) continue;
          rows.push({ round: r, ...(await measureClosed(t, c, { key: keyOf(t, key), operation }, operation)) });
        }
      }
    }
  }
  const out = { settings: { connections: S.embeddingsConnections, batch: S.embeddingsBatch, dimensions: S.embeddingDimensions, encodings: S.embeddingsEncodings, seconds: S.seconds, rounds: S.rounds }, rows };
  for (const line of embeddingsVsChat(out)) log(line);
  return out;
}

/** Per connection count and operation, the medians of the rounds, with Sluice's added latency and CPU per request. */
function embeddingsMedians(out) {
  const points = [];
  for (const c of out.settings.connections) {
    for (const operation of [...out.settings.encodings.map((encoding) => `embeddings-${encoding}`), 'chat']) {
      const of = (target) => {
        const rows = out.rows.filter((x) => x.target === target && x.connections === c && x.operation === operation);
        if (!rows.length) return null;
        return { rps: median(rows.map((x) => x.rps)), p50: median(rows.map((x) => x.p50)), p99: median(rows.map((x) => x.p99)), cpu: median(rows.map((x) => x.targetCpuMsPerReq)) };
      };
      points.push({ connections: c, operation, sluice: of('sluice'), direct: of('direct'), nginx: of('nginx') });
    }
  }
  return points;
}

function embeddingsVsChat(out) {
  const points = embeddingsMedians(out);
  return points
    .filter((p) => p.operation !== 'chat' && p.sluice)
    .map((p) => {
      const chat = points.find((x) => x.connections === p.connections && x.operation === 'chat');
      const added = (x) => (x.direct ? `${f(x.sluice.p50 - x.direct.p50, 3)} ms` : 'n/a');
      return `embeddings (${p.operation.slice('embeddings-'.length)}) vs chat through sluice, c=${p.connections}: ${f(p.sluice.rps, 0)} vs ${f(chat?.sluice?.rps, 0)} req/s; Sluice CPU ${f(p.sluice.cpu, 3)} vs ${f(chat?.sluice?.cpu, 3)} ms per request; added p50 ${added(p)} vs ${chat?.sluice ? added(chat) : 'n/a'}.`;
    });
}

function embeddingsReport(L, out) {
  const s = out.settings;
  L.push('## Embeddings beside chat', '');
  L.push(
    `\`POST /v1/embeddings\` on \`bench-embed\` (\`endpoints: [embeddings]\`, an OpenAI-compatible upstream: the embedding model sent to \`{base_url}/embeddings\`), a batch of ${s.batch} short inputs per request, vectors of ${s.dimensions} floats, ` +
      `in each encoding (base64: what the openai SDK and LangChain ask; float: what the AI SDK asks), beside the closed loop's whole chat request; ${s.rounds} round(s) of ${s.seconds} s per point, medians.`,
    '',
  );
  L.push('| connections | operation | target | req/s | p50 ms | p99 ms | added p50 ms | target CPU ms/req |', '|---|---|---|---|---|---|---|---|');
  for (const p of embeddingsMedians(out)) {
    for (const target of ['direct', 'nginx', 'sluice']) {
      const x = p[target];
      if (!x) continue;
      L.push(`| ${p.connections} | ${p.operation} | ${target} | ${f(x.rps, 0)} | ${f(x.p50, 3)} | ${f(x.p99, 3)} | ${target === 'direct' || !p.direct ? '' : f(x.p50 - p.direct.p50, 3)} | ${target === 'direct' ? '' : f(x.cpu, 3)} |`);
    }
  }
  L.push('', ...embeddingsVsChat(out), '');
}

async function scenarioOpen(targets, key) {
  const out = [];
  log(`open loop at ${S.openRate}/s for ${S.openSeconds} s per target (+2 s warm-up), latency from the intended send time`);
  for (const t of targets) {
    if (!alive(t)) continue;
    const cpu0 = treeCpuSeconds(t.pid());
    const r = await runClient({
      mode: 'open',
      url: `${t.url}/v1/completions`,
      rate: S.openRate,
      seconds: S.openSeconds,
      warmupSeconds: 2,
      connections: 512,
      body: BODY,
      headers: authHeaders(keyOf(t, key)),
    });
    const cpu1 = treeCpuSeconds(t.pid());
    const res = { target: t.name, ...r, failed: r.sent - r.ok, targetCpuMsPerReq: ((cpu1 - cpu0) * 1000) / Math.max(1, r.completed) };
    log(
      `  ${t.name.padEnd(6)} ${r.ok}/${r.sent} ok  p50 ${r.latencyMs.p50.toFixed(3)} ms  p99 ${r.latencyMs.p99.toFixed(3)} ms  p99.9 ${r.latencyMs.p999.toFixed(3)} ms  max ${r.latencyMs.max.toFixed(1)} ms  ` +
        `statuses ${JSON.stringify(r.statuses)} errors ${JSON.stringify(r.errors)}  client CPU ${Math.round(r.clientCpuPct)}%`,
    );
    if (t.name === 'sluice' && res.failed > 0) fail(`open loop: ${res.failed} of ${r.sent} requests to sluice did not get a 2xx (statuses ${JSON.stringify(r.statuses)}, errors ${JSON.stringify(r.errors)})`);
    out.push(res);
  }
  return out;
}

/**
 * The completion points of BENCH_STREAMS, each followed by the chat point of the same streams@rate
 * when BENCH_CHAT_STREAMS has one; chat points without a completion twin come last.
 */
async function scenarioStreams(targets, key) {
  const out = { completions: [], chat: [] };
  const chatPoints = S.chat ? [...S.chatStreams] : [];
  const plan = [];
  for (const point of S.streams) {
    plan.push({ ...point, operation: 'completions' });
    const twin = chatPoints.findIndex((x) => x.n === point.n && x.tps === point.tps);
    if (twin !== -1) plan.push({ ...chatPoints.splice(twin, 1)[0], operation: 'chat' });
  }
  for (const point of chatPoints) plan.push({ ...point, operation: 'chat' });
  for (const { n, tps, operation } of plan) out[operation].push(...(await streamPoint(targets, key, n, tps, operation)));
  for (const line of chatVsCompletionsStreams(out.completions, out.chat)) log(`chat vs completions streams through sluice, ${line}`);
  return out;
}

/** A gateway of the build before (BENCH_BASE_DIR), on a data directory of its own, its key made with its own CLI. */
async function startBeforeGateway(work) {
  const dataDir = path.join(work, 'data-before');
  fs.mkdirSync(dataDir, { recursive: true });
  const bin = path.join(S.baseDir, 'bin', 'sluice.js');
  const beforeKey = await createKeyWithCli(dataDir, bin);
  const gw = await startSluice('before', dataDir, writeConfig(dataDir, upstream.port), await freePort(), { bin });
  gw.name = 'before';
  gw.key = beforeKey;
  log(`the build before on ${gw.url} (${S.baseDir})`);
  return gw;
}

/**
 * What starting a stream costs: BENCH_STREAM_START streams of one token each, started evenly over
 * one second, and the target's CPU from the first of them to the end of the last, per stream. One
 * token and the stream's end are included, so it is an upper bound on the start alone.
 */
async function streamStartCost(targets, key) {
  const n = S.streamStartStreams;
  const out = [];
  log(`stream start: ${n} one-token streams started over 1 s (CPU per stream, start to end)`);
  for (const t of targets) {
    if (!alive(t)) continue;
    let cpuAtRamp = NaN;
    const r = await runClient(
      { mode: 'stream', url: `${t.url}/v1/completions`, streams: n, tokens: 1, tokensPerSecond: 20, rampSeconds: 1, body: streamBody(1, 20), tokenMarker: '"text"', headers: authHeaders(keyOf(t, key)) },
      (line) => {
        if (line === 'EVENT ramp-start') cpuAtRamp = treeCpuSeconds(t.pid());
      },
    );
    const cpuSeconds = treeCpuSeconds(t.pid()) - cpuAtRamp;
    const row = { target: t.name, streams: n, complete: r.complete, cpuSeconds, cpuUsPerStream: (cpuSeconds * 1e6) / n, ttftMs: r.ttftMs };
    log(`  ${t.name.padEnd(6)} complete ${r.complete}/${n}  CPU ${f(row.cpuUsPerStream, 0)} µs per stream  TTFT p50 ${f(r.ttftMs.p50, 2)} ms p99 ${f(r.ttftMs.p99, 2)} ms`);
    if (t.name === 'sluice' && r.complete !== n) fail(`stream start: ${n - r.complete} of ${n} one-token streams through sluice incomplete (${JSON.stringify(r.statuses)}, ${JSON.stringify(r.errors)})`);
    out.push(row);
  }
  return out;
}

async function streamPoint(targets, key, n, tps, operation) {
  const out = [];
  const op = OPERATIONS[operation];
  const what = operation === 'chat' ? 'streaming chat' : 'streaming';
  // New connections at up to BENCH_STREAM_RAMP_RATE, 2,000/s (faster, connection set-up itself dominates the first
  // token even direct); every stream lasts the ramp plus streamSeconds, so all are open together
  // for about streamSeconds (the plateau, where memory is read).
  const ramp = Math.max(1, n / S.streamRampRate);
  const tokens = Math.max(2, Math.round((ramp + S.streamSeconds) * tps));
  log(`${what}: ${n} concurrent streams, ${tokens} tokens at ${tps} tokens/s (${n * tps} tokens/s in all), started over ${ramp} s${operation === 'chat' ? ` (${op.path})` : ''}`);
  for (const t of targets) {
    if (t.restart) {
      // A fresh gateway (sluice, the build before, the floor), so that "idle" is the idle RSS and not what earlier scenarios left.
      await t.restart();
      await sleep(2000);
    } else await sleep(1500);
    if (!alive(t)) continue;
    const baseline = treeMemoryMB(t.pid());
    const samples = [];
    let phase = 'ramp';
    const sampler = setInterval(() => samples.push({ phase, ...treeMemoryMB(t.pid()) }), 250);
    const cpu0 = treeCpuSeconds(t.pid());
    let r;
    try {
      r = await runClient(
        {
          mode: 'stream',
          url: `${t.url}${op.path}`,
          streams: n,
          tokens,
          tokensPerSecond: tps,
          rampSeconds: ramp,
          body: op.streamBody(tokens, tps),
          tokenMarker: op.tokenMarker,
          headers: authHeaders(keyOf(t, key)),
        },
        (line) => {
          if (line === 'EVENT plateau-start') phase = 'plateau';
          else if (line === 'EVENT plateau-end') phase = 'after';
          else if (line.startsWith('  streams:')) log(`  ${t.name}${line}`);
        },
      );
    } finally {
      clearInterval(sampler);
    }
    const cpu1 = treeCpuSeconds(t.pid());
    const plateau = samples.filter((s) => s.phase === 'plateau');
    const pool = plateau.length > 0 ? plateau : samples;
    const peak = pool.reduce((a, s) => (s.rss > a.rss ? s : a), { rss: 0, pss: 0 });
    // Flat once all are open: the first and last readings of the plateau (a stream's memory that grows shows here).
    const plateauRss = plateau.map((s) => s.rss);
    const res = {
      target: t.name,
      operation,
      ...r,
      tokensPerSecond: tps,
      targetCpuPct: ((cpu1 - cpu0) / r.clientWall) * 100,
      baselineRssMB: baseline.rss,
      plateauRssMB: peak.rss,
      plateauPssMB: peak.pss,
      plateauSamples: plateau.length,
      plateauFirstRssMB: plateauRss[0] ?? NaN,
      plateauLastRssMB: plateauRss.at(-1) ?? NaN,
      plateauMinRssMB: plateauRss.length ? Math.min(...plateauRss) : NaN,
      kbPerStream: ((peak.rss - baseline.rss) * 1024) / n,
      targetCpuSeconds: cpu1 - cpu0,
    };
    const bad = n - r.complete;
    log(
      `  ${t.name.padEnd(6)} ${operation === 'chat' ? 'chat ' : ''}complete ${r.complete}/${n}  TTFT p50 ${r.ttftMs.p50.toFixed(2)} ms p99 ${r.ttftMs.p99.toFixed(2)} ms  inter-token p50 ${r.interTokenMs.p50.toFixed(2)} p99 ${r.interTokenMs.p99.toFixed(2)} ms  ` +
        `RSS ${baseline.rss.toFixed(0)} → ${peak.rss.toFixed(0)} MB${plateau.length === 0 ? ' (no plateau reached: peak of the run)' : ''} (${res.kbPerStream.toFixed(1)} KB/stream)  ${t.name} CPU ${Math.round(res.targetCpuPct)}%  client CPU ${Math.round(r.clientCpuPct)}% (event loop delay p99 ${r.clientEventLoopDelayMs.p99.toFixed(1)} ms)` +
        (bad > 0 ? `  INCOMPLETE ${bad}: statuses ${JSON.stringify(r.statuses)} errors ${JSON.stringify(r.errors)} ${JSON.stringify(r.incomplete)}` : ''),
    );
    if (bad > 0 && t.name === 'sluice') fail(`${what} ${n}@${tps}/s: ${bad} of ${n} streams through sluice incomplete (statuses ${JSON.stringify(r.statuses)}, errors ${JSON.stringify(r.errors)}, ${JSON.stringify(r.incomplete)})`);
    out.push(res);
  }
  return out;
}

/**
 * CPU per relayed stream token (issue 31): BENCH_TOKEN_STREAMS (200 streams × 500 tokens at 250
 * tokens/s each, started over N/1000 s), for completions and chat, against every target given.
 * The figure is the target's process-tree CPU while every stream is open (from the last stream's
 * first token to the first stream's end, so no start and no end is in it) over the tokens the
 * client received meanwhile; the whole run's CPU over every token (starts and ends included) is
 * kept beside it. The direct row is the upstream producing the tokens, for reference.
 */
async function scenarioTokens(targets, key) {
  const { n, tokens, tps } = S.tokenPoint;
  const out = [];
  const operations = S.chat ? ['completions', 'chat'] : ['completions'];
  log(`CPU per relayed stream token: ${n} streams × ${tokens} tokens at ${tps} tokens/s (${n * tps} tokens/s in all), ${operations.join(' and ')}`);
  for (const operation of operations) {
    const op = OPERATIONS[operation];
    for (const t of targets) {
      if (!alive(t)) continue;
      await sleep(1000);
      const marks = []; // { tokens, cpu } at the plateau's start and end
      let cpuAtRamp = NaN;
      const r = await runClient(
        { mode: 'stream', url: `${t.url}${op.path}`, streams: n, tokens, tokensPerSecond: tps, rampSeconds: n / 1000, body: op.streamBody(tokens, tps), tokenMarker: op.tokenMarker, headers: authHeaders(keyOf(t, key)) },
        (line) => {
          if (line === 'EVENT ramp-start') cpuAtRamp = treeCpuSeconds(t.pid());
          else if (line.startsWith('EVENT tokens ')) marks.push({ tokens: Number(line.slice('EVENT tokens '.length)), cpu: treeCpuSeconds(t.pid()), at: performance.now() });
        },
      );
      const cpuWhole = treeCpuSeconds(t.pid()) - cpuAtRamp;
      const windowed = marks.length === 2 && marks[1].tokens > marks[0].tokens;
      const row = {
        target: t.name,
        operation,
        streams: n,
        tokens,
        tokensPerSecond: tps,
        complete: r.complete,
        plateauTokens: windowed ? marks[1].tokens - marks[0].tokens : NaN,
        plateauSeconds: windowed ? (marks[1].at - marks[0].at) / 1000 : NaN,
        plateauCpuSeconds: windowed ? marks[1].cpu - marks[0].cpu : NaN,
        cpuUsPerToken: windowed ? ((marks[1].cpu - marks[0].cpu) * 1e6) / (marks[1].tokens - marks[0].tokens) : NaN,
        wholeCpuSeconds: cpuWhole,
        wholeCpuUsPerToken: (cpuWhole * 1e6) / Math.max(1, r.complete * tokens),
        interTokenMs: r.interTokenMs,
        ttftMs: r.ttftMs,
        clientCpuPct: r.clientCpuPct,
      };
      row.tokensPerSecondRelayed = row.plateauTokens / row.plateauSeconds;
      // The figure compared with the floor's: the window's, or the whole run's when no moment had every stream open.
      row.judgedUsPerToken = windowed ? row.cpuUsPerToken : row.wholeCpuUsPerToken;
      row.judgedOn = windowed ? 'window' : 'whole run';
      log(
        `  ${t.name.padEnd(6)} ${operation === 'chat' ? 'chat ' : ''}complete ${r.complete}/${n}  CPU ${f(row.cpuUsPerToken, 2)} µs per token while all streams were open (${row.plateauTokens} tokens in ${f(row.plateauSeconds, 2)} s, ${f(row.tokensPerSecondRelayed, 0)} tokens/s), ` +
          `${f(row.wholeCpuUsPerToken, 2)} µs per token over the whole run  inter-token p99 ${f(r.interTokenMs.p99, 2)} ms  client CPU ${Math.round(r.clientCpuPct)}%`,
      );
      if (r.complete !== n && t.name === 'sluice') fail(`per-token streams ${n}x${tokens}@${tps} (${operation}): ${n - r.complete} of ${n} streams through ${t.name} incomplete (${JSON.stringify(r.statuses)}, ${JSON.stringify(r.errors)})`);
      out.push(row);
    }
  }
  return out;
}

async function scenarioKeys(work) {
  const dataDir = path.join(work, 'data-keys');
  fs.mkdirSync(dataDir, { recursive: true });
  const config = writeConfig(dataDir, upstream.port);
  const single = await createKeyWithCli(dataDir);
  const keysFile = path.join(work, 'keys.txt');
  const started = Date.now();
  const { insertKeys } = await import('./keys.mjs');
  const secrets = await insertKeys(dataDir, S.keys);
  fs.writeFileSync(keysFile, `${secrets.join('\n')}\n`);
  log(`keys: ${S.keys} keys inserted in ${Date.now() - started} ms; gateway on that store, c=32, single key vs a random key per request`);
  const gw = await startSluice('sluice (100k keys)', dataDir, config, await freePort());
  const out = [];
  try {
    for (let r = 1; r <= S.keysRounds; r++) {
      if (!alive(gw)) break;
      out.push({ round: r, mode: 'single', ...(await measureClosed(gw, 32, { key: single }, 'one key')) });
      if (!alive(gw)) break;
      out.push({ round: r, mode: 'random', ...(await measureClosed(gw, 32, { keysFile }, `random of ${S.keys} keys`)) });
    }
  } finally {
    await stopGateway(gw);
  }
  return out;
}

async function stopGateway(gw) {
  const code = await gw.proc.stop(40_000);
  if (code !== 0) fail(`${gw.proc.name} did not stop cleanly on SIGTERM: exit ${code}; stderr tail: ${gw.proc.stderr.slice(-1000)}`);
  return code;
}

async function scenarioLedger(work) {
  const dataDir = path.join(work, 'data-ledger');
  fs.mkdirSync(dataDir, { recursive: true });
  const config = writeConfig(dataDir, upstream.port);
  const key = await createKeyWithCli(dataDir);
  const port = await freePort();
  let gw = await startSluice('sluice (ledger)', dataDir, config, port);
  const clientOptions = (seconds) => ({ mode: 'closed', url: `${gw.url}/v1/completions`, connections: 32, seconds, retryDelayMs: 20, body: BODY, headers: authHeaders(key) });
  const out = {};

  // 1. Under load: the count while the gateway keeps running.
  log(`ledger 1/2: ${S.ledgerSeconds} s of load at c=32, then compare rows with 2xx responses (gateway still running)`);
  const a = await runClient(clientOptions(S.ledgerSeconds));
  const rowsA = await settledLedgerCount(dataDir, a.ok);
  out.underLoad = { responses2xx: a.ok, responses: a.responses, statuses: a.statuses, errors: a.errors, ledgerRows: rowsA.total, ledgerByStatus: rowsA.byStatus, match: rowsA.total === a.ok };
  log(`  2xx responses ${a.ok}, ledger rows ${rowsA.total} ${JSON.stringify(rowsA.byStatus)} → ${out.underLoad.match ? 'MATCH' : 'MISMATCH'}`);
  if (!out.underLoad.match) fail(`LEDGER MISMATCH under load: ${a.ok} 2xx responses but ${rowsA.total} rows in usage_ledger`);

  // 2. Across a graceful restart in the middle of the load.
  log(`ledger 2/2: load at c=32 for ${2 * S.ledgerSeconds} s with SIGTERM + restart on the same data dir in the middle`);
  const clientRun = runClient(clientOptions(2 * S.ledgerSeconds + 2));
  await sleep(S.ledgerSeconds * 1000);
  const stopStarted = Date.now();
  const stopCode = await stopGateway(gw);
  const stopMs = Date.now() - stopStarted;
  const midRows = ledgerCount(dataDir);
  log(`  gateway stopped (exit ${stopCode}) after ${stopMs} ms; ${midRows.total} rows so far; restarting on the same port and data dir`);
  const restartStarted = Date.now();
  gw = await startSluice('sluice (ledger, restarted)', dataDir, config, port);
  log(`  restarted in ${Date.now() - restartStarted} ms`);
  const b = await clientRun;
  const stopCode2 = await stopGateway(gw);
  const rowsB = ledgerCount(dataDir);
  const totalOk = a.ok + b.ok;
  out.acrossRestart = {
    responses2xx: b.ok,
    responses: b.responses,
    statuses: b.statuses,
    errors: b.errors,
    stopMs,
    stopExit: stopCode,
    finalStopExit: stopCode2,
    ledgerRowsTotal: rowsB.total,
    ledgerByStatus: rowsB.byStatus,
    total2xx: totalOk,
    match: rowsB.total === totalOk,
  };
  log(`  2xx responses ${a.ok} + ${b.ok} = ${totalOk}; ledger rows ${rowsB.total} ${JSON.stringify(rowsB.byStatus)}; transport errors during restart ${JSON.stringify(b.errors)} → ${out.acrossRestart.match ? 'MATCH' : 'MISMATCH'}`);
  if (!out.acrossRestart.match) fail(`LEDGER MISMATCH across restart: ${totalOk} 2xx responses but ${rowsB.total} rows in usage_ledger (by status ${JSON.stringify(rowsB.byStatus)})`);
  out.pass = out.underLoad.match && out.acrossRestart.match;
  return out;
}

// ---------------------------------------------------------------- usage page
/** A GET with a session cookie, timed to the last byte of the body. */
function timedGet(url, cookie) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.get(url, { headers: { cookie }, agent: usageAgent }, (res) => {
      let bytes = 0;
      const chunks = [];
      res.on('data', (d) => {
        bytes += d.length;
        if (chunks.length < 64) chunks.push(d);
      });
      res.on('end', () => resolve({ status: res.statusCode, bytes, ms: Number(process.hrtime.bigint() - started) / 1e6, head: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
    });
    req.on('error', reject);
  });
}
const usageAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Signs in to the console as a browser would (the sign-in form's double-submit token, then the session cookie). */
async function consoleSession(baseUrl, { name, password }) {
  const form = await fetch(`${baseUrl}/app/login`);
  const token = /name="csrf" value="([^"]+)"/.exec(await form.text())[1];
  const loginCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const signedIn = await fetch(`${baseUrl}/app/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: token, username: name, password, next: '/app/usage' }),
  });
  if (signedIn.status !== 303) throw new Error(`console sign-in failed: ${signedIn.status}`);
  return signedIn.headers.getSetCookie().map((c) => c.split(';')[0]).filter((c) => !c.endsWith('=')).join('; ');
}

/** The same totals as the page's, straight from the ledger (what the roll-ups spare a page), timed. */
function ledgerTotalsSince(dataDir, since) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      `${READ_STORE}const t=Date.now();` +
        `const r=d.prepare('SELECT count(*) AS requests, sum(prompt_tokens) AS input, sum(completion_tokens) AS output, sum(cost_usd) AS cost FROM usage_ledger WHERE at >= ?').get(Number(process.argv[2]));` +
        `console.log(JSON.stringify({...r,ms:Date.now()-t}));d.close();`,
      path.join(dataDir, 'sluice.db'),
      String(since),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

async function scenarioUsage(work, state) {
  const dataDir = path.join(work, 'data-usage');
  fs.mkdirSync(dataDir, { recursive: true });
  const options = { rows: S.usageRows, days: S.usageDays, accounts: S.usageAccounts, keysPerAccount: S.usageKeysPerAccount, models: S.usageModels };
  log(`usage: filling a store with ${S.usageRows.toLocaleString('en-US')} ledger rows over ${S.usageDays} days (${S.usageAccounts} accounts × ${S.usageKeysPerAccount} keys, ${S.usageModels} models), then its roll-ups`);
  const filled = await run(process.execPath, [path.join(BENCH_DIR, 'usage-fill.mjs'), dataDir, JSON.stringify(options)], { cwd: ROOT });
  const m = /RESULT (\{.*\})/.exec(filled.stdout);
  if (!m) throw new Error(`usage-fill.mjs failed (${filled.code}): ${filled.stderr.slice(-2000)}`);
  const fill = { ...JSON.parse(m[1]), storeMB: fs.statSync(path.join(dataDir, 'sluice.db')).size / 1e6 };
  log(`  ledger written in ${fill.ledgerSeconds} s, roll-ups built in ${fill.rollUpSeconds} s (${fill.rollUpRows} rows); store ${Math.round(fill.storeMB)} MB`);
  const DAY = 86_400_000;
  const since90 = (Math.floor(Date.now() / DAY) - 89) * DAY;
  const ledgerScan = ledgerTotalsSince(dataDir, since90);
  log(`  for comparison, the 90-day totals from the ledger itself: ${ledgerScan.ms} ms (${ledgerScan.requests} rows)`);

  const config = writeConfig(dataDir, upstream.port);
  const gw = await startSluice('sluice (usage)', dataDir, config, await freePort());
  const account = fill.busiestAccount;
  const points = [
    ['page', 'all accounts', 30, '/app/usage'],
    ['page', 'all accounts', 90, '/app/usage?range=90'],
    ['page, by key', 'all accounts', 90, '/app/usage?range=90&by=key'],
    ['page', `one account (${account})`, 30, `/app/usage?account=${account}`],
    ['page', `one account (${account})`, 90, `/app/usage?range=90&account=${account}`],
    ['CSV', 'all accounts', 30, '/app/usage.csv'],
    ['CSV', 'all accounts', 90, '/app/usage.csv?range=90'],
    ['CSV', `one account (${account})`, 90, `/app/usage.csv?range=90&account=${account}`],
  ];
  const rows = [];
  let check = null;
  try {
    const { ADMIN } = await import('./usage-fill.mjs');
    const cookie = await consoleSession(gw.url, ADMIN);
    for (const [what, scope, days, pathAndQuery] of points) {
      if (!alive(gw)) break;
      const url = `${gw.url}${pathAndQuery}`;
      for (let i = 0; i < 2; i++) await timedGet(url, cookie); // warm-up: connections, caches
      const times = [];
      let last;
      for (let i = 0; i < S.usageRequests; i++) {
        last = await timedGet(url, cookie);
        if (last.status !== 200) throw new Error(`${pathAndQuery}: status ${last.status}`);
        times.push(last.ms);
      }
      const sorted = [...times].sort((a, b) => a - b);
      const row = { what, scope, days, path: pathAndQuery, requests: times.length, medianMs: percentile(sorted, 50), p95Ms: percentile(sorted, 95), minMs: sorted[0], maxMs: sorted.at(-1), bytes: last.bytes, times };
      rows.push(row);
      log(`  ${what.padEnd(12)} ${scope.padEnd(24)} ${days} d: median ${row.medianMs.toFixed(1)} ms  p95 ${row.p95Ms.toFixed(1)} ms  (min ${row.minMs.toFixed(1)}, max ${row.maxMs.toFixed(1)}; ${row.bytes} bytes)`);
      if (pathAndQuery === '/app/usage?range=90') {
        const shown = Number(/<dd data-total="requests">([^<]*)<\/dd>/.exec(last.head)?.[1].replaceAll(',', ''));
        check = { pageRequests90d: shown, ledgerRequests90d: ledgerScan.requests, match: shown === ledgerScan.requests };
        if (!check.match) fail(`usage: the 90-day page shows ${shown} requests, the ledger has ${ledgerScan.requests}`);
      }
    }
  } finally {
    await stopGateway(gw);
  }
  state.usage = { fill, ledgerScan, check, rows };
}

function usagePageReport(L, usage) {
  const { fill } = usage;
  L.push(`## Usage page over ${fill.rows.toLocaleString('en-US')} ledger rows`, '');
  L.push(
    `A store filled by \`bench/usage-fill.mjs\`: ${fill.accounts} accounts, ${fill.keys} keys (made with the gateway's own code) and ${fill.rows.toLocaleString('en-US')} ledger rows spread evenly over the last ${fill.days} days, ` +
      `each key on three of ${fill.models} models (2 % failures), inserted straight into \`usage_ledger\` in one SQLite transaction with a prepared statement (node:sqlite) in **${f(fill.ledgerSeconds, 1)} s**; ` +
      `then the roll-ups built from them by migration 0008's own backfill (\`rollUpWholeLedger\`, through the gateway's store) in **${f(fill.rollUpSeconds, 1)} s**: ${fill.rollUpRows.toLocaleString('en-US')} \`usage_daily\` rows. Store file ${f(fill.storeMB / 1000, 2)} GB. ` +
      `Then \`sluice serve --workers ${S.workers}\` on it, signed in as an admin; each point is ${S.usageRequests} sequential GETs on one keep-alive connection after 2 warm-up ones, timed to the last byte of the body.`,
    '',
  );
  L.push('| what | scope | days | median ms | p95 ms | min ms | max ms | bytes |', '|---|---|---|---|---|---|---|---|');
  for (const r of usage.rows) L.push(`| ${r.what} | ${r.scope} | ${r.days} | ${f(r.medianMs, 1)} | ${f(r.p95Ms, 1)} | ${f(r.minMs, 1)} | ${f(r.maxMs, 1)} | ${r.bytes.toLocaleString('en-US')} |`);
  L.push('');
  if (usage.check) L.push(`The 90-day page shows ${usage.check.pageRequests90d.toLocaleString('en-US')} requests; the ledger has ${usage.check.ledgerRequests90d.toLocaleString('en-US')} in those days: ${usage.check.match ? 'the same' : '**DIFFERENT**'}.`);
  L.push(`For comparison, the same 90-day totals added up from the ledger itself (one \`SELECT count(*), sum(…) FROM usage_ledger WHERE at >= …\`, on the \`at\` index) take ${f(usage.ledgerScan.ms / 1000, 1)} s.`, '');
}

// ---------------------------------------------------------------- routing (issue 13)
/** "every other request", "every 3rd request", … */
function everyNth(n) {
  if (n === 1) return 'every request';
  if (n === 2) return 'every other request';
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] ?? 'th');
  return `every ${n}${suffix} request`;
}

/** Another fake upstream for the routing scenario; `failEvery` > 0 answers every Nth request 503. */
async function startExtraUpstream(name, failEvery) {
  const port = await freePort();
  const args = [path.join(BENCH_DIR, 'upstream.mjs'), '--port', String(port), '--latency-ms', String(S.upstreamLatencyMs)];
  if (failEvery > 0) args.push('--fail-every', String(failEvery));
  const p = startProcess(name, process.execPath, args);
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return { name, url: `http://127.0.0.1:${port}`, port, proc: p, pid: () => p.child.pid };
}

/** GET on a fresh connection (so that successive calls reach the gateway's workers in turn); the JSON body, or null. */
function getJson(url, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        try {
          resolve(res.statusCode === 200 ? JSON.parse(text) : null);
        } catch {
          resolve(null);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
  });
}

/** bench-flaky's ledger rows of one kind (whole or stream): by status, by attempts, by final deployment, and every attempt of the retried ones. */
function routingLedger(dataDir, model, stream) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      READ_STORE +
        `const m=process.argv[2],st=Number(process.argv[3]);const w='FROM usage_ledger WHERE model=? AND stream=?';` +
        `const g=(sql)=>Object.fromEntries(d.prepare(sql).all(m,st).map(r=>[r.k,r.n]));` +
        `const rows=d.prepare('SELECT count(*) AS n '+w).get(m,st).n;` +
        `const byStatus=g('SELECT status AS k, count(*) AS n '+w+' GROUP BY status');` +
        `const byAttempts=g('SELECT attempts AS k, count(*) AS n '+w+' GROUP BY attempts');` +
        `const byDeployment=g('SELECT coalesce(deployment,\\'(none)\\') AS k, count(*) AS n '+w+' GROUP BY deployment');` +
        `const attemptLog=g('SELECT json_extract(j.value,\\'$.deployment\\')||\\' \\'||json_extract(j.value,\\'$.status\\') AS k, count(*) AS n FROM usage_ledger, json_each(usage_ledger.attempt_log) AS j WHERE model=? AND stream=? AND attempt_log IS NOT NULL GROUP BY k');` +
        `console.log(JSON.stringify({rows,byStatus,byAttempts,byDeployment,attemptLog}));d.close();`,
      path.join(dataDir, 'sluice.db'),
      model,
      stream ? '1' : '0',
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

/** The ledger is written in batches: read until the row count has not moved for a second (at most 10 s). */
async function settledRoutingLedger(dataDir, model, stream) {
  let last = routingLedger(dataDir, model, stream);
  let stableSince = Date.now();
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && Date.now() - stableSince < 1000) {
    await sleep(200);
    const now = routingLedger(dataDir, model, stream);
    if (now.rows !== last.rows) stableSince = Date.now();
    last = now;
  }
  return last;
}

/**
 * Issue 13's routing stage. (a) The happy path: closed-loop chat, `bench-model` (one deployment)
 * and `bench-routed` (two deployments on the same bench upstream, through two provider entries),
 * alternating in rounds on one gateway, so the difference is choosing among two deployments.
 * (b) A half-failing deployment: `bench-flaky` on a healthy upstream and on one that answers every
 * Nth request 503 (`upstream.mjs --fail-every N`), under closed-loop load, whole answers and
 * streams; the client must see no error; what each upstream received, the ledger's attempts and
 * the circuit's states (from /status.json) are kept. The gateway is restarted before the streams,
 * so that both runs start with every circuit closed.
 */
async function scenarioRouting(work, state) {
  const operation = S.chat ? 'chat' : 'completions';
  const op = OPERATIONS[operation];
  const bodyFor = (model, extra = {}) => JSON.stringify({ ...JSON.parse(op.body), model, ...extra });
  const healthy = await startExtraUpstream('healthy upstream', 0);
  const flaky = await startExtraUpstream('flaky upstream', S.flakyFailEvery);
  const dataDir = path.join(work, 'data-routing');
  fs.mkdirSync(dataDir, { recursive: true });
  const config = writeConfig(dataDir, upstream.port, { healthyPort: healthy.port, flakyPort: flaky.port });
  const key = await createKeyWithCli(dataDir);
  const gw = await startSluice('sluice (routing)', dataDir, config, await freePort());
  log(`routing: gateway on ${gw.url} (pid ${gw.pid()}); healthy upstream ${healthy.url}, flaky upstream ${flaky.url} (--fail-every ${S.flakyFailEvery})`);
  const out = { operation, path: op.path, happy: [], flaky: {}, flakyRouting: S.flakyRouting || '(defaults)', failEvery: S.flakyFailEvery };
  state.routing = out; // filled in as it goes, so that an aborted run still reports what it measured
  try {
    // (a) happy path, after a discarded pass of the fresh gateway over every point (whichever
    // point came first was otherwise measured at up to twice the CPU per request of the others)
    const models = ['bench-model', 'bench-routed'];
    if (S.rounds > 0) {
      log(`routing (a): warm-up pass, ${Math.max(2, S.warmupSeconds)} s at each point, not measured`);
      for (const c of S.routingConnections) for (const model of models) await closedLoopRun(gw, c, Math.max(2, S.warmupSeconds), { key, operation, body: bodyFor(model) });
    }
    for (let r = 1; r <= S.rounds; r++) {
      log(`routing (a), round ${r}/${S.rounds}: ${operation} (whole) through bench-model (1 deployment) and bench-routed (2 deployments on the same upstream), ${S.seconds} s per point`);
      const order = r % 2 === 1 ? models : [...models].reverse();
      for (const c of S.routingConnections) {
        for (const model of order) {
          if (!alive(gw)) break;
          const row = await measureClosed(gw, c, { key, operation, body: bodyFor(model) }, model);
          out.happy.push({ round: r, model, ...row });
        }
      }
    }
    for (const line of routingHappyLines(out.happy)) log(line);

    // (b) one of two deployments fails every Nth request
    if (alive(gw)) out.flaky.whole = await flakyRun(gw, key, dataDir, healthy, flaky, { operation, body: bodyFor('bench-flaky'), stream: false });
    if (alive(gw)) {
      await gw.restart();
      // Warm the fresh processes on bench-model (not the flaky deployments) before measuring.
      if (S.warmupSeconds > 0) await closedLoopRun(gw, S.flakyConnections, S.warmupSeconds, { key, operation, body: bodyFor('bench-model') });
      const streamBody = bodyFor('bench-flaky', { max_tokens: S.flakyStreamTokens, stream: true, stream_options: { include_usage: true }, bench_tokens_per_second: S.flakyStreamRate });
      out.flaky.streams = await flakyRun(gw, key, dataDir, healthy, flaky, { operation, body: streamBody, stream: true, tokenMarker: op.tokenMarker });
    }
  } finally {
    if (!gw.proc.exited) await stopGateway(gw);
    await healthy.proc.stop();
    await flaky.proc.stop();
  }
  return out;
}

/** One closed-loop run on bench-flaky (no warm-up: the circuits' first moves are in it), with what each upstream received and the circuit's states over time. */
async function flakyRun(gw, key, dataDir, healthy, flaky, { operation, body, stream, tokenMarker }) {
  const c = S.flakyConnections;
  const seconds = S.flakySeconds;
  const what = stream ? `streams (${S.flakyStreamTokens} tokens at ${S.flakyStreamRate}/s each)` : 'whole answers';
  log(`routing (b): bench-flaky, ${operation} ${what}, c=${c} for ${seconds} s; deployments: healthy upstream and one answering ${everyNth(S.flakyFailEvery)} 503; routing ${S.flakyRouting || '(defaults)'}`);
  const stats0 = { healthy: await getJson(`${healthy.url}/stats`), flaky: await getJson(`${flaky.url}/stats`) };
  const ledger0 = routingLedger(dataDir, 'bench-flaky', stream);
  // Every second: both upstreams' counters; every BENCH_FLAKY_STATUS_EVERY s: the deployments' states in /status.json (one worker's view each time).
  const timeline = [];
  const states = [];
  let sampling = true;
  const started = Date.now();
  const sampler = (async () => {
    for (let tick = 1; sampling; tick++) {
      await sleep(Math.max(0, started + tick * 1000 - Date.now()));
      if (!sampling) break;
      const t = Math.round((Date.now() - started) / 100) / 10;
      const [h, f] = await Promise.all([getJson(`${healthy.url}/stats`), getJson(`${flaky.url}/stats`)]);
      if (h && f) timeline.push({ t, healthy: h.requests - stats0.healthy.requests, flaky: f.requests - stats0.flaky.requests, flaky503: f.failed - stats0.flaky.failed });
      if (S.flakyStatusEvery > 0 && tick % S.flakyStatusEvery === 0) {
        const asked = performance.now();
        const status = await getJson(`${gw.url}/status.json`);
        const ms = Math.round((performance.now() - asked) * 10) / 10;
        const model = status?.providers?.flatMap((p) => p.models ?? []).find((m) => m.id === 'bench-flaky');
        if (model?.deployments) states.push({ t, ms, deployments: Object.fromEntries(model.deployments.map((d) => [d.provider, d.state])) });
      }
    }
  })();
  const cpu0 = treeCpuSeconds(gw.pid());
  const up0 = treeCpuSeconds(healthy.pid()) + treeCpuSeconds(flaky.pid());
  const m0 = machineCpu();
  let r;
  try {
    if (!stream) {
      const w = await closedLoopRun(gw, c, seconds, { key, operation, body });
      r = { wall: w.wall, responses: w.requests, ok: w.ok, non2xx: w.non2xx, errors: w.errors, errorKinds: {}, statuses: null, p50: w.p50_us / 1000, p99: w.p99_us / 1000, max: w.max_us / 1000, loadgen: LOADGEN, loadgenCpuPct: (w.loadgenCpu / w.wall) * 100 };
    } else {
      const x = await runClient({ mode: 'closed', url: `${gw.url}${OPERATIONS[operation].path}`, connections: c, seconds, body, headers: authHeaders(key), streamTokens: S.flakyStreamTokens, tokenMarker });
      const non2xx = Object.entries(x.statuses).filter(([s]) => Number(s) < 200 || Number(s) >= 300).reduce((a, [, n]) => a + n, 0);
      const errors = Object.values(x.errors).reduce((a, n) => a + n, 0);
      r = { wall: x.elapsed, responses: x.responses, ok: x.ok, non2xx, errors, errorKinds: x.errors, statuses: x.statuses, streams: x.streams, p50: x.latencyMs.p50, p99: x.latencyMs.p99, max: x.latencyMs.max, loadgen: 'client.mjs', loadgenCpuPct: x.clientCpuPct };
    }
  } finally {
    sampling = false;
    await sampler;
  }
  const cpu1 = treeCpuSeconds(gw.pid());
  const up1 = treeCpuSeconds(healthy.pid()) + treeCpuSeconds(flaky.pid());
  const m1 = machineCpu();
  const stats1 = { healthy: await getJson(`${healthy.url}/stats`), flaky: await getJson(`${flaky.url}/stats`) };
  const ledger1 = await settledRoutingLedger(dataDir, 'bench-flaky', stream);
  const delta = (a, b) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]).filter(([, v]) => v !== 0));
  const ledger = {
    rows: ledger1.rows - ledger0.rows,
    byStatus: delta(ledger0.byStatus, ledger1.byStatus),
    byAttempts: delta(ledger0.byAttempts, ledger1.byAttempts),
    byDeployment: delta(ledger0.byDeployment, ledger1.byDeployment),
    attemptLog: delta(ledger0.attemptLog, ledger1.attemptLog),
  };
  ledger.attempts1 = ledger.byAttempts[1] ?? 0;
  ledger.attemptsMore = Object.entries(ledger.byAttempts).filter(([k]) => Number(k) > 1).reduce((a, [, n]) => a + n, 0);
  const upstreams = {
    healthy: { requests: stats1.healthy.requests - stats0.healthy.requests, failed: stats1.healthy.failed - stats0.healthy.failed },
    flaky: { requests: stats1.flaky.requests - stats0.flaky.requests, failed: stats1.flaky.failed - stats0.flaky.failed },
  };
  const res = {
    stream,
    operation,
    connections: c,
    seconds,
    ...r,
    rps: r.ok / r.wall,
    clientVisibleNon200: r.non2xx + r.errors,
    gatewayCpuMsPerReq: ((cpu1 - cpu0) * 1000) / Math.max(1, r.responses),
    gatewayCpuPct: ((cpu1 - cpu0) / r.wall) * 100,
    upstreamsCpuPct: ((up1 - up0) / r.wall) * 100,
    machineBusyPct: ((m1.busy - m0.busy) / Math.max(1, m1.all - m0.all)) * 100,
    upstreams,
    ledger,
    circuit: circuitSummary(states, timeline),
    timeline,
    states,
  };
  log(
    `  ${what}: ${r.ok}/${r.responses} 2xx, client-visible non-200 ${res.clientVisibleNon200}${r.streams ? `, streams complete ${r.streams.complete} incomplete ${r.streams.incomplete}` : ''}; ${Math.round(res.rps)} req/s p50 ${f(r.p50, 3)} ms p99 ${f(r.p99, 3)} ms; ` +
      `gateway CPU ${f(res.gatewayCpuMsPerReq, 3)} ms/req; upstreams: healthy ${upstreams.healthy.requests}, flaky ${upstreams.flaky.requests} (${upstreams.flaky.failed} answered 503); ` +
      `ledger ${ledger.rows} rows, attempts ${JSON.stringify(ledger.byAttempts)}, by status ${JSON.stringify(ledger.byStatus)}`,
  );
  log(`  circuit: ${res.circuit.text}`);
  if (res.clientVisibleNon200 > 0) fail(`routing: bench-flaky ${what}: the client saw ${r.non2xx} non-2xx responses${r.statuses ? ` (statuses ${JSON.stringify(r.statuses)})` : ''} and ${r.errors} socket errors/timeouts out of ${r.responses}; ledger by status ${JSON.stringify(ledger.byStatus)}`);
  if (r.streams && r.streams.incomplete > 0) fail(`routing: bench-flaky streams: ${r.streams.incomplete} of ${r.ok} streams incomplete (${r.streams.noDone} without [DONE])`);
  return res;
}

/** What the flaky deployment's circuit did, from /status.json samples and the flaky upstream's traffic per second. */
function circuitSummary(states, timeline) {
  const seen = {};
  let firstOpen = null;
  for (const s of states) {
    for (const [provider, state] of Object.entries(s.deployments)) {
      (seen[provider] ??= {})[state] = (seen[provider][state] ?? 0) + 1;
      if (provider === 'bench-flaky' && state === 'open' && firstOpen === null) firstOpen = s.t;
    }
  }
  const perSecond = timeline.map((x, i) => x.flaky - (i === 0 ? 0 : timeline[i - 1].flaky));
  const quietSeconds = perSecond.filter((n) => n === 0).length;
  const fmt = (o) => Object.entries(o ?? {}).map(([k, n]) => `${k} ${n}`).join(', ') || 'no sample';
  const took = median(states.map((s) => s.ms));
  const text =
    `/status.json samples (${states.length}, one worker's view each${states.length ? `, median ${f(took, 0)} ms to answer` : ''}): ` +
    `bench-flaky ${states.map((s) => `${s.t} s ${s.deployments['bench-flaky']}`).join(', ') || 'no sample'}; bench-healthy ${fmt(seen['bench-healthy'])}` +
    `${firstOpen !== null ? `; first seen open at ${firstOpen} s` : ''}. Flaky upstream requests per second: ${perSecond.join(' ')} (${quietSeconds} of ${perSecond.length} s without any).`;
  return { seen, firstOpenAt: firstOpen, statusMedianMs: took, flakyPerSecond: perSecond, quietSeconds, text };
}

/** Medians of the happy path by connection count and model. */
function routingHappyMedians(rows) {
  const by = {};
  for (const row of rows) (by[`${row.model}|${row.connections}`] ??= []).push(row);
  const med = {};
  for (const [k, list] of Object.entries(by)) {
    med[k] = {
      model: list[0].model,
      connections: list[0].connections,
      rounds: list.length,
      rps: median(list.map((r) => r.rps)),
      rpsPerRound: list.map((r) => r.rps),
      p50: median(list.map((r) => r.p50)),
      p99: median(list.map((r) => r.p99)),
      cpuMsPerReq: median(list.map((r) => r.targetCpuMsPerReq)),
      cpuPerRound: list.map((r) => r.targetCpuMsPerReq),
      machineBusyPct: median(list.map((r) => r.machineBusyPct)),
      otherCpuPct: median(list.map((r) => r.otherCpuPct)),
      bad: list.reduce((a, r) => a + r.non2xx + r.errors, 0),
    };
  }
  return med;
}

function routingHappyLines(rows) {
  const med = routingHappyMedians(rows);
  const lines = [];
  for (const c of S.routingConnections) {
    const one = med[`bench-model|${c}`];
    const two = med[`bench-routed|${c}`];
    if (!one || !two) continue;
    lines.push(
      `routing (a) c=${c}: two deployments vs one: req/s ${f(two.rps, 0)} vs ${f(one.rps, 0)} (${signedPct(two.rps, one.rps)}), p50 ${f(two.p50, 3)} vs ${f(one.p50, 3)} ms, p99 ${f(two.p99, 3)} vs ${f(one.p99, 3)} ms, ` +
        `Sluice CPU ${f(two.cpuMsPerReq, 3)} vs ${f(one.cpuMsPerReq, 3)} ms/req (${signed(two.cpuMsPerReq - one.cpuMsPerReq, 3)} ms, ${signedPct(two.cpuMsPerReq, one.cpuMsPerReq)})`,
    );
  }
  return lines;
}

function routingReport(L, routing) {
  L.push('## Routing', '');
  L.push(
    `Issue 13's routing stage, on a gateway of its own (\`node bin/sluice.js serve${supportsWorkers() ? ` --workers ${S.workers}` : ''}\`, its own data directory), ${routing.operation} (\`${routing.path}\`, whole answers unless said).`,
    '',
  );
  if (routing.happy.length) {
    const med = routingHappyMedians(routing.happy);
    L.push('### Happy path: one deployment vs two', '');
    L.push(
      '`bench-model` has one deployment (`provider: bench-upstream`); `bench-routed` has two, `bench-upstream` and `bench-upstream-b`, two provider entries pointing at the same bench upstream process, weight 1 each, default routing (strategy `latency`: two drawn, the lower latency × in-flight). ' +
        `Each round measures both at every connection count (${LOADGEN}, ${S.seconds} s after ${S.warmupSeconds} s warm-up), bench-model first in odd rounds and bench-routed first in even ones; medians of ${S.rounds} round(s).`,
      '',
    );
    L.push('| conns | model | deployments | req/s (median) | req/s per round | p50 ms | p99 ms | Sluice CPU ms/req | CPU ms/req per round | machine busy | other CPU | non-2xx+errors |', '|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const c of S.routingConnections) {
      for (const model of ['bench-model', 'bench-routed']) {
        const r = med[`${model}|${c}`];
        if (!r) continue;
        L.push(
          `| ${c} | ${model} | ${model === 'bench-routed' ? 2 : 1} | ${f(r.rps, 0)} | ${r.rpsPerRound.map((x) => f(x, 0)).join(', ')} | ${f(r.p50, 3)} | ${f(r.p99, 3)} | ${f(r.cpuMsPerReq, 3)} | ${r.cpuPerRound.map((x) => f(x, 3)).join(', ')} | ${f(r.machineBusyPct, 0)}% | ${f(r.otherCpuPct, 0)}% | ${r.bad} |`,
        );
      }
    }
    L.push('');
    const lines = routingHappyLines(routing.happy).map((x) => x.replace(/^routing \(a\) (c=\d+): two deployments vs one: /, '$1: '));
    if (lines.length) L.push(`**Two deployments vs one:** ${lines.join('; ')}.`, '');
  }
  const runs = [routing.flaky.whole, routing.flaky.streams].filter(Boolean);
  if (runs.length) {
    L.push('### One of two deployments fails half its requests', '');
    L.push(
      `\`bench-flaky\`: deployments \`bench-healthy\` (a bench upstream of its own) and \`bench-flaky\` (another, \`upstream.mjs --fail-every ${routing.failEvery}\`: ${everyNth(routing.failEvery)} answered 503 with an OpenAI-style error body, no \`retry-after\`), weight 1 each; ` +
        `model routing: ${routing.flakyRouting === '(defaults)' ? 'none, so the defaults (strategy `latency`, retries 2, circuit: 5 failures in 30 s open it for 30 s, then one trial request)' : `\`${routing.flakyRouting}\``}. ` +
        `Closed loop without warm-up at c=${S.flakyConnections} for ${S.flakySeconds} s, whole answers (${LOADGEN}), then streams (\`bench/client.mjs\` closed mode, ${S.flakyStreamTokens} tokens at ${S.flakyStreamRate}/s each, checked for every token and \`[DONE]\`) after a gateway restart (every circuit closed again). ` +
        'Upstream counts are from `GET /stats` of each upstream; the ledger figures are the `usage_ledger` rows of bench-flaky (`attempts` = upstream attempts of the request).',
      '',
    );
    L.push(
      '| run | 2xx / responses | client-visible non-200 | req/s | p50 ms | p99 ms | Sluice CPU ms/req | healthy upstream requests | flaky upstream requests (503) | ledger rows | attempts = 1 | attempts > 1 | ledger by status | streams complete |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const r of runs) {
      L.push(
        `| ${r.stream ? 'streams' : 'whole'} | ${r.ok} / ${r.responses} | ${r.clientVisibleNon200 > 0 ? `**${r.clientVisibleNon200}**` : 0} | ${f(r.rps, 0)} | ${f(r.p50, 3)} | ${f(r.p99, 3)} | ${f(r.gatewayCpuMsPerReq, 3)} | ${r.upstreams.healthy.requests} | ${r.upstreams.flaky.requests} (${r.upstreams.flaky.failed}) | ${r.ledger.rows} | ${r.ledger.attempts1} | ${r.ledger.attemptsMore} ${JSON.stringify(r.ledger.byAttempts)} | ${JSON.stringify(r.ledger.byStatus)} | ${r.streams ? `${r.streams.complete}/${r.ok}` : ''} |`,
      );
    }
    L.push('');
    for (const r of runs) {
      L.push(`- **${r.stream ? 'streams' : 'whole'}**: attempts of the retried requests (deployment, status): ${JSON.stringify(r.ledger.attemptLog)}; rows by the deployment that answered: ${JSON.stringify(r.ledger.byDeployment)} (the flaky one answers its other requests). Circuit: ${r.circuit.text}`);
    }
    L.push(
      '',
      'Each worker process keeps its own deployment health, so with several workers each opens and tries its own circuit; a `/status.json` sample is the view of whichever worker answered it ' +
        `(sampled every ${S.flakyStatusEvery} s on a fresh connection; each answer costs that worker a few hundred ms, which weighs on the run). ` +
        'Ledger rows beyond the client\'s responses are the requests in flight when the load generator stopped.',
      '',
    );
  }
}

function limitsReport(L, limits) {
  L.push('## Limits: the cost of the admit stage', '');
  const gw = (id) => limits.gateways[id];
  L.push(
    'The same non-streaming load as the closed loop (completions and chat, a prompt and max_tokens 16, wrk) through gateways in several configurations, measured in rounds that interleave them ' +
      `(${limits.settings.rounds} round(s) of ${limits.settings.seconds} s per point after a discarded 1 s pass over every point; the configurations rotate and the operations swap from one round to the next). ` +
      `Each gateway has its own data directory with two keys of account \`bench\`: one without limits and one with \`${limits.settings.limitsFlags}\` on \`bench-model\` (priced: $0.2 / $0.6 per Mtok), ` +
      'so the admit stage keeps every counter (rolling-minute requests and tokens, the in-flight lease, the monthly spend) and counts the prompt\'s tokens for the reservation, but never refuses. ' +
      (limits.redis.skipped ? `**Redis configurations skipped**: ${limits.redis.skipped}.` : `Redis ${limits.redis.version} at \`${limits.redis.url}\`, prefix \`${limits.redis.prefix}\` (fresh for the run, deleted at its end).`),
    '',
  );
  L.push('| configuration | gateway | key | compared with |', '|---|---|---|---|');
  for (const c of limits.configurations) L.push(`| ${c.id}: ${c.label} | \`${gw(c.gateway)?.command ?? c.gateway}\` | ${c.limited ? 'with limits' : 'without limits'} | ${c.base ?? ''} |`);
  L.push('');
  const t = roundsTable(limits);
  if (t.length) {
    L.push(
      '| conns | operation | configuration | req/s | p50 ms | p99 ms | Sluice CPU µs/req | Redis CPU µs/req (in the scripts) | EVALSHA per req (commands run, the scripts’ included) | Δ p50 µs | Δ p99 µs | Δ Sluice CPU µs/req | Δ Sluice + Redis CPU µs/req | req/s vs base | Δ p50 per round | Δ CPU per round | requests in the minute | machine busy | other CPU | non-2xx+errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const x of t) {
      const onRedis = LIMITS_GATEWAYS[limits.configurations.find((c) => c.id === x.config).gateway].redis;
      const hasBase = x.base !== null;
      L.push(
        `| ${x.connections} | ${x.operation} | ${x.config} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${f(x.cpuUsPerReq, 0)} | ${onRedis ? `${f(x.redisCpuUsPerReq, 0)} (${f(x.scriptUsPerReq, 0)})` : ''} | ${onRedis ? `${f(x.evalshaPerReq, 2)} (${f(x.redisCommandsPerReq, 2)})` : ''} | ` +
          `${hasBase ? signed(x.dP50Us, 0) : ''} | ${hasBase ? signed(x.dP99Us, 0) : ''} | ${hasBase ? signed(x.dCpuUs, 0) : ''} | ${hasBase ? signed(x.dCpuUs + (onRedis ? x.redisCpuUsPerReq : 0), 0) : ''} | ${hasBase ? signedPct(x.rpsRatio, 1) : ''} | ` +
          `${x.dP50UsPerRound.map((v) => signed(v, 0)).join(', ')} | ${x.dCpuUsPerRound.map((v) => signed(v, 0)).join(', ')} | ${Number.isFinite(x.windowRequests) ? f(x.windowRequests, 0) : ''} | ${f(x.machineBusyPct, 0)}% | ${f(x.otherCpuPct, 0)}% | ${x.bad} |`,
      );
    }
    L.push(
      '',
      'Medians of the rounds. "Δ" = this configuration minus the one it is compared with, in the same round (each pair ran within a couple of minutes), median over the rounds; the per-round values follow. ' +
        '"Sluice CPU" = utime+stime of the gateway\'s processes (with `--workers 2`: the primary, which keeps the in-memory counters, and both workers) per request. ' +
        '"Redis CPU" = the Redis server\'s `used_cpu_user + used_cpu_sys` (INFO cpu) over the run per request, in brackets the time its `commandstats` give to EVALSHA (running the scripts); "EVALSHA per req" = `commandstats` calls of EVALSHA (and EVAL) per request, the network round trips of the admit stage (one to admit, one to settle), and in brackets every command Redis ran per request, the `redis.call`s inside the scripts included: all server-wide, so another client of the same Redis would add to them. ' +
        '"requests in the minute" = the rolling-minute request count of the limited key right after the point (from `x-ratelimit-remaining-requests` of one more request): the counters were that full. ' +
        '"other CPU" excludes Redis.',
      '',
    );
    L.push(`**Admit stage per request:** ${limitsSummaryLines(limits).map((x) => x.replace(/^limits /, '')).join(' ')}`, '');
  }
  if (limits.sustained.length) {
    L.push('### Sustained load on one limited key', '');
    L.push(
      'A new limited key (its rolling minute empty) at c=32, completions, in 10 s slices without a pause, so that the counters fill to a whole minute of requests and then keep as many (old entries leave as new ones come); then the same gateway with its key without limits for 10 s.',
      '',
      '| configuration | seconds | req/s | p50 ms | p99 ms | Sluice CPU µs/req | Redis CPU µs/req | requests in the minute after the slice | machine busy | other CPU | non-2xx+errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const x of limits.sustained) {
      L.push(
        `| ${x.config}${x.afterSustained ? ' (key without limits)' : ''} | ${x.afterSustained ? 'after' : `${x.fromSecond}–${x.fromSecond + 10}`} | ${f(x.rps, 0)} | ${f(x.p50, 3)} | ${f(x.p99, 3)} | ${f(x.targetCpuMsPerReq * 1000, 0)} | ${x.redis ? f(x.redis.cpuUsPerReq, 0) : ''} | ${x.window ? x.window.requestsInWindow : ''} | ${f(x.machineBusyPct, 0)}% | ${f(x.otherCpuPct, 0)}% | ${x.non2xx + x.errors} |`,
      );
    }
    L.push('', '"other CPU" = processes outside the measurement (Redis excluded), % of one core: a slice with much of it ran beside other work.', '');
  }
  const c = limits.checks ?? {};
  if (c.ledger) {
    const others = Object.values(c.ledger).flatMap((x) => [x.limited, x.plain]).flatMap((x) => Object.keys(x.byStatus)).filter((st) => st !== '200' && st !== '499');
    L.push(
      `Checks: ${others.length ? `**answers other than 200 in the ledgers: ${[...new Set(others)].join(', ')}**` : 'no answer other than 200 in the gateways\' ledgers, but for 499s (requests in flight when wrk stopped): no refusal'} (limited keys: ${Object.entries(c.ledger)
        .map(([id, x]) => `${id} ${JSON.stringify(x.limited.byStatus)}, $${f(x.limited.costUsd, 4)}`)
        .join('; ')})` +
        (c.redisKeys !== undefined ? `; ${c.redisKeys} Redis keys under the prefix at the end, spend counters ${JSON.stringify(c.redisSpend)}; ${c.redisKeysDeleted} deleted, ${c.redisKeysLeft} left` : '') +
        '.',
      '',
    );
  }
  const m = limits.micro;
  if (m) {
    L.push('### The admit stage alone', '');
    L.push(
      '`bench/limits-admit.mjs`: `LimitAdmission.admit` then `settle` (not awaited, as the gateway does) in a loop, from `dist/`, against the counters the gateway builds: **memory** = `LocalCounter` (one process, no Redis), **redis** = `openLimitCounter` with a Redis URL (FailoverCounter over RedisCounter, one ioredis connection). ' +
        `The key's limits as above (\`${JSON.stringify(m.limits)}\`), the prompt "${m.prompt}" counted by the gateway's token counter, max_tokens 16; ${m.seconds} s per point after 2,000 unmeasured. ` +
        '"µs per request" = wall time / requests (a PING on the connection before the clock stops, so every settle has been answered); CPU = this process\'s; Redis CPU is server-wide (INFO cpu); Redis commands counted on the client.',
      '',
      '| counter | concurrency | scopes | µs per request | admits/s | admit p50 µs | admit p99 µs | CPU µs/req | Redis CPU µs/req | Redis commands per request |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const x of m.steady) {
      L.push(`| ${x.counter} | ${x.concurrency} | ${x.scopes} | ${f(x.wallUsPerRequest, 1)} | ${f(x.perSecond, 0)} | ${f(x.admitP50Us, 1)} | ${f(x.admitP99Us, 1)} | ${f(x.cpuUsPerRequest, 1)} | ${x.counter === 'redis' ? f(x.redisCpuUsPerRequest, 1) : ''} | ${x.counter === 'redis' ? JSON.stringify(x.redisCommandsPerRequest) : ''} |`);
    }
    if (m.redisSkipped) L.push('', `Redis: ${m.redisSkipped}.`);
    L.push('');
    if (m.fill.length) {
      L.push(
        'At a full rolling minute (key limits, concurrency 1): **memory** on a simulated clock that moves 1/R s per request, after 61 s of such requests, so each admission finds R × 60 requests and token reservations in the minute and drops about one; ' +
          '**redis** with the key\'s `req`, `tok` and `tokv` filled with R × 60 entries spread over the last minute of Redis\'s clock (they leave at R per second while the loop runs).',
        '',
        '| counter | R (requests/s of the key) | entries in the minute | µs per request | admit p50 µs | admit p99 µs | CPU µs/req | Redis CPU µs/req |',
        '|---|---|---|---|---|---|---|---|',
      );
      for (const x of m.fill) L.push(`| ${x.counter} | ${x.ratePerSecond} | ${x.windowEntries.toLocaleString('en-US')} | ${f(x.wallUsPerRequest, 1)} | ${f(x.admitP50Us, 1)} | ${f(x.admitP99Us, 1)} | ${f(x.cpuUsPerRequest, 1)} | ${x.counter === 'redis' ? f(x.redisCpuUsPerRequest, 1) : ''} |`);
      L.push('');
    }
    if (m.tokenCount.length) {
      L.push('The prompt\'s token count that a tpm limit or a budget adds to admission (the gateway\'s counter, o200k; without such limits the gateway counts nothing when the upstream reports usage):', '');
      L.push('| prompt | tokens | µs per count | CPU µs per count |', '|---|---|---|---|');
      for (const x of m.tokenCount) L.push(`| ${x.prompt} | ${x.tokens} | ${f(x.usPerCount, 1)} | ${f(x.cpuUsPerCount, 1)} |`);
      L.push('');
    }
  }
}

async function settledLedgerCount(dataDir, expected) {
  // The ledger is written in batches (every 200 ms): wait until the count stops moving.
  let last = ledgerCount(dataDir);
  let stableSince = Date.now();
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (last.total === expected && Date.now() - stableSince > 500) break;
    if (Date.now() - stableSince > 2000) break;
    await sleep(200);
    const now = ledgerCount(dataDir);
    if (now.total !== last.total) stableSince = Date.now();
    last = now;
  }
  return last;
}

// ---------------------------------------------------------------- limits (the admit stage)
/**
 * A key's limits for the limits scenario: every kind at once (rpm, tpm, concurrency, a monthly
 * budget on the priced bench-model), each far above what the run can reach, so that nothing is
 * ever refused while every counter is kept: the rolling-minute windows, the in-flight lease, the
 * prompt's token count for the reservation and its cost against the budget.
 */
const LIMITS_FLAGS = ['--rpm', '1000000000', '--tpm', '1000000000000', '--concurrency', '100000', '--budget-usd', '1000000', '--budget-period', 'month'];

/** The limits scenario's configurations: `base` is the configuration a difference is taken against. */
function limitsConfigurations(haveRedis) {
  const list = [
    { id: 'none', gateway: 'w1', limited: false, label: '(a) no limits', base: null },
    { id: 'memory', gateway: 'w1', limited: true, label: '(b) limits, in memory', base: 'none' },
    { id: 'redis-none', gateway: 'w1-redis', limited: false, label: 'no limits, gateway with --redis (control)', base: 'none' },
    { id: 'redis', gateway: 'w1-redis', limited: true, label: '(c) limits, Redis', base: 'none' },
    { id: 'w2-none', gateway: 'w2', limited: false, label: '--workers 2, no limits', base: null },
    { id: 'w2-ipc', gateway: 'w2', limited: true, label: '(d) --workers 2, limits in the primary (IPC)', base: 'w2-none' },
    { id: 'w2-redis', gateway: 'w2-redis', limited: true, label: '(d) --workers 2, limits on Redis', base: 'w2-none' },
  ];
  return list.filter(
    (c) => (haveRedis || !c.gateway.endsWith('redis')) && (S.limitsWorkers2 || !c.gateway.startsWith('w2')) && (S.limitsConfigurations.length === 0 || S.limitsConfigurations.includes(c.id)),
  );
}

const LIMITS_GATEWAYS = {
  w1: { workers: 1, redis: false },
  'w1-redis': { workers: 1, redis: true },
  w2: { workers: 2, redis: false },
  'w2-redis': { workers: 2, redis: true },
};

/** A Redis client of the bench's own (ioredis, the gateway's dependency), or the reason there is none. */
async function benchRedis() {
  try {
    const { Redis } = await import('ioredis');
    const redis = new Redis(S.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
    redis.on('error', () => {});
    await redis.connect();
    const version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
    return { redis, version };
  } catch (error) {
    return { reason: `Redis at ${S.redisUrl} not reachable (${error.message})` };
  }
}

/** Redis's CPU seconds (INFO cpu) and its commandstats, server-wide. */
async function redisReading(redis) {
  const [cpu, stats] = await Promise.all([redis.info('cpu'), redis.info('commandstats')]);
  const num = (k) => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  const commands = {};
  for (const m of stats.matchAll(/cmdstat_([^:]+):calls=(\d+),usec=(\d+)/g)) commands[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return { cpuSeconds: num('used_cpu_user') + num('used_cpu_sys'), commands };
}

/** What Redis did between two readings, per request of the point (server-wide: other clients of that Redis count too). */
function redisDelta(a, b, requests) {
  const calls = {};
  let total = 0;
  let scriptUsec = 0;
  for (const [name, x] of Object.entries(b.commands)) {
    const d = x.calls - (a.commands[name]?.calls ?? 0);
    if (d <= 0 || name === 'info') continue;
    calls[name] = d;
    total += d;
    if (name === 'evalsha' || name === 'eval') scriptUsec += x.usec - (a.commands[name]?.usec ?? 0);
  }
  const per = (x) => x / Math.max(1, requests);
  return {
    cpuUsPerReq: per((b.cpuSeconds - a.cpuSeconds) * 1e6),
    commandsPerReq: per(total),
    evalshaPerReq: per((calls.evalsha ?? 0) + (calls.eval ?? 0)),
    scriptUsPerReq: per(scriptUsec),
    calls,
  };
}

/** One request with `key`: its status and x-ratelimit-* headers (the limits in force, and how full the request window is). */
async function rateLimitProbe(url, key, operation) {
  const op = OPERATIONS[operation];
  const res = await fetch(`${url}${op.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders(key) }, body: op.body, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  const h = (name) => res.headers.get(name);
  const limit = h('x-ratelimit-limit-requests');
  const remaining = h('x-ratelimit-remaining-requests');
  return {
    status: res.status,
    limited: limit !== null,
    requestsInWindow: limit === null ? null : Number(limit) - Number(remaining),
    tokensInWindow: h('x-ratelimit-limit-tokens') === null ? null : Number(h('x-ratelimit-limit-tokens')) - Number(h('x-ratelimit-remaining-tokens')),
  };
}

/** usage_ledger rows by key and status, with the cost, of one gateway's store. */
function ledgerByKey(dataDir) {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      READ_STORE +
        `console.log(JSON.stringify(d.prepare('SELECT key_id AS key, status, count(*) AS n, sum(cost_usd) AS cost FROM usage_ledger GROUP BY key_id, status').all()));d.close();`,
      path.join(dataDir, 'sluice.db'),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.toString());
}

async function redisKeysUnder(redis, prefix) {
  const keys = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/**
 * The admit stage's cost (per-key limits): the same non-streaming load as the closed loop
 * (completions and chat, S.limitsConnections) through gateways in several configurations, in
 * rounds that interleave them: a key without limits; a key with rpm + tpm + concurrency + budget,
 * counters in memory; the same on Redis (`--redis`, a fresh prefix deleted afterwards); with
 * `--workers 2`, counters in the primary (IPC) and on Redis. Any non-2xx fails the scenario.
 * Then, optionally, a sustained run on one limited key (the rolling minute filling up), and the
 * admit stage alone (bench/limits-admit.mjs).
 */
async function scenarioLimits(work, state) {
  const conn = await benchRedis();
  const redis = conn.redis ?? null;
  const prefix = `bench-limits-${process.pid}-${Date.now().toString(36)}:`;
  const configurations = limitsConfigurations(redis !== null);
  const out = {
    settings: { connections: S.limitsConnections, seconds: S.limitsSeconds, rounds: S.limitsRounds, workers2: S.limitsWorkers2, sustainedSeconds: S.limitsSustainedSeconds, microSeconds: S.limitsMicroSeconds, limitsFlags: LIMITS_FLAGS.join(' ') },
    redis: redis ? { url: S.redisUrl, version: conn.version, prefix } : { skipped: conn.reason },
    configurations,
    gateways: {},
    rows: [],
    sustained: [],
    checks: {},
    micro: null,
  };
  state.limits = out; // filled in as it goes, so that an aborted run still reports what it measured
  if (!redis) log(`limits: ${conn.reason}: the Redis configurations are skipped`);
  const gateways = {};
  try {
    // One gateway per configuration of the process (workers, Redis), each with its own data
    // directory, a key without limits and a key with every limit; started side by side.
    await Promise.all(
      [...new Set(configurations.map((c) => c.gateway))].map(async (id) => {
        const g = LIMITS_GATEWAYS[id];
        const dataDir = path.join(work, `data-limits-${id}`);
        fs.mkdirSync(dataDir, { recursive: true });
        const config = writeConfig(dataDir, upstream.port);
        const plain = await createKeyRecordWithCli(dataDir, 'bench-no-limits');
        const limited = await createKeyRecordWithCli(dataDir, 'bench-limits', LIMITS_FLAGS);
        const args = g.redis ? ['--redis', S.redisUrl, '--redis-prefix', prefix] : [];
        const gw = await startSluice(`sluice (limits, ${id})`, dataDir, config, await freePort(), { workers: g.workers, args });
        gateways[id] = { ...g, gw, dataDir, plain, limited };
        out.gateways[id] = { workers: g.workers, redis: g.redis, command: `sluice serve --workers ${g.workers}${g.redis ? ` --redis ${S.redisUrl} --redis-prefix ${prefix}` : ''}`, limitedKeyId: limited.id, limits: limited.limits };
        log(`limits: gateway ${id} on ${gw.url} (pid ${gw.pid()}, ${processTree(gw.pid()).length} processes; --workers ${g.workers}${g.redis ? `, --redis, prefix ${prefix}` : ''}); limited key ${limited.id}: ${JSON.stringify(limited.limits)}`);
      }),
    );
    const keyOf = (c) => (c.limited ? gateways[c.gateway].limited.key : gateways[c.gateway].plain.key);
    const operations = S.chat ? ['completions', 'chat'] : ['completions'];

    // Each key answers with x-ratelimit-* headers exactly when it has limits.
    for (const c of configurations) {
      const p = await rateLimitProbe(gateways[c.gateway].gw.url, keyOf(c), 'completions');
      if (p.status !== 200 || p.limited !== c.limited) throw new Error(`limits: probe of ${c.id} answered ${p.status} with${p.limited ? '' : 'out'} x-ratelimit headers (expected 200, ${c.limited ? 'with' : 'without'})`);
    }

    // A discarded pass over every point: JIT, connection pools, the tokenizer's tables and the budget's first seeding.
    log(`limits: warm-up pass, 1 s at each point, not measured (${configurations.map((c) => c.id).join(', ')})`);
    for (const cn of S.limitsConnections) for (const operation of operations) for (const c of configurations) await closedLoopRun(gateways[c.gateway].gw, cn, 1, { key: keyOf(c), operation });

    for (let r = 1; r <= S.limitsRounds; r++) {
      // The configurations rotate from one round to the next, and the operations swap, so that none always comes first.
      const shift = (r - 1) % configurations.length;
      const order = [...configurations.slice(shift), ...configurations.slice(0, shift)];
      const ops = r % 2 === 1 ? operations : [...operations].reverse();
      log(`limits, round ${r}/${S.limitsRounds}: ${S.limitsSeconds} s per point, c=${S.limitsConnections.join(',')}, ${ops.join(' then ')}; order ${order.map((c) => c.id).join(', ')}`);
      for (const cn of S.limitsConnections) {
        for (const operation of ops) {
          for (const c of order) {
            const g = gateways[c.gateway];
            if (!alive(g.gw)) continue;
            const probe = redis ? () => redisReading(redis) : undefined;
            const row = await measureClosed(g.gw, cn, { key: keyOf(c), operation }, `${c.id}${operation === 'chat' ? ' chat' : ''}`, { warmupSeconds: 0, seconds: S.limitsSeconds, probe });
            const { probe: readings, ...rest } = row;
            const entry = { round: r, config: c.id, ...rest };
            if (readings) {
              entry.redis = redisDelta(readings.before, readings.after, row.requests);
              // % of one core over the run (wall = ok / rps), so that Redis is not counted as "other CPU"
              entry.redisCpuPct = (entry.redis.cpuUsPerReq * row.requests) / 1e4 / Math.max(1e-9, row.ok / row.rps);
              entry.otherCpuPct = Math.max(0, row.otherCpuPct - entry.redisCpuPct);
            }
            if (c.limited) entry.window = await rateLimitProbe(g.gw.url, keyOf(c), operation);
            if (row.non2xx > 0) fail(`limits: ${c.id} c=${cn} ${operation}: ${row.non2xx} non-2xx answers out of ${row.requests} (a refusal by the limits, 429, would make the figures meaningless)`);
            log(
              `    ${c.id}: ${entry.redis ? `Redis ${f(entry.redis.cpuUsPerReq, 1)} µs CPU/req, ${f(entry.redis.evalshaPerReq, 2)} EVALSHA/req, ${f(entry.redis.commandsPerReq, 2)} commands/req` : ''}` +
                `${entry.window ? `${entry.redis ? '; ' : ''}after it, ${entry.window.requestsInWindow} requests in the key's rolling minute` : ''}`,
            );
            out.rows.push(entry);
          }
        }
      }
    }
    for (const line of limitsSummaryLines(out)) log(line);

    // Uninterrupted load on one limited key, in 10 s slices: the rolling minute fills, then old entries leave as new ones come.
    if (S.limitsSustainedSeconds > 0) {
      const plan = configurations.filter((c) => c.limited && (c.id === 'memory' || c.id === 'redis'));
      for (const c of plan) {
        const g = gateways[c.gateway];
        // A key of its own, so that the minute starts empty.
        const key = await createKeyRecordWithCli(g.dataDir, `bench-sustained-${c.id}`, LIMITS_FLAGS);
        await sleep(1500); // the gateway notices the new key (keys_version)
        const slices = Math.max(1, Math.round(S.limitsSustainedSeconds / 10));
        log(`limits, sustained: ${c.id}, one new limited key at c=32 for ${slices} × 10 s without a pause`);
        for (let i = 1; i <= slices; i++) {
          const probe = redis ? () => redisReading(redis) : undefined;
          const row = await measureClosed(g.gw, 32, { key: key.key, operation: 'completions' }, `${c.id} sustained ${i * 10 - 10}-${i * 10} s`, { warmupSeconds: 0, seconds: 10, probe });
          const { probe: readings, ...rest } = row;
          const entry = { config: c.id, slice: i, fromSecond: (i - 1) * 10, ...rest };
          if (readings) {
            entry.redis = redisDelta(readings.before, readings.after, row.requests);
            entry.redisCpuPct = (entry.redis.cpuUsPerReq * row.requests) / 1e4 / Math.max(1e-9, row.ok / row.rps);
            entry.otherCpuPct = Math.max(0, row.otherCpuPct - entry.redisCpuPct);
          }
          entry.window = await rateLimitProbe(g.gw.url, key.key, 'completions');
          if (row.non2xx > 0) fail(`limits, sustained ${c.id}: ${row.non2xx} non-2xx answers out of ${row.requests}`);
          out.sustained.push(entry);
        }
        // The same load on the key without limits right after, for comparison.
        const base = await measureClosed(g.gw, 32, { key: g.plain.key, operation: 'completions' }, `${c.id === 'redis' ? 'redis-none' : 'none'} (after the sustained run)`, { warmupSeconds: 0, seconds: 10 });
        out.sustained.push({ config: c.id === 'redis' ? 'redis-none' : 'none', slice: 0, afterSustained: c.id, ...base });
      }
    }

    // Checks: no refusal in any ledger, the counters really on Redis, nothing degraded.
    out.checks.ledger = {};
    for (const [id, g] of Object.entries(gateways)) {
      if (!alive(g.gw)) continue;
      await sleep(500); // the ledger is written in batches
      const rows = ledgerByKey(g.dataDir);
      const mine = (k) => rows.filter((x) => x.key === k.id);
      const summary = (list) => ({ byStatus: Object.fromEntries(list.map((x) => [x.status, x.n])), costUsd: list.reduce((a, x) => a + (x.cost ?? 0), 0) });
      out.checks.ledger[id] = { limited: summary(mine(g.limited)), plain: summary(mine(g.plain)) };
      // 499 = wrk stopping at the end of a point with requests in flight; anything else is a failure, a 429 above all.
      const refused = rows.filter((x) => x.status !== 200 && x.status !== 499);
      if (refused.length > 0) fail(`limits: gateway ${id}'s ledger has answers other than 200 (and 499, wrk stopping): ${JSON.stringify(refused)}${refused.some((x) => x.status === 429) ? ' — REFUSED BY THE LIMITS (429): the limits are too low for this run' : ''}`);
      if (g.redis) {
        const status = await getJson(`${g.gw.url}/status.json`, 10_000);
        const degraded = status?.degraded ?? null;
        out.checks[`degraded_${id}`] = degraded;
        if (degraded === null || degraded.length > 0 || /Redis is unreachable/.test(g.gw.proc.stderr)) fail(`limits: gateway ${id} did not count on Redis throughout: /status.json degraded ${JSON.stringify(degraded)}; stderr ${g.gw.proc.stderr.slice(-500)}`);
      }
    }
    if (redis) {
      const keys = await redisKeysUnder(redis, prefix);
      const spend = keys.filter((k) => k.includes(':spend:'));
      out.checks.redisKeys = keys.length;
      out.checks.redisSpend = Object.fromEntries(await Promise.all(spend.map(async (k) => [k.slice(prefix.length), Number(await redis.get(k))])));
      log(`limits: ${keys.length} Redis keys under ${prefix}; spend counters ${JSON.stringify(out.checks.redisSpend)}`);
      if (configurations.some((c) => c.id === 'redis') && spend.length === 0) fail(`limits: no spend counter under ${prefix}: the budget path was not exercised on Redis`);
    }
    log(`limits: ledger rows of the limited keys ${JSON.stringify(Object.fromEntries(Object.entries(out.checks.ledger).map(([id, x]) => [id, x.limited])))}`);
  } finally {
    for (const g of Object.values(gateways)) if (!g.gw.proc.exited) await stopGateway(g.gw);
    if (redis) {
      out.checks.redisKeysDeleted = await dropRedisPrefix(redis, prefix);
      out.checks.redisKeysLeft = (await redisKeysUnder(redis, prefix)).length;
      log(`limits: deleted ${out.checks.redisKeysDeleted} Redis keys under ${prefix} (${out.checks.redisKeysLeft} left)`);
    }
  }

  // The admit stage alone, with the gateways stopped.
  try {
    if (S.limitsMicroSeconds > 0) {
      log(`limits: the admit stage alone (bench/limits-admit.mjs, ${S.limitsMicroSeconds} s per point)`);
      const r = await run(process.execPath, [path.join(BENCH_DIR, 'limits-admit.mjs'), JSON.stringify({ seconds: S.limitsMicroSeconds, redisUrl: S.redisUrl, prefix: `${prefix}admit:` })], { cwd: ROOT });
      for (const line of r.stderr.split('\n').filter(Boolean)) log(line.trim());
      const m = /RESULT (\{.*\})/.exec(r.stdout);
      if (m) out.micro = JSON.parse(m[1]);
      else fail(`limits: bench/limits-admit.mjs failed (code ${r.code}): ${r.stderr.slice(-1000)}`);
    }
  } finally {
    if (redis) {
      const left = await dropRedisPrefix(redis, prefix);
      if (left > 0) fail(`limits: ${left} Redis keys were left under ${prefix} by the micro-benchmark (now deleted)`);
      out.checks.redisKeysLeft = (await redisKeysUnder(redis, prefix)).length;
      redis.disconnect();
    }
  }
  return out;
}

/**
 * Per configuration, operation and connection count: medians of the rounds, and the differences
 * from its base configuration taken round by round (the two points of a round ran minutes apart
 * at most), with their median.
 */
/** Medians of interleaved rounds per configuration, and each configuration's differences from its base within the same round. */
function roundsTable(limits) {
  const by = {};
  for (const row of limits.rows) (by[`${row.config}|${row.operation}|${row.connections}`] ??= []).push(row);
  const out = [];
  for (const cn of limits.settings.connections) {
    for (const operation of ['completions', 'chat']) {
      for (const c of limits.configurations) {
        const list = by[`${c.id}|${operation}|${cn}`];
        if (!list) continue;
        const base = c.base ? by[`${c.base}|${operation}|${cn}`] ?? [] : [];
        const paired = (field) =>
          list
            .map((row) => {
              const b = base.find((x) => x.round === row.round);
              return b ? row[field] - b[field] : NaN;
            })
            .filter(Number.isFinite);
        const redisCpu = list.map((x) => x.redis?.cpuUsPerReq ?? NaN);
        out.push({
          config: c.id,
          label: c.label,
          base: c.base,
          operation,
          connections: cn,
          rounds: list.length,
          rps: median(list.map((x) => x.rps)),
          p50Ms: median(list.map((x) => x.p50)),
          p99Ms: median(list.map((x) => x.p99)),
          cpuUsPerReq: median(list.map((x) => x.targetCpuMsPerReq * 1000)),
          redisCpuUsPerReq: median(redisCpu),
          evalshaPerReq: median(list.map((x) => x.redis?.evalshaPerReq ?? NaN)),
          redisCommandsPerReq: median(list.map((x) => x.redis?.commandsPerReq ?? NaN)),
          scriptUsPerReq: median(list.map((x) => x.redis?.scriptUsPerReq ?? NaN)),
          windowRequests: median(list.map((x) => x.window?.requestsInWindow ?? NaN)),
          machineBusyPct: median(list.map((x) => x.machineBusyPct)),
          otherCpuPct: median(list.map((x) => x.otherCpuPct)),
          bad: list.reduce((a, x) => a + x.non2xx + x.errors, 0),
          // differences from the base configuration, round by round (µs; rps as a ratio)
          dP50Us: c.base ? median(paired('p50').map((x) => x * 1000)) : NaN,
          dP50UsPerRound: c.base ? paired('p50').map((x) => x * 1000) : [],
          dP99Us: c.base ? median(paired('p99').map((x) => x * 1000)) : NaN,
          dCpuUs: c.base ? median(paired('targetCpuMsPerReq').map((x) => x * 1000)) : NaN,
          dCpuUsPerRound: c.base ? paired('targetCpuMsPerReq').map((x) => x * 1000) : [],
          rpsRatio: c.base ? median(list.map((row) => row.rps / (base.find((x) => x.round === row.round)?.rps ?? NaN))) : NaN,
        });
      }
    }
  }
  return out;
}

function limitsSummaryLines(limits) {
  const t = roundsTable(limits);
  const lines = [];
  for (const cn of limits.settings.connections) {
    const parts = [];
    for (const c of limits.configurations.filter((x) => x.base)) {
      const rows = t.filter((x) => x.config === c.id && x.connections === cn);
      if (!rows.length) continue;
      parts.push(
        `${c.id} vs ${c.base}: ${rows
          .map(
            (x) =>
              `${x.operation} p50 ${signed(x.dP50Us, 0)} µs, CPU ${signed(x.dCpuUs, 0)} µs${c.limited && LIMITS_GATEWAYS[c.gateway].redis ? ` (+ Redis ${f(x.redisCpuUsPerReq, 0)} µs)` : ''}, req/s ${signedPct(x.rpsRatio, 1)}`,
          )
          .join(', ')}`,
      );
    }
    lines.push(`limits c=${cn}: ${parts.join('; ')}`);
  }
  return lines;
}


// ---------------------------------------------------------------- report
const median = (xs) => {
  const a = xs.filter(Number.isFinite).sort((x, y) => x - y);
  if (a.length === 0) return NaN;
  return a.length % 2 ? a[(a.length - 1) / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};
const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const pct = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${((100 * a) / b).toFixed(0)}%` : 'n/a');
const met = (ok) => (ok === null ? 'not measurable' : ok ? '**met**' : '**not met**');

function closedMedians(rows) {
  const out = {};
  for (const row of rows) (out[`${row.target}|${row.connections}`] ??= []).push(row);
  const med = {};
  for (const [k, list] of Object.entries(out)) {
    med[k] = {
      target: list[0].target,
      connections: list[0].connections,
      rounds: list.length,
      rps: median(list.map((r) => r.rps)),
      p50: median(list.map((r) => r.p50)),
      p99: median(list.map((r) => r.p99)),
      cpuMsPerReq: median(list.map((r) => r.targetCpuMsPerReq)),
      loadgenCpuPct: median(list.map((r) => r.loadgenCpuPct)),
      machineBusyPct: median(list.map((r) => r.machineBusyPct)),
      otherCpuPct: median(list.map((r) => r.otherCpuPct)),
      upstreamCpuPct: median(list.map((r) => r.upstreamCpuPct)),
      targetCpuPct: median(list.map((r) => r.targetCpuPct)),
      bad: list.reduce((a, r) => a + r.non2xx + r.errors, 0),
    };
  }
  return med;
}

function closedTable(L, med, names) {
  const g = (t, c) => med[`${t}|${c}`];
  L.push(`| conns | target | req/s | % of direct | % of nginx | % of floor | p50 ms | p99 ms | p50 added vs direct | p99 added vs direct | target CPU ms/req | target CPU | upstream CPU | ${LOADGEN} CPU | other CPU | machine busy | non-2xx+errors |`);
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const c of S.connections) {
    for (const t of names) {
      const r = g(t, c);
      if (!r) continue;
      const d = g('direct', c);
      const n = g('nginx', c);
      const fl = g('floor', c);
      L.push(
        `| ${c} | ${t} | ${f(r.rps, 0)} | ${pct(r.rps, d?.rps)} | ${n ? pct(r.rps, n.rps) : 'n/a'} | ${fl ? pct(r.rps, fl.rps) : 'n/a'} | ${f(r.p50, 3)} | ${f(r.p99, 3)} | ${t === 'direct' ? '' : f(r.p50 - d?.p50, 3)} | ${t === 'direct' ? '' : f(r.p99 - d?.p99, 3)} | ${f(r.cpuMsPerReq, 3)} | ${t === 'direct' ? '' : `${f(r.targetCpuPct, 0)}%`} | ${f(r.upstreamCpuPct, 0)}% | ${f(r.loadgenCpuPct, 0)}% | ${f(r.otherCpuPct, 0)}% | ${f(r.machineBusyPct, 0)}% | ${r.bad} |`,
      );
    }
  }
  L.push('');
}

const signed = (x, d = 2) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(d)}` : 'n/a');
const signedPct = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${a >= b ? '+' : ''}${((100 * (a - b)) / b).toFixed(0)}%` : 'n/a');

/** Per connection count: what Sluice adds over direct and its CPU per request, for each operation. */
function chatVsCompletions(closed, closedChat) {
  const a = closedMedians(closed);
  const b = closedMedians(closedChat);
  const out = [];
  for (const c of S.connections) {
    const figures = (med) => {
      const s = med[`sluice|${c}`];
      const d = med[`direct|${c}`];
      return s && d ? { p50: s.p50 - d.p50, p99: s.p99 - d.p99, cpu: s.cpuMsPerReq, rps: s.rps, directRps: d.rps } : null;
    };
    const completions = figures(a);
    const chat = figures(b);
    if (completions && chat) out.push({ c, completions, chat });
  }
  return out;
}

/** One line: at each connection count, chat's figure first, then completions'. */
function chatVsCompletionsLine(cmp) {
  return cmp
    .map(
      (x) =>
        `c=${x.c}: added p50 ${f(x.chat.p50, 3)} vs ${f(x.completions.p50, 3)} ms, added p99 ${f(x.chat.p99, 3)} vs ${f(x.completions.p99, 3)} ms, ` +
        `CPU ${f(x.chat.cpu, 3)} vs ${f(x.completions.cpu, 3)} ms/req (${signedPct(x.chat.cpu, x.completions.cpu)})`,
    )
    .join('; ') + '.';
}

function chatVsCompletionsClosed(closed, closedChat) {
  const cmp = chatVsCompletions(closed, closedChat);
  return cmp.length ? [`chat vs completions through sluice: ${chatVsCompletionsLine(cmp)}`] : [];
}

/** Added TTFT and inter-token delay over direct, and memory per stream, of Sluice's chat streams beside its completion streams. */
function chatVsCompletionsStreams(streams, streamsChat) {
  const lines = [];
  const find = (rows, target, x) => rows.find((r) => r.target === target && r.streams === x.streams && r.tokensPerSecond === x.tokensPerSecond);
  for (const h of streamsChat.filter((r) => r.target === 'sluice')) {
    const dh = find(streamsChat, 'direct', h);
    const sc = find(streams, 'sluice', h);
    const dc = find(streams, 'direct', h);
    if (!dh || !sc || !dc) continue;
    const added = (s, d) => `${f(s.ttftMs.p50 - d.ttftMs.p50)} / ${f(s.ttftMs.p99 - d.ttftMs.p99)}`;
    const gap = (s, d) => `${f(s.interTokenMs.p50 - d.interTokenMs.p50)} / ${f(s.interTokenMs.p99 - d.interTokenMs.p99)}`;
    lines.push(
      `${h.streams} @ ${h.tokensPerSecond}: added TTFT p50 / p99 ${added(h, dh)} ms (chat) vs ${added(sc, dc)} ms (completions); ` +
        `added inter-token p50 / p99 ${gap(h, dh)} vs ${gap(sc, dc)} ms; ${f(h.kbPerStream, 1)} vs ${f(sc.kbPerStream, 1)} KB per stream; ` +
        `complete ${h.complete}/${h.streams} vs ${sc.complete}/${sc.streams}.`,
    );
  }
  return lines;
}

function streamTable(L, streams) {
  L.push(
    '| streams @ tokens/s | target | complete | TTFT p50 ms | TTFT p99 ms | added TTFT p50 | added TTFT p99 | inter-token p50 ms | inter-token p99 ms | added inter-token p50 / p99 | RSS idle → plateau MB | KB per stream | client CPU |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of streams) {
    const d = streams.find((x) => x.target === 'direct' && x.streams === r.streams && x.tokensPerSecond === r.tokensPerSecond);
    const dir = r.target === 'direct' || !d;
    L.push(
      `| ${r.streams} @ ${r.tokensPerSecond} | ${r.target} | ${r.complete}/${r.streams} | ${f(r.ttftMs.p50)} | ${f(r.ttftMs.p99)} | ${dir ? '' : f(r.ttftMs.p50 - d.ttftMs.p50)} | ${dir ? '' : f(r.ttftMs.p99 - d.ttftMs.p99)} | ${f(r.interTokenMs.p50)} | ${f(r.interTokenMs.p99)} | ${dir ? '' : `${f(r.interTokenMs.p50 - d.interTokenMs.p50)} / ${f(r.interTokenMs.p99 - d.interTokenMs.p99)}`} | ${f(r.baselineRssMB, 0)} → ${f(r.plateauRssMB, 0)}${r.plateauSamples ? '' : ' (no plateau)'} | ${r.target === 'direct' ? '' : f(r.kbPerStream, 1)} | ${f(r.clientCpuPct, 0)}% |`,
    );
  }
}

function report(state) {
  const { targets, idle, closed, closedChat, open, streams, streamsChat, keys, ledger, routing, limits } = state;
  const names = targets.map((t) => t.name);
  const L = [];
  const m = results.machine;
  L.push('# Sluice benchmark results', '');
  L.push(`Run ${m.date} on commit \`${m.commit.slice(0, 12)}\`${m.workingTreeDirty ? ' (working tree had uncommitted changes)' : ''}${S.quick ? ' — **quick run (--quick)**, shorter durations' : ''}.`, '');
  L.push('| machine | |', '|---|---|');
  L.push(`| CPU | ${m.cpu} |`, `| cores | ${m.cores} |`, `| memory | ${m.memoryGB} GB |`, `| OS | ${m.distro}, Linux ${m.linux} |`, `| Node.js | ${m.node} |`);
  if (m.baseNode) L.push(`| Node.js of the build before (\`BENCH_BASE_NODE\`) | ${m.baseNode.version} (${m.baseNode.path}) |`);
  L.push(`| open files limit | ${m.openFilesLimit} |`);
  L.push('');
  L.push(
    `Targets in front of the same fake upstream (\`bench/upstream.mjs\`, node:http, keep-alive, latency ${S.upstreamLatencyMs} ms): ` +
      `**direct** = the upstream itself; **sluice** = \`node bin/sluice.js serve${supportsWorkers() ? ` --workers ${S.workers}` : ''}\` (SLUICE_LOG_LEVEL=warn); ` +
      `**floor** = \`bench/floor.mjs\`, a minimal proxy on the same Node with the same ${S.workers} workers (node:cluster, reusePort; node:http in, an undici Pool out; the JSON body parsed, \`model\` rewritten, the answer parsed and \`model\` written back; streams relayed chunk by chunk, the model's name replaced in the text; no auth, no metering); ` +
      (names.includes('before') ? `**before** = the build before (\`BENCH_BASE_DIR\` ${S.baseDir}), a gateway of its own with the same workers, its own data directory and key made with its own CLI; ` : '') +
      (names.includes('nginx') ? '**nginx** = nginx as a plain reverse proxy (generated nginx.conf, upstream keep-alive).' : '**nginx: not installed, skipped** (`/usr/sbin/nginx` absent), so the nginx ratios cannot be computed in this run.'),
  );
  L.push('');
  L.push(
    `Closed-loop load generator: **${LOADGEN}**${LOADGEN === 'wrk' ? ` (${S.wrkThreads} thread, µs percentiles)` : ' (wrk not on PATH; latencies in whole milliseconds)'}; ` +
      `open-loop, streaming and ledger clients: \`bench/client.mjs\` (Node, undici Pool). Everything runs on the same ${m.cores}-core machine, so the ` +
      `load generator, the upstream and the target share the CPUs; their CPU shares are shown (% of one core).`,
  );
  L.push('');
  L.push(`Settings: ${S.seconds} s per closed-loop point after ${S.warmupSeconds} s warm-up, ${S.rounds} round(s) interleaving the targets (medians shown); ` + `open loop ${S.openRate}/s for ${S.openSeconds} s (+2 s warm-up); streams start at up to ${(S.streamRampRate ?? 2000).toLocaleString('en-US')}/s and all stay open together for about ${S.streamSeconds} s.`);
  if (S.chat) {
    L.push(
      '',
      `Chat: the benchmark model serves \`/v1/completions\` and \`/v1/chat/completions\` (\`endpoints: [completions, chat]\`, both relayed to the same upstream); each closed-loop round measures chat beside completions at every connection count; ` +
        `chat streams: ${S.chatStreams.map((x) => `${x.n}@${x.tps}`).join(', ') || 'none'}.`,
    );
  }
  L.push('');

  // Targets
  L.push('## Targets of issue 31 (performance, third round)', '');
  L.push(
    'Key check, routing, metering and metrics on, per-key limits off (the Redis row: on, counters on Redis). Every ratio is taken in this run: "added" is against calling the upstream directly; ' +
      'the floor is `bench/floor.mjs` (same Node, same workers); nginx is a plain reverse proxy in front of the same upstream' +
      (names.includes('before') ? '; "before" is the build before (`BENCH_BASE_DIR`), measured in the same rounds.' : '; no build before was given (`BENCH_BASE_DIR`), so the before column is empty.'),
    '',
  );
  L.push('| target | goal | this run | before | |', '|---|---|---|---|---|');
  for (const r of issue31Targets(state)) L.push(`| ${r.join(' | ')} |`);
  L.push('');

  // Closed loop
  L.push('## Non-streaming completions, closed loop', '');
  closedTable(L, closedMedians(closed), names);
  L.push(
    '"target CPU ms/req" = utime+stime of the target\'s processes (Sluice: primary and workers; direct: the upstream) over the run, per request. CPU columns are % of one core; ' +
      `"machine busy" is of all ${os.availableParallelism()} cores; "other CPU" = what processes outside the measurement used meanwhile (anything else running on the machine).`,
    '',
  );
  if (closedChat.length) {
    L.push('## Non-streaming chat completions, closed loop', '');
    L.push(
      `\`POST /v1/chat/completions\` (a system and a user message, max_tokens 16; the upstream answers a whole \`chat.completion\` with usage), measured in the same rounds as the completions above: ` +
        'at each connection count both operations run against every target, completions first in odd rounds and chat first in even ones. Columns as above; "added vs direct" is against the upstream\'s own chat answer.',
      '',
    );
    closedTable(L, closedMedians(closedChat), names);
    const cmp = chatVsCompletions(closed, closedChat);
    if (cmp.length) {
      L.push('### Sluice: chat relay vs completions relay (same rounds, medians)', '');
      L.push('| conns | added p50 ms: completions / chat | added p99 ms: completions / chat | Sluice CPU ms/req: completions / chat | chat − completions CPU | req/s: completions / chat (% of direct) |', '|---|---|---|---|---|---|');
      for (const x of cmp) {
        L.push(
          `| ${x.c} | ${f(x.completions.p50, 3)} / ${f(x.chat.p50, 3)} | ${f(x.completions.p99, 3)} / ${f(x.chat.p99, 3)} | ${f(x.completions.cpu, 3)} / ${f(x.chat.cpu, 3)} | ${signed(x.chat.cpu - x.completions.cpu, 3)} ms (${signedPct(x.chat.cpu, x.completions.cpu)}) | ${f(x.completions.rps, 0)} (${pct(x.completions.rps, x.completions.directRps)}) / ${f(x.chat.rps, 0)} (${pct(x.chat.rps, x.chat.directRps)}) |`,
        );
      }
      L.push('', `**Chat vs completions through Sluice:** ${chatVsCompletionsLine(cmp)}`, '');
    }
  }

  // Open loop
  if (open.length) {
    const d = open.find((r) => r.target === 'direct');
    L.push(`## Open loop, ${S.openRate} requests/s for ${S.openSeconds} s (latency from the intended send time)`, '');
    L.push('| target | ok / sent | p50 ms | p99 ms | p99.9 ms | max ms | added p50 | added p99 | added p99.9 | errors / non-2xx | client CPU |', '|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of open) {
      const add = (k) => (r.target === 'direct' || !d ? '' : f(r.latencyMs[k] - d.latencyMs[k], 3));
      const non2xx = Object.entries(r.statuses).filter(([s]) => Number(s) < 200 || Number(s) >= 300).reduce((a, [, n]) => a + n, 0);
      L.push(
        `| ${r.target} | ${r.ok} / ${r.sent} | ${f(r.latencyMs.p50, 3)} | ${f(r.latencyMs.p99, 3)} | ${f(r.latencyMs.p999, 3)} | ${f(r.latencyMs.max, 1)} | ${add('p50')} | ${add('p99')} | ${add('p999')} | ${Object.values(r.errors).reduce((a, b) => a + b, 0)} / ${non2xx} | ${f(r.clientCpuPct, 0)}% |`,
      );
    }
    L.push('');
  }

  // Streams
  if (state.streamStart.length) {
    L.push(`## Stream start: ${S.streamStartStreams} one-token streams started over 1 s`, '');
    L.push('| target | complete | CPU µs per stream | TTFT p50 ms | TTFT p99 ms |', '|---|---|---|---|---|');
    for (const r of state.streamStart) L.push(`| ${r.target} | ${r.complete}/${r.streams} | ${f(r.cpuUsPerStream, 0)} | ${f(r.ttftMs.p50, 2)} | ${f(r.ttftMs.p99, 2)} |`);
    L.push('', "CPU = the target's process tree from the first measured stream (after the client's warm-up) to the end of the last, per stream: the start, one token and the end.", '');
  }
  if (streams.length) {
    L.push(`## Streaming: concurrent streams (started at up to ${(S.streamRampRate ?? 2000).toLocaleString('en-US')}/s, all open together for about ${S.streamSeconds} s)`, '');
    streamTable(L, streams);
    L.push('', 'RSS = sum over the target\'s processes, peak while every stream was open (the "plateau"); KB per stream = (plateau − RSS just before) / streams. Sluice, the floor and the build before are restarted before each streaming run, so "just before" is their idle RSS.', '');
  }
  if (streamsChat.length) {
    L.push('## Streaming chat completions', '');
    L.push(
      '`POST /v1/chat/completions` with `stream: true` and `include_usage`: the upstream sends the role delta with the first token, one content delta per token, a finish_reason chunk and the usage chunk. ' +
        'Each point runs right after the completion point of the same streams @ tokens/s; columns as above (a token = a content delta).',
      '',
    );
    streamTable(L, streamsChat);
    const lines = chatVsCompletionsStreams(streams, streamsChat);
    if (lines.length) L.push('', `**Chat vs completions streams through Sluice:** ${lines.join(' ')}`);
    L.push('');
  }
  if (state.tokens?.length) tokensReport(L, state.tokens);

  // Keys
  if (keys.length) {
    const single = median(keys.filter((r) => r.mode === 'single').map((r) => r.rps));
    const random = median(keys.filter((r) => r.mode === 'random').map((r) => r.rps));
    const sp99 = median(keys.filter((r) => r.mode === 'single').map((r) => r.p99));
    const rp99 = median(keys.filter((r) => r.mode === 'random').map((r) => r.p99));
    L.push(`## ${S.keys.toLocaleString('en-US')} keys in the store, c=32`, '');
    L.push('| requests | req/s | p50 ms | p99 ms | non-2xx+errors |', '|---|---|---|---|---|');
    for (const r of keys) L.push(`| round ${r.round}: ${r.label} | ${f(r.rps, 0)} | ${f(r.p50, 3)} | ${f(r.p99, 3)} | ${r.non2xx + r.errors} |`);
    L.push('', `Random keys: **${pct(random, single)}** of the single-key throughput (medians ${f(random, 0)} vs ${f(single, 0)} req/s; p99 ${f(rp99, 3)} vs ${f(sp99, 3)} ms). The first random round also fills the key cache.`, '');
  }

  // Ledger
  if (ledger) {
    L.push('## Ledger', '');
    L.push('| phase | 2xx responses | ledger rows | rows by status | transport errors | result |', '|---|---|---|---|---|---|');
    L.push(`| under load (gateway running) | ${ledger.underLoad.responses2xx} | ${ledger.underLoad.ledgerRows} | ${JSON.stringify(ledger.underLoad.ledgerByStatus)} | ${JSON.stringify(ledger.underLoad.errors)} | ${ledger.underLoad.match ? 'match' : '**MISMATCH**'} |`);
    L.push(
      `| + load across SIGTERM and restart (cumulative) | ${ledger.acrossRestart.total2xx} | ${ledger.acrossRestart.ledgerRowsTotal} | ${JSON.stringify(ledger.acrossRestart.ledgerByStatus)} | ${JSON.stringify(ledger.acrossRestart.errors)} | ${ledger.acrossRestart.match ? 'match' : '**MISMATCH**'} |`,
    );
    L.push('', `Graceful stop under load took ${ledger.acrossRestart.stopMs} ms (exit ${ledger.acrossRestart.stopExit}); transport errors are the client's attempts while the gateway was down.`, '');
  }

  if (routing) routingReport(L, routing);
  if (limits) limitsReport(L, limits);
  if (state.telemetry) telemetryReport(L, state.telemetry);
  if (state.clouds) cloudsReport(L, state.clouds);
  if (state.portSharing) portSharingReport(L, state.portSharing);
  if (state.usage) usagePageReport(L, state.usage);
  if (state.embeddings) embeddingsReport(L, state.embeddings);
  if (state.mcp) mcpReport(L, state.mcp);

  // Idle memory
  L.push('## Idle resident memory after start', '', '| target | RSS MB (sum) | PSS MB | processes |', '|---|---|---|---|');
  const idleLabel = { floor: 'floor (bench/floor.mjs), after start', sluice: 'sluice, after start', before: 'the build before (BENCH_BASE_DIR), after start', sluiceAfterLoad: 'sluice, after the closed- and open-loop runs', direct: 'fake upstream', nginx: 'nginx' };
  for (const [t, mem] of Object.entries(idle)) L.push(`| ${idleLabel[t] ?? t} | ${f(mem.rss, 1)} | ${f(mem.pss, 1)} | ${mem.processes} |`);
  L.push('');

  if (failures.length) {
    L.push('## Problems seen in this run', '');
    for (const x of failures) L.push(`- ${x.replaceAll('\n', ' ')}`);
    L.push('');
  }
  L.push(`Raw numbers: \`bench/results.json\`. Total bench time ${stamp()}.`, '');
  return L.join('\n');
}

// ---------------------------------------------------------------- main
/** results.json's scenarios: the keys of earlier runs unchanged, the chat rows under keys of their own. */
/**
 * Every target of issue 31 as [target, goal, this run, before, verdict]; the verdict is Sluice's
 * (this build's); "before" is the build before (BENCH_BASE_DIR) when it was measured in this run.
 * A scenario that did not run says so.
 */
function issue31Targets(state) {
  const { idle, closed, closedChat, streamStart, streams, streamsChat, tokens = [], keys, ledger, limits } = state;
  const rows = [];
  const NA = ['not run', '', 'not measurable'];
  const ratio = (a, b, d = 2) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? f(a / b, d) : 'n/a');
  const closedOps = [['completions', closedMedians(closed)], ['chat', closedMedians(closedChat)]].filter(([, med]) => Object.keys(med).length > 0);
  for (const [operation, med] of closedOps) {
    const [s, b, fl, n] = ['sluice', 'before', 'floor', 'nginx'].map((t) => med[`${t}|32`]);
    // Share of the floor's req/s, and the same by CPU per request (floor's CPU / the gateway's): the figure a busy machine distorts least.
    const ofFloor = (x) => `${ratio(x.rps, fl.rps)} (${f(x.rps, 0)} vs ${f(fl.rps, 0)} req/s); by CPU ${ratio(fl.cpuMsPerReq, x.cpuMsPerReq)} (${f(x.cpuMsPerReq * 1000, 0)} vs ${f(fl.cpuMsPerReq * 1000, 0)} µs/request)`;
    rows.push(
      s && fl
        ? [`c=32 req/s, ${operation}, as a share of the floor's`, '≥ 0.80', ofFloor(s), b ? ofFloor(b) : '', met(s.rps >= 0.8 * fl.rps)]
        : [`c=32 req/s, ${operation}, as a share of the floor's`, '≥ 0.80', ...NA],
    );
    rows.push(
      s && n
        ? [`c=32 req/s, ${operation}, as a share of nginx's`, '≥ 0.35, the floor\'s beside', `${ratio(s.rps, n.rps)} (${f(s.rps, 0)} vs ${f(n.rps, 0)} req/s); floor ${fl ? ratio(fl.rps, n.rps) : 'n/a'}`, b ? ratio(b.rps, n.rps) : '', met(s.rps >= 0.35 * n.rps)]
        : [`c=32 req/s, ${operation}, as a share of nginx's`, '≥ 0.35', s ? 'nginx not measured' : 'not run', '', 'not measurable'],
    );
    const [s1, b1, fl1, d1] = ['sluice', 'before', 'floor', 'direct'].map((t) => med[`${t}|1`]);
    const beyond = (x) => `${signed(x.p50 - fl1.p50, 3)} ms (added in all ${f(x.p50 - d1.p50, 3)} ms; the floor's own ${f(fl1.p50 - d1.p50, 3)} ms)`;
    rows.push(
      s1 && fl1 && d1
        ? [`c=1 median added over direct, beyond the floor's own, ${operation}`, '≤ 0.05 ms', beyond(s1), b1 ? beyond(b1) : '', met(s1.p50 - fl1.p50 <= 0.05)]
        : [`c=1 median added over direct, beyond the floor's own, ${operation}`, '≤ 0.05 ms', ...NA],
    );
  }
  if (closedOps.length === 0) rows.push(['c=32 req/s as a share of the floor\'s and of nginx\'s; c=1 added beyond the floor', '', ...NA]);

  const startOf = (t) => streamStart.find((x) => x.target === t);
  const [start, startBefore, startFloor] = ['sluice', 'before', 'floor'].map(startOf);
  const startCell = (x) => `${f(x.cpuUsPerStream / 1000, 3)} ms (${x.complete}/${x.streams} complete)`;
  rows.push(
    start
      ? [
          'CPU per stream start (one-token stream, start to end)',
          '≤ 0.35 ms',
          `${startCell(start)}; floor ${startFloor ? `${f(startFloor.cpuUsPerStream / 1000, 3)} ms` : 'n/a'}`,
          startBefore ? startCell(startBefore) : '',
          start.complete === start.streams ? met(start.cpuUsPerStream <= 350) : '**not met** (streams failed)',
        ]
      : ['CPU per stream start (one-token stream, start to end)', '≤ 0.35 ms', ...NA],
  );

  const tokenOps = [...new Set(tokens.map((x) => x.operation))];
  for (const operation of tokenOps) {
    const of = (t) => tokens.find((x) => x.target === t && x.operation === operation);
    const [s, b, fl] = ['sluice', 'before', 'floor'].map(of);
    // Both over the window where every stream was open, or both over their whole runs when either had no such window.
    const field = s && fl && [s, fl].every((x) => x.judgedOn === 'window') ? 'cpuUsPerToken' : 'wholeCpuUsPerToken';
    const cell = (x) =>
      `${ratio(x[field], fl[field])}× (${f(x[field], 2)} vs ${f(fl[field], 2)} µs per token${field === 'wholeCpuUsPerToken' ? ', whole runs: no moment with every stream open' : ''}; ${x.complete}/${x.streams} complete)`;
    rows.push(
      s && fl
        ? [`CPU per relayed stream token, ${operation}, as a multiple of the floor's`, '≤ 1.3×', cell(s), b ? cell(b) : '', s.complete === s.streams ? met(s[field] <= 1.3 * fl[field]) : '**not met** (streams incomplete)']
        : [`CPU per relayed stream token, ${operation}, as a multiple of the floor's`, '≤ 1.3×', ...NA],
    );
  }
  if (tokenOps.length === 0) rows.push(['CPU per relayed stream token, as a multiple of the floor\'s', '≤ 1.3×', ...NA]);

  const point = (rows_, n, tps, target) => rows_.find((x) => x.target === target && x.streams === n && x.tokensPerSecond === tps);
  // Flat once all are open: the plateau's last reading no more than 5 % (at least 16 MB) above its first.
  const flat = (x) => x.plateauLastRssMB - x.plateauFirstRssMB <= Math.max(16, 0.05 * x.plateauRssMB);
  const memCell = (x) =>
    `${f(x.plateauRssMB, 0)} MB RSS (${f(x.plateauPssMB, 0)} MB PSS)${x.plateauSamples ? `; plateau ${f(x.plateauFirstRssMB, 0)} → ${f(x.plateauLastRssMB, 0)} MB (${flat(x) ? 'flat' : 'rising'})` : ', no plateau'}; ${x.complete}/${x.streams} complete`;
  const big = point(streams, 10000, 2, 'sluice');
  const bigBefore = point(streams, 10000, 2, 'before');
  const bigFloor = point(streams, 10000, 2, 'floor');
  rows.push(
    big
      ? [
          '10,000 streams @ 2 tokens/s: whole process tree',
          '≤ 512 MB RSS, flat once all are open',
          `${memCell(big)}${bigFloor ? `; floor ${f(bigFloor.plateauRssMB, 0)} MB` : ''}`,
          bigBefore ? memCell(bigBefore) : '',
          big.complete === big.streams && big.plateauSamples ? met(big.plateauRssMB <= 512 && flat(big)) : '**not met** (streams incomplete or no plateau)',
        ]
      : ['10,000 streams @ 2 tokens/s: whole process tree', '≤ 512 MB RSS, flat once all are open', ...NA],
  );

  // The 10,000-stream points the direct baseline carries cleanly: every stream complete, its
  // first-token p99 within 250 ms and its inter-token p99 within 1.5 × the nominal gap; the
  // fastest such point is the one judged.
  const carried = (x) => x.complete === x.streams && x.ttftMs.p99 <= 250 && x.interTokenMs.p99 <= 1.5 * (1000 / x.tokensPerSecond);
  const directBig = [...streams, ...streamsChat].filter((x) => x.target === 'direct' && x.streams === 10000);
  const clean = directBig
    .filter(carried)
    .sort((a, b) => b.tokensPerSecond - a.tokensPerSecond);
  const cleanPoint = clean[0];
  const ttftCell = (x, d) => `${f(x.ttftMs.p99 - d.ttftMs.p99, 2)} ms (${f(x.ttftMs.p99, 2)} vs ${f(d.ttftMs.p99, 2)} direct; ${x.complete}/${x.streams} complete)`;
  if (cleanPoint) {
    const rowsOf = streams.includes(cleanPoint) ? streams : streamsChat;
    const [s, b, fl] = ['sluice', 'before', 'floor'].map((t) => point(rowsOf, 10000, cleanPoint.tokensPerSecond, t));
    const label = `10,000 streams: added first-token p99, on a point the direct baseline carries cleanly (${rowsOf === streams ? 'completions' : 'chat'} 10,000 @ ${cleanPoint.tokensPerSecond})`;
    rows.push(
      s
        ? [label, '< 100 ms', `${ttftCell(s, cleanPoint)}${fl ? `; floor ${f(fl.ttftMs.p99 - cleanPoint.ttftMs.p99, 2)} ms` : ''}`, b ? ttftCell(b, cleanPoint) : '', s.complete === s.streams ? met(s.ttftMs.p99 - cleanPoint.ttftMs.p99 < 100) : '**not met** (streams incomplete)']
        : [label, '< 100 ms', ...NA],
    );
  } else {
    const seen = directBig.map((x) => `${x.operation === 'chat' ? 'chat ' : ''}10,000 @ ${x.tokensPerSecond}: direct first-token p99 ${f(x.ttftMs.p99, 0)} ms, inter-token p99 ${f(x.interTokenMs.p99, 0)} ms, ${x.complete}/${x.streams} complete`);
    rows.push([
      '10,000 streams: added first-token p99, on a point the direct baseline carries cleanly',
      '< 100 ms',
      seen.length ? `no 10,000-stream point carried cleanly by direct (every stream complete, first-token p99 ≤ 250 ms, inter-token p99 ≤ 1.5 × the nominal gap): ${seen.join('; ')}` : 'not run',
      '',
      'not measurable',
    ]);
  }

  const idleCell = (x) => `${f(x.rss, 1)} MB RSS, ${x.processes} processes (${f(x.pss, 1)} MB PSS)`;
  rows.push(
    idle.sluice
      ? ['idle, primary and two workers', '≤ 180 MB RSS', `${idleCell(idle.sluice)}${idle.floor ? `; floor ${f(idle.floor.rss, 1)} MB` : ''}`, idle.before ? idleCell(idle.before) : '', met(idle.sluice.rss <= 180)]
      : ['idle, primary and two workers', '≤ 180 MB RSS', ...NA],
  );
  if (keys.length) {
    const single = median(keys.filter((r) => r.mode === 'single').map((r) => r.rps));
    const random = median(keys.filter((r) => r.mode === 'random').map((r) => r.rps));
    rows.push([`${S.keys.toLocaleString('en-US')} keys, a random key per request vs one key`, '≥ 90 %', `${pct(random, single)} (${f(random, 0)} vs ${f(single, 0)} req/s, c=32)`, '', met(random >= 0.9 * single)]);
  } else rows.push(['100,000 keys, a random key per request vs one key', '≥ 90 %', ...NA]);
  const redisRows = limits ? roundsTable(limits).filter((x) => x.config === 'redis' && x.connections === 1) : [];
  if (redisRows.length) {
    const worst = Math.max(...redisRows.map((x) => x.dP50Us));
    rows.push([
      'limits on Redis, added at c=1 (median)',
      '≤ +0.10 ms',
      redisRows.map((x) => `${x.operation} ${signed(x.dP50Us / 1000, 3)} ms`).join(', ') + ' (a key with limits on a Redis gateway vs a key without limits, --workers 1)',
      '',
      met(worst <= 100),
    ]);
  } else rows.push(['limits on Redis, added at c=1 (median)', '≤ +0.10 ms', 'not run (limits scenario, Redis, c=1)', '', 'not measurable']);
  rows.push([
    'ledger rows = 2xx responses, under load and across restart',
    'pass',
    ledger ? `${ledger.underLoad.ledgerRows}/${ledger.underLoad.responses2xx}; ${ledger.acrossRestart.ledgerRowsTotal}/${ledger.acrossRestart.total2xx}` : 'not run',
    '',
    ledger ? (ledger.pass ? '**pass**' : '**FAIL**') : 'not run',
  ]);
  return rows;
}

/** CPU per relayed stream token: every target and operation, with the multiple of the floor's. */
function tokensReport(L, tokens) {
  const p = tokens[0];
  L.push(`## CPU per relayed stream token: ${p.streams} streams × ${p.tokens} tokens at ${p.tokensPerSecond} tokens/s each`, '');
  L.push(
    '| operation | target | complete | CPU µs per token (all streams open) | × floor | tokens in that window | window s | tokens/s relayed | CPU µs per token, whole run | inter-token p99 ms | client CPU |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of tokens) {
    const fl = tokens.find((x) => x.target === 'floor' && x.operation === r.operation);
    const times = r.target === 'direct' || !fl ? '' : `${f(r.cpuUsPerToken / fl.cpuUsPerToken, 2)}×`;
    L.push(
      `| ${r.operation} | ${r.target} | ${r.complete}/${r.streams} | ${f(r.cpuUsPerToken, 2)} | ${times} | ${r.plateauTokens} | ${f(r.plateauSeconds, 2)} | ${f(r.tokensPerSecondRelayed, 0)} | ${f(r.wholeCpuUsPerToken, 2)} | ${f(r.interTokenMs.p99, 2)} | ${f(r.clientCpuPct, 0)}% |`,
    );
  }
  L.push(
    '',
    "CPU = the target's process tree (direct: the upstream producing the tokens) from the moment every stream had its first token to the end of the first stream, over the tokens the client received meanwhile: no stream starts or ends in it. " +
      'The whole-run figure divides the CPU from the first measured stream to the last by every token, starts and ends included.',
    '',
  );
}

function scenariosOf(state) {
  return {
    idle: state.idle,
    closed: state.closed,
    closedChat: state.closedChat,
    open: state.open,
    streamStart: state.streamStart,
    streams: state.streams,
    streamsChat: state.streamsChat,
    tokens: state.tokens,
    keys: state.keys,
    ledger: state.ledger,
    // Only when the routing scenario ran, so that results.json of the other scenarios keeps its shape.
    ...(state.routing ? { routing: state.routing } : {}),
    ...(state.limits ? { limits: state.limits } : {}),
    ...(state.telemetry ? { telemetry: state.telemetry } : {}),
    ...(state.clouds ? { clouds: state.clouds } : {}),
    ...(state.portSharing ? { portSharing: state.portSharing } : {}),
    ...(state.usage ? { usage: state.usage } : {}),
    ...(state.embeddings ? { embeddings: state.embeddings } : {}),
    ...(state.mcp ? { mcp: state.mcp } : {}),
  };
}

/**
 * BENCH_REPORT_FROM=results.json: writes RESULTS.md again from a run's saved figures, without
 * measuring anything (after a change to the report itself).
 */
function reportFromSaved(file) {
  const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
  Object.assign(S, saved.settings);
  Object.assign(results, saved);
  failures.push(...(saved.failures ?? []));
  const sc = saved.scenarios;
  const names = [...new Set(sc.closed.map((row) => row.target))];
  const state = { streamStart: [], streamsChat: [], closedChat: [], tokens: [], routing: null, limits: null, usage: null, ...sc, targets: names.map((name) => ({ name })) };
  fs.mkdirSync(OUT_DIR, { recursive: true });
  fs.writeFileSync(path.join(OUT_DIR, 'RESULTS.md'), report(state));
  log(`wrote ${path.join(OUT_DIR, 'RESULTS.md')} from ${file}`);
}

async function main() {
  if (env('BENCH_REPORT_FROM', '') !== '') return reportFromSaved(env('BENCH_REPORT_FROM', ''));
  log(`Sluice bench${QUICK ? ' (--quick)' : ''}: ${results.machine.cores} cores, ${results.machine.cpu}, Node ${process.version}; closed-loop load generator: ${LOADGEN}${HAVE_WRK ? '' : ' (wrk not found on PATH: falling back to autocannon, latencies in whole ms)'}`);
  log(`settings ${JSON.stringify(S)}`);
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm run bench does)');
  if (S.baseDir) {
    results.machine.baseNode = { path: S.baseNode, version: execFileSync(S.baseNode, ['--version']).toString().trim() };
    log(`the build before (${S.baseDir}) runs on ${S.baseNode}, Node ${results.machine.baseNode.version}`);
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
  fs.mkdirSync(OUT_DIR, { recursive: true });
  // closed and streams hold the completion rows as they always did; closedChat and streamsChat the chat rows.
  const state = { targets: [], idle: {}, closed: [], closedChat: [], open: [], streamStart: [], streams: [], streamsChat: [], tokens: [], keys: [], ledger: null, routing: null, limits: null, usage: null };
  let ok = false;
  try {
    upstream = await startUpstream();
    log(`fake upstream on ${upstream.url} (pid ${upstream.pid()})`);
    const targets = [upstream];
    const nginx = await startNginx(work, upstream.port);
    if (nginx) {
      targets.push(nginx);
      log(`nginx on ${nginx.url} (pid ${nginx.pid()})`);
    } else log('nginx not installed: skipped');
    const floor = await startFloor();
    targets.push(floor);
    log(`floor on ${floor.url} (pid ${floor.pid()}, ${S.workers} workers)`);
    const dataDir = path.join(work, 'data');
    fs.mkdirSync(dataDir, { recursive: true });
    const config = writeConfig(dataDir, upstream.port, null, { embeddings: S.embeddings });
    const key = await createKeyWithCli(dataDir);
    const sluice = await startSluice('sluice', dataDir, config, await freePort());
    sluice.key = key;
    targets.push(sluice);
    state.targets = targets;
    log(`sluice on ${sluice.url} (pid ${sluice.pid()}, ${processTree(sluice.pid()).length} processes)`);
    state.idle.sluice = await idleMemory(sluice);
    state.idle.direct = treeMemoryMB(upstream.pid());
    if (nginx) state.idle.nginx = treeMemoryMB(nginx.pid());
    state.idle.floor = treeMemoryMB(floor.pid());
    // The build before (BENCH_BASE_DIR) beside this one: idle memory, closed loop, stream start,
    // streaming points and CPU per token, in the same rounds as the other targets.
    const before = S.baseDir ? await startBeforeGateway(work) : null;
    if (before) state.idle.before = await idleMemory(before);
    const withBefore = before ? [...targets, before] : targets;
    state.targets = withBefore;

    const save = () => {
      results.scenarios = scenariosOf(state);
      results.failures = failures;
      fs.writeFileSync(path.join(OUT_DIR, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    };
    const only = env('BENCH_ONLY', '') === '' ? null : new Set(env('BENCH_ONLY', '').split(','));
    // An opt-in scenario runs only when BENCH_ONLY names it.
    const step = async (name, fn, optIn = false) => {
      if (only ? !only.has(name) : optIn) return log(`${name}: skipped (${optIn ? 'opt-in: BENCH_ONLY=' + name : 'BENCH_ONLY'})`);
      try {
        await fn();
      } catch (error) {
        fail(`scenario ${name} aborted: ${error.stack ?? error}`);
      }
      save();
    };

    await step('closed', async () => {
      const rows = await scenarioClosed(withBefore, key);
      state.closed = rows.completions;
      state.closedChat = rows.chat;
    });
    await step('open', async () => (state.open = await scenarioOpen(targets, key)));
    if (S.embeddings) await step('embeddings', async () => (state.embeddings = await scenarioEmbeddings(targets.filter((t) => t.name !== 'floor'), key)));
    if (!sluice.proc.exited) state.idle.sluiceAfterLoad = treeMemoryMB(sluice.pid());
    await step('streams', async () => {
      state.streamStart = await streamStartCost(withBefore, key);
      const rows = await scenarioStreams(withBefore, key);
      state.streams = rows.completions;
      state.streamsChat = rows.chat;
    });
    await step('tokens', async () => (state.tokens = await scenarioTokens(withBefore.filter((t) => t.name !== 'nginx'), key)));
    if (!sluice.proc.exited) await stopGateway(sluice);
    if (before && !before.proc.exited) await stopGateway(before);
    await floor.proc.stop();
    await step('keys', async () => (state.keys = await scenarioKeys(work)));
    await step('ledger', async () => (state.ledger = await scenarioLedger(work)));
    await step('routing', async () => scenarioRouting(work, state));
    await step('limits', async () => scenarioLimits(work, state));
    await step('telemetry', async () => scenarioTelemetry(work, state));
    await step('clouds', async () => scenarioClouds(work, state));
    await step('portsharing', async () => scenarioPortSharing(work, state));
    await step('mcp', async () => scenarioMcp(work, state));
    await step('usage', async () => scenarioUsage(work, state), true);
    ok = true;
  } finally {
    log('stopping the processes started by the bench');
    await cleanup();
    if (ok && failures.length === 0 && process.env.BENCH_KEEP !== '1') fs.rmSync(work, { recursive: true, force: true });
    else log(`working directory kept: ${work}`);
  }
  const md = report(state);
  fs.writeFileSync(path.join(OUT_DIR, 'RESULTS.md'), md);
  results.scenarios = scenariosOf(state);
  results.failures = failures;
  results.totalSeconds = (Date.now() - t0) / 1000;
  fs.writeFileSync(path.join(OUT_DIR, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\n${md}`);
  log(`wrote ${path.join(OUT_DIR, 'RESULTS.md')} and ${path.join(OUT_DIR, 'results.json')}`);
  if (state.ledger && !state.ledger.pass) {
    console.log('\n!!! LEDGER CHECK FAILED: rows in usage_ledger differ from 2xx responses (see above) !!!\n');
    process.exitCode = 1;
  }
  if (failures.length) {
    console.log(`${failures.length} problem(s) seen during the run:`);
    for (const x of failures) console.log(`  - ${x.split('\n')[0].slice(0, 400)}`);
    process.exitCode = 1;
  }
}

main().catch(async (error) => {
  console.error(`[bench] failed: ${error.stack ?? error}`);
  await cleanup();
  process.exit(1);
});
