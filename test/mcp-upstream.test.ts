// postgres-pass: skip (the upstream MCP layer in-process against the fake MCP servers; no gateway and no store)
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { McpServerConfig } from '../src/config/config-file.js';
import { UpstreamMcpServerRegistry } from '../src/mcp/upstream/upstream-servers.js';
import { UpstreamMcpError, type CallOptions, type UpstreamMcpServer } from '../src/mcp/upstream/upstream-server.js';
import { DOTTED_TOOL_NAME, LONG_TOOL_NAME, STDIO_FAKE_PATH, startPagedMcpUpstream, startSseMcpUpstream, startStreamableHttpMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';

/**
 * The upstream layer (src/mcp/upstream) run in-process against real fake MCP servers: real HTTP,
 * real child processes. This is the upstream layer's own seam; the gateway's `/mcp` is tested
 * end to end elsewhere.
 */

const MiB = 1024 * 1024;
const STDIO_TOKEN = `stdio-secret-${process.pid}-value`;
const logLines: string[] = [];
const logger = pino({ level: 'debug' }, new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }));

let web: FakeMcpUpstream;
let webJson: FakeMcpUpstream;
let legacy: FakeMcpUpstream;
let paged: FakeMcpUpstream;
let registry: UpstreamMcpServerRegistry;
let configs: McpServerConfig[];

const httpServer = (id: string, upstream: FakeMcpUpstream, token = upstream.token): McpServerConfig => ({
  id,
  url: upstream.url,
  transport: upstream.kind,
  headers: { Authorization: `Bearer ${token}` },
});
const stdioServer = (id: string): McpServerConfig => ({
  id,
  command: process.execPath,
  args: [STDIO_FAKE_PATH],
  env: { FAKE_STDIO_TOKEN: STDIO_TOKEN },
  cwd: fileURLToPath(new URL('.', import.meta.url)),
});

const options = (overrides: Partial<CallOptions> = {}): CallOptions => ({ signal: new AbortController().signal, timeoutMs: 10_000, maxResultBytes: 4 * MiB, ...overrides });
const server = (id: string): UpstreamMcpServer => registry.get(id) ?? assert.fail(`no server ${id}`);
const textOf = (result: { content?: unknown }): string => (result.content as Array<{ text: string }>)[0]!.text;
const failure = (kind: UpstreamMcpError['kind']) => (error: unknown) => {
  assert.ok(error instanceof UpstreamMcpError, `not an UpstreamMcpError: ${String(error)}`);
  assert.equal(error.kind, kind, error.message);
  return true;
};

