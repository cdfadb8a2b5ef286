import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { cli, configFor, SLUICE_BIN, startSluice, tempDir } from './support/sluice.js';
import { storeContains } from './support/store.js';

describe('sluice keys', () => {
  test('create prints the secret alone on the last line; only a keyed hash is stored', async () => {
    const data = tempDir();
    const result = await cli(['keys', 'create', '--account', 'acme', '--name', 'ci', '--data', data]);
    assert.equal(result.code, 0, result.stderr);
    const secret = result.stdout.trim().split('\n').at(-1)!;
    assert.match(secret, /^sk-[0-9A-Za-z]{40,}$/);
    assert.equal(await storeContains(data, secret), false, 'the secret must not be stored');
    assert.equal(await storeContains(data, secret.slice(3, 20)), false, 'nor any long part of it');
    assert.equal(statSync(join(data, 'key-pepper')).mode & 0o777, 0o600);
  });

  test('--json gives id and key; list never shows a secret; status changes follow the rules', async () => {
    const data = tempDir();
    const created = JSON.parse((await cli(['keys', 'create', '--account', 'acme', '--models', 'a,b', '--allow-unknown', '--expires', '2099-01-01', '--json', '--data', data])).stdout);
    assert.match(created.id, /^key_/);
    assert.match(created.key, /^sk-[0-9A-Za-z]{40,}$/);
    assert.deepEqual(created.models, ['a', 'b']);
    assert.equal(created.expires_at, '2099-01-01T00:00:00.000Z');
    await cli(['keys', 'create', '--account', 'other', '--data', data]);

    const listed = JSON.parse((await cli(['keys', 'list', '--account', 'acme', '--json', '--data', data])).stdout);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].status, 'active');
    assert.equal(listed[0].masked_key, `${created.key.slice(0, 5)}…${created.key.slice(-4)}`);
    const table = (await cli(['keys', 'list', '--data', data])).stdout;
    assert.ok(!table.includes(created.key));
    assert.match(table, /acme/);
    assert.match(table, /other/);

    assert.equal((await cli(['keys', 'disable', created.id, '--data', data])).code, 0);
    assert.equal(JSON.parse((await cli(['keys', 'list', '--json', '--account', 'acme', '--data', data])).stdout)[0].status, 'disabled');
    assert.equal((await cli(['keys', 'enable', created.id, '--data', data])).code, 0);
    assert.equal((await cli(['keys', 'revoke', created.id, '--data', data])).code, 0);
    const reenable = await cli(['keys', 'enable', created.id, '--data', data]);
    assert.equal(reenable.code, 1);
    assert.match(reenable.stderr, /revoked/);
    const unknown = await cli(['keys', 'disable', 'key_nope', '--data', data]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /key_nope/);
  });

  test('SLUICE_DATA selects the data directory', async () => {
    const data = tempDir();
    assert.equal((await cli(['keys', 'create', '--account', 'env'], { SLUICE_DATA: data })).code, 0);
    assert.equal(JSON.parse((await cli(['keys', 'list', '--json', '--data', data])).stdout).length, 1);
  });

  test('bad arguments are refused with a message', async () => {
    const data = tempDir();
    const past = await cli(['keys', 'create', '--account', 'a', '--expires', '2001-01-01', '--data', data]);
    assert.equal(past.code, 1);
    assert.match(past.stderr, /past/);
    const garbage = await cli(['keys', 'create', '--account', 'a', '--expires', 'tomorrow', '--data', data]);
    assert.notEqual(garbage.code, 0);
    assert.match(garbage.stderr, /ISO 8601/);
    const emptyModels = await cli(['keys', 'create', '--account', 'a', '--models', ' , ', '--data', data]);
    assert.equal(emptyModels.code, 1);
    assert.match(emptyModels.stderr, /--models needs at least one model id/);
    const missing = await cli(['keys', 'create', '--data', data]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /--account/);
  });
});

