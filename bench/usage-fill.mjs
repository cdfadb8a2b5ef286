// Fills a data directory's SQLite store with a large usage ledger for the usage scenario, then
// builds the daily roll-ups from it with the SQL of migration 0008's backfill.
//
//   node bench/usage-fill.mjs DATA_DIR '{"rows":10000000,"days":120,"accounts":20,"keysPerAccount":10,"models":12}'
//
// Accounts, keys and a console admin are made with the gateway's own code (from dist/). The ledger
// rows are inserted straight into usage_ledger in one transaction with a prepared statement
// (node:sqlite, the gateway's own driver): written that way, not through the gateway, so that
// 10 million rows take a minute or two rather than hours. They are in time order, spread evenly
// over the days up to now; each key uses three of the models, with prices per model, and about 2 %
// of the rows are failures (502 or 429) without tokens.
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SecretHasher } from '../dist/auth/key-secret.js';
import { createKey } from '../dist/auth/keys-service.js';
import { createConsoleAccount } from '../dist/console/accounts.js';
import { openSqliteStore } from '../dist/store/open-store.js';
import { rollUpWholeLedger } from '../dist/store/sql-usage-daily.js';

const DAY_MS = 86_400_000;
export const ADMIN = { name: 'bench-admin', password: 'bench-admin-password' };

/** A deterministic generator (mulberry32), so that every run fills the same ledger. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function fillUsage(dataDir, options) {
  const { rows, days, accounts, keysPerAccount, models: modelCount } = options;
  const store = await openSqliteStore(dataDir);
  const hasher = SecretHasher.forDataDir(dataDir);
  const keys = [];
  try {
    await createConsoleAccount(store, ADMIN.name, { password: ADMIN.password }, true);
    for (let a = 0; a < accounts; a++) {
      for (let k = 0; k < keysPerAccount; k++) {
        const { key } = await createKey(store, hasher, { accountName: `team-${String(a).padStart(2, '0')}`, name: `service ${k}` });
        keys.push(key);
      }
    }
  } finally {
    await store.close();
  }
  const models = Array.from({ length: modelCount }, (_, i) => ({ id: `model-${String(i).padStart(2, '0')}`, input: 0.1 * (i + 1), output: 0.3 * (i + 1) }));
  const next = random(20261122);
  // Each key uses three models; some keys are much busier than others (weights 1 to 10).
  const usage = keys.map((key, i) => ({ key, models: [0, 1, 2].map((j) => models[(i * 5 + j * 7) % modelCount]), weight: 1 + Math.floor(next() * 10) }));
  const cumulative = [];
  let sum = 0;
  for (const u of usage) cumulative.push((sum += u.weight));
  const pick = () => {
    const target = next() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] > target) hi = mid;
      else lo = mid + 1;
    }
    return usage[lo];
  };

  const db = new DatabaseSync(path.join(dataDir, 'sluice.db'), { timeout: 5000 });
  const started = Date.now();
  try {
    // Set-up only: nothing here is the gateway's own way of writing.
    db.exec('PRAGMA synchronous = OFF');
    db.exec('PRAGMA cache_size = -262144');
    const insert = db.prepare(
      `INSERT INTO usage_ledger (entry_id, at, request_id, account_id, key_id, operation, model, provider_id, status, error_kind, stream,
         prompt_tokens, completion_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, tokens_counted, latency_ms, ttfb_ms, cost_usd, attempts, deployment, attempt_log)
       VALUES (?, ?, ?, ?, ?, 'chat', ?, 'bench-upstream', ?, ?, 0, ?, ?, 0, 0, 0, 0, ?, ?, ?, 1, ?, NULL)`,
    );
    const end = Date.now();
    const start = end - days * DAY_MS;
    const step = (end - start) / rows;
    db.exec('BEGIN');
    try {
      for (let i = 0; i < rows; i++) {
        const u = pick();
        const model = u.models[Math.floor(next() * 3)];
        const failure = next() < 0.02;
        const status = failure ? (next() < 0.5 ? 502 : 429) : 200;
        const input = failure ? 0 : 20 + Math.floor(next() * 2000);
        const output = failure ? 0 : 1 + Math.floor(next() * 500);
        const cost = (input * model.input + output * model.output) / 1e6;
        const id = i.toString(36).padStart(6, '0');
        insert.run(`bench.${id}`, Math.floor(start + i * step), `req-${id}`, u.key.accountId, u.key.id, model.id, status, failure ? 'upstream_error' : null, input, output, 50 + next() * 500, failure ? null : 40, cost, `bench-upstream/${model.id}`);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  } finally {
    db.close();
  }
  const ledgerSeconds = (Date.now() - started) / 1000;

  // The roll-up, by the migration's own backfill, through the gateway's store (its SQLite thread).
  const rolled = await openSqliteStore(dataDir);
  const rollUpStarted = Date.now();
  let rollUpRows;
  try {
    await rollUpWholeLedger(rolled.db);
    rollUpRows = Number((await rolled.db.selectFrom('usage_daily').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  } finally {
    await rolled.close();
  }
  const rollUpSeconds = (Date.now() - rollUpStarted) / 1000;
  return { rows, days, accounts, keys: keys.length, models: modelCount, ledgerSeconds, rollUpSeconds, rollUpRows, busiestAccount: busiest(usage) };
}

/** The account with the most weight: the "one account" the scenario times. */
function busiest(usage) {
  const byAccount = new Map();
  for (const u of usage) byAccount.set(u.key.accountName, (byAccount.get(u.key.accountName) ?? 0) + u.weight);
  return [...byAccount].sort((a, b) => b[1] - a[1])[0][0];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dataDir, options] = process.argv.slice(2);
  console.log(`RESULT ${JSON.stringify(await fillUsage(dataDir, JSON.parse(options)))}`);
}