async function eventually(condition: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`${what}: not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

before(async () => {
  [web, webJson, legacy, paged] = await Promise.all([
    startStreamableHttpMcpUpstream({ token: `web-token-${process.pid}` }),
    startStreamableHttpMcpUpstream({ token: `json-token-${process.pid}`, jsonResponse: true }),
    startSseMcpUpstream({ token: `sse-token-${process.pid}` }),
    startPagedMcpUpstream({ token: `paged-token-${process.pid}`, manyTools: 120 }),
  ]);
  registry = new UpstreamMcpServerRegistry(logger, { backoff: { initialMs: 200, maxMs: 2_000, resetAfterMs: 60_000 }, killGraceMs: 1_000 });
  configs = [httpServer('web', web), httpServer('json', webJson), httpServer('legacy', legacy), httpServer('paged', paged), stdioServer('local')];
  registry.sync(configs);
});

after(async () => {
  await registry.close();
  await Promise.all([web.close(), webJson.close(), legacy.close(), paged.close()]);
});

describe('upstream MCP servers', () => {
  test('every server connects and its lists are fetched whole (every page)', async () => {
    const [webLists, legacyLists, pagedLists, localLists] = await Promise.all(['web', 'legacy', 'paged', 'local'].map((id) => server(id).lists(10_000)));
    for (const lists of [webLists!, legacyLists!]) {
      assert.ok(lists.tools.some((tool) => tool.name === LONG_TOOL_NAME) && lists.tools.some((tool) => tool.name === DOTTED_TOOL_NAME));
      assert.deepEqual(lists.resources.map((resource) => resource.uri), ['fake://docs/readme', 'fake://docs/config.json']);
      assert.deepEqual(lists.resourceTemplates.map((template) => template.uriTemplate), ['fake://greetings/{name}']);
      assert.deepEqual(lists.prompts.map((prompt) => prompt.name), ['greet', 'plain']);
    }
    assert.equal(pagedLists!.tools.length, 120);
    assert.equal(new Set(pagedLists!.tools.map((tool) => tool.name)).size, 120);
    assert.equal(pagedLists!.resources.length, 30);
    // 120 tools in pages of 7: 18 tools/list requests on the paged server.
    assert.equal(paged.requests.filter((request) => request.body?.method === 'tools/list').length, 18);
    assert.deepEqual(localLists!.tools.map((tool) => tool.name), ['echo', 'slow', 'crash', 'big', 'flood', 'env', 'pid']);
    assert.deepEqual(localLists!.resourceTemplates, []);
    for (const id of ['web', 'legacy', 'paged', 'local']) {
      const state = server(id).state();
      assert.equal(state.state, 'ready');
      assert.equal(state.error, null);
      assert.match(state.protocolVersion ?? '', /^\d{4}-\d{2}-\d{2}$/);
    }
  });

  test('calls: results, tool errors, JSON-RPC errors, resources and prompts, on every transport', async () => {
    for (const id of ['web', 'json', 'legacy', 'local']) assert.equal(textOf(await server(id).callTool('echo', { text: `hi ${id}` }, options())), `hi ${id}`);
    assert.deepEqual((await server('web').callTool('add', { a: 2, b: 40 }, options())).structuredContent, { sum: 42 });
    const failed = await server('web').callTool('fail', {}, options());
    assert.equal(failed.isError, true);
    await assert.rejects(server('web').callTool('boom', {}, options()), (error: unknown) => {
      assert.ok(error instanceof UpstreamMcpError && error.kind === 'protocol');
      assert.equal(error.code, -32603);
      assert.equal(error.message, 'boom: the tool threw');
      return true;
    });
    assert.equal(textOf(await server('web').callTool(DOTTED_TOOL_NAME, { path: '/x' }, options())), 'read /x');
    assert.deepEqual((await server('legacy').readResource('fake://greetings/Ada', options())).contents, [{ uri: 'fake://greetings/Ada', mimeType: 'text/plain', text: 'Hello, Ada!' }]);
    assert.equal((await server('local').readResource('stdio://notes', options())).contents[0]?.uri, 'stdio://notes');
    const prompt = await server('json').getPrompt('greet', { name: 'Ada' }, options());
    assert.deepEqual(prompt.messages, [{ role: 'user', content: { type: 'text', text: 'Say hello to Ada.' } }]);
    await assert.rejects(server('web').readResource('fake://nowhere', options()), (error: unknown) => error instanceof UpstreamMcpError && error.kind === 'protocol' && error.code === -32002);
  });

  test('only the configured headers reach the upstream; the client offers no capability the upstream could use', async () => {
    const asked = textOf(await server('web').callTool('ask_client', {}, options()));
    // Requests from the upstream for roots, sampling or elicitation are the protocol's method-not-found.
    assert.match(asked, /roots\/list: -32601/);
    assert.match(asked, /sampling\/createMessage: -32601/);
    assert.match(asked, /elicitation\/create: -32601/);
    const initialize = web.requests.find((request) => request.body?.method === 'initialize');
    assert.deepEqual(initialize?.body.params.capabilities, {});
    const allowed = new Set(['host', 'connection', 'content-type', 'content-length', 'accept', 'accept-encoding', 'accept-language', 'sec-fetch-mode', 'user-agent', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'cache-control', 'pragma']);
    for (const upstream of [web, legacy]) {
      assert.ok(upstream.requests.length > 3);
      for (const request of upstream.requests) {
        assert.equal(request.headers.authorization, `Bearer ${upstream.token}`);
        for (const name of Object.keys(request.headers)) assert.ok(allowed.has(name), `unexpected header ${name}`);
      }
    }
  });

  test('progress is forwarded; cancelling reaches the upstream as notifications/cancelled', async () => {
    const updates: Array<{ progress: number; total?: number }> = [];
    const result = await server('web').callTool('slow', { ms: 250 }, options({ onProgress: (update) => updates.push(update) }));
    assert.equal(textOf(result), 'slept 250 ms');
    assert.deepEqual(updates.map((update) => [update.progress, update.total]), [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]]);

    for (const [id, upstream] of [['web', web], ['legacy', legacy]] as const) {
      const controller = new AbortController();
      const before = upstream.cancellations.length;
      const call = server(id).callTool('slow', { ms: 20_000 }, options({ signal: controller.signal }));
      await eventually(() => upstream.requests.filter((request) => request.body?.params?.name === 'slow').length > (id === 'web' ? 1 : 0), 5_000, 'slow call arrived');
      controller.abort();
      await assert.rejects(call, failure('cancelled'));
      await eventually(() => upstream.cancellations.length === before + 1 && upstream.abortedCalls.length > 0, 5_000, `${id} cancellation`);
    }
  });

  test('stdio: progress and cancellation reach the process', async () => {
    const updates: number[] = [];
    assert.equal(textOf(await server('local').callTool('slow', { ms: 50 }, options({ onProgress: (update) => updates.push(update.progress) }))), 'slept 50 ms');
    assert.deepEqual(updates, [1]);
    const controller = new AbortController();
    const call = server('local').callTool('slow', { ms: 20_000 }, options({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(call, failure('cancelled'));
    // The fake writes "cancelled request <id>" to stderr when its handler sees the cancellation.
    await eventually(() => logLines.some((line) => /cancelled request \d+/.test(line)), 5_000, 'stdio cancellation');
  });

  test('a call past its timeout fails with timeout and the upstream is sent a cancellation', async () => {
    const before = web.cancellations.length;
    const started = Date.now();
    await assert.rejects(server('web').callTool('slow', { ms: 20_000 }, options({ timeoutMs: 300 })), failure('timeout'));
    assert.ok(Date.now() - started < 2_000);
    await eventually(() => web.cancellations.length === before + 1, 5_000, 'cancellation after the timeout');
    // Progress does not extend it: the timeout is a total.
    const started2 = Date.now();
    await assert.rejects(server('web').callTool('slow', { ms: 20_000 }, options({ timeoutMs: 500, onProgress: () => undefined })), failure('timeout'));
    assert.ok(Date.now() - started2 < 2_500);
  });

  test('an answer over max_result_bytes is too_large on every transport, and the next call works', async () => {
    for (const id of ['web', 'json', 'legacy', 'local']) {
      await assert.rejects(server(id).callTool('big', {}, options()), failure('too_large'));
      assert.equal(textOf(await server(id).callTool('echo', { text: 'after' }, options())), 'after', id);
    }
    // Under the cap it passes; the cap is on the result itself, to the byte.
    assert.equal(textOf(await server('web').callTool('big', { bytes: 1_000_000 }, options())).length, 1_000_000);
    const exactly = Buffer.byteLength(JSON.stringify({ content: [{ type: 'text', text: 'x'.repeat(1_000) }] }));
    assert.equal(textOf(await server('json').callTool('big', { bytes: 1_000 }, options({ maxResultBytes: exactly }))).length, 1_000);
    await assert.rejects(server('json').callTool('big', { bytes: 1_001 }, options({ maxResultBytes: exactly })), failure('too_large'));
  });

  test("a huge stdio answer is dropped as it arrives: the gateway's memory stays bounded", async () => {
    const samples: number[] = [];
    const usage = () => {
      const memory = process.memoryUsage();
      return memory.heapUsed + memory.arrayBuffers;
    };
    const baseline = usage();
    const sampler = setInterval(() => samples.push(usage() - baseline), 2);
    try {
      await assert.rejects(server('local').callTool('flood', { mib: 512 }, options({ maxResultBytes: 1 * MiB, timeoutMs: 60_000 })), failure('too_large'));
    } finally {
      clearInterval(sampler);
    }
    const peak = Math.max(...samples);
    // Held whole, 512 MiB would be at least 512 MiB of buffers (and as much again as a string).
    assert.ok(peak < 256 * MiB, `peak growth ${Math.round(peak / MiB)} MiB for a 512 MiB answer`);
    assert.equal(textOf(await server('local').callTool('echo', { text: 'still here' }, options())), 'still here');
  });

  test('the upstream loses the session: one re-initialisation, the call is retried and works', async () => {
    const restarts = server('web').state().restarts;
    const initializes = () => web.requests.filter((request) => request.body?.method === 'initialize').length;
    const before = initializes();
    await web.forgetSessions();
    assert.equal(textOf(await server('web').callTool('echo', { text: 'again' }, options())), 'again');
    assert.equal(initializes(), before + 1);
    assert.equal(server('web').state().restarts, restarts + 1);
    assert.equal(server('web').state().state, 'ready');
    assert.ok(web.requests.some((request) => request.body?.params?.name === 'echo' && request.body?.params?.arguments?.text === 'again'));
  });

  test('the older SSE transport loses its session: the next call works all the same', async () => {
    await legacy.forgetSessions();
    assert.equal(textOf(await server('legacy').callTool('echo', { text: 'sse again' }, options())), 'sse again');
    assert.equal(server('legacy').state().state, 'ready');
  });

  test('a command that cannot start, or exits at once: down, with why', async () => {
    const missing: McpServerConfig = { id: 'missing', command: '/nonexistent/mcp-server', args: [], env: {} };
    const quitter: McpServerConfig = { id: 'quitter', command: process.execPath, args: ['-e', 'console.error("no config for " + process.env.QUIT_TOKEN); process.exit(2)'], env: { QUIT_TOKEN: 'quit-secret-value' } };
    registry.sync([...configs, missing, quitter]);
    try {
      await assert.rejects(server('missing').lists(5_000), failure('unavailable'));
      assert.match(server('missing').state().error ?? '', /ENOENT/);
      await assert.rejects(server('quitter').lists(5_000), failure('unavailable'));
      const error = server('quitter').state().error ?? '';
      assert.match(error, /exited with code 2/);
      assert.match(error, /no config for \[redacted\]/);
      await assert.rejects(server('quitter').callTool('echo', {}, options()), failure('unavailable'));
    } finally {
      registry.sync(configs);
    }
  });

  test('list_changed renews the cached list and tells the listeners', async () => {
    const changes: string[] = [];
    const unsubscribe = registry.onListChanged((serverId, list) => changes.push(`${serverId}/${list}`));
    await web.addTool('added_at_runtime', 'hello from the new tool');
    await eventually(async () => (await server('web').lists(1_000)).tools.some((tool) => tool.name === 'added_at_runtime'), 5_000, 'renewed list');
    assert.ok(changes.includes('web/tools'));
    assert.equal(textOf(await server('web').callTool('added_at_runtime', {}, options())), 'hello from the new tool');
    unsubscribe();
  });

  test('stdio: a minimal environment with the entry env; stderr logged redacted', async () => {
    const env = JSON.parse(textOf(await server('local').callTool('env', {}, options())));
    assert.equal(env.tokenArrived, true);
    for (const name of env.names as string[]) assert.ok(['PATH', 'HOME', 'LANG', 'FAKE_STDIO_TOKEN'].includes(name), `inherited ${name}`);
    await eventually(() => logLines.some((line) => line.includes('starting with token [redacted]')), 5_000, 'stderr logged');
    assert.ok(!logLines.some((line) => line.includes(STDIO_TOKEN)), 'the token reached the log');
  });

  test('stdio: a crash fails the call in flight, the process is restarted with back-off, the next call works', async () => {
    const local = server('local');
    const firstPid = textOf(await local.callTool('pid', {}, options()));
    const restarts = local.state().restarts;
    await assert.rejects(local.callTool('crash', {}, options()), failure('unavailable'));
    assert.equal(local.state().state, 'down');
    await assert.rejects(local.callTool('echo', { text: 'x' }, options()), failure('unavailable'));
    await eventually(() => local.state().state === 'ready', 10_000, 'restarted');
    assert.equal(local.state().restarts, restarts + 1);
    const secondPid = textOf(await local.callTool('pid', {}, options()));
    assert.notEqual(secondPid, firstPid);
    // A second crash soon after waits twice as long.
    await assert.rejects(local.callTool('crash', {}, options()), failure('unavailable'));
    await eventually(() => local.state().state === 'ready', 10_000, 'restarted again');
    const delays = logLines.filter((line) => line.includes('restarting it after a back-off')).map((line) => JSON.parse(line).retryInMs as number);
    assert.deepEqual(delays.slice(-2), [200, 400]);
    assert.match(textOf(await local.callTool('echo', { text: 'back' }, options())), /back/);
  });

  test('an HTTP server killed mid-call: the caller gets unavailable, the server is reconnected once it is back', async () => {
    const flaky = await startStreamableHttpMcpUpstream({ token: 'flaky-token' });
    registry.sync([...configs, httpServer('flaky', flaky)]);
    try {
      await server('flaky').lists(10_000);
      const call = server('flaky').callTool('slow', { ms: 5_000 }, options());
      await eventually(() => flaky.requests.some((request) => request.body?.params?.name === 'slow'), 5_000, 'slow call arrived');
      await flaky.kill();
      await assert.rejects(call, failure('unavailable'));
      await assert.rejects(server('flaky').callTool('echo', { text: 'x' }, options()), failure('unavailable'));
      await flaky.restart();
      await eventually(() => server('flaky').state().state === 'ready', 10_000, 'reconnected');
      assert.equal(textOf(await server('flaky').callTool('echo', { text: 'back' }, options())), 'back');
      // Killed while idle: its broken event stream gets it checked, and it is seen down without any call.
      await flaky.kill();
      await eventually(() => server('flaky').state().state === 'down', 10_000, 'seen down while idle');
      await flaky.restart();
      await eventually(() => server('flaky').state().state === 'ready', 10_000, 'reconnected again');
    } finally {
      registry.sync(configs);
      await flaky.close();
    }
  });

  test('an SSE endpoint event naming another origin is refused: nothing is sent there', async () => {
    let hits = 0;
    const elsewhere = http.createServer((_request, response) => (hits++, response.end()));
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const hostile = await startSseMcpUpstream({ token: 'hostile-token', endpointOverride: `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/steal` });
    registry.sync([...configs, httpServer('hostile', hostile)]);
    try {
      await assert.rejects(server('hostile').lists(3_000), failure('unavailable'));
      assert.equal(server('hostile').state().state, 'down');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(hits, 0);
    } finally {
      registry.sync(configs);
      await hostile.close();
      elsewhere.close();
    }
  });

  test('a wrong token: the server is down with a clear error, its secret redacted', async () => {
    registry.sync([...configs, httpServer('denied', web, 'not-the-right-token')]);
    try {
      await assert.rejects(server('denied').lists(5_000), failure('unavailable'));
      const state = server('denied').state();
      assert.equal(state.state, 'down');
      assert.match(state.error ?? '', /401/);
      assert.ok(!logLines.some((line) => line.includes('not-the-right-token')));
      // No auth provider: a 401 starts no OAuth discovery.
      assert.ok(!web.requests.some((request) => request.path.includes('.well-known')));
    } finally {
      registry.sync(configs);
    }
  });

  test('sync: a changed entry is reconnected, a removed one stopped (DELETE for HTTP, the process ended for stdio)', async () => {
    const local = server('local');
    const pid = Number(textOf(await local.callTool('pid', {}, options())));
    const webBefore = server('web');
    const legacyBefore = server('legacy');
    const changed = configs
      .filter((config) => config.id !== 'local')
      .map((config) => (config.id === 'web' && !isStdio(config) ? { ...config, headers: { ...config.headers, 'X-Team': 'tools' } } : config.id === 'legacy' ? { ...config, price_per_call: 0.01 } : config));
    registry.sync(changed);
    assert.equal(registry.get('local'), undefined);
    assert.notEqual(server('web'), webBefore);
    // A new price is not a new connection.
    assert.equal(server('legacy'), legacyBefore);
    assert.equal(server('legacy').config.price_per_call, 0.01);
    await eventually(() => web.requests.some((request) => request.method === 'DELETE'), 5_000, 'DELETE of the old session');
    await eventually(() => !isAlive(pid), 5_000, 'stdio process stopped');
    assert.equal(textOf(await server('web').callTool('echo', { text: 'new' }, options())), 'new');
    assert.equal(web.requests.at(-1)?.headers['x-team'], 'tools');
    registry.sync(configs);
    assert.equal(textOf(await server('local').callTool('echo', { text: 'local again' }, options())), 'local again');
  });
});

const isStdio = (config: McpServerConfig) => 'command' in config;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
