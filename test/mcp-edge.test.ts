/**
 * The edges of Sluice's Streamable HTTP transport, through the real gateway (one worker, so that
 * per-worker rules are seen whole): the GET stream ending under a pending keep-alive, a reader that
 * never reads a progress flood, request ids reused while in flight, the caps on GET streams, the
 * session's revision, content negotiation, trailing slashes, a refused request whose body never
 * comes, list_changed once per session, and pagination while a server goes down mid-walk.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { initialize, rpc, startMcpWorld, type McpWorld } from './support/mcp-gateway.js';
import { eventually } from './support/sluice.js';

interface OpenStream {
  readonly status: number;
  readonly body: () => string;
  readonly ended: Promise<void>;
  close(): void;
}

/** A GET stream opened by hand; resolves once its headers (and, when 200, the `: open` comment) came. */
function openStream(url: string, key: string, session: string, version = '2025-11-25', path = '/mcp'): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(new URL(path, url), { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': version } }, (response) => {
      let body = '';
      const ended = new Promise<void>((done) => response.once('close', done));
      const stream: OpenStream = { status: response.statusCode!, body: () => body, ended, close: () => request.destroy() };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
        if (body.startsWith(': open')) resolve(stream);
      });
      response.on('error', () => undefined);
      if (response.statusCode !== 200) response.once('end', () => resolve(stream));
    });
    request.on('error', reject);
  });
}

const listChangedIn = (body: string) => body.split('\n').filter((line) => line.includes('notifications/tools/list_changed')).length;

