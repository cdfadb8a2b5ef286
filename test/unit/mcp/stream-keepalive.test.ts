/**
 * The GET stream's keep-alive racing the stream's end, made certain rather than likely: the route
 * runs on a real HTTP server in this process, with an authenticator that holds the keep-alive's
 * re-authentication until the test lets it go, after a DELETE has ended the stream. Written
 * after the end, the response would emit an 'error' nobody listens to: an uncaught exception, which
 * the test runner reports (and which ends a gateway worker).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as tick } from 'node:timers/promises';
import { test } from 'node:test';
import pino from 'pino';
import type { Authenticator } from '../../../src/auth/authenticator.js';
import type { Principal } from '../../../src/core/principal.js';
import type { RequestContext } from '../../../src/http/handler.js';
import { mcpRoute } from '../../../src/http/routes/mcp.js';
import { McpService, type McpServiceDeps } from '../../../src/mcp/mcp-service.js';
import { NO_SIBLINGS } from '../../../src/mcp/siblings.js';
import type { UpstreamMcpServers } from '../../../src/mcp/upstream/upstream-server.js';

const principal: Principal = { keyId: 'key_1', accountId: 'acct_1', accountName: 'team', allowedModels: null, keyLimits: { mcp: ['web'] }, accountLimits: null };

test('a DELETE while the keep-alive’s check is pending: nothing is written after the end, the process lives on', async () => {
  const logger = pino({ level: 'silent' });
  // No upstream server, only list-changed events: many of them fill the stream's socket when its reader does not read.
  let emit: (serverId: string, list: 'tools') => void = () => undefined;
  const servers = { all: () => [], get: () => undefined, onListChanged: (listener: typeof emit) => ((emit = listener), () => undefined) } as unknown as UpstreamMcpServers;
  // Listing, calling and the ledger are not reached by GET and DELETE.
  const mcp = new McpService({ servers, logger, sessionKey: randomBytes(32), siblings: NO_SIBLINGS, version: 'test', settings: () => ({ maxResultBytes: 1024, callTimeoutMs: 1000, pageSize: 10 }) } as unknown as McpServiceDeps);
  const held: Array<(value: Principal) => void> = [];
  let hold = false;
  const authenticator = { authenticate: () => (hold ? new Promise<Principal>((resolve) => held.push(resolve)) : Promise.resolve(principal)) } as unknown as Authenticator;
  const route = mcpRoute({ authenticator, mcp, maxBodyBytes: 1 << 20, logger, keepAliveMs: 5 });
  const server = http.createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    void route({ req, res, requestId: 'r', path, query: '', route: 'mcp', startedAt: 0, dialect: 'openai' } as unknown as RequestContext);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const init = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id')!;
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const stream = await fetch(`${base}/mcp`, { headers: { ...headers, accept: 'text/event-stream' } });
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    // The reader does not read; the gateway is given far more than a socket holds (each change is one message before the fix).
    for (let index = 0; index < 200_000; index++) emit('web', 'tools');
    hold = true;
    // Let several keep-alive checks start and hang.
    while (held.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    hold = false;
    const ended = await fetch(`${base}/mcp`, { method: 'DELETE', headers });
    assert.equal(ended.status, 200);
    // The stream is ended but cannot finish (its reader is not reading). Now the checks succeed: before the fix each wrote `: keepalive` after the end.
    for (const resolve of held.splice(0)) resolve(principal);
    for (let index = 0; index < 5; index++) await tick();
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(held.length, 0, 'no keep-alive check after the stream ended');
    // The stream ends for the client once it reads.
    for (;;) if ((await reader.read()).done) break;
  } finally {
    mcp.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
