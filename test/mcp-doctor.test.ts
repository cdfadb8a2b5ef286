/**
 * `sluice doctor` checks each MCP server, from the configuration file and the console, as the
 * gateway would reach it: connected and its tools listed (a stdio server started, then stopped), or
 * why not, without a header or environment value in the report.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startStreamableHttpMcpUpstream, STDIO_FAKE_PATH, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, startSluice, tempDir } from './support/sluice.js';

const TOKEN = 'doctor-upstream-token-3f9a';
const WRONG_TOKEN = 'doctor-wrong-token-81bd';
const CONSOLE_TOKEN = 'doctor-console-token-c04e';
const STDIO_SECRET = 'doctor-stdio-secret-77aa';

interface Report {
  ok: boolean;
  checks: { check: string; status: 'ok' | 'warn' | 'fail'; message: string; fix?: string }[];
}

let upstream: FakeMcpUpstream;
let consoleUpstream: FakeMcpUpstream;
let dataDir: string;
let config: string;

before(async () => {
  upstream = await startStreamableHttpMcpUpstream({ token: TOKEN });
  consoleUpstream = await startStreamableHttpMcpUpstream({ token: CONSOLE_TOKEN });
  dataDir = tempDir('mcp-doctor-');
  config = join(dataDir, 'doctor.yaml');
  writeFileSync(
    config,
    `mcp_servers:
  - id: good
    url: ${upstream.url}
    headers: { Authorization: "Bearer ${TOKEN}" }
  - id: refused
    url: ${upstream.url}
    headers: { Authorization: "Bearer ${WRONG_TOKEN}" }
  - id: local
    command: ${process.execPath}
    args: [${JSON.stringify(STDIO_FAKE_PATH)}]
    env: { FAKE_STDIO_TOKEN: ${STDIO_SECRET} }
  - id: broken
    command: ${process.execPath}
    args: [-e, "process.exit(3)"]
`,
  );
  // A console server, added through the console of a gateway on this data directory.
  await createAccount(dataDir, 'root', 'admin-password-1', true);
  const gateway = await startSluice({ dataDir, config: 'providers: []\n' });
  try {
    const admin = new ConsoleClient(gateway.url);
    const csrf = await admin.signIn('root', 'admin-password-1');
    const added = await admin.post('/app/mcp/new', { csrf, id: 'from-console', url: consoleUpstream.url, transport: 'streamable_http', headers: `Authorization: Bearer ${CONSOLE_TOKEN}` });
    assert.equal(added.status, 303, added.text);
  } finally {
    assert.equal(await gateway.stop(), 0);
  }
});

after(async () => {
  await upstream.close();
  await consoleUpstream.close();
});

describe('sluice doctor and MCP servers', () => {
  test('each server connected and listed, or why not; exit status 1 for a failure; no secret in the report', async () => {
    const result = await cli(['doctor', '--json', '--config', config, '--data', dataDir]);
    assert.equal(result.code, 1, 'a server failed');
    const report = JSON.parse(result.stdout) as Report;
    const byName = new Map(report.checks.map((c) => [c.check, c]));
    assert.equal(byName.get('MCP server good')?.status, 'ok');
    assert.match(byName.get('MCP server good')!.message, /^streamable_http at http:\/\/127\.0\.0\.1:\d+\/mcp: connected \(protocol [\d-]+\), \d+ tool\(s\) listed$/);
    assert.equal(byName.get('MCP server local')?.status, 'ok');
    assert.match(byName.get('MCP server local')!.message, /^stdio \(.*node.*\): connected/);
    assert.equal(byName.get('MCP server from-console')?.status, 'ok', 'the console’s server, its sealed header opened');
    assert.equal(byName.get('MCP server refused')?.status, 'fail');
    assert.match(byName.get('MCP server refused')!.fix!, /headers \(its token\)/);
    assert.equal(byName.get('MCP server broken')?.status, 'fail');
    assert.match(byName.get('MCP server broken')!.fix!, /check the command/);
    for (const secret of [TOKEN, WRONG_TOKEN, CONSOLE_TOKEN, STDIO_SECRET]) assert.ok(!(result.stdout + result.stderr).includes(secret), 'no secret in the report');
    const text = await cli(['doctor', '--config', config, '--data', dataDir]);
    assert.match(text.stdout, /^FAIL  MCP server refused: streamable_http at .* — fix: /m);
  });
});
