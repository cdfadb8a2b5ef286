// postgres-pass: skip (the upstream MCP layer in-process against fake MCP servers; no gateway and no store)
/**
 * What the upstream layer holds and says of a server, bounded: its lists by size (per entry and in
 * all), its state in fixed words (never an upstream's response body), its `since` while it keeps
 * failing, and a console-added server's connections held to the address policy.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import type { McpServerConfig } from '../src/config/config-file.js';
import { ALLOW_LOOPBACK_ENV } from '../src/mcp/upstream/address-policy.js';
import { UpstreamMcpServerRegistry } from '../src/mcp/upstream/upstream-servers.js';
import type { UpstreamMcpServer } from '../src/mcp/upstream/upstream-server.js';
import { startPagedMcpUpstream, startStreamableHttpMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';

/** A name other than localhost that resolves to loopback here (the test host's /etc/hosts has one for its own name, or for localhost6). */
const LOOPBACK_NAME = loopbackName();
const INTERNAL_BODY = 'INTERNAL-SECRET-BODY: aws_secret_access_key=wJalrXUtnFEMI-K7MDENG-bPxRfiCY';
const logLines: string[] = [];
const logger = pino({ level: 'debug' }, new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }));

let web: FakeMcpUpstream;
let paged: FakeMcpUpstream;
let internal: http.Server;
let internalUrl: string;
let registry: UpstreamMcpServerRegistry;

const httpServer = (id: string, url: string, token: string, fromConsole = false): McpServerConfig => ({
  id,
  url,
  transport: 'streamable_http',
  headers: { Authorization: `Bearer ${token}` },
  ...(fromConsole ? { fromConsole: true as const } : {}),
});
const server = (id: string): UpstreamMcpServer => registry.get(id) ?? assert.fail(`no server ${id}`);

function loopbackName(): string {
  const hosts = readFileSync('/etc/hosts', 'utf8');
  for (const line of hosts.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (address === undefined || !/^127\.|^::1$/.test(address)) continue;
    const other = names.find((name) => name !== '' && name !== 'localhost' && !name.endsWith('.localhost'));
    if (other !== undefined) return other;
  }
  return 'localhost';
}

async function eventually(condition: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`${what}: not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

before(async () => {
  assert.equal(process.env[ALLOW_LOOPBACK_ENV], undefined, 'loopback is not allowed for console servers in this test');
  [web, paged] = await Promise.all([startStreamableHttpMcpUpstream({ token: `web-${process.pid}` }), startPagedMcpUpstream({ token: `paged-${process.pid}`, manyTools: 120 })]);
  // An internal service that is no MCP server: it answers everything with a secret body.
  internal = http.createServer((_req, res) => res.writeHead(403, { 'content-type': 'text/plain' }).end(INTERNAL_BODY));
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}/internal`;
  // A port nothing listens on (port 9 would be refused by fetch itself, as a bad port).
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  registry = new UpstreamMcpServerRegistry(logger, {
    backoff: { initialMs: 30, maxMs: 60, resetAfterMs: 60_000 },
    connectTimeoutMs: 5_000,
    maxDescriptionChars: 12,
    maxInputSchemaBytes: 60,
    maxListBytes: 6_000,
  });
  const webPort = new URL(web.url).port;
  registry.sync([
    httpServer('web', web.url, web.token),
    httpServer('paged', paged.url, paged.token),
    httpServer('internal', internalUrl, 'x-token-1234'),
    httpServer('gone', `http://127.0.0.1:${closedPort}/mcp`, 'x-token-1234'),
    // Added in the console: the same upstream, written as a loopback literal, as localhost with a trailing dot, and as a name resolving to loopback.
    httpServer('console-literal', web.url.replace('127.0.0.1', '[::ffff:7f00:1]'), web.token, true),
    httpServer('console-dot', `http://localhost.:${webPort}/mcp`, web.token, true),
    httpServer('console-name', `http://${LOOPBACK_NAME}:${webPort}/mcp`, web.token, true),
  ]);
});

after(async () => {
  await registry.close();
  await Promise.all([web.close(), paged.close(), new Promise((resolve) => internal.close(resolve))]);
});

describe('bounded upstream lists and states', () => {
  test('a description is cut, a tool with an oversized inputSchema is left out', async () => {
    const lists = await server('web').lists(10_000);
    assert.ok(lists.tools.length > 0);
    for (const tool of lists.tools) {
      assert.ok(Buffer.byteLength(JSON.stringify(tool.inputSchema)) <= 60, `${tool.name}'s schema is within the cap`);
      if (tool.description !== undefined) assert.ok(tool.description.length <= 13, `${tool.name}: ${tool.description}`);
    }
    assert.ok(!lists.tools.some((tool) => tool.name === 'echo'), 'echo (a schema of more than 60 bytes) is left out');
    assert.ok(lists.tools.some((tool) => tool.name === 'fail'), 'fail (an empty schema) is kept');
    assert.equal(lists.tools.find((tool) => tool.name === 'fail')!.description, 'Returns a to…');
    assert.ok(logLines.some((line) => line.includes('inputSchema larger than the cap')));
  });

  test('lists past the byte cap are cut as the pages arrive, and the state says so', async () => {
    const lists = await server('paged').lists(10_000);
    assert.ok(lists.tools.length > 0 && lists.tools.length < 120, `${lists.tools.length} of 120 tools kept`);
    const bytes = [...lists.tools, ...lists.resources, ...lists.resourceTemplates, ...lists.prompts].reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0);
    assert.ok(bytes <= 6_000, `${bytes} bytes held`);
    assert.equal(server('paged').state().state, 'ready');
    assert.match(server('paged').state().error ?? '', /lists are larger than 6000 bytes/);
    assert.ok(logLines.some((line) => line.includes('larger than the byte cap')));
  });

  test('a server answering with a body shows only the status and a fixed reason, never the body', async () => {
    await eventually(() => server('internal').state().state === 'down', 10_000, 'internal down');
    const state = server('internal').state();
    assert.equal(state.error, 'HTTP 403 forbidden');
    await assert.rejects(server('internal').lists(100), (error: Error) => !error.message.includes('INTERNAL-SECRET') && /HTTP 403 forbidden/.test(error.message));
  });

  test('a server that keeps failing stays down since it first went down', async () => {
    await eventually(() => server('gone').state().state === 'down', 10_000, 'gone down');
    const first = server('gone').state();
    await eventually(() => server('gone').state().restarts >= first.restarts + 3 && server('gone').state().state === 'down', 10_000, 'three more attempts');
    assert.equal(server('gone').state().since, first.since, 'since kept across down → connecting → down');
    assert.equal(server('gone').state().error, 'connection refused');
  });

  test('a console server is never connected to a refused address: a loopback literal, a name resolving to loopback', async () => {
    for (const id of ['console-literal', 'console-dot', 'console-name']) {
      await eventually(() => server(id).state().state === 'down', 10_000, `${id} down`);
      assert.match(server(id).state().error ?? '', /^refused: the address is not allowed/, id);
    }
    // The same upstream, from the file, is reached: the policy is the console's alone.
    assert.equal(server('web').state().state, 'ready');
    const initializes = web.requests.filter((request) => request.method === 'POST').length;
    assert.ok(initializes > 0);
  });
});
