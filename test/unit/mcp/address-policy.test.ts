/**
 * Where a console-added MCP server may point: never loopback, "any", link-local or a cloud metadata
 * address, however the host is written or whatever a name resolves to; private networks are fine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { guardedLookup, refusedAddress, refusedConsoleUrl } from '../../../src/mcp/upstream/address-policy.js';

const noDns = async (): Promise<string[]> => {
  throw new Error('no lookup expected');
};

test('the bypasses seen in review are refused', async () => {
  for (const url of [
    'http://[::ffff:7f00:1]:47800/mcp',
    'http://[::ffff:127.0.0.1]:47800/mcp',
    'http://localhost.:47800/mcp',
    'http://LOCALHOST/mcp',
    'http://api.localhost/mcp',
    'http://169.254.169.254/latest/',
    'http://2130706433/mcp',
    'http://0x7f.1/mcp',
    'http://127.1/mcp',
    'http://0/mcp',
    'http://0.0.0.0:47800/mcp',
    'http://[::]/mcp',
    'http://[::1]/mcp',
    'http://[fe80::1]/mcp',
    'http://[fd00:ec2::254]/latest/',
    'http://[::ffff:a9fe:a9fe]/latest/',
    'http://[::127.0.0.1]/mcp',
    'http://[64:ff9b::7f00:1]/mcp',
    'http://[64:ff9b::a9fe:a9fe]/latest/',
    'http://[64:ff9b:1::a9fe:a9fe]/latest/',
  ]) {
    assert.notEqual(await refusedConsoleUrl(new URL(url), false, noDns), null, url);
  }
});

test('public and private addresses are allowed', async () => {
  for (const url of ['http://10.1.2.3/mcp', 'http://172.16.0.5/mcp', 'http://192.168.1.10:8080/mcp', 'http://[fc00::5]/mcp', 'https://8.8.8.8/mcp']) {
    assert.equal(await refusedConsoleUrl(new URL(url), false, noDns), null, url);
  }
});

test('a name is judged by every address it resolves to', async () => {
  const resolvesTo = (addresses: string[]) => async () => addresses;
  assert.equal(await refusedConsoleUrl(new URL('https://mcp.example.com/mcp'), false, resolvesTo(['93.184.216.34'])), null);
  assert.match((await refusedConsoleUrl(new URL('https://mcp.example.com/mcp'), false, resolvesTo(['93.184.216.34', '169.254.169.254'])))!, /resolves to/);
  assert.match((await refusedConsoleUrl(new URL('https://rebind.example/mcp'), false, resolvesTo(['127.0.0.1'])))!, /loopback/);
  assert.match((await refusedConsoleUrl(new URL('https://nowhere.invalid/mcp'), false, noDns))!, /does not resolve/);
});

test('loopback may be allowed (one machine), metadata and link-local never', async () => {
  assert.equal(await refusedConsoleUrl(new URL('http://127.0.0.1:47800/mcp'), true, noDns), null);
  assert.notEqual(await refusedConsoleUrl(new URL('http://169.254.169.254/'), true, noDns), null);
  assert.notEqual(refusedAddress('0.0.0.0', true), null);
});

test('the connect-time lookup refuses a name resolving to a refused address', async () => {
  const lookup = guardedLookup(false);
  const error = await new Promise<Error | null>((resolve) => lookup('localhost', { all: true }, (err) => resolve(err)));
  assert.ok(error !== null && /refused to connect to localhost/.test(error.message), String(error));
  const allowed = await new Promise<Error | null>((resolve) => guardedLookup(true)('localhost', {}, (err) => resolve(err)));
  assert.equal(allowed, null);
});
