import type { Redis } from 'ioredis';
import type { AdmitResult, LimitCounter, RefusalReason, Reservation, ScopeLimits, ScopeUsage, WindowState } from './counter.js';
import { WINDOW_MS } from './counter.js';
import { tighter } from './local-counter.js';

/*
 * Each scope's counters, under `<prefix>limit:<scope>:`
 *   req   sorted set: lease → admission time (ms)           rolling-minute requests
 *   tok   sorted set: lease → admission time                rolling-minute token reservations…
 *   tokv  hash: lease → tokens                               …their sizes (settled to the real usage)…
 *   toks  string: the sum of tokv                           …and their total
 *   fly   sorted set: lease → lease expiry                  requests in flight
 *   spend:<period start>  string (float): USD spent and reserved in the budget period
 * and `<prefix>limit:added:<batch>`: a batch of spend counted during an outage was added (a day).
 * Every script reads Redis's own clock, so replicas with skewed clocks still share one window.
 */

const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Drops what left the window; returns the scope's token sum. */
const EXPIRE = `
local function expire(req, tok, tokv, toks, fly, now)
  local cutoff = now - ${WINDOW_MS}
  redis.call('ZREMRANGEBYSCORE', req, '-inf', cutoff)
  local sum = tonumber(redis.call('GET', toks) or '0')
  local old = redis.call('ZRANGEBYSCORE', tok, '-inf', cutoff)
  if #old > 0 then
    -- In slices: unpack's arguments are bounded.
    for from = 1, #old, 1000 do
      local slice = {unpack(old, from, math.min(from + 999, #old))}
      for _, tokens in ipairs(redis.call('HMGET', tokv, unpack(slice))) do sum = sum - tonumber(tokens or '0') end
      redis.call('HDEL', tokv, unpack(slice))
    end
    redis.call('ZREMRANGEBYSCORE', tok, '-inf', cutoff)
    redis.call('SET', toks, sum, 'PX', ${WINDOW_MS * 2})
  end
  redis.call('ZREMRANGEBYSCORE', fly, '-inf', now)
  return sum
end
local function oldest(zset, now)
  local first = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if #first == 0 then return 0 end
  return tonumber(first[2]) + ${WINDOW_MS} - now
end
-- count: the requests in the window (req's ZCARD), known to the caller when rpm > 0
local function windows(rpm, tpm, req, tok, count, sum, now)
  local out = {-1, 0, 0, -1, 0, 0}
  if rpm > 0 then out[1] = rpm; out[2] = math.max(0, rpm - count); out[3] = oldest(req, now) end
  if tpm > 0 then out[4] = tpm; out[5] = math.max(0, tpm - sum); out[6] = oldest(tok, now) end
  return out
end
`;

/**
 * Settles a batch of requests: KEYS from k + 1 and ARGV from a to last. KEYS: per request, per
 * scope tokv, toks, fly, spend. ARGV: per request its number of scopes, lease, tokens used, cost delta.
 */
const SETTLE_FUNCTION = `
local function settle(k, a, last)
  while a <= last do
    local scopes, lease, used, delta = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3]
    a = a + 4
    for _ = 1, scopes do
      local reserved = redis.call('HGET', KEYS[k + 1], lease)
      if reserved then
        redis.call('HSET', KEYS[k + 1], lease, used)
        if redis.call('EXISTS', KEYS[k + 2]) == 1 then redis.call('INCRBY', KEYS[k + 2], used - tonumber(reserved)) end
      end
      redis.call('ZREM', KEYS[k + 3], lease)
      -- A counter lost meanwhile is seeded again from the ledger, which this request's row will be in.
      if redis.call('EXISTS', KEYS[k + 4]) == 1 then redis.call('INCRBYFLOAT', KEYS[k + 4], delta) end
      k = k + 4
    end
  end
end
`;

const SETTLE = `${SETTLE_FUNCTION}
settle(0, 1, #ARGV)
return 1
`;

