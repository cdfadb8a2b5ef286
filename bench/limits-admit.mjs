// The admit stage alone: LimitAdmission.admit + settle in a loop, against the counters the gateway
// builds (dist/ of `npm run build`), without HTTP, upstream or ledger around it.
//
//   node bench/limits-admit.mjs '{"redisUrl":"redis://127.0.0.1:6379","seconds":1.5}'
//
// Prints progress on stderr and one `RESULT {…}` line on stdout. Measured:
//   - admit + settle per request, one at a time (c=1: the latency a request sees) and 32 at a time
//     (c=32: throughput), key limits only and key + account limits, on the in-memory counter (one
//     process, no Redis) and on Redis (FailoverCounter over RedisCounter, as `serve --redis` has);
//     µs of wall time, µs of this process's CPU, µs of Redis's CPU (INFO cpu, server-wide) and the
//     Redis commands sent (counted on the client, by name) per request;
//   - the same at a full rolling minute: the in-memory counter on a simulated clock after 61 s of
//     requests at R per second, and Redis with its windows filled with 60 s of entries at R per
//     second (written straight into the counters' keys);
//   - the prompt's token count the admit stage makes when a tpm limit or a budget is set (the
//     gateway's own token counter, o200k), for a few prompt sizes.
// Redis keys go under a fresh prefix that is deleted at the end.
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { LimitAdmission } from '../dist/limits/limit-admission.js';
import { LocalCounter } from '../dist/limits/local-counter.js';
import { openLimitCounter } from '../dist/limits/open-counter.js';
import { countUsage } from '../dist/generation/token-counter.js';
import { dropRedisPrefix } from './lib.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const SECONDS = options.seconds ?? 1.5;
const REDIS_URL = options.redisUrl ?? 'redis://127.0.0.1:6379';
const PREFIX = options.prefix ?? `bench-admit-${process.pid}-${randomBytes(4).toString('hex')}:`;
const FILL_RATES = options.fillRates ?? [1000, 5000];
const say = (line) => process.stderr.write(`  admit micro: ${line}\n`);

const LIMITS = { rpm: 1_000_000_000, tpm: 1_000_000_000_000, concurrency: 100_000, budgetUsd: 1_000_000, budgetPeriod: 'month' };
// bench-model's prices (bench/run.mjs writeConfig); a priced model, so the reservation has a cost.
const MODEL = { id: 'bench-model', maxOutputTokens: undefined, pricing: { inputPerMtok: 0.2, outputPerMtok: 0.6, cachedInputPerMtok: 0.2, cacheWritePerMtok: 0.2 } };
const PROMPT = 'Say hi'; // the bench's completion prompt
const USED = { tokens: 3 + 16, costUsd: (3 * 0.2 + 16 * 0.6) / 1e6 };
const logger = { warn: (o, m) => say(`warn: ${m} ${o?.err ?? ''}`), error: (o, m) => say(`error: ${m} ${o?.err ?? ''}`), info() {}, debug() {} };
// The ledger's spend, asked once per budget period (seeding): nothing spent yet.
const usage = { spendSince: async () => 0 };
const SETTINGS = { leaseMs: 30_000, defaultMaxOutputTokens: 4096 };

let keySeq = 0;
function principal(accountToo) {
  const n = ++keySeq;
  return { keyId: `key_admit${n}`, accountId: `acc_admit${n}`, accountName: `admit${n}`, allowedModels: null, keyLimits: LIMITS, accountLimits: accountToo ? LIMITS : null };
}
// As the gateway's demand: the prompt counted by the gateway's token counter, max_tokens 16, one choice.
const demand = { promptTokens: () => countUsage([PROMPT], []).then((u) => u.input), maxOutputTokens: 16, choices: 1 };

async function redisCpu(redis) {
  if (!redis) return 0;
  const info = await redis.info('cpu');
  const get = (k) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}

/** Counts the commands this client sends, by name (EVALSHA, EVAL after a NOSCRIPT, …). */
function countCommands(redis) {
  const counts = {};
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, ...rest) => {
    counts[command.name] = (counts[command.name] ?? 0) + 1;
    return send(command, ...rest);
  };
  return counts;
}

/**
 * Admit + settle for `seconds` with `concurrency` requests at a time (each loop: await admit, then
 * settle as the gateway does, without waiting for it). Ends with a PING on the same connection, so
 * every settle sent has been answered before the clock stops. `tick` runs before each admission.
 */
