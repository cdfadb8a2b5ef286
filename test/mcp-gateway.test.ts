/**
 * Sluice as an MCP server over Streamable HTTP, with the official SDK's client and raw HTTP where
 * the SDK would not send what is tested: every protocol revision the SDK speaks, the aggregated
 * lists (names prefixed by the server id, valid function names, pagination across servers), calls,
 * resources, prompts, progress, cancellation reaching the upstream, list_changed reaching the
 * client's GET stream, ping, the session rules, the probes clients send, and `/mcp/{server}`.
 * The upstreams are the fakes built with the SDK's server classes; `sluice serve` runs its
 * default workers, so requests of one session land on either.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCPServerStreamableHttp } from '@openai/agents';
import { ToolListChangedNotificationSchema, type CallToolResult, type TextContent } from '@modelcontextprotocol/sdk/types.js';
import { DOTTED_TOOL_NAME, LONG_TOOL_NAME } from './fakes/mcp-upstreams.js';
import { allTools, connectClient, initialize, rpc, startMcpWorld, type McpWorld } from './support/mcp-gateway.js';
import { eventually } from './support/sluice.js';

const VALID_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const textOf = (result: unknown) => ((result as CallToolResult).content[0] as TextContent).text;

describe('the MCP gateway at /mcp', () => {
  let world: McpWorld;
  let key: string;

  before(async () => {
    world = await startMcpWorld();
    key = (await world.key('web,legacy,many,local')).key;
  });
  after(async () => {
    await world?.close();
  });

  test('initialize negotiates every revision the SDK speaks, and offers the newest for any other', async () => {
    for (const version of ['2024-10-07', '2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']) {
      const { session, negotiated } = await initialize(world.sluice.url, key, version);
      assert.equal(negotiated, version);
      assert.match(session, /^[\x21-\x7e]+$/, 'a session id of visible ASCII');
      // 2024-11-05 clients send no MCP-Protocol-Version: 2025-03-26 is assumed.
      const headers: Record<string, string> = { 'mcp-session-id': session, ...(version < '2025-03-26' ? {} : { 'mcp-protocol-version': version }) };
      const listed = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers);
      assert.equal(listed.status, 200, listed.text);
      assert.ok(listed.json.result.tools.length > 0, `tools listed at ${version}`);
    }
    const { negotiated } = await initialize(world.sluice.url, key, '2099-01-01');
    assert.equal(negotiated, '2025-11-25');
  });

  test('the session rules: none → 400, a made-up one → 404, a bad MCP-Protocol-Version → 400, batches only before 2025-06-18', async () => {
    const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
    const none = await rpc(world.sluice.url, key, list);
    assert.equal(none.status, 400);
    assert.equal(none.json.error.code, -32030);
    assert.match(none.json.error.message, /Mcp-Session-Id/);

    const forged = await rpc(world.sluice.url, key, list, { 'mcp-session-id': 'eyJ2IjoxfQ.AAAA', 'mcp-protocol-version': '2025-11-25' });
    assert.equal(forged.status, 404);

    const { session } = await initialize(world.sluice.url, key, '2025-11-25');
    const badVersion = await rpc(world.sluice.url, key, list, { 'mcp-session-id': session, 'mcp-protocol-version': '1999-01-01' });
    assert.equal(badVersion.status, 400);
    assert.match(badVersion.json.error.message, /MCP-Protocol-Version/);

    const batch = [list, { jsonrpc: '2.0', id: 4, method: 'ping' }];
    const refused = await rpc(world.sluice.url, key, batch, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(refused.status, 400, 'no batches in 2025-11-25');
    const old = await initialize(world.sluice.url, key, '2025-03-26');
    const batched = await rpc(world.sluice.url, key, [...batch, { jsonrpc: '2.0', method: 'notifications/initialized' }], { 'mcp-session-id': old.session, 'mcp-protocol-version': '2025-03-26', accept: 'application/json' });
    assert.equal(batched.status, 200, batched.text);
    assert.ok(Array.isArray(batched.json));
    assert.deepEqual(batched.json.map((answer: { id: number }) => answer.id).sort(), [3, 4]);

    const notification = await rpc(world.sluice.url, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(notification.status, 202, 'a notification alone is accepted with 202');
    assert.equal(notification.text, '');

    const garbage = await rpc(world.sluice.url, key, '{"jsonrpc": "2.0", "id": ', { 'mcp-session-id': session });
    assert.equal(garbage.status, 400);
    assert.equal(garbage.json.error.code, -32700);
  });

  test('a session belongs to its key and its endpoint: another key, or /mcp/{server}, gets 404', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const other = (await world.key('web')).key;
    const stolen = await rpc(world.sluice.url, other, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(stolen.status, 404);
    const elsewhere = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, '/mcp/web');
    assert.equal(elsewhere.status, 404);
  });

  test('DELETE ends the session: its next request is 404, whichever worker takes it', async () => {
    // DELETE is answered once every worker knows: a request sent straight after it finds the session ended, on any worker, every time.
    let headers: Record<string, string> = {};
    for (let round = 0; round < 10; round++) {
      const { session } = await initialize(world.sluice.url, key);
      headers = { authorization: `Bearer ${key}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      const ended = await fetch(new URL('/mcp', world.sluice.url), { method: 'DELETE', headers });
      assert.equal(ended.status, 200);
      const after = await Promise.all(
        Array.from({ length: 4 }, () => rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' })),
      );
      assert.deepEqual(after.map((answer) => answer.status), [404, 404, 404, 404], `round ${round}`);
    }
    const put = await fetch(new URL('/mcp', world.sluice.url), { method: 'PUT', headers });
    assert.equal(put.status, 405);
    assert.equal(((await put.json()) as { error: { code: number } }).error.code, -32030);
  });

  test('the probes clients send: server/discover without a session is method-not-found, .well-known paths are 404, no key is 401 with WWW-Authenticate', async () => {
    const probe = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 0, method: 'server/discover', params: {} }, { 'mcp-protocol-version': '2026-07-28' });
    assert.equal(probe.status, 404);
    assert.equal(probe.json.error.code, -32601);
    assert.equal(probe.json.id, 0);
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server']) {
      assert.equal((await fetch(new URL(path, world.sluice.url))).status, 404, path);
    }
    const anonymous = await rpc(world.sluice.url, undefined, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="sluice"');
    assert.equal(anonymous.json.jsonrpc, '2.0');
    assert.equal(anonymous.json.error.code, -32031);
    const wrong = await rpc(world.sluice.url, 'sk-not-a-key', { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(wrong.status, 401);
  });

  test('the OpenAI Agents SDK: its server/discover probe falls back to initialize, then it lists and calls', async () => {
    const agentKey = (await world.key('web')).key;
    const server = new MCPServerStreamableHttp({ url: `${world.sluice.url}/mcp`, requestInit: { headers: { authorization: `Bearer ${agentKey}` } } });
    await server.connect();
    try {
      const names = (await server.listTools()).map((tool) => tool.name);
      assert.ok(names.includes('web__echo'));
      for (const name of names) assert.match(name, VALID_NAME);
      assert.deepEqual(await server.callTool('web__echo', { text: 'agents' }), [{ type: 'text', text: 'agents' }]);
    } finally {
      await server.close();
    }
  });

  test('tools/list: every server’s tools under valid names prefixed by the server id, paged across servers', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const { tools, pages } = await allTools(client);
      const names = tools.map((tool) => tool.name);
      // web 10 + legacy 10 + many 120 + the stdio server's, in pages of 100.
      const count = (prefix: string) => names.filter((name) => name.startsWith(prefix)).length;
      assert.deepEqual([count('web__'), count('legacy__'), count('many__')], [10, 10, 120]);
      assert.ok(count('local__') >= 6);
      assert.equal(tools.length, 140 + count('local__'));
      assert.equal(pages, 2);
      assert.equal(new Set(names).size, names.length, 'no name twice');
      for (const name of names) assert.match(name, VALID_NAME);
      assert.ok(names.includes('web__echo') && names.includes('legacy__echo') && names.includes('local__echo') && names.includes('many__tool_119'));
      const long = names.find((name) => name.startsWith('web__a_tool_with'));
      assert.ok(long !== undefined && long.length === 64, `the long name is shortened to 64: ${long}`);
      const dotted = names.find((name) => name.startsWith('web__files_read'));
      assert.ok(dotted !== undefined && dotted !== 'web__files_read', 'the dotted name is sanitised with a hash suffix');
      // Stable: the same names on another session (and another worker).
      const again = await connectClient(world.sluice.url, key);
      assert.deepEqual((await allTools(again)).tools.map((tool) => tool.name), names);
      await again.close();

      assert.equal(textOf(await client.callTool({ name: long!, arguments: {} })), 'long');
      assert.equal(textOf(await client.callTool({ name: dotted!, arguments: { path: '/x' } })), 'read /x');
      const echo = tools.find((tool) => tool.name === 'web__echo')!;
      assert.deepEqual(echo.inputSchema.required, ['text'], 'the schema passes as the upstream gave it');
      void LONG_TOOL_NAME;
      void DOTTED_TOOL_NAME;
    } finally {
      await client.close();
    }
  });

  test('a cursor that is not ours is invalid params', async () => {
    const { session } = await initialize(world.sluice.url, key);
    for (const cursor of ['garbage', 'eyJsIjoicHJvbXB0cyIsIm8iOjB9', '', 'x'.repeat(5000), 12]) {
      const answer = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { cursor } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
      assert.equal(answer.status, 200);
      assert.equal(answer.json.error?.code, -32602, `cursor ${String(cursor).slice(0, 20)}`);
    }
  });

  test('tools/call, resources, templates, prompts and ping through one session', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'hello' } })), 'hello');
      assert.equal(textOf(await client.callTool({ name: 'legacy__add', arguments: { a: 2, b: 3 } })), '5');
      assert.equal(textOf(await client.callTool({ name: 'local__echo', arguments: { text: 'stdio' } })), 'stdio');
      const failed = await client.callTool({ name: 'web__fail', arguments: {} });
      assert.equal(failed.isError, true, "a tool's own error is a result, as the upstream gave it");

      const resources = await client.listResources();
      const uris = resources.resources.map((resource) => resource.uri);
      assert.ok(uris.includes('sluice-mcp://web/fake://docs/readme'), uris.join(' '));
      assert.ok(uris.includes('sluice-mcp://local/stdio://notes'));
      const read = await client.readResource({ uri: 'sluice-mcp://web/fake://docs/readme' });
      assert.equal((read.contents[0] as { text: string }).text, 'The fake upstream README.');
      assert.equal(read.contents[0]!.uri, 'sluice-mcp://web/fake://docs/readme', 'the URI in the answer is the caller’s');

      const templates = await client.listResourceTemplates();
      // Lists are in name order (keyset pagination): legacy's template comes before web's.
      const greeting = templates.resourceTemplates.find((template) => template.uriTemplate.startsWith('sluice-mcp://web/') && template.uriTemplate.includes('greetings'));
      assert.equal(greeting?.uriTemplate, 'sluice-mcp://web/fake://greetings/{name}', 'the template’s variable is intact');
      const expanded = await client.readResource({ uri: greeting!.uriTemplate.replace('{name}', 'Ada') });
      assert.equal((expanded.contents[0] as { text: string }).text, 'Hello, Ada!');
      await assert.rejects(client.readResource({ uri: 'sluice-mcp://nowhere/fake://docs/readme' }), /Resource not found/);
      await assert.rejects(client.readResource({ uri: 'fake://docs/readme' }), /Resource not found/);

      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.some((prompt) => prompt.name === 'web__greet'));
      assert.ok(prompts.prompts.some((prompt) => prompt.name === 'local__summarise'));
      const prompt = await client.getPrompt({ name: 'web__greet', arguments: { name: 'Ada' } });
      assert.equal((prompt.messages[0]!.content as TextContent).text, 'Say hello to Ada.');
      await assert.rejects(client.getPrompt({ name: 'web__nope', arguments: {} }), /Unknown prompt/);

      assert.deepEqual(await client.ping(), {});
      await assert.rejects(client.complete({ ref: { type: 'ref/prompt', name: 'web__greet' }, argument: { name: 'name', value: 'A' } }), /Method not found/);
    } finally {
      await client.close();
    }
  });

  test('progress reaches the caller while the call runs', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const progress: number[] = [];
      const result = await client.callTool({ name: 'web__slow', arguments: { ms: 500 } }, undefined, { onprogress: (update) => progress.push(update.progress) });
      assert.equal(textOf(result), 'slept 500 ms');
      assert.deepEqual(progress, [1, 2, 3, 4, 5]);
    } finally {
      await client.close();
    }
  });

  test('cancelling a call reaches the upstream server', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'web__slow', arguments: { ms: 20_000 } }, undefined, { signal: controller.signal });
      await eventually(() => (world.web.requests.some((request) => request.body?.params?.name === 'slow' && request.body?.params?.arguments?.ms === 20_000) ? true : undefined), 5_000, 'the call upstream');
      controller.abort('changed my mind');
      await assert.rejects(call);
      const aborted = await eventually(() => world.web.abortedCalls.find((entry) => entry.tool === 'slow'), 5_000, 'the upstream aborting the call');
      assert.ok(world.web.cancellations.some((cancellation) => cancellation.requestId === aborted.requestId), 'notifications/cancelled reached the upstream for that request');
      // The session goes on.
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'after' } })), 'after');
    } finally {
      await client.close();
    }
  });

  test('a new upstream tool: notifications/tools/list_changed reaches the client’s GET stream, and the list has it', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const changes = await watchToolListChanges(client);
      await world.web.addTool('fresh_tool', 'fresh!');
      await eventually(() => (changes.count() > 0 ? true : undefined), 10_000, 'list_changed at the client');
      const { tools } = await allTools(client);
      assert.ok(tools.some((tool) => tool.name === 'web__fresh_tool'));
      assert.equal(textOf(await client.callTool({ name: 'web__fresh_tool', arguments: {} })), 'fresh!');
    } finally {
      await client.close();
    }
  });

  test('/mcp/{server}: one server alone, under its own names and URIs', async () => {
    const client = await connectClient(world.sluice.url, key, '/mcp/web');
    try {
      const { tools } = await allTools(client);
      const names = tools.map((tool) => tool.name);
      assert.ok(names.includes('echo') && names.includes('add'));
      assert.ok(!names.some((name) => name.startsWith('legacy') || name.startsWith('tool_')), 'no other server’s tools');
      for (const name of names) assert.match(name, VALID_NAME);
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'alone' } })), 'alone');
      const resources = await client.listResources();
      assert.ok(resources.resources.some((resource) => resource.uri === 'fake://docs/readme'));
      const read = await client.readResource({ uri: 'fake://docs/readme' });
      assert.equal((read.contents[0] as { text: string }).text, 'The fake upstream README.');
      assert.equal((await client.getPrompt({ name: 'plain' })).messages.length, 1);
      assert.equal(client.getServerVersion()?.name, 'sluice/web');
    } finally {
      await client.close();
    }
    const unknown = await rpc(world.sluice.url, key, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, {}, '/mcp/nowhere');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.jsonrpc, '2.0');
  });

  test('a body past the gateway’s limit is 413 with a JSON-RPC error', async () => {
    const { session } = await initialize(world.sluice.url, key);
    const huge = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'x'.repeat(33 * 1024 * 1024) } } };
    const answer = await rpc(world.sluice.url, key, huge, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    assert.equal(answer.status, 413);
    assert.equal(answer.json.error.code, -32600);
  });

  test('bad arguments are invalid params naming the field, and never reach the upstream', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const before = world.web.requests.length;
      await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 1, b: 'two' } }), (error: Error & { code?: number }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /`b` must be number/);
        return true;
      });
      await assert.rejects(client.callTool({ name: 'web__echo', arguments: {} }), /`text` must have required property 'text'|`text`/);
      assert.equal(world.web.requests.slice(before).filter((request) => request.body?.method === 'tools/call').length, 0);
      assert.equal(textOf(await client.callTool({ name: 'web__add', arguments: { a: 1, b: 2 } })), '3');
    } finally {
      await client.close();
    }
  });

  test('a configuration reload that removes a server: list_changed reaches the client, and its tools leave the list', async () => {
    const client = await connectClient(world.sluice.url, key);
    try {
      const changes = await watchToolListChanges(client);
      assert.ok((await allTools(client)).tools.some((tool) => tool.name.startsWith('legacy__')));
      const file = join(world.sluice.dataDir, 'sluice.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replace(/  - id: legacy\n(    .*\n)+/, ''));
      world.sluice.child.kill('SIGHUP');
      await eventually(() => (changes.count() > 0 ? true : undefined), 10_000, 'list_changed after the reload');
      await eventually(async () => ((await allTools(client)).tools.some((tool) => tool.name.startsWith('legacy__')) ? undefined : true), 10_000, 'legacy gone from the list');
      await assert.rejects(client.callTool({ name: 'legacy__echo', arguments: { text: 'x' } }), /Unknown tool/);
    } finally {
      await client.close();
    }
  });
});

describe('tool calls in traces', () => {
  test('one execute_tool span per call, continuing the caller’s traceparent, named for the tool', async () => {
    const posts: Buffer[] = [];
    const receiver = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/v1/traces') posts.push(Buffer.concat(chunks));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const world = await startMcpWorld({
      withMany: false,
      args: ['--workers', '1'],
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    try {
      const { key } = await world.key('web');
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const parentId = 'b7ad6b7169203331';
      const client = new Client({ name: 'traced', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', world.sluice.url), { requestInit: { headers: { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${parentId}-01` } } }));
      await client.callTool({ name: 'web__echo', arguments: { text: 'traced' } });
      await assert.rejects(client.callTool({ name: 'web__unknown_one', arguments: {} }));
      await client.close();
      type Span = { traceId: string; parentSpanId?: string; name: string; attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[] };
      const spans = await eventually(() => {
        const all = posts.flatMap((body) => (JSON.parse(body.toString()) as { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] }).resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)));
        const tools = all.filter((span) => span.name.startsWith('execute_tool'));
        return tools.length >= 2 ? tools : undefined;
      }, 5_000, 'two execute_tool spans');
      const attribute = (span: Span, name: string) => span.attributes.find((entry) => entry.key === name)?.value;
      const echo = spans.find((span) => span.name === 'execute_tool echo');
      assert.ok(echo !== undefined, spans.map((span) => span.name).join(', '));
      assert.equal(echo.traceId, traceId);
      assert.equal(echo.parentSpanId, parentId);
      assert.equal(attribute(echo, 'gen_ai.operation.name')?.stringValue, 'execute_tool');
      assert.equal(attribute(echo, 'gen_ai.tool.name')?.stringValue, 'echo');
      assert.equal(attribute(echo, 'sluice.mcp.server')?.stringValue, 'web');
      const unknown = spans.find((span) => span.name === 'execute_tool');
      assert.ok(unknown !== undefined, 'an unknown tool’s span is not named after the caller’s text');
      assert.equal(attribute(unknown, 'error.type')?.stringValue, 'unknown_tool');
    } finally {
      await world.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

/** Counts the client's `notifications/tools/list_changed`, once its GET stream (opened after `initialized`) has had a moment to be there. */
async function watchToolListChanges(client: Client): Promise<{ count(): number }> {
  let changed = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed++;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { count: () => changed };
}
