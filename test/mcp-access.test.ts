/**
 * Who may use which tool through `/mcp`, and what each call leaves behind: allow-lists set with the
 * real CLI (`keys create --mcp`), deny by default, a denied tool indistinguishable from one that
 * does not exist, a key disabled mid-session, `rpm` counting tool calls (refused and counted),
 * one ledger row per call with its fields, the upstream servers' secrets never in an answer or a
 * log line, and sessions and cancellations across `--workers 2`.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { allTools, connectClient, initialize, rpc, startMcpWorld, type McpWorld } from './support/mcp-gateway.js';
import { cli, eventually } from './support/sluice.js';

const METRICS_TOKEN = 'mcp-metrics-token-0123456789';
const textOf = (result: unknown) => ((result as CallToolResult).content[0] as TextContent).text;

describe('MCP access, limits and the ledger', () => {
  let world: McpWorld;
  /** Every answer body the tests saw, searched for secrets at the end. */
  const seen: string[] = [];

  before(async () => {
    world = await startMcpWorld({ args: ['--workers', '2', '--metrics-token', METRICS_TOKEN], mcpSection: 'mcp:\n  page_size: 100\n', withMany: false, legacyPricePerCall: 0.25 });
  });
  after(async () => {
    await world?.close();
  });

  test('a key allowed one tool sees exactly that tool, no resources or prompts; a denied tool is the same error as an unknown one', async () => {
    const only = await world.key('web/echo');
    const client = await connectClient(world.sluice.url, only.key);
    try {
      const { tools } = await allTools(client);
      assert.deepEqual(tools.map((tool) => tool.name), ['web__echo']);
      assert.deepEqual((await client.listResources()).resources, []);
      assert.deepEqual((await client.listResourceTemplates()).resourceTemplates, []);
      assert.deepEqual((await client.listPrompts()).prompts, []);
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'ok' } })), 'ok');
      await assert.rejects(client.readResource({ uri: 'sluice-mcp://web/fake://docs/readme' }), /Resource not found/);
      await assert.rejects(client.getPrompt({ name: 'web__plain' }), /Unknown prompt/);
    } finally {
      await client.close();
    }
    // The same error, word for word but the name, for a tool that exists but is not the key's and one that does not exist.
    const { session } = await initialize(world.sluice.url, only.key);
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', accept: 'application/json' };
    const denied = await rpc(world.sluice.url, only.key, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__add', arguments: { a: 1, b: 2 } } }, headers);
    const unknown = await rpc(world.sluice.url, only.key, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__nada', arguments: { a: 1, b: 2 } } }, headers);
    seen.push(denied.text, unknown.text);
    assert.equal(denied.status, unknown.status);
    assert.equal(denied.json.error.code, unknown.json.error.code);
    assert.equal(denied.json.error.message.replace('web__add', 'X'), unknown.json.error.message.replace('web__nada', 'X'));
    assert.equal(world.web.requests.filter((request) => request.body?.params?.name === 'add').length, 0, 'the denied call never reached the upstream');
    // `/mcp/{server}` of a server the key may not use is the same 404 as one that does not exist.
    const legacy = await rpc(world.sluice.url, only.key, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, {}, '/mcp/legacy');
    const nowhere = await rpc(world.sluice.url, only.key, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, {}, '/mcp/nowhere');
    assert.equal(legacy.status, 404);
    assert.equal(legacy.text.replace('legacy', 'X'), nowhere.text.replace('nowhere', 'X'));
  });

  test('a key without an MCP allow-list initialises and sees no server', async () => {
    const none = await world.key('');
    const client = await connectClient(world.sluice.url, none.key);
    try {
      assert.deepEqual((await client.listTools()).tools, []);
      assert.deepEqual((await client.listResources()).resources, []);
      assert.deepEqual((await client.listPrompts()).prompts, []);
      await assert.rejects(client.callTool({ name: 'web__echo', arguments: { text: 'x' } }), /Unknown tool: web__echo/);
    } finally {
      await client.close();
    }
  });

  test('a key disabled mid-session is refused with 403 at its next request', async () => {
    const key = await world.key('web');
    const client = await connectClient(world.sluice.url, key.key);
    // A GET stream of its own, to see it closed too.
    const { session } = await initialize(world.sluice.url, key.key);
    const stream = await fetch(new URL('/mcp', world.sluice.url), { headers: { authorization: `Bearer ${key.key}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(stream.status, 200);
    const ended = (async () => {
      for await (const _chunk of stream.body!) {
        // comments only
      }
      return true;
    })();
    try {
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'before' } })), 'before');
      const disabled = await cli(['keys', 'disable', key.id, '--data', world.sluice.dataDir]);
      assert.equal(disabled.code, 0, disabled.stderr);
      await eventually(
        async () => {
          try {
            await client.callTool({ name: 'web__echo', arguments: { text: 'after' } });
            return undefined;
          } catch (error) {
            // The transport's error carries the HTTP status; the body is the JSON-RPC error.
            return (error as { code?: number }).code === 403 && /disabled/.test(String(error)) ? true : undefined;
          }
        },
        5_000,
        'a 403',
      );
      // The GET stream checks the key at each keep-alive (15 s): it ends.
      assert.equal(await Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 20_000))]), true);
    } finally {
      await client.close();
    }
  });

  test('rpm counts tool calls: the call past it is refused (JSON-RPC error), counted in the metrics and the ledger', async () => {
    const key = await world.key('web', ['--rpm', '2']);
    const client = await connectClient(world.sluice.url, key.key);
    try {
      // Lists are not calls: they do not count.
      await client.listTools();
      await client.listTools();
      await client.callTool({ name: 'web__echo', arguments: { text: '1' } });
      await client.callTool({ name: 'web__echo', arguments: { text: '2' } });
      await assert.rejects(client.callTool({ name: 'web__echo', arguments: { text: '3' } }), (error: Error & { code?: number }) => {
        assert.equal(error.code, -32029);
        assert.match(error.message, /Rate limit reached: this API key is limited in requests per minute/);
        return true;
      });
    } finally {
      await client.close();
    }
    const rows = await eventually(async () => {
      const mine = (await world.sluice.ledger()).filter((row) => row.key_id === key.id);
      return mine.length === 3 ? mine : undefined;
    }, 5_000, 'three rows');
    // Each worker writes its own batches: the rows' order in the store is not the calls'.
    assert.deepEqual(rows.map((row) => row.status).sort(), [200, 200, 429]);
    assert.equal(rows.find((row) => row.status === 429)!.error_kind, 'rate_limited');
    const metrics = await (await fetch(new URL('/metrics', world.sluice.url), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const refusals = /sluice_limit_refusals_total\{scope="key",reason="rpm"\} (\d+)/.exec(metrics);
    assert.ok(refusals !== null && Number(refusals[1]) >= 1, 'the refusal is counted');
    const calls = /mcp_server_operation_duration_seconds_count\{mcp_method_name="tools\/call",gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo",server="web"\} (\d+)/.exec(metrics);
    assert.ok(calls !== null && Number(calls[1]) >= 2, 'tool calls in the execute_tool metric, by tool and server');
    assert.doesNotMatch(metrics, new RegExp(key.id), 'no key in the metrics');
  });

  test('concurrency counts tool calls in flight; a budget counts only priced tools (price_per_call)', async () => {
    const busy = await world.key('web', ['--concurrency', '1']);
    const client = await connectClient(world.sluice.url, busy.key);
    try {
      const slow = client.callTool({ name: 'web__slow', arguments: { ms: 1_000 } });
      await eventually(() => (world.web.requests.some((request) => request.body?.params?.arguments?.ms === 1_000) ? true : undefined), 5_000, 'the slow call upstream');
      await assert.rejects(client.callTool({ name: 'web__echo', arguments: { text: 'x' } }), /limited in requests in flight/);
      await slow;
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'free again' } })), 'free again');
    } finally {
      await client.close();
    }

    const budgeted = await world.key('web,legacy', ['--budget-usd', '0.5']);
    const spender = await connectClient(world.sluice.url, budgeted.key);
    try {
      await spender.callTool({ name: 'legacy__echo', arguments: { text: '1' } });
      await spender.callTool({ name: 'legacy__echo', arguments: { text: '2' } });
      await assert.rejects(spender.callTool({ name: 'legacy__echo', arguments: { text: '3' } }), (error: Error & { code?: number }) => {
        assert.equal(error.code, -32029);
        assert.match(error.message, /spend budget/);
        return true;
      });
      // An unpriced tool costs nothing: the budget does not bind on it.
      assert.equal(textOf(await spender.callTool({ name: 'web__echo', arguments: { text: 'free' } })), 'free');
    } finally {
      await spender.close();
    }
  });

  test('one ledger row per call, with the operation, server/tool, status, error, latency, bytes and price', async () => {
    const key = await world.key('web,legacy');
    const client = await connectClient(world.sluice.url, key.key);
    try {
      await client.callTool({ name: 'web__echo', arguments: { text: 'ledger' } });
      await client.callTool({ name: 'web__fail', arguments: {} });
      await assert.rejects(client.callTool({ name: 'web__boom', arguments: {} }));
      await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 'x', b: 1 } }));
      await assert.rejects(client.callTool({ name: 'web__missing', arguments: {} }));
      await client.callTool({ name: 'legacy__echo', arguments: { text: 'priced' } });
    } finally {
      await client.close();
    }
    const rows = await eventually(async () => {
      const mine = (await world.sluice.ledger()).filter((row) => row.key_id === key.id);
      return mine.length === 6 ? mine : undefined;
    }, 5_000, 'six rows');
    const byModel = (model: string) => rows.find((row) => row.model === model)!;
    for (const row of rows) assert.equal(row.operation, 'mcp.tools/call');
    const echo = byModel('web/echo');
    assert.equal(echo.status, 200);
    assert.equal(echo.provider_id, 'web');
    assert.equal(echo.error_kind, null);
    assert.equal(Number(echo.bytes_in), JSON.stringify({ text: 'ledger' }).length);
    assert.equal(Number(echo.bytes_out), JSON.stringify({ content: [{ type: 'text', text: 'ledger' }] }).length);
    assert.ok(Number(echo.latency_ms) > 0);
    assert.equal(Number(echo.cost_usd), 0, 'no price_per_call: free');
    assert.equal(byModel('web/fail').error_kind, 'tool_error');
    assert.equal(byModel('web/boom').status, 502);
    assert.equal(byModel('web/boom').error_kind, 'upstream_error');
    assert.equal(byModel('web/add').status, 400);
    assert.equal(byModel('web/add').error_kind, 'invalid_params');
    assert.equal(byModel('web__missing').status, 404);
    assert.equal(byModel('web__missing').provider_id, null);
    const priced = byModel('legacy/echo');
    assert.equal(Number(priced.cost_usd), 0.25, 'price_per_call');
  });

  test('sessions and cancellation across two workers: a cancel on another connection reaches the upstream', async () => {
    const key = await world.key('web');
    const { session } = await initialize(world.sluice.url, key.key);
    const url = new URL('/mcp', world.sluice.url);
    // Each request on a connection of its own (no keep-alive): the kernel spreads them over the workers.
    const post = (body: unknown) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const request = http.request(url, { method: 'POST', agent: false, headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        });
        request.on('error', reject);
        request.end(JSON.stringify(body));
      });
    for (let round = 0; round < 6; round++) {
      const id = `slow-${round}`;
      const ms = 30_000 + round;
      const call = post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__slow', arguments: { ms } } });
      await eventually(() => (world.web.requests.some((request) => request.body?.params?.arguments?.ms === ms) ? true : undefined), 5_000, 'the call upstream');
      const cancelled = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
      assert.equal(cancelled.status, 202);
      const answer = await call;
      seen.push(answer.text);
      assert.equal(JSON.parse(answer.text).error.code, -32800, `round ${round}: the call ends as cancelled`);
      const upstreamId = world.web.requests.find((request) => request.body?.params?.arguments?.ms === ms)!.body.id;
      await eventually(() => world.web.cancellations.find((cancellation) => cancellation.requestId === upstreamId), 5_000, `round ${round}: the cancellation upstream`);
    }
    const ping = await post({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.equal(ping.status, 200);
    const rows = await eventually(async () => {
      const mine = (await world.sluice.ledger()).filter((row) => row.key_id === key.id);
      return mine.length === 6 ? mine : undefined;
    }, 5_000, 'a row per cancelled call');
    for (const row of rows) assert.deepEqual([row.status, row.error_kind, row.model], [499, 'client_closed', 'web/slow']);
  });

  test('the upstream servers’ tokens and the stdio env value never reach a client or a log line', async () => {
    const key = await world.key('web,legacy,local');
    const client = await connectClient(world.sluice.url, key.key);
    try {
      seen.push(textOf(await client.callTool({ name: 'web__headers', arguments: {} })));
      seen.push(textOf(await client.callTool({ name: 'local__env', arguments: {} })));
      seen.push(JSON.stringify(await allTools(client)));
      seen.push(JSON.stringify(await client.listResources()));
      await client.callTool({ name: 'web__boom', arguments: {} }).catch((error: Error) => seen.push(error.message));
    } finally {
      await client.close();
    }
    // The caller's Sluice key never went upstream either.
    for (const request of world.web.requests) assert.ok(!JSON.stringify(request.headers).includes(key.key), 'no Sluice key upstream');
    const everything = [...seen, world.sluice.stderr(), world.sluice.stdout()].join('\n');
    for (const secret of [world.web.token, world.legacy.token, world.stdioToken]) assert.ok(!everything.includes(secret), 'a secret leaked');
    assert.match(world.sluice.stderr(), /MCP server/, 'the log was read (the gateway logs at info here)');
  });
});