async function loop(admission, who, { concurrency, seconds, redis, counts = {}, tick }) {
  // warm-up (JIT, the first budget seeding, the scripts loaded into Redis)
  for (let i = 0; i < 2000; i++) {
    tick?.();
    (await admission.admit(who, MODEL, demand)).settle(USED);
  }
  if (redis) await redis.ping();
  const before = { ...counts };
  const cpu0 = process.cpuUsage();
  const rcpu0 = await redisCpu(redis);
  const latencies = [];
  let done = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        tick?.();
        const t = performance.now();
        const admitted = await admission.admit(who, MODEL, demand);
        latencies.push(performance.now() - t);
        admitted.settle(USED);
        done++;
      }
    }),
  );
  if (redis) await redis.ping();
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  const rcpu = (await redisCpu(redis)) - rcpu0;
  latencies.sort((a, b) => a - b);
  const commands = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([k, v]) => v > 0 && k !== 'ping'));
  const perRequest = Object.fromEntries(Object.entries(commands).map(([k, v]) => [k, Math.round((v / done) * 1000) / 1000]));
  return {
    requests: done,
    perSecond: (done / wallMs) * 1000,
    wallUsPerRequest: (wallMs * 1000) / done,
    admitP50Us: latencies[Math.floor(latencies.length * 0.5)] * 1000,
    admitP99Us: latencies[Math.floor(latencies.length * 0.99)] * 1000,
    cpuUsPerRequest: (cpu.user + cpu.system) / done,
    redisCpuUsPerRequest: redis ? (rcpu * 1e6) / done : 0,
    redisCommandsPerRequest: perRequest,
  };
}

const fmt = (r) =>
  `${r.wallUsPerRequest.toFixed(1)} µs/request (${Math.round(r.perSecond)}/s), admit p50 ${r.admitP50Us.toFixed(1)} µs p99 ${r.admitP99Us.toFixed(1)} µs, CPU ${r.cpuUsPerRequest.toFixed(1)} µs` +
  (r.redisCpuUsPerRequest ? ` + Redis ${r.redisCpuUsPerRequest.toFixed(1)} µs` : '') +
  (Object.keys(r.redisCommandsPerRequest).length ? `, Redis commands per request ${JSON.stringify(r.redisCommandsPerRequest)}` : '');

