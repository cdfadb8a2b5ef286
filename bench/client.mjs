// Node load client for the benchmark (undici Pool, raw dispatch handlers: little work per byte).
//
//   node bench/client.mjs '<json options>'
//
// modes:
//   open   : fixed arrival rate; latency measured from each request's intended send time, so a
//            slow server is not hidden by a client that waits (no coordinated omission).
//   closed : N connections, each sends its next request when the previous answer is complete;
//            counts every status; on a transport error waits `retryDelayMs` and goes on (used
//            for the ledger scenario, across a gateway restart). With `streamTokens` (and
//            `tokenMarker`), each 200 answer is read as a stream and counted complete when it has
//            that many tokens and `data: [DONE]` (the routing scenario's streams).
//   stream : N concurrent SSE streams started evenly over `rampSeconds`; time to first token
//            from the intended start, gaps between tokens, completeness ([DONE] and token count).
//            A token is an occurrence of `tokenMarker` (default `"text"`, one per legacy
//            completion chunk; `"delta":{"content":"` for chat, which the role and finish
//            chunks do not contain). Stderr has `EVENT ramp-start`, then `EVENT tokens <n>` (tokens
//            seen so far over all streams) just before `EVENT plateau-start` (every stream has its
//            first token) and before `EVENT plateau-end` (the first stream has ended).
// Prints progress on stderr and one line `RESULT {json}` on stdout.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { summarize } from './lib.mjs';

const opts = JSON.parse(process.argv[2] ?? '{}');
const url = new URL(opts.url);
const headers = { 'content-type': 'application/json', ...(opts.headers ?? {}) };
const body = opts.body;
const log = (...a) => process.stderr.write(`${a.join(' ')}\n`);

function makePool(connections) {
  return new Pool(url.origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: opts.headersTimeoutMs ?? 30_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 60_000,
    connectTimeout: 10_000,
  });
}

/** One request; `done(status, error)` once the body is complete (status 0 on error). */
function send(pool, requestBody, done, onData) {
  let status = 0;
  pool.dispatch(
    { method: 'POST', path: url.pathname, headers, body: requestBody },
    {
      onRequestStart() {},
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      onResponseData(_c, chunk) {
        if (onData !== undefined) onData(chunk);
      },
      onResponseEnd() {
        done(status, null);
      },
      onResponseError(_c, error) {
        done(0, error);
      },
    },
  );
}

function countStatus(map, status) {
  map[status] = (map[status] ?? 0) + 1;
}

async function openLoop() {
  const rate = opts.rate;
  // The first `warmupSeconds` run at the same rate but are not recorded (JIT, connections).
  const warmCount = Math.round(rate * (opts.warmupSeconds ?? 0));
  const measured = Math.round(rate * opts.seconds);
  const total = warmCount + measured;
  const pool = makePool(opts.connections ?? 512);
  const latencies = new Float64Array(measured);
  const statuses = {};
  const errorKinds = {};
  let ok = 0;
  let completed = 0;
  let sent = 0;
  const interval = 1000 / rate;
  const t0 = performance.now() + 20;
  let resolveAll;
  const all = new Promise((r) => (resolveAll = r));
  const tick = () => {
    const now = performance.now();
    while (sent < total && t0 + sent * interval <= now) {
      const intended = t0 + sent * interval;
      const recorded = sent >= warmCount;
      if (sent === warmCount) loopDelay.reset();
      sent += 1;
      send(pool, body, (status, error) => {
        const latency = performance.now() - intended;
        if (recorded) {
          if (error) countStatus(errorKinds, error.code ?? error.name);
          else countStatus(statuses, status);
          if (!error && status >= 200 && status < 300) latencies[ok++] = latency;
        }
        if (++completed === total) resolveAll();
      });
    }
    if (sent < total) setTimeout(tick, Math.max(0, t0 + sent * interval - performance.now() - 0.5));
  };
  const progress = setInterval(() => log(`  open loop: sent ${sent}/${total}, done ${completed}`), 5000);
  tick();
  const timeout = new Promise((r) => setTimeout(r, (opts.seconds + (opts.warmupSeconds ?? 0) + 30) * 1000).unref());
  await Promise.race([all, timeout]);
  clearInterval(progress);
  const elapsed = (performance.now() - t0) / 1000;
  await pool.destroy();
  const lat = summarize(latencies.subarray(0, ok));
  const sentMeasured = sent - warmCount;
  return { mode: 'open', rate, seconds: opts.seconds, warmupSeconds: opts.warmupSeconds ?? 0, sent: sentMeasured, completed: completed - warmCount, ok, statuses, errors: errorKinds, unanswered: total - completed, elapsed, latencyMs: lat };
}

