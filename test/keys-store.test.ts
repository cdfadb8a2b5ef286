// postgres-pass: skip (each test opens its own store of either kind, whatever SLUICE_TEST_STORE says)
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { openStore } from '../src/store/open-store.js';
import type { SqlStore } from '../src/store/sql-store.js';
import { tempDir } from './support/sluice.js';
import { createDatabase, dropDatabase } from './support/store.js';

// The keys repository's batched reads and writes: many keys looked up by their secret hashes in
// one call, and many last-used times written in one, on SQLite and on PostgreSQL.

const KEYS = 520; // more than one statement's chunk (500)

async function withKeys(store: SqlStore, count: number): Promise<{ id: string; secretHash: string }[]> {
  const account = await store.accounts.ensure('acme');
  const keys = [];
  for (let i = 0; i < count; i++) {
    const key = { id: `key_${String(i).padStart(5, '0')}`, secretHash: `hash-${i}` };
    await store.keys.create({ ...key, accountId: account.id, name: `k${i}`, secretPrefix: 'sk-ab', secretLastFour: 'wxyz', models: null, expiresAt: null, createdAt: 1, limits: null });
    keys.push(key);
  }
  return keys;
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`keys in batches (${kind})`, () => {
    let dropped: string | undefined;
    after(async () => {
      if (dropped !== undefined) await dropDatabase(dropped);
    });

    test('finds many keys by secret hash in one call, and writes many last-used times, never moving one back', async () => {
      let store: SqlStore;
      if (kind === 'postgres') {
        const database = await createDatabase();
        dropped = database.name;
        store = await openStore({ kind: 'postgres', url: database.url });
      } else {
        store = await openStore({ kind: 'sqlite', dataDir: tempDir() });
      }
      try {
        const keys = await withKeys(store, KEYS);
        const asked = [...keys.map((key) => key.secretHash), 'no-such-hash'];
        const found = await store.keys.findBySecretHashes(asked);
        assert.equal(found.size, KEYS);
        for (const key of keys) assert.equal(found.get(key.secretHash)?.id, key.id);
        assert.equal(found.has('no-such-hash'), false);
        assert.equal((await store.keys.findBySecretHashes([])).size, 0);

        const versionBefore = await store.keys.version();
        await store.keys.recordUse(new Map(keys.map((key, i) => [key.id, 1_000 + i])));
        await store.keys.recordUse(new Map([[keys[0]!.id, 500], [keys[1]!.id, 5_000], ['key_unknown', 7]]));
        const listed = new Map((await store.keys.list()).map((key) => [key.id, key.lastUsedAt]));
        assert.equal(listed.get(keys[0]!.id), 1_000, 'an older time does not move last-used back');
        assert.equal(listed.get(keys[1]!.id), 5_000);
        for (let i = 2; i < KEYS; i++) assert.equal(listed.get(keys[i]!.id), 1_000 + i);
        assert.equal(await store.keys.version(), versionBefore, 'last-used times are not a key change');
      } finally {
        await store.close();
      }
    });
  });
}