async function main() {
  const out = { prefix: PREFIX, seconds: SECONDS, limits: LIMITS, prompt: PROMPT, steady: [], fill: [], tokenCount: [] };
  const memory = new LimitAdmission(new LocalCounter(), usage, logger, SETTINGS);
  let shared = null;
  let redis = null;
  let counts = {};
  try {
    const opened = await openLimitCounter({ redisUrl: REDIS_URL, redisPrefix: PREFIX, logger });
    // FailoverCounter keeps its ioredis client in `redis` (TypeScript-private, a plain property in dist/).
    redis = opened.counter.redis ?? null;
    if (opened.degradation() !== null || redis === null || redis.status !== 'ready') throw new Error(opened.degradation()?.message ?? `Redis not ready (${redis?.status})`);
    counts = countCommands(redis);
    shared = { admission: new LimitAdmission(opened.counter, usage, logger, SETTINGS), counter: opened.counter };
  } catch (error) {
    out.redisSkipped = `Redis at ${REDIS_URL} not usable: ${error.message}`;
    say(out.redisSkipped);
    if (redis) redis.disconnect();
    redis = null;
  }
  try {
    // 1. Fresh windows (what the gateway runs of bench/run.mjs mostly see): c=1 and c=32, one and two scopes.
    for (const concurrency of [1, 32]) {
      for (const accountToo of [false, true]) {
        const scopes = accountToo ? 'key + account' : 'key';
        const m = await loop(memory, principal(accountToo), { concurrency, seconds: SECONDS });
        say(`memory c=${concurrency} ${scopes}: ${fmt(m)}`);
        out.steady.push({ counter: 'memory', concurrency, scopes, ...m });
        if (shared) {
          const r = await loop(shared.admission, principal(accountToo), { concurrency, seconds: SECONDS, redis, counts });
          say(`redis  c=${concurrency} ${scopes}: ${fmt(r)}`);
          out.steady.push({ counter: 'redis', concurrency, scopes, ...r });
        }
      }
    }
    // 2. A full rolling minute, key limits only, c=1.
    for (const rate of [10, ...FILL_RATES]) {
      // In memory: a simulated clock stepping 1/rate s per request, after 61 s of such requests.
      let now = Date.UTC(2026, 0, 15);
      const counter = new LocalCounter(() => now);
      const admission = new LimitAdmission(counter, usage, logger, SETTINGS);
      const who = principal(false);
      const step = 1000 / rate;
      const tick = () => (now += step);
      for (let i = 0; i < rate * 61; i++) {
        tick();
        (await admission.admit(who, MODEL, demand)).settle(USED);
      }
      const m = await loop(admission, who, { concurrency: 1, seconds: SECONDS, tick });
      say(`memory, window full at ${rate}/s (${rate * 60} requests in the minute): ${fmt(m)}`);
      out.fill.push({ counter: 'memory', ratePerSecond: rate, windowEntries: rate * 60, ...m });
    }
    if (shared) {
      for (const rate of FILL_RATES) {
        // On Redis: the key's windows filled with 60 s of entries at `rate`/s, spread over the last
        // minute on Redis's clock, so they leave the window at that rate while the loop runs.
        // The key layout is RedisCounter's (src/limits/redis-counter.ts): req, tok, tokv, toks.
        const who = principal(false);
        const base = `${PREFIX}limit:key:${who.keyId}:`;
        const [sec, usec] = await redis.time();
        const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
        const n = rate * 60;
        for (let from = 0; from < n; from += 5000) {
          const p = redis.pipeline();
          const req = [];
          const tok = [];
          const tokv = [];
          for (let i = from; i < Math.min(n, from + 5000); i++) {
            const at = nowMs - 60_000 + Math.ceil(((i + 1) * 60_000) / n);
            req.push(at, `fill${i}`);
            tok.push(at, `fill${i}`);
            tokv.push(`fill${i}`, USED.tokens);
          }
          p.zadd(`${base}req`, ...req).zadd(`${base}tok`, ...tok).hset(`${base}tokv`, ...tokv);
          await p.exec();
        }
        await redis.set(`${base}toks`, n * USED.tokens, 'PX', 120_000);
        for (const k of ['req', 'tok', 'tokv']) await redis.pexpire(`${base}${k}`, 120_000);
        const r = await loop(shared.admission, who, { concurrency: 1, seconds: SECONDS, redis, counts });
        say(`redis, window filled with ${n} entries (${rate}/s): ${fmt(r)}`);
        out.fill.push({ counter: 'redis', ratePerSecond: rate, windowEntries: n, ...r });
      }
    }
    // 3. The prompt's token count (made at admission when tpm or a budget is set).
    const words = 'The quick brown fox jumps over the lazy dog while the gateway counts every token of it. ';
    for (const [label, text] of [
      ['"Say hi" (the bench prompt)', PROMPT],
      ['~1,000 tokens', words.repeat(50)],
      ['~8,000 tokens', words.repeat(400)],
    ]) {
      await countUsage([text], []); // loads the tokenizer's tables the first time
      const tokens = (await countUsage([text], [])).input;
      let n = 0;
      const cpu0 = process.cpuUsage();
      const started = performance.now();
      while (performance.now() - started < Math.min(1000, SECONDS * 1000)) {
        await countUsage([text], []);
        n++;
      }
      const wallMs = performance.now() - started;
      const cpu = process.cpuUsage(cpu0);
      const row = { prompt: label, tokens, usPerCount: (wallMs * 1000) / n, cpuUsPerCount: (cpu.user + cpu.system) / n };
      say(`token count of ${label}: ${tokens} tokens, ${row.usPerCount.toFixed(1)} µs`);
      out.tokenCount.push(row);
    }
  } finally {
    memory.stop();
    if (redis) {
      out.redisKeysDeleted = await dropRedisPrefix(redis, PREFIX);
      out.redisKeysLeft = (await redis.scan('0', 'MATCH', `${PREFIX}*`, 'COUNT', 1000))[1].length;
      await shared.counter.close();
    }
  }
  console.log(`RESULT ${JSON.stringify(out)}`);
}

main().catch((error) => {
  console.error(error.stack ?? error);
  process.exit(1);
});