async function closedLoop() {
  const pool = makePool(opts.connections);
  const statuses = {};
  const errorKinds = {};
  let responses = 0;
  const samples = [];
  const deadline = performance.now() + opts.seconds * 1000;
  const retryDelayMs = opts.retryDelayMs ?? 20;
  // Stream checking (optional): tokens counted by marker, [DONE] looked for.
  const expected = opts.streamTokens;
  const marker = opts.tokenMarker ?? '"text"';
  const streamCheck = { complete: 0, incomplete: 0, noDone: 0 };
  const one = () =>
    new Promise((resolve) => {
      const start = performance.now();
      let seen = 0;
      let done = false;
      let tail = '';
      const onData =
        expected === undefined
          ? undefined
          : (chunk) => {
              const text = tail + chunk.toString('latin1');
              let at = text.indexOf(marker);
              while (at !== -1) {
                // A marker wholly inside the carried tail was counted with the chunk before.
                if (at + marker.length > tail.length) seen += 1;
                at = text.indexOf(marker, at + marker.length);
              }
              if (!done && text.includes('data: [DONE]')) done = true;
              tail = text.slice(-Math.max(16, marker.length));
            };
      send(
        pool,
        body,
        (status, error) => {
          if (error) {
            countStatus(errorKinds, error.code ?? error.name);
            setTimeout(resolve, retryDelayMs);
            return;
          }
          responses += 1;
          countStatus(statuses, status);
          if (samples.length < 2_000_000) samples.push(performance.now() - start);
          if (expected !== undefined && status === 200) {
            if (seen === expected && done) streamCheck.complete += 1;
            else streamCheck.incomplete += 1;
            if (!done) streamCheck.noDone += 1;
          }
          resolve();
        },
        onData,
      );
    });
  const worker = async () => {
    while (performance.now() < deadline) await one();
  };
  const progress = setInterval(() => log(`  closed loop: ${responses} responses, statuses ${JSON.stringify(statuses)}, errors ${JSON.stringify(errorKinds)}`), 2000);
  const started = performance.now();
  await Promise.all(Array.from({ length: opts.connections }, worker));
  const elapsed = (performance.now() - started) / 1000;
  clearInterval(progress);
  await pool.destroy();
  let ok = 0;
  for (const [s, n] of Object.entries(statuses)) if (Number(s) >= 200 && Number(s) < 300) ok += n;
  const result = { mode: 'closed', connections: opts.connections, elapsed, responses, ok, rps: ok / elapsed, statuses, errors: errorKinds, latencyMs: summarize(samples) };
  if (expected !== undefined) result.streams = streamCheck;
  return result;
}

