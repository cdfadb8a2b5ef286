// postgres-pass: skip (each test makes its own PostgreSQL database in either pass)
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { cliWithInput, ConsoleClient } from './support/console.js';
import { cli, configFor, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { createDatabase, dropDatabase, pgQuery } from './support/store.js';
import { migrationsFor } from '../src/store/migrations.js';

// Each test makes its own PostgreSQL database (whatever SLUICE_TEST_STORE says) and drops it at its end.

/** A database URL with a password: the test server trusts local connections, so it is never checked, only never shown. */
function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

async function createKeyOn(dataDir: string, env: NodeJS.ProcessEnv, account = 'acme'): Promise<{ id: string; key: string }> {
  const result = await cli(['keys', 'create', '--account', account, '--json', '--data', dataDir], env);
  assert.equal(result.code, 0, `keys create failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { id: string; key: string };
}

async function count(url: string, table: string): Promise<number> {
  const [row] = await pgQuery<{ n: number }>(url, `SELECT count(*) AS n FROM ${table}`);
  return row!.n;
}

function sqliteCount(dataDir: string, table: string): number {
  const db = new SQLite(join(dataDir, 'sluice.db'), { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('the store on PostgreSQL', () => {
  test('serve --database: a key made with the CLI on the database answers, and its ledger row lands there', async () => {
    const upstream = await startFakeOpenAI();
    const database = await createDatabase();
    const url = withPassword(database.url, 'hunter2-not-shown');
    const dataDir = tempDir();
    let sluice: RunningSluice | undefined;
    try {
      const created = await cli(['keys', 'create', '--account', 'acme', '--json', '--data', dataDir, '--database', url]);
      assert.equal(created.code, 0, created.stderr);
      const { key, id } = JSON.parse(created.stdout) as { key: string; id: string };
      sluice = await startSluice({ config: configFor(upstream.url), dataDir, args: ['--database', url], env: { SLUICE_LOG_LEVEL: 'info' } });
      const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      const completion = await client.completions.create({ model: 'llama-8b', prompt: 'hello', max_tokens: 3 });
      assert.equal(completion.choices[0]!.text, ' The quick brown');

      const [row] = await eventually(async () => {
        const rows = await pgQuery<{ key_id: string; model: string; status: number; stream: number; prompt_tokens: number; completion_tokens: number; cost_usd: number; at: number }>(
          database.url,
          'SELECT key_id, model, status, stream, prompt_tokens, completion_tokens, cost_usd, at FROM usage_ledger',
        );
        return rows.length > 0 ? rows : undefined;
      }, 3000, 'the ledger row in PostgreSQL');
      assert.equal(row!.key_id, id, 'the row is the key’s');
      assert.deepEqual([row!.model, row!.status, row!.stream, row!.completion_tokens], ['llama-8b', 200, 0, 3], 'the row records the request');
      assert.equal(typeof row!.at, 'number', 'bigint columns read back as numbers');
      assert.ok(row!.cost_usd > 0, 'priced');
      const [daily] = await pgQuery<{ requests: number }>(database.url, "SELECT requests FROM status_daily WHERE provider_id = 'fake-vllm'");
      assert.equal(daily?.requests, 1, 'the uptime counters are kept in PostgreSQL too');
      assert.equal(existsSync(join(dataDir, 'sluice.db')), false, 'no SQLite store was made');

      const listed = await cli(['keys', 'list', '--json', '--data', tempDir()], { SLUICE_DATABASE_URL: url, SLUICE_KEY_PEPPER_FILE: join(dataDir, 'key-pepper') });
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual((JSON.parse(listed.stdout) as { id: string }[]).map((k) => k.id), [id], 'SLUICE_DATABASE_URL selects the database for the CLI');

      assert.equal(await sluice.stop(), 0, 'a clean stop');
      const log = sluice.stderr();
      assert.match(log, /"store":"postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\/sluice_t_\w+"/, 'the log names the store, masked');
      assert.ok(!log.includes('hunter2-not-shown'), 'the password is never logged');
      assert.match(log, /SLUICE_KEY_PEPPER and SLUICE_KEY_PEPPER_FILE are not set/, 'a replica with its own pepper is warned');
    } finally {
      await sluice?.stop();
      await upstream.close();
      await dropDatabase(database.name);
    }
  });

  test('three replicas starting together on a fresh database migrate it once and all serve one key', { timeout: 60_000 }, async () => {
    const upstream = await startFakeOpenAI();
    const database = await createDatabase();
    const shared = tempDir();
    const pepper = join(shared, 'pepper');
    writeFileSync(pepper, 'a pepper every replica mounts', { mode: 0o600 });
    const env = { SLUICE_DATABASE_URL: database.url, SLUICE_KEY_PEPPER_FILE: pepper };
    const replicas: RunningSluice[] = [];
    try {
      const started = await Promise.allSettled([0, 1, 2].map(() => startSluice({ config: configFor(upstream.url), env, args: ['--workers', '1'] })));
      for (const result of started) if (result.status === 'fulfilled') replicas.push(result.value);
      assert.deepEqual(started.map((result) => (result.status === 'rejected' ? String(result.reason) : 'listening')), ['listening', 'listening', 'listening']);

      const migrations = await pgQuery<{ name: string }>(database.url, 'SELECT name FROM kysely_migration ORDER BY name');
      const known = Object.keys(await migrationsFor('postgres').getMigrations()).sort();
      assert.ok(known.length >= 7, 'the migrations are known');
      assert.deepEqual(migrations.map((m) => m.name), known, 'every migration ran, each once');
      const [version] = await pgQuery<{ value: number }>(database.url, "SELECT value FROM meta WHERE name = 'keys_version'");
      assert.equal(version?.value, 0, 'the seed rows were written once');

      // Made on a fourth machine's data directory: the shared pepper is what makes the key valid everywhere.
      const { key } = await createKeyOn(tempDir(), env);
      for (const replica of replicas) {
        const client = new OpenAI({ apiKey: key, baseURL: `${replica.url}/v1`, maxRetries: 0 });
        const completion = await client.completions.create({ model: 'llama-8b', prompt: 'hello', max_tokens: 2 });
        assert.equal(completion.choices[0]!.text, ' The quick', `replica ${replica.url} serves the key`);
      }
      for (const replica of replicas) assert.equal(await replica.stop(), 0, 'a clean stop');
      assert.equal(await count(database.url, 'usage_ledger'), 3, 'one ledger row per replica’s request');
    } finally {
      await Promise.all(replicas.map((replica) => replica.stop()));
      await upstream.close();
      await dropDatabase(database.name);
    }
  });

  test('store copy moves an embedded deployment to PostgreSQL: its keys, console catalogue and ledger go on working; a second copy adds nothing', { timeout: 120_000 }, async () => {
    const upstream = await startFakeOpenAI();
    const guarded = await startFakeOpenAI({ models: ['selfhosted-upstream'], apiKey: 'console-upstream-credential' });
    const database = await createDatabase();
    const source = tempDir();
    const embedded = { SLUICE_DATABASE_URL: '' }; // SQLite in the data directory, whatever the suite's mode
    const config = configFor(upstream.url, '  - { id: notes, provider: fake-vllm, upstream_model: upstream-model, endpoints: [chat] }\n');
    let gateway: RunningSluice | undefined;
    try {
      // An embedded deployment with traffic, a console-registered provider and a stored response.
      gateway = await startSluice({ config, dataDir: source, env: embedded });
      const { key } = await createKeyOn(source, embedded);
      await createKeyOn(source, embedded, 'other-team');
      const prices = join(source, 'prices.json');
      writeFileSync(prices, JSON.stringify({ as_of: '2099-01-01', models: [{ family: 'openai', model: 'gpt-4o', input_per_mtok: 2, output_per_mtok: 8 }] }));
      assert.equal((await cli(['prices', 'import', prices, '--data', source], embedded)).code, 0, 'an imported price list');
      const admin = await cliWithInput(['accounts', 'create', 'alice', '--admin', '--password-stdin', '--data', source], 'alice-password-1\n', embedded);
      assert.equal(admin.code, 0, admin.stderr);
      const console = new ConsoleClient(gateway.url);
      const csrf = await console.signIn('alice', 'alice-password-1');
      assert.equal((await console.post('/app/catalogue/providers/new', { csrf, id: 'gpu-box', kind: 'openai', base_url: guarded.url, api_key: 'console-upstream-credential' })).status, 303);
      assert.equal((await console.post('/app/catalogue/models/new', { csrf, id: 'selfhosted-70b', provider: 'gpu-box', upstream_model: 'selfhosted-upstream', endpoints: 'completions' })).status, 303);
      const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
      await eventually(async () => ((await client.models.list()).data.some((m) => m.id === 'selfhosted-70b') ? true : undefined), 2000, 'the console model');
      for (let i = 0; i < 5; i++) await client.completions.create({ model: 'llama-8b', prompt: `request ${i}`, max_tokens: 2 });
      await client.completions.create({ model: 'selfhosted-70b', prompt: 'hi', max_tokens: 2 });
      const response = await client.responses.create({ model: 'notes', input: 'remember this' });

      // While it runs, the copy is refused: it would miss the gateway's last rows.
      const refused = await cli(['store', 'copy', '--from', source, '--to', database.url]);
      assert.equal(refused.code, 1, 'a copy from a running gateway’s data directory fails');
      assert.match(refused.stderr, /a gateway is running on .*: stop it first/);
      assert.equal(await gateway.stop(), 0, 'a clean stop');

      // A stop while the SQLite store is locked leaves rows in a journal, which the copy imports first.
      gateway = await startSluice({ config, dataDir: source, env: embedded, args: ['--drain-timeout', '300'] });
      const lock = new SQLite(join(source, 'sluice.db'));
      lock.exec('BEGIN IMMEDIATE');
      const late = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
      for (let i = 0; i < 3; i++) await late.completions.create({ model: 'llama-8b', prompt: `late ${i}`, max_tokens: 2 });
      assert.equal(await gateway.stop(), 0, 'the rows are kept in the journal');
      gateway = undefined;
      lock.exec('ROLLBACK');
      lock.close();
      // A ledger row from before entry ids (migration 0003).
      const db = new SQLite(join(source, 'sluice.db'));
      db.prepare(
        "INSERT INTO usage_ledger (at, request_id, account_id, key_id, operation, model, provider_id, status, error_kind, stream, prompt_tokens, completion_tokens, tokens_counted, latency_ms, ttfb_ms, cost_usd) VALUES (1, 'ancient', 'acct', 'key', 'completions', 'llama-8b', 'fake-vllm', 200, NULL, 0, 1, 1, 0, 1, NULL, 0)",
      ).run();
      const ancientId = Number((db.prepare("SELECT id FROM usage_ledger WHERE request_id = 'ancient'").get() as { id: number }).id);
      db.close();

      const copied = await cli(['store', 'copy', '--from', source, '--to', database.url, '--batch', '4']);
      assert.equal(copied.code, 0, copied.stderr);
      assert.match(copied.stdout, /Imported 3 ledger rows left in /, 'the journal came first');
      const ledgerRows = sqliteCount(source, 'usage_ledger');
      assert.equal(ledgerRows, 5 + 1 + 1 + 3 + 1, 'the source has every request, the journal’s included');
      const tables = ['accounts', 'api_keys', 'console_providers', 'console_models', 'price_list', 'stored_responses', 'stored_response_items', 'status_daily', 'status_probes', 'usage_ledger'];
      for (const table of tables) {
        const n = sqliteCount(source, table);
        assert.match(copied.stdout, new RegExp(`\\n  ${table} +${n} copied +0 already there\\n`), `${table}: ${n} rows copied`);
        assert.equal(await count(database.url, table), n, `${table} has the source's rows`);
      }
      assert.ok(sqliteCount(source, 'stored_responses') >= 1 && sqliteCount(source, 'console_providers') === 1, 'the copy had something of each kind to move');
      assert.deepEqual(await pgQuery(database.url, "SELECT entry_id FROM usage_ledger WHERE request_id = 'ancient'"), [{ entry_id: `copied.${ancientId}` }], 'a row without an entry id gets one from its source id');
      const [keysVersion] = await pgQuery<{ value: number }>(database.url, "SELECT value FROM meta WHERE name = 'keys_version'");
      assert.ok(keysVersion!.value >= 2, 'the keys counter is carried over');
      assert.match(copied.stdout, new RegExp(`SLUICE_KEY_PEPPER_FILE=${join(source, 'key-pepper')}`), 'the reminder names the pepper file');
      assert.match(copied.stdout, new RegExp(`SLUICE_CREDENTIAL_KEY_FILE=${join(source, 'credential-key')}`), 'and the credential key file');
      for (const file of ['key-pepper', 'credential-key']) {
        const secret = readFileSync(join(source, file));
        for (const form of [secret.toString('hex'), secret.toString('base64'), secret.toString('base64url')]) {
          assert.ok(!(copied.stdout + copied.stderr).includes(form), `the ${file} is never printed`);
        }
      }

      const again = await cli(['store', 'copy', '--from', source, '--to', database.url]);
      assert.equal(again.code, 0, again.stderr);
      for (const table of tables) assert.match(again.stdout, new RegExp(`\\n  ${table} +0 copied +${sqliteCount(source, table)} already there\\n`), `${table}: nothing copied twice`);
      assert.equal(await count(database.url, 'usage_ledger'), ledgerRows, 'the ledger is unchanged by the second copy');
      const [versionAgain] = await pgQuery<{ value: number }>(database.url, "SELECT value FROM meta WHERE name = 'keys_version'");
      assert.equal(versionAgain!.value, keysVersion!.value, 'nor is the keys counter');

      // A gateway on PostgreSQL with the source's secrets: the old key, the console credential and the stored response work.
      gateway = await startSluice({
        config,
        env: { SLUICE_DATABASE_URL: database.url, SLUICE_KEY_PEPPER_FILE: join(source, 'key-pepper'), SLUICE_CREDENTIAL_KEY_FILE: join(source, 'credential-key') },
      });
      const moved = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
      assert.equal((await moved.completions.create({ model: 'llama-8b', prompt: 'after the move', max_tokens: 2 })).choices[0]!.text, ' The quick', 'the old key is accepted');
      assert.equal((await moved.completions.create({ model: 'selfhosted-70b', prompt: 'hi', max_tokens: 2 })).choices[0]!.text, ' The quick', 'the console credential decrypts');
      assert.equal(guarded.requests.at(-1)!.headers.authorization, 'Bearer console-upstream-credential', 'and goes upstream');
      assert.equal((await moved.responses.retrieve(response.id)).id, response.id, 'the stored response is found');
      const movedPrices = await cli(['prices', 'show', '--json'], { SLUICE_DATABASE_URL: database.url });
      assert.deepEqual(JSON.parse(movedPrices.stdout).in_force, { origin: 'imported', as_of: '2099-01-01' }, 'the imported price list is in force');
      const after = await eventually(async () => ((await count(database.url, 'usage_ledger')) === ledgerRows + 2 ? true : undefined), 3000, 'the new rows');
      assert.equal(after, true, 'new rows follow the copied ones');
      const console2 = new ConsoleClient(gateway.url);
      assert.equal((await console2.login('alice', 'alice-password-1')).status, 303, 'the console account signs in');
    } finally {
      await gateway?.stop();
      await upstream.close();
      await guarded.close();
      await dropDatabase(database.name);
    }
  });

  test('a bad or unreachable database, or a bad secret setting, is a clear error that never shows the password', async () => {
    const dataDir = tempDir();
    const unreachable = await cli(['keys', 'list', '--data', dataDir, '--database', 'postgres://sluice:hunter2-secret@127.0.0.1:1/sluice']);
    assert.equal(unreachable.code, 1, 'keys list fails');
    assert.equal(unreachable.stderr.trim(), 'sluice: cannot open the database postgres://sluice:***@127.0.0.1:1/sluice: connect ECONNREFUSED 127.0.0.1:1');

    const serve = await cli(['serve', '--listen', '127.0.0.1:0', '--data', dataDir], { SLUICE_DATABASE_URL: 'postgres://sluice:hunter2-secret@127.0.0.1:1/sluice' });
    assert.equal(serve.code, 1, 'serve refuses to start');
    assert.match(serve.stderr, /cannot open the database postgres:\/\/sluice:\*\*\*@127\.0\.0\.1:1\/sluice: connect ECONNREFUSED/);

    const missing = await cli(['keys', 'list', '--data', dataDir, '--database', 'postgres://postgres:hunter2-secret@127.0.0.1:5432/sluice_no_such_database']);
    assert.equal(missing.code, 1, 'a missing database fails');
    assert.match(missing.stderr, /cannot open the database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\/sluice_no_such_database: database "sluice_no_such_database" does not exist/);

    const notPostgres = await cli(['keys', 'disable', 'key_x', '--data', dataDir, '--database', 'mysql://root:hunter2-secret@db/x']);
    assert.equal(notPostgres.code, 1, 'another scheme fails');
    assert.match(notPostgres.stderr, /--database: expected a postgres:\/\/ URL/);
    const notUrl = await cli(['store', 'copy', '--from', dataDir, '--to', 'hunter2-secret@db']);
    assert.equal(notUrl.code, 1, 'a copy to a non-URL fails');
    assert.match(notUrl.stderr, /--to: not a URL; expected postgres:\/\//);
    for (const result of [unreachable, serve, missing, notPostgres, notUrl]) assert.ok(!(result.stdout + result.stderr).includes('hunter2-secret'), `the password is not shown: ${result.stderr}`);

    const noSource = await cli(['store', 'copy', '--from', tempDir(), '--to', 'postgres://postgres@127.0.0.1:5432/x']);
    assert.equal(noSource.code, 1, 'a copy from an empty directory fails');
    assert.match(noSource.stderr, /has no sluice\.db: nothing to copy/);

    const both = await cli(['keys', 'list', '--data', dataDir], { SLUICE_KEY_PEPPER: 'one', SLUICE_KEY_PEPPER_FILE: join(dataDir, 'key-pepper') });
    assert.equal(both.code, 1, 'two pepper settings fail');
    assert.match(both.stderr, /Set SLUICE_KEY_PEPPER or SLUICE_KEY_PEPPER_FILE, not both\./);
    const unreadable = await cli(['serve', '--listen', '127.0.0.1:0', '--data', dataDir], { SLUICE_CREDENTIAL_KEY_FILE: join(dataDir, 'no-such-file') });
    assert.equal(unreadable.code, 1, 'an unreadable credential key file stops start-up');
    assert.match(unreadable.stderr, /SLUICE_CREDENTIAL_KEY_FILE: cannot read .*no-such-file \(ENOENT\)/);
  });
});