/**
 * Settles first (the process's settles queued since its last call: SETTLE's KEYS and ARGV, their
 * counts in ARGV[1] and ARGV[2]), then admits. Then KEYS: per scope req, tok, tokv, toks, fly,
 * spend. ARGV: lease, tokens, cost, lease ms, then per scope rpm, tpm, concurrency, budget (0: none).
 * Returns {1, windows per scope…}, {0, scope index, reason, retry ms or -1, windows}, or {2, unseeded indexes…}.
 */
const ADMIT = `${NOW}
${EXPIRE}
${SETTLE_FUNCTION}
local settledKeys, settledArgs = tonumber(ARGV[1]), tonumber(ARGV[2])
settle(0, 3, 2 + settledArgs)
local KEYS, ARGV = {unpack(KEYS, settledKeys + 1)}, {unpack(ARGV, 3 + settledArgs)}
local lease, tokens, cost, leaseMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local n = #KEYS / 6
local unseeded = {}
local spent = {}
for i = 0, n - 1 do
  if tonumber(ARGV[5 + i * 4 + 3]) > 0 then
    spent[i] = redis.call('GET', KEYS[i * 6 + 6])
    if not spent[i] then table.insert(unseeded, i) end
  end
end
if #unseeded > 0 then return {2, unpack(unseeded)} end
local sums, counts = {}, {}
for i = 0, n - 1 do
  local k, a = i * 6, 5 + i * 4
  local rpm, tpm, conc, budget = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local sum = expire(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], now)
  sums[i] = sum
  local reason, retry = nil, -1
  if rpm > 0 then counts[i] = redis.call('ZCARD', KEYS[k + 1]) end
  if rpm > 0 and counts[i] >= rpm then
    local nth = redis.call('ZRANGE', KEYS[k + 1], -rpm, -rpm, 'WITHSCORES')
    reason, retry = 'rpm', tonumber(nth[2]) + ${WINDOW_MS} - now
  elseif tpm > 0 and sum + tokens > tpm then
    reason = 'tpm'
    if tokens <= tpm then
      retry = ${WINDOW_MS}
      local freed = 0
      local entries = redis.call('ZRANGE', KEYS[k + 2], 0, -1, 'WITHSCORES')
      for j = 1, #entries, 2 do
        freed = freed + tonumber(redis.call('HGET', KEYS[k + 3], entries[j]) or '0')
        if sum - freed + tokens <= tpm then retry = tonumber(entries[j + 1]) + ${WINDOW_MS} - now; break end
      end
    end
  elseif conc > 0 and redis.call('ZCARD', KEYS[k + 5]) >= conc then
    reason = 'concurrency'
  elseif budget > 0 and tonumber(spent[i]) >= budget then
    reason = 'budget'
  end
  if reason then
    local result = {0, i, reason, retry}
    for _, v in ipairs(windows(rpm, tpm, KEYS[k + 1], KEYS[k + 2], counts[i], sum, now)) do table.insert(result, v) end
    return result
  end
end
local result = {1}
for i = 0, n - 1 do
  local k, a = i * 6, 5 + i * 4
  local rpm, tpm, conc, budget = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local sum = sums[i]
  local count = counts[i]
  if rpm > 0 then
    count = count + redis.call('ZADD', KEYS[k + 1], now, lease)
    redis.call('PEXPIRE', KEYS[k + 1], ${WINDOW_MS * 2})
  end
  if tpm > 0 then
    redis.call('ZADD', KEYS[k + 2], now, lease)
    redis.call('HSET', KEYS[k + 3], lease, tokens)
    sum = sum + tokens
    redis.call('SET', KEYS[k + 4], sum, 'PX', ${WINDOW_MS * 2})
    redis.call('PEXPIRE', KEYS[k + 2], ${WINDOW_MS * 2})
    redis.call('PEXPIRE', KEYS[k + 3], ${WINDOW_MS * 2})
  end
  if conc > 0 then
    redis.call('ZADD', KEYS[k + 5], now + leaseMs, lease)
    redis.call('PEXPIRE', KEYS[k + 5], leaseMs * 2)
  end
  if budget > 0 then redis.call('INCRBYFLOAT', KEYS[k + 6], cost) end
  for _, v in ipairs(windows(rpm, tpm, KEYS[k + 1], KEYS[k + 2], count, sum, now)) do table.insert(result, v) end
end
return result
`;