describe('configuration errors stop start-up naming the file, the entry and the field', () => {
  const cases: [string, string, RegExp][] = [
    ['unknown provider', 'providers: []\nmodels:\n  - { id: m, provider: ghost }\n', /models\[0\] \(id: m\): field 'provider': no provider has the id 'ghost'/],
    ['bad kind', 'providers:\n  - { id: p, kind: telepathy, base_url: "http://x" }\n', /providers\[0\] \(id: p\): field 'kind'/],
    ['bad url', 'providers:\n  - { id: p, kind: openai, base_url: "not a url" }\n', /providers\[0\] \(id: p\): field 'base_url'/],
    ['typo in a field', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", api_kye: k }\n', /providers\[0\] \(id: p\): unknown field\(s\) 'api_kye'/],
    ['wrong type', 'providers:\n  - { id: p, kind: openai, base_url: "http://x" }\nmodels:\n  - { id: m, provider: p, pricing: { input_per_mtok: cheap, output_per_mtok: 1 } }\n', /models\[0\] \(id: m\): field 'pricing.input_per_mtok'/],
    ['duplicate model', 'providers:\n  - { id: p, kind: openai, base_url: "http://x" }\nmodels:\n  - { id: m, provider: p }\n  - { id: m, provider: p }\n', /models\[1\] \(id: m\): field 'id': duplicate/],
    ['unset variable', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", api_key: "${SLUICE_TEST_UNSET_VAR}" }\n', /providers\[0\] \(id: p\): field 'api_key': environment variable SLUICE_TEST_UNSET_VAR is not set/],
    ['bad YAML', 'providers: [\n', /not valid YAML/],
    ['__proto__ in an entry', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", __proto__: { api_key: k } }\n', /providers\[0\] \(id: p\): unknown field\(s\) '__proto__'/],
    // Names every object inherits are variables like any other: set or not, never the inherited value.
    ...['constructor', '__proto__', 'toString', 'hasOwnProperty'].map((name): [string, string, RegExp] => [
      `a variable named ${name}`,
      `providers:\n  - { id: p, kind: openai, base_url: "http://x", api_key: "\${${name}}" }\n`,
      new RegExp(`providers\\[0\\] \\(id: p\\): field 'api_key': environment variable ${name} is not set`),
    ]),
  ];
  for (const [name, yaml, expected] of cases) {
    test(name, async () => {
      const data = tempDir();
      const file = join(data, 'bad.yaml');
      writeFileSync(file, yaml);
      const result = await cli(['serve', '--listen', '127.0.0.1:0', '--data', data, '--config', file]);
      assert.equal(result.code, 1);
      assert.ok(result.stderr.includes(file), result.stderr);
      assert.match(result.stderr, expected);
    });
  }
});

describe('a SLUICE_* variable set but empty counts as unset', () => {
  // As a compose file or a unit writes them: `SLUICE_CONFIG=` and the like.
  const EMPTY = ['SLUICE_CONFIG', 'SLUICE_REDIS_URL', 'SLUICE_REDIS_PREFIX', 'SLUICE_LOG_LEVEL', 'SLUICE_METRICS_TOKEN', 'SLUICE_METRICS_LISTEN', 'SLUICE_WORKERS', 'SLUICE_ACCESS_LOG'];

  test('serve reads ./sluice.yaml as if SLUICE_CONFIG and the others were not set', async () => {
    const fake = await startFakeOpenAI();
    const dir = tempDir();
    writeFileSync(join(dir, 'sluice.yaml'), configFor(fake.url));
    try {
      const sluice = await startSluice({ cwd: dir, env: Object.fromEntries(EMPTY.map((name) => [name, ''])) });
      const models = (await (await fetch(`${sluice.url}/models.json`)).json()) as { data: { id: string }[] };
      assert.ok(models.data.some((model) => model.id === 'llama-8b'), JSON.stringify(models));
      assert.equal(await sluice.stop(), 0, sluice.stderr());
    } finally {
      await fake.close();
    }
  });

  test('an empty SLUICE_DATA means ./data, not the working directory', async () => {
    const dir = tempDir();
    // SLUICE_DATABASE_URL empty too: the SQLite store, whichever store the tests run on.
    await promisify(execFile)(process.execPath, [SLUICE_BIN, 'keys', 'create', '--account', 'acme'], { cwd: dir, env: { ...process.env, SLUICE_DATA: '', SLUICE_DATABASE_URL: '', SLUICE_CONFIG: '' } });
    assert.ok(existsSync(join(dir, 'data', 'sluice.db')), 'the store is in ./data');
    assert.equal(existsSync(join(dir, 'sluice.db')), false, 'not in the working directory');
  });
});
