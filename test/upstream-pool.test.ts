// postgres-pass: skip (in process: the upstream connection pool, no store)
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, test } from 'node:test';
import type { Pool } from 'undici';
import { createUpstreamPool } from '../src/providers/upstream-pool.js';

/**
 * The connection pool's own resend, in process against a real HTTP server on loopback: it sends a
 * request again only when the request cannot have reached the upstream. What the gateway makes of
 * the rest (routing's attempts) is in routing.test.ts and upstream-faults.test.ts.
 */

interface Upstream {
  readonly origin: string;
  /** Requests whose whole body the server read, in order. */
  readonly bodies: string[];
  /** Server-side sockets, newest last. */
  readonly sockets: Socket[];
  /** Set to reset the connection once the request numbered so (from 0) has been read whole. */
  resetAfterReading: number | undefined;
}

const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function startUpstream(): Promise<Upstream> {
  const upstream: Upstream = { origin: '', bodies: [], sockets: [], resetAfterReading: undefined };
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    upstream.bodies.push(body);
    if (upstream.bodies.length - 1 === upstream.resetAfterReading) return void req.socket.resetAndDestroy();
    res.end(`answer to ${body}`);
  });
  server.on('connection', (socket: Socket) => upstream.sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stops.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return Object.assign(upstream, { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

function pool(upstream: Upstream): Pool {
  const created = createUpstreamPool(upstream.origin, { connections: 1 });
  stops.push(() => created.destroy());
  return created;
}

async function post(dispatcher: Pool, body: string): Promise<string> {
  const answer = await dispatcher.request({ method: 'POST', path: '/', headers: { 'content-type': 'text/plain' }, body });
  return answer.body.text();
}

test('a request meeting a reused connection the upstream resets before it is written is sent on a new one', async () => {
  const upstream = await startUpstream();
  const connections = pool(upstream);
  assert.equal(await post(connections, 'first'), 'answer to first');
  // undici holds a request for an idle connection until its check phase (setImmediate), to see
  // what the upstream sent meanwhile; the reset lands in that wait, scheduled just before it.
  // Whether undici then learns of it by reading or by a refused write, the request was not read.
  setImmediate(() => upstream.sockets[0]!.resetAndDestroy());
  assert.equal(await post(connections, 'second'), 'answer to second');
  assert.deepEqual(upstream.bodies, ['first', 'second'], 'the upstream read each request once');
  assert.equal(upstream.sockets.length, 2, 'the second on a new connection');
});

test('a request the upstream read on a reused connection, then reset, is not sent again', async () => {
  const upstream = await startUpstream();
  const connections = pool(upstream);
  assert.equal(await post(connections, 'first'), 'answer to first');
  upstream.resetAfterReading = 1;
  await assert.rejects(post(connections, 'second'), { code: 'ECONNRESET' });
  assert.deepEqual(upstream.bodies, ['first', 'second'], 'the upstream read the second request once');
  assert.equal(upstream.sockets.length, 1);
});

test('a connection the upstream closed while idle is not used for the next request', async () => {
  const upstream = await startUpstream();
  const connections = pool(upstream);
  assert.equal(await post(connections, 'first'), 'answer to first');
  const closed = new Promise((resolve) => upstream.sockets[0]!.once('close', resolve));
  upstream.sockets[0]!.destroy();
  await closed;
  assert.equal(await post(connections, 'second'), 'answer to second');
  assert.deepEqual(upstream.bodies, ['first', 'second']);
  assert.equal(upstream.sockets.length, 2);
});