/** KEYS: fly sets. ARGV: lease ms, then one lease per key. */
const RENEW = `${NOW}
local leaseMs = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + leaseMs, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], leaseMs * 2)
end
return 1
`;

/**
 * KEYS: the batch's marker, then spend counters. ARGV: the marker's life (ms), then one amount per counter.
 * Adds spend counted elsewhere once: a batch sent again (its first answer was lost) finds its marker.
 */
const ADD_SPEND = `
if not redis.call('SET', KEYS[1], 1, 'NX', 'PX', ARGV[1]) then return 0 end
for i = 2, #KEYS do
  -- A counter lost meanwhile is seeded again from the ledger, which holds this spend already.
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('INCRBYFLOAT', KEYS[i], ARGV[i]) end
end
return 1
`;

/** KEYS: per scope req, tok, tokv, toks, fly, spend. Returns per scope: requests, tokens, in flight, spend or false. */
const USAGE = `${NOW}
${EXPIRE}
local result = {}
for i = 0, #KEYS / 6 - 1 do
  local k = i * 6
  local sum = expire(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], now)
  table.insert(result, redis.call('ZCARD', KEYS[k + 1]))
  table.insert(result, sum)
  table.insert(result, redis.call('ZCARD', KEYS[k + 5]))
  table.insert(result, redis.call('GET', KEYS[k + 6]) or '')
end
return result
`;

type Reply = (number | string)[];

/**
 * How long a settle may wait for this process's next admission to travel with before it is sent
 * alone: about a client's turnaround to its next request. A settle that frees a concurrency slot
 * does not wait past the current turn of the event loop: a client's next request may reach another
 * replica within that millisecond and must find the slot free.
 */
const SETTLE_DELAY_MS = 1;
/** Settles in one script call at most, so that a call's arguments stay far below V8's limit on a spread call. */
const MAX_SETTLES_PER_CALL = 500;

function settled(batch: readonly QueuedSettle[], error: unknown): void {
  for (const settle of batch) {
    if (error === null) settle.resolve();
    else settle.reject(error);
  }
}

