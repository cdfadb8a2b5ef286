/**
 * The MCP allow-list of keys and accounts through the real CLI: `--mcp` on `keys create`,
 * `keys limits` and `accounts limits` (a server id or `server/tool`, comma-separated; `none`
 * removes it), shown by `keys list`, validated (nothing changes on a bad entry), and a warning (not a
 * refusal) for a server neither the configuration file nor the console has.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, tempDir } from './support/sluice.js';
import { queryStore } from './support/store.js';

interface KeyJson {
  id: string;
  limits: { mcp?: string[]; rpm?: number } | null;
  account_limits: { mcp?: string[] } | null;
}

function setup(): { dataDir: string; config: string } {
  const dataDir = tempDir();
  const config = join(dataDir, 'sluice.yaml');
  writeFileSync(
    config,
    `mcp_servers:
  - id: github
    url: http://127.0.0.1:9/mcp
    headers: { Authorization: "Bearer cli-test-upstream-token" }
  - id: files
    command: node
    args: [-e, "process.exit(0)"]
`,
  );
  return { dataDir, config };
}

const keyOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!) as KeyJson;

describe('--mcp on keys and accounts', () => {
  test('keys create sets the allow-list; keys list shows it; keys limits replaces it, keeps the other limits, and none removes it', async () => {
    const { dataDir, config } = setup();
    const created = await cli(['keys', 'create', '--account', 'tools-co', '--mcp', 'github, files/read_file', '--rpm', '7', '--json', '--config', config, '--data', dataDir]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, '', 'servers the configuration has: no warning');
    const key = keyOf(created.stdout);
    assert.deepEqual(key.limits, { rpm: 7, mcp: ['github', 'files/read_file'] }, 'stored as given, entries trimmed');

    const table = await cli(['keys', 'list', '--data', dataDir]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /rpm 7, mcp github,files\/read_file/, 'the table shows the allow-list with the limits');
    const listed = await cli(['keys', 'list', '--json', '--data', dataDir]);
    assert.deepEqual((JSON.parse(listed.stdout) as KeyJson[]).find((k) => k.id === key.id)?.limits?.mcp, ['github', 'files/read_file']);

    const replaced = await cli(['keys', 'limits', key.id, '--mcp', 'files', '--json', '--config', config, '--data', dataDir]);
    assert.equal(replaced.code, 0, replaced.stderr);
    assert.deepEqual(keyOf(replaced.stdout).limits, { rpm: 7, mcp: ['files'] }, 'the list is replaced whole; rpm is kept');

    const other = await cli(['keys', 'limits', key.id, '--rpm', '9', '--json', '--data', dataDir]);
    assert.deepEqual(keyOf(other.stdout).limits, { rpm: 9, mcp: ['files'] }, 'another flag leaves the list alone');

    const removed = await cli(['keys', 'limits', key.id, '--mcp', 'none', '--data', dataDir]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`Key ${key.id}: rpm 9\\.`), 'none removes the list (the key then reaches no MCP server)');
    const stored = await queryStore<{ limits: string }>(dataDir, 'SELECT limits FROM api_keys WHERE id = ?', [key.id]);
    assert.deepEqual(JSON.parse(stored[0]!.limits), { rpm: 9 }, 'and the store holds no mcp field');
  });

  test('a key made without --mcp has no allow-list (deny by default)', async () => {
    const { dataDir } = setup();
    const created = await cli(['keys', 'create', '--account', 'plain-co', '--json', '--data', dataDir]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(keyOf(created.stdout).limits, null);
  });

  test('accounts limits sets the ceiling every key of the account shares; keys show it', async () => {
    const { dataDir, config } = setup();
    const created = await cli(['keys', 'create', '--account', 'ceiling-co', '--mcp', 'github', '--json', '--config', config, '--data', dataDir]);
    const key = keyOf(created.stdout);
    const account = await cli(['accounts', 'limits', 'ceiling-co', '--mcp', 'github/create_issue,files', '--config', config, '--data', dataDir]);
    assert.equal(account.code, 0, account.stderr);
    assert.equal(account.stderr, '');
    assert.match(account.stdout, /Account ceiling-co: mcp github\/create_issue,files\./);
    const json = await cli(['accounts', 'limits', 'ceiling-co', '--json', '--data', dataDir]);
    assert.deepEqual(JSON.parse(json.stdout), { account: 'ceiling-co', limits: { mcp: ['github/create_issue', 'files'] } }, 'no flag: shown, unchanged');
    const listed = await cli(['keys', 'list', '--json', '--data', dataDir]);
    assert.deepEqual((JSON.parse(listed.stdout) as KeyJson[]).find((k) => k.id === key.id)?.account_limits, { mcp: ['github/create_issue', 'files'] });
    const shown = await cli(['keys', 'limits', key.id, '--data', dataDir]);
    assert.match(shown.stdout, /mcp github \(account ceiling-co: mcp github\/create_issue,files\)/);
    const cleared = await cli(['accounts', 'limits', 'ceiling-co', '--mcp', 'none', '--json', '--data', dataDir]);
    assert.deepEqual(JSON.parse(cleared.stdout), { account: 'ceiling-co', limits: null });
  });

  test('a bad entry is refused with the rule, and nothing changes', async () => {
    const { dataDir, config } = setup();
    const key = keyOf((await cli(['keys', 'create', '--account', 'bad-co', '--mcp', 'github', '--json', '--config', config, '--data', dataDir])).stdout);
    for (const bad of ['two__underscores', 'has space/tool', '-leading', ',', 'github/', `${'x'.repeat(33)}`]) {
      const refused = await cli(['keys', 'limits', key.id, '--mcp', bad, '--data', dataDir]);
      assert.equal(refused.code, 1, `'${bad}' is refused`);
      assert.match(refused.stderr, /--mcp <entries>/, `'${bad}': the flag is named`);
    }
    const named = await cli(['keys', 'limits', key.id, '--mcp', 'github,two__underscores', '--data', dataDir]);
    assert.match(named.stderr, /'two__underscores' must be an MCP server id or 'server\/tool'; a server id is 1-32 letters/);
    const tooMany = await cli(['keys', 'limits', key.id, '--mcp', Array.from({ length: 501 }, (_, i) => `s${i}`).join(','), '--data', dataDir]);
    assert.equal(tooMany.code, 1);
    assert.match(tooMany.stderr, /at most 500 entries/);
    const refusedCreate = await cli(['keys', 'create', '--account', 'bad-co', '--mcp', 'a__b', '--data', dataDir]);
    assert.equal(refusedCreate.code, 1, 'create refuses it too');
    const listed = await cli(['keys', 'list', '--json', '--data', dataDir]);
    const keys = JSON.parse(listed.stdout) as KeyJson[];
    assert.equal(keys.length, 1, 'no key was made by the refused create');
    assert.deepEqual(keys[0]!.limits, { mcp: ['github'] }, 'the list is unchanged');
    const account = await cli(['accounts', 'limits', 'bad-co', '--mcp', 'ok,x y', '--data', dataDir]);
    assert.equal(account.code, 1, 'accounts refuse it too');
  });

  test('a server neither the configuration file nor the console has: a warning naming it, the list still set', async () => {
    const { dataDir, config } = setup();
    const created = await cli(['keys', 'create', '--account', 'warn-co', '--mcp', 'github,jira/search,GitHub/x', '--json', '--config', config, '--data', dataDir]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, /^Warning: the MCP allow-list of this key names a server that neither .*sluice\.yaml nor the console has: 'jira' \(the MCP servers are github, files\)\./m);
    assert.doesNotMatch(created.stderr, /'github'|'GitHub'/, 'ids compare without case, as the gateway compares them');
    assert.deepEqual(keyOf(created.stdout).limits?.mcp, ['github', 'jira/search', 'GitHub/x'], 'a warning, not a refusal');

    const noConfig = await cli(['accounts', 'limits', 'warn-co', '--mcp', 'github,wiki', '--data', dataDir]);
    assert.equal(noConfig.code, 0, noConfig.stderr);
    assert.match(noConfig.stderr, /the MCP allow-list of the account warn-co names servers that no configuration file \(.*\) nor the console has: 'github', 'wiki' \(no MCP server is configured\)/);
    assert.doesNotMatch(noConfig.stderr + created.stderr, /cli-test-upstream-token/, "a server's header never appears");
  });
});
