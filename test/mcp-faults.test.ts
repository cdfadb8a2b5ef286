/**
 * Upstream MCP servers failing under Sluice: killed mid-call, a stdio server that crashes, one
 * that loses its session, a result past `mcp.max_result_bytes`, a call past `mcp.call_timeout_ms`
 * (the upstream cancelled), bad arguments. Each time the caller gets a JSON-RPC error it can
 * read, the ledger says what happened, and the next call works.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, initialize, startMcpWorld, type McpWorld } from './support/mcp-gateway.js';
import { eventually } from './support/sluice.js';

const textOf = (result: unknown) => ((result as CallToolResult).content[0] as TextContent).text;
const TIMEOUT_MS = 1_500;

/** Waits until a call of `tool` succeeds again (the upstream layer reconnects with back-off). */
async function worksAgain(client: Client, tool: string, text: string): Promise<void> {
  await eventually(
    async () => {
      try {
        return textOf(await client.callTool({ name: tool, arguments: { text } })) === text ? true : undefined;
      } catch {
        return undefined;
      }
    },
    20_000,
    `${tool} working again`,
  );
}

function rejectsWith(code: number, pattern: RegExp): (error: Error & { code?: number }) => boolean {
  return (error) => {
    assert.equal(error.code, code, error.message);
    assert.match(error.message, pattern);
    return true;
  };
}

describe('MCP faults', () => {
  let world: McpWorld;
  let key: { id: string; key: string };
  let client: Client;

  before(async () => {
    world = await startMcpWorld({ withMany: false, mcpSection: `mcp:\n  call_timeout_ms: ${TIMEOUT_MS}\n` });
    key = await world.key('web,legacy,local');
    client = await connectClient(world.sluice.url, key.key);
  });
  after(async () => {
    await client?.close();
    await world?.close();
  });

  test('an upstream killed mid-call: the caller gets an error, and once it is back the next call works', async () => {
    const call = client.callTool({ name: 'web__slow', arguments: { ms: 1_200 } });
    await eventually(() => (world.web.requests.some((request) => request.body?.params?.arguments?.ms === 1_200) ? true : undefined), 5_000, 'the call upstream');
    await world.web.kill();
    try {
      await assert.rejects(call, rejectsWith(-32010, /MCP server web is unavailable/));
      // While it is down its tools are not unknown: the key may use that server, and is told it is unavailable.
      await assert.rejects(client.callTool({ name: 'web__echo', arguments: { text: 'down' } }), rejectsWith(-32010, /MCP server web is unavailable/));
      const { tools } = await client.listTools();
      assert.ok(!tools.some((tool) => tool.name.startsWith('web__')) && tools.some((tool) => tool.name.startsWith('legacy__')), 'a server that is down is left out of the list, the others are there');
    } finally {
      await world.web.restart();
    }
    await worksAgain(client, 'web__echo', 'back');
  });

  test('a stdio server that crashes is restarted; the call that crashed it fails, the next works', async () => {
    await assert.rejects(client.callTool({ name: 'local__crash', arguments: {} }), rejectsWith(-32010, /MCP server local is unavailable/));
    await worksAgain(client, 'local__echo', 'restarted');
  });

  test('an upstream that loses its session: the next call works', async () => {
    await world.legacy.forgetSessions();
    await world.web.forgetSessions();
    await worksAgain(client, 'web__echo', 'new session');
    await worksAgain(client, 'legacy__echo', 'new session too');
  });

  test('a 6 MiB result is refused with a clear error; the next call works', async () => {
    await assert.rejects(client.callTool({ name: 'web__big', arguments: {} }), rejectsWith(-32012, /more than the 4194304 bytes this gateway passes on \(mcp\.max_result_bytes\)/));
    await assert.rejects(client.callTool({ name: 'local__big', arguments: {} }), rejectsWith(-32012, /mcp\.max_result_bytes/));
    assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'small' } })), 'small');
    assert.equal(textOf(await client.callTool({ name: 'local__echo', arguments: { text: 'small' } })), 'small');
  });

  test('a call past call_timeout_ms: the caller gets an error, the upstream a cancellation; the next call works', async () => {
    const started = Date.now();
    await assert.rejects(client.callTool({ name: 'web__slow', arguments: { ms: 8_000 } }), rejectsWith(-32011, /did not answer within 1500 ms/));
    assert.ok(Date.now() - started < 5_000, 'the caller did not wait for the upstream');
    const upstreamId = world.web.requests.find((request) => request.body?.params?.arguments?.ms === 8_000)!.body.id;
    await eventually(() => world.web.cancellations.find((cancellation) => cancellation.requestId === upstreamId), 5_000, 'the cancellation upstream');
    assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'in time' } })), 'in time');
  });

  test('a caller that goes away mid-call: the upstream is sent a cancellation', async () => {
    const { session } = await initialize(world.sluice.url, key.key);
    const request = http.request(new URL('/mcp', world.sluice.url), {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
    });
    request.on('error', () => undefined);
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 'gone', method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 7_000 } } }));
    const upstream = await eventually(() => world.web.requests.find((entry) => entry.body?.params?.arguments?.ms === 7_000), 5_000, 'the call upstream');
    request.destroy();
    await eventually(() => world.web.cancellations.find((cancellation) => cancellation.requestId === upstream.body.id), 5_000, 'the cancellation upstream');
  });

  test('bad arguments: invalid params naming the field; the next call works', async () => {
    await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 1 } }), rejectsWith(-32602, /`b` must have required property 'b'/));
    await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 1, b: 2, c: 3 } }), rejectsWith(-32602, /must NOT have additional properties/));
    assert.equal(textOf(await client.callTool({ name: 'web__add', arguments: { a: 1, b: 2 } })), '3');
  });

  test('the ledger says what each fault was', async () => {
    const expected: [string, string][] = [
      ['web/slow', '502 upstream_unavailable'],
      ['web/slow', '504 upstream_timeout'],
      ['web/slow', '499 client_closed'],
      ['local/crash', '502 upstream_unavailable'],
      ['web/big', '502 result_too_large'],
      ['web/add', '400 invalid_params'],
      ['web/add', '200 null'],
    ];
    // Each worker writes its own batches: wait until every fault's row is in.
    const rows = await eventually(async () => {
      const mine = (await world.sluice.ledger()).filter((row) => row.key_id === key.id);
      return expected.every(([model, kind]) => mine.some((row) => row.model === model && `${row.status} ${row.error_kind}` === kind)) ? mine : undefined;
    }, 5_000, 'a row for every fault');
    assert.equal(rows.filter((row) => row.model === 'web/big').length, 1, 'one row per call');
  });
});