interface QueuedSettle {
  readonly scopes: readonly ScopeLimits[];
  /** Its ARGV in the settle script: number of scopes, lease, tokens used, cost delta. */
  readonly args: readonly (string | number)[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

interface LimitScripts {
  sluiceAdmit(...args: (string | number)[]): Promise<Reply>;
  sluiceSettle(...args: (string | number)[]): Promise<unknown>;
  sluiceRenew(...args: (string | number)[]): Promise<unknown>;
  sluiceUsage(...args: (string | number)[]): Promise<Reply>;
  sluiceAddSpend(...args: (string | number)[]): Promise<unknown>;
}

/** How long a batch of added spend is remembered, so that sending it again never adds it twice. */
const ADDED_BATCH_MS = 86_400_000;

/** Limit counters shared by every replica and worker through Redis; each step is one Lua script, atomic. */
export class RedisCounter implements LimitCounter {
  private readonly redis: Redis & LimitScripts;
  /** Settles not sent yet (see settle), and the timer that sends them if no admission does first. */
  private settles: QueuedSettle[] = [];
  private settleTimer: NodeJS.Timeout | undefined;
  private settleImmediate: NodeJS.Immediate | undefined;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    redis.defineCommand('sluiceAdmit', { lua: ADMIT });
    redis.defineCommand('sluiceSettle', { lua: SETTLE });
    redis.defineCommand('sluiceRenew', { lua: RENEW });
    redis.defineCommand('sluiceUsage', { lua: USAGE });
    redis.defineCommand('sluiceAddSpend', { lua: ADD_SPEND });
    this.redis = redis as Redis & LimitScripts;
  }

  async admit(scopes: readonly ScopeLimits[], reservation: Reservation, leaseMs: number): Promise<AdmitResult> {
    const keys = scopes.flatMap((limits) => this.keysOf(limits));
    const args = scopes.flatMap((limits) => [limits.rpm, limits.tpm, limits.concurrency, limits.budget?.usd ?? 0]);
    // The settles queued before this admission travel with it, and Redis runs them first (too many
    // for one call go ahead of it, in calls of their own).
    if (this.settles.length > MAX_SETTLES_PER_CALL) this.sendSettles();
    const settles = this.takeSettles();
    let asked: Promise<Reply>;
    try {
      asked = this.redis.sluiceAdmit(
        settles.keys.length + keys.length,
        ...settles.keys,
        ...keys,
        settles.keys.length,
        settles.args.length,
        ...settles.args,
        reservation.lease,
        reservation.tokens,
        reservation.costUsd,
        leaseMs,
        ...args,
      );
    } catch (error) {
      settled(settles.batch, error);
      throw error;
    }
    if (settles.batch.length > 0) asked.then(() => settled(settles.batch, null), (error: unknown) => settled(settles.batch, error));
    const reply = await asked;
    const outcome = Number(reply[0]);
    if (outcome === 2) return { admitted: false, unseeded: reply.slice(1).map((i) => scopes[Number(i)]!.scope) };
    if (outcome === 0) {
      const refusedBy = scopes[Number(reply[1])]!;
      const reason = reply[2] as RefusalReason;
      const retry = Number(reply[3]);
      const periodEnd = refusedBy.budget?.periodEnd ?? Number.POSITIVE_INFINITY;
      return {
        admitted: false,
        scope: refusedBy.scope,
        reason,
        retryAfterMs: reason === 'budget' ? (Number.isFinite(periodEnd) ? periodEnd - Date.now() : null) : retry < 0 ? null : retry,
        requests: window(reply, 4),
        tokens: window(reply, 7),
      };
    }
    let requests: WindowState | null = null;
    let tokens: WindowState | null = null;
    for (let at = 1; at < reply.length; at += 6) {
      requests = tighter(requests, window(reply, at));
      tokens = tighter(tokens, window(reply, at + 3));
    }
    return { admitted: true, requests, tokens };
  }

  /**
   * Queued, then sent with the other settles queued meanwhile in one script call: at the head of
   * this process's next admission (one round trip for both), or alone after SETTLE_DELAY_MS if none
   * comes first; one that frees a concurrency slot, at the end of this turn of the event loop at the
   * latest. Sent at once, too, before any renewal, usage read or seeding, so that Redis runs every
   * step of this process in the order it happened.
   */
  settle(scopes: readonly ScopeLimits[], reservation: Reservation, used: { tokens: number; costUsd: number }): Promise<void> {
    return new Promise((resolve, reject) => {
      this.settles.push({ scopes, args: [scopes.length, reservation.lease, used.tokens, used.costUsd - reservation.costUsd], resolve, reject });
      if (scopes.some((limits) => limits.concurrency > 0)) this.settleImmediate ??= setImmediate(() => this.sendSettles());
      else this.settleTimer ??= setTimeout(() => this.sendSettles(), SETTLE_DELAY_MS);
    });
  }

  /** The oldest queued settles (at most MAX_SETTLES_PER_CALL), their KEYS and ARGV for the settle script, taken off the queue. */
  private takeSettles(): { readonly keys: string[]; readonly args: (string | number)[]; readonly batch: readonly QueuedSettle[] } {
    const batch = this.settles.length > MAX_SETTLES_PER_CALL ? this.settles.splice(0, MAX_SETTLES_PER_CALL) : this.settles;
    if (batch === this.settles) {
      this.settles = [];
      clearTimeout(this.settleTimer);
      clearImmediate(this.settleImmediate);
      this.settleTimer = undefined;
      this.settleImmediate = undefined;
    }
    const keys = batch.flatMap(({ scopes }) =>
      scopes.flatMap((limits) => {
        const [, , tokv, toks, fly, spend] = this.keysOf(limits);
        return [tokv!, toks!, fly!, spend!];
      }),
    );
    return { keys, args: batch.flatMap(({ args }) => args), batch };
  }

  /** Every queued settle, oldest first, in as many calls as it takes. */
  private sendSettles(): void {
    while (this.settles.length > 0) {
      const { keys, args, batch } = this.takeSettles();
      try {
        this.redis.sluiceSettle(keys.length, ...keys, ...args).then(
          () => settled(batch, null),
          (error: unknown) => settled(batch, error),
        );
      } catch (error) {
        settled(batch, error);
      }
    }
  }

  async renew(leases: readonly { scopes: readonly ScopeLimits[]; lease: string }[], leaseMs: number): Promise<void> {
    this.sendSettles();
    const pairs = leases.flatMap(({ scopes, lease }) => scopes.filter((limits) => limits.concurrency > 0).map((limits) => [this.keysOf(limits)[4]!, lease] as const));
    if (pairs.length === 0) return;
    await this.redis.sluiceRenew(pairs.length, ...pairs.map(([key]) => key), leaseMs, ...pairs.map(([, lease]) => lease));
  }

  async seedSpend(limits: ScopeLimits, spentUsd: number): Promise<void> {
    this.sendSettles();
    if (limits.budget === null) return;
    const key = this.keysOf(limits)[5]!;
    // NX: a replica seeding late must not overwrite (or add to) what others have counted since.
    if (Number.isFinite(limits.budget.periodEnd)) {
      const ttlMs = Math.max(1, Math.ceil(limits.budget.periodEnd - Date.now() + 86_400_000));
      await this.redis.set(key, String(spentUsd), 'PX', ttlMs, 'NX');
    } else {
      await this.redis.set(key, String(spentUsd), 'NX');
    }
  }

  async usage(scopes: readonly ScopeLimits[]): Promise<ScopeUsage[]> {
    this.sendSettles();
    if (scopes.length === 0) return [];
    const keys = scopes.flatMap((limits) => this.keysOf(limits));
    const reply = await this.redis.sluiceUsage(keys.length, ...keys);
    return scopes.map((_, i) => ({
      requests: Number(reply[i * 4]),
      tokens: Number(reply[i * 4 + 1]),
      inFlight: Number(reply[i * 4 + 2]),
      spentUsd: reply[i * 4 + 3] === '' ? null : Number(reply[i * 4 + 3]),
    }));
  }

  /** Adds spend counted while Redis was out of reach to the periods' counters, once per batch id. */
  async addSpend(batch: string, spends: readonly { readonly scope: ScopeLimits; readonly usd: number }[]): Promise<void> {
    this.sendSettles();
    const counted = spends.filter(({ scope }) => scope.budget !== null);
    if (counted.length === 0) return;
    const keys = [`${this.prefix}limit:added:${batch}`, ...counted.map(({ scope }) => this.keysOf(scope)[5]!)];
    await this.redis.sluiceAddSpend(keys.length, ...keys, ADDED_BATCH_MS, ...counted.map(({ usd }) => usd));
  }

  async close(): Promise<void> {
    this.sendSettles();
  }

  private keysOf(limits: ScopeLimits): string[] {
    const base = `${this.prefix}limit:${limits.scope}:`;
    return [`${base}req`, `${base}tok`, `${base}tokv`, `${base}toks`, `${base}fly`, `${base}spend:${limits.budget?.periodStart ?? 0}`];
  }
}

function window(reply: Reply, at: number): WindowState | null {
  const limit = Number(reply[at]);
  return limit < 0 ? null : { limit, remaining: Number(reply[at + 1]), resetMs: Number(reply[at + 2]) };
}
