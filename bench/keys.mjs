// Creates many API keys straight in a data directory's SQLite store, in one transaction, hashed
// exactly as the gateway hashes them (SecretHasher from the built gateway), so that they work.
//
//   node bench/keys.mjs DATA_DIR COUNT OUT_FILE     (one secret per line in OUT_FILE)
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SecretHasher, generateSecret, secretParts } from '../dist/auth/key-secret.js';
import { randomId } from '../dist/core/ids.js';
import { openSqliteStore } from '../dist/store/open-store.js';

export async function insertKeys(dataDir, count, accountName = 'bench-many') {
  // The gateway's own code creates (and migrates) the store and the account.
  const store = await openSqliteStore(dataDir);
  const account = await store.accounts.ensure(accountName);
  await store.close();

  const hasher = SecretHasher.forDataDir(dataDir);
  const db = new DatabaseSync(path.join(dataDir, 'sluice.db'), { timeout: 5000 });
  try {
    db.exec('PRAGMA journal_mode = WAL');
    const columns = db.prepare('PRAGMA table_info(api_keys)').all();
    const known = new Set(['id', 'account_id', 'name', 'secret_hash', 'secret_prefix', 'secret_last_four', 'status', 'models', 'expires_at', 'created_at', 'updated_at', 'last_used_at']);
    const missing = columns.filter((c) => !known.has(c.name) && c.notnull === 1 && c.dflt_value === null).map((c) => c.name);
    if (missing.length > 0) throw new Error(`api_keys has required columns this script does not know: ${missing.join(', ')}`);
    const insert = db.prepare(
      `INSERT INTO api_keys (id, account_id, name, secret_hash, secret_prefix, secret_last_four, status, models, expires_at, created_at, updated_at, last_used_at)
       VALUES (?, ?, ?, ?, ?, ?, 'active', NULL, NULL, ?, ?, NULL)`,
    );
    const secrets = new Array(count);
    const now = Date.now();
    db.exec('BEGIN');
    try {
      for (let i = 0; i < count; i++) {
        const secret = generateSecret();
        const { prefix, lastFour } = secretParts(secret);
        insert.run(randomId('key_'), account.id, `bench-${i}`, hasher.hash(secret), prefix, lastFour, now, now);
        secrets[i] = secret;
      }
      // Any change to keys bumps this version, which running gateways poll to drop their caches.
      db.prepare("UPDATE meta SET value = value + 1 WHERE name = 'keys_version'").run();
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
    return secrets;
  } finally {
    db.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dataDir, count, out] = process.argv.slice(2);
  const started = Date.now();
  const secrets = await insertKeys(dataDir, Number(count));
  fs.writeFileSync(out, `${secrets.join('\n')}\n`);
  console.log(`${secrets.length} keys in ${dataDir} (${Date.now() - started} ms), secrets in ${out}`);
}