async function streams() {
  const n = opts.streams;
  const tokens = opts.tokens;
  const pool = makePool(n + 16);
  const ttft = new Float64Array(n);
  const gaps = new Float64Array(n * tokens);
  let gapCount = 0;
  let ttftCount = 0;
  let started = 0;
  let active = 0;
  let finished = 0;
  let complete = 0;
  let plateau = 'before';
  let tokensSeen = 0; // over every measured stream: run.mjs reads it at the plateau's start and end (CPU per token)
  const statuses = {};
  const errorKinds = {};
  const incomplete = { tokens: 0, noDone: 0 };
  // Warm-up, not measured: short streams started at the measured pass's rate (a target just
  // restarted has its code still cold, and a burst would measure a queue rather than a start).
  const warm = Math.min(n, 2000);
  const warmBody = JSON.stringify({ ...JSON.parse(body), max_tokens: 2 });
  const warmInterval = (opts.rampSeconds * 1000) / n;
  await new Promise((resolve) => {
    let left = warm;
    for (let i = 0; i < warm; i++) setTimeout(() => send(pool, warmBody, () => --left === 0 && resolve()), i * warmInterval);
  });
  await new Promise((r) => setTimeout(r, 500));
  const interval = (opts.rampSeconds * 1000) / n;
  // The warm-up is over: from here the target's CPU is the measured streams' (run.mjs reads it at this line).
  log('EVENT ramp-start');
  const t0 = performance.now() + 20;
  loopDelay.reset();
  let resolveAll;
  const all = new Promise((r) => (resolveAll = r));
  const NEEDLE = opts.tokenMarker ?? '"text"';
  const TAIL = Math.max(16, NEEDLE.length);
  const DONE = 'data: [DONE]';
  const startStream = (i) => {
    const intended = t0 + i * interval;
    let seen = 0;
    let last = 0;
    let tail = '';
    let done = false;
    let counted = false;
    send(
      pool,
      body,
      (status, error) => {
        if (error) countStatus(errorKinds, error.code ?? error.name);
        else countStatus(statuses, status);
        if (counted) active -= 1;
        if (!error && status === 200) {
          if (seen === tokens && done) complete += 1;
          else {
            if (seen !== tokens) incomplete.tokens += 1;
            if (!done) incomplete.noDone += 1;
          }
        }
        if (plateau === 'on') {
          plateau = 'after';
          log(`EVENT tokens ${tokensSeen}`);
          log('EVENT plateau-end');
        }
        if (++finished === n) resolveAll();
      },
      (chunk) => {
        const now = performance.now();
        const text = tail + chunk.toString('latin1');
        let k = 0;
        let at = text.indexOf(NEEDLE);
        while (at !== -1) {
          k += 1;
          at = text.indexOf(NEEDLE, at + NEEDLE.length);
        }
        if (!done && text.includes(DONE)) done = true;
        tail = text.slice(-TAIL);
        if (tail.includes(NEEDLE)) tail = tail.slice(tail.lastIndexOf(NEEDLE) + NEEDLE.length);
        if (k === 0) return;
        tokensSeen += k;
        if (seen === 0) {
          ttft[ttftCount++] = now - intended;
          if (!counted) {
            counted = true;
            active += 1;
            if (active === n && plateau === 'before') {
              plateau = 'on';
              log(`EVENT tokens ${tokensSeen}`);
              log('EVENT plateau-start');
            }
          }
        } else if (gapCount < gaps.length) {
          gaps[gapCount++] = now - last;
        }
        for (let j = 1; j < k && gapCount < gaps.length; j++) gaps[gapCount++] = 0;
        seen += k;
        last = now;
      },
    );
  };
  const tick = () => {
    const now = performance.now();
    while (started < n && t0 + started * interval <= now) startStream(started++);
    if (started < n) setTimeout(tick, Math.max(0, t0 + started * interval - performance.now() - 0.5));
  };
  const progress = setInterval(() => log(`  streams: started ${started}/${n}, active ${active}, finished ${finished}`), 2000);
  tick();
  const limit = (opts.rampSeconds + opts.tokens / opts.tokensPerSecond + 60) * 1000;
  const timeout = new Promise((r) => setTimeout(r, limit).unref());
  await Promise.race([all, timeout]);
  clearInterval(progress);
  await pool.destroy().catch(() => undefined);
  return {
    mode: 'stream',
    streams: n,
    tokens,
    started,
    finished,
    complete,
    incomplete,
    statuses,
    errors: errorKinds,
    reachedPlateau: plateau !== 'before',
    ttftMs: summarize(ttft.subarray(0, ttftCount)),
    interTokenMs: summarize(gaps.subarray(0, gapCount)),
  };
}

const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
const modes = { open: openLoop, closed: closedLoop, stream: streams };
const result = await modes[opts.mode]();
loopDelay.disable();
// How late this client's own event loop ran: large values mean the client itself was a bottleneck.
result.clientEventLoopDelayMs = { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
process.exit(0);
