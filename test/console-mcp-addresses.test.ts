/**
 * Where a console admin may point an MCP server: never this gateway's host (however the address is
 * written: an IPv4-mapped IPv6 literal, `localhost.`, a decimal or short IPv4 form), never
 * link-local or a cloud metadata address; a private network is fine. And ids are one without case
 * even when two creates race.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConsoleClient, createAccount } from './support/console.js';
import { startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';

const ADMIN_PASSWORD = 'admin-password-1';
let sluice: RunningSluice;
let admin: ConsoleClient;
let csrf: string;
let dataDir: string;

before(async () => {
  dataDir = tempDir('console-mcp-addresses-');
  await createAccount(dataDir, 'root', ADMIN_PASSWORD, true);
  // No SLUICE_MCP_CONSOLE_ALLOW_LOOPBACK: loopback is refused, as in production.
  sluice = await startSluice({ dataDir, config: 'providers: []\n', env: { SLUICE_MCP_CONSOLE_ALLOW_LOOPBACK: '' } });
  admin = new ConsoleClient(sluice.url);
  csrf = await admin.signIn('root', ADMIN_PASSWORD);
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
});

async function storedIds(): Promise<string[]> {
  return (await queryStore<{ id: string }>(dataDir, 'SELECT id FROM console_mcp_servers ORDER BY id')).map((row) => row.id);
}

describe('console MCP server addresses', () => {
  test('loopback, unspecified, link-local and metadata addresses are refused, however written; nothing is stored', async () => {
    const port = new URL(sluice.url).port;
    const refused = [
      `http://[::ffff:7f00:1]:${port}/mcp`,
      `http://localhost.:${port}/mcp`,
      'http://localhost.:47849/mcp',
      'http://[::ffff:7f00:1]:47849/mcp',
      'http://127.0.0.1:47849/mcp',
      'http://2130706433:47849/mcp',
      'http://0x7f.1:47849/mcp',
      'http://0.0.0.0:47849/mcp',
      'http://[::]:47849/mcp',
      'http://169.254.169.254/latest/',
      'http://[fd00:ec2::254]/latest/',
      'http://[fe80::1]/mcp',
    ];
    for (const url of refused) {
      const answer = await admin.post('/app/mcp/new', { csrf, id: 'sneaky', url, transport: 'streamable_http' });
      assert.equal(answer.status, 400, `${url} is refused`);
      assert.match(answer.text, /not allowed for a server added in the console|points at this gateway itself/, url);
    }
    assert.deepEqual(await storedIds(), []);
  });

  test('a private address is allowed', async () => {
    const answer = await admin.post('/app/mcp/new', { csrf, id: 'private', url: 'http://10.255.255.1:47849/mcp', transport: 'streamable_http' });
    assert.equal(answer.status, 303, answer.text);
    assert.equal((await admin.post('/app/mcp/private/delete', { csrf })).status, 303);
  });

  test('two racing creates of ids differing in case: exactly one is stored, the other gets the clash error', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = await Promise.all(
        [`Race${round}`, `race${round}`].map((id) => admin.post('/app/mcp/new', { csrf, id, url: 'http://10.255.255.1:47849/mcp', transport: 'streamable_http' })),
      );
      const statuses = [a!.status, b!.status].sort();
      assert.deepEqual(statuses, [303, 400], `round ${round}`);
      const loser = a!.status === 400 ? a! : b!;
      assert.match(loser.text, /An MCP server &#39;(R|r)ace\d&#39; already exists/);
    }
    assert.equal((await storedIds()).filter((id) => id.toLowerCase().startsWith('race')).length, 5);
  });
});