describe('the MCP transport’s edges', () => {
  let world: McpWorld;
  let key: string;
  let configFile: string;

  before(async () => {
    world = await startMcpWorld({ args: ['--workers', '1'], env: { SLUICE_MCP_KEEPALIVE_MS: '1' }, mcpSection: 'mcp:\n  page_size: 10\n' });
    key = (await world.key('web,legacy,many,local')).key;
    configFile = join(world.sluice.dataDir, 'sluice.yaml');
  });
  after(async () => {
    await world?.close();
  });

  const headersOf = (session: string, version = '2025-11-25') => ({ 'mcp-session-id': session, 'mcp-protocol-version': version });

  test('DELETE while keep-alive checks are pending ends the stream, and the worker lives on', async () => {
    // The keep-alive runs every millisecond here: many checks are in flight as each session ends.
    for (let round = 0; round < 40; round++) {
      const { session } = await initialize(world.sluice.url, key);
      const streams = await Promise.all([openStream(world.sluice.url, key, session), openStream(world.sluice.url, key, session)]);
      const ended = await fetch(new URL('/mcp', world.sluice.url), { method: 'DELETE', headers: { authorization: `Bearer ${key}`, ...headersOf(session) } });
      assert.equal(ended.status, 200);
      await Promise.all(streams.map((stream) => stream.ended));
    }
    const { session } = await initialize(world.sluice.url, key);
    const ping = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' }, headersOf(session));
    assert.equal(ping.status, 200);
    assert.doesNotMatch(world.sluice.stderr() + world.sluice.stdout(), /ERR_STREAM_WRITE_AFTER_END|write after end|worker .*(exited|died)/i);
  });

  test('a reader that never reads a progress flood: progress is coalesced, memory stays bounded, the answer still comes', async (t) => {
    const { session } = await initialize(world.sluice.url, key);
    const slowRows = async () => (await world.sluice.ledger()).filter((row) => row.model === 'web/slow').length;
    const rowsBefore = await slowRows();
    const steps = 120_000;
    const pad = 4096;
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'flood', method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 0, steps, pad }, _meta: { progressToken: 'p' } } });
    const workerRss = (field?: 'VmRSS' | 'VmHWM') => rssOfChildren(world.sluice.child.pid!, field);
    const before = workerRss();
    const socket = net.connect(Number(new URL(world.sluice.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: ${session}\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // Not read at all until the upstream has sent every update (about 490 MB of progress).
    socket.pause();
    await eventually(() => (world.web.completedCalls.includes('slow') ? true : undefined), 120_000, 'the flood sent');
    // The call's ledger row is written once the gateway has taken in the whole answer, every update before it: only then
    // is the reader let read, so what it gets is what the gateway let through while it was not reading.
    await eventually(async () => ((await slowRows()) > rowsBefore ? true : undefined), 120_000, 'the call ended in the gateway');
    let last = -1;
    for (let round = 0; round < 100; round++) {
      const now = workerRss();
      if (Math.abs(now - last) < 1024 * 1024) break;
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const grown = workerRss() - before;
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    await eventually(() => (Buffer.concat(chunks).includes('"id":"flood","result"') ? true : undefined), 60_000, 'the final answer');
    socket.destroy();
    const text = Buffer.concat(chunks).toString('utf8');
    t.diagnostic(`gateway memory grew by ${Math.round(grown / 1048576)} MiB while the reader did not read`);
    const progress = text.split('\n').filter((line) => line.includes('notifications/progress')).length;
    assert.ok(progress < steps / 2, `progress coalesced while the reader did not read (${progress} of ${steps} sent)`);
    assert.match(text, /slept 0 ms/);
    // Without backpressure the gateway held the whole flood (and more); with it, what it holds is the churn of passing it on.
    const flood = steps * pad;
    assert.ok(grown < flood, `gateway memory grew by ${Math.round(grown / 1048576)} MiB, the flood was ${Math.round(flood / 1048576)} MiB`);
  });

  test('a request id in flight in the session, or twice in a batch, is refused with -32600 (in flight: the first goes on; in a batch: every one sharing the id)', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const first = rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 1500 } } }, headersOf(session));
    await eventually(() => (world.web.requests.some((request) => request.body?.params?.arguments?.ms === 1500) ? true : undefined), 5_000, 'the first call upstream');
    const again = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 7, method: 'ping' }, headersOf(session));
    assert.equal(again.json.error.code, -32600, again.text);
    assert.equal(again.json.id, 7);
    assert.match(again.json.error.message, /already in flight/);
    // The same id as a string is another id.
    const asString = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: '7', method: 'ping' }, headersOf(session));
    assert.deepEqual(asString.json.result, {});
    // Cancelling id 7 still reaches the first call.
    await rpc(world.sluice.url, key, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }, headersOf(session));
    const answered = await first;
    assert.ok(answered.json.error !== undefined, `the first call was cancelled: ${answered.text}`);
    await eventually(() => (world.web.abortedCalls.some((call) => call.tool === 'slow') ? true : undefined), 5_000, 'the cancellation upstream');

    const old = await initialize(world.sluice.url, key, '2025-03-26');
    const batch = await rpc(world.sluice.url, key, [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 1, method: 'tools/list' }], { ...headersOf(old.session, '2025-03-26'), accept: 'application/json' });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.json.length, 2);
    // Neither runs: two answers under one id would leave the client unable to tell which is which.
    assert.equal(batch.json.filter((answer: { error?: { code: number } }) => answer.error?.code === -32600).length, 2, batch.text);
    assert.equal(batch.json.filter((answer: { result?: unknown }) => answer.result !== undefined).length, 0);

    const huge = await rpc(world.sluice.url, key, '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}', headersOf(session));
    assert.equal(huge.status, 400);
    assert.equal(huge.json.error.code, -32600);
  });

  test('GET streams are capped: 2 per session, 32 per key on a worker; past it 429 with a JSON-RPC error', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const open = [await openStream(world.sluice.url, key, session), await openStream(world.sluice.url, key, session)];
    const third = await openStream(world.sluice.url, key, session);
    assert.equal(third.status, 429);
    assert.equal(JSON.parse(third.body()).error.code, -32029);
    open.shift()!.close();
    await eventually(async () => {
      const retry = await openStream(world.sluice.url, key, session);
      if (retry.status === 200) open.push(retry);
      return retry.status === 200 ? true : undefined;
    }, 5_000, 'a stream once one closed');
    for (let index = 0; index < 15; index++) {
      const other = await initialize(world.sluice.url, key);
      open.push(await openStream(world.sluice.url, key, other.session), await openStream(world.sluice.url, key, other.session));
    }
    assert.ok(open.every((stream) => stream.status === 200));
    assert.equal(open.length, 32);
    const past = await openStream(world.sluice.url, key, (await initialize(world.sluice.url, key)).session);
    assert.equal(past.status, 429);
    const otherKey = (await world.key('web')).key;
    const another = await openStream(world.sluice.url, otherKey, (await initialize(world.sluice.url, otherKey)).session);
    assert.equal(another.status, 200, 'another key has its own allowance');
    for (const stream of [...open, another]) stream.close();
  });

  test('the session’s revision rules: batches by the session’s, a differing MCP-Protocol-Version is 400', async () => {
    const { session } = await initialize(world.sluice.url, key, '2025-11-25');
    const batch = [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 2, method: 'ping' }];
    const sneaky = await rpc(world.sluice.url, key, batch, headersOf(session, '2025-03-26'));
    assert.equal(sneaky.status, 400);
    assert.match(sneaky.json.error.message, /not the revision this session negotiated/);
    const other = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' }, headersOf(session, '2025-06-18'));
    assert.equal(other.status, 400);
    const none = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': session });
    assert.equal(none.status, 200, 'no header: the session’s revision');
    const old = await initialize(world.sluice.url, key, '2025-03-26');
    const batched = await rpc(world.sluice.url, key, batch, { 'mcp-session-id': old.session, accept: 'application/json' });
    assert.equal(batched.status, 200, 'a 2025-03-26 session batches without the header');
  });

  test('content negotiation, trailing slashes and the older HTTP+SSE client', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const plain = await rpc(world.sluice.url, key, ping, { ...headersOf(session), 'content-type': 'text/plain' });
    assert.equal(plain.status, 415);
    assert.equal(plain.json.error.code, -32030);
    const html = await rpc(world.sluice.url, key, ping, { ...headersOf(session), accept: 'text/html' });
    assert.equal(html.status, 406);
    assert.equal(html.json.error.code, -32030);
    for (const accept of ['application/json', 'text/event-stream', 'application/json, text/event-stream', '*/*']) {
      const fine = await rpc(world.sluice.url, key, ping, { ...headersOf(session), accept });
      assert.equal(fine.status, 200, accept);
    }
    const slash = await initialize(world.sluice.url, key, '2025-11-25', '/mcp/');
    const listed = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headersOf(slash.session), '/mcp/');
    assert.equal(listed.status, 200, listed.text);
    assert.ok(listed.json.result.tools.length > 0);
    const web = await initialize(world.sluice.url, key, '2025-11-25', '/mcp/web/');
    const onWeb = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headersOf(web.session), '/mcp/web');
    assert.equal(onWeb.status, 200, 'the session of /mcp/web/ is /mcp/web’s');
    const nowhere = await rpc(world.sluice.url, key, ping, {}, '/mcp/nowhere/');
    assert.equal(nowhere.status, 404);
    assert.equal(nowhere.json.error.code, -32030, 'a JSON-RPC error, not the OpenAI dialect’s');
    const sse = await fetch(new URL('/mcp', world.sluice.url), { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
    assert.equal(sse.status, 400);
    assert.match(((await sse.json()) as { error: { message: string } }).error.message, /Streamable HTTP transport only/);
  });

  test('a request refused before its body is read closes the connection rather than waiting for the body', async () => {
    const socket = net.connect(Number(new URL(world.sluice.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', () => undefined);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n{"jsonrpc"');
    await closed;
    assert.match(answer, /^HTTP\/1\.1 401/);
    assert.match(answer, /connection: close/i);
  });

  test('list_changed: once per session, on its newest stream; a reload replacing a server is one notification', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const older = await openStream(world.sluice.url, key, session);
    const newer = await openStream(world.sluice.url, key, session);
    try {
      await world.web.addTool('edge_fresh', 'fresh');
      await eventually(() => (listChangedIn(newer.body()) === 1 ? true : undefined), 10_000, 'list_changed on the newest stream');
      // A reload that changes web's connection: its old connection leaves and the new one comes.
      writeFileSync(configFile, readFileSync(configFile, 'utf8').replace(/(  - id: web\n    url: .*\n)/, '$1    headers: { Authorization: "Bearer ' + world.web.token + '", X-Edge: "1" }\n').replace(/(  - id: web\n    url: .*\n    headers: .*\n)    headers: .*\n/, '$1'));
      world.sluice.child.kill('SIGHUP');
      await eventually(() => (listChangedIn(newer.body()) >= 2 ? true : undefined), 10_000, 'list_changed after the reload');
      // Another change after it: were the reload two notifications, this would be the fourth.
      await eventually(async () => ((await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 9, method: 'ping' }, headersOf(session))).status === 200 ? true : undefined), 5_000, 'served after the reload');
      await new Promise((resolve) => setTimeout(resolve, 500));
      await world.web.addTool('edge_later', 'later');
      await eventually(() => (listChangedIn(newer.body()) >= 3 ? true : undefined), 10_000, 'list_changed for the later tool');
      assert.equal(listChangedIn(newer.body()), 3, newer.body().split('\n').filter((line) => line.startsWith('data:')).join('\n'));
      assert.equal(listChangedIn(older.body()), 0, 'never the same message on two streams of a session');
    } finally {
      older.close();
      newer.close();
    }
  });

  test('pagination: a walk across servers repeats nothing and skips nothing of the servers still up when one goes down mid-walk', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const page = async (cursor?: string) => {
      const answer = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, headersOf(session));
      assert.equal(answer.status, 200, answer.text);
      return answer.json.result as { tools: { name: string }[]; nextCursor?: string };
    };
    const full: string[] = [];
    let cursor: string | undefined;
    do {
      const next = await page(cursor);
      full.push(...next.tools.map((tool) => tool.name));
      cursor = next.nextCursor;
    } while (cursor !== undefined);
    assert.equal(new Set(full).size, full.length);
    assert.deepEqual(full, [...full].sort(), 'in name order');
    // Walk again; after the first pages (into legacy's tools), web goes down.
    const seen: string[] = [];
    let next = await page();
    seen.push(...next.tools.map((tool) => tool.name));
    next = await page(next.nextCursor);
    seen.push(...next.tools.map((tool) => tool.name));
    await world.web.kill();
    try {
      await eventually(async () => ((await page()).tools.some((tool) => tool.name.startsWith('web__')) ? undefined : true), 15_000, 'web left out');
      cursor = next.nextCursor;
      while (cursor !== undefined) {
        const more = await page(cursor);
        seen.push(...more.tools.map((tool) => tool.name));
        cursor = more.nextCursor;
      }
    } finally {
      await world.web.restart();
    }
    assert.equal(new Set(seen).size, seen.length, 'no tool repeated');
    for (const name of full.filter((name) => !name.startsWith('web__'))) assert.ok(seen.includes(name), `${name} not skipped`);
  });
});

/** The resident memory of the gateway (now, or its peak): its process and its children (the workers, when there are several), in bytes (Linux). */
function rssOfChildren(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  let total = 0;
  for (const process of [String(pid), ...children]) {
    try {
      total += Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${process}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // A child that has gone.
    }
  }
  return total;
}
