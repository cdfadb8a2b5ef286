/**
 * Upstream MCP servers failing under Sluice: killed mid-call, a stdio server that crashes, one
 * that loses its session, a result past `mcp.max_result_bytes`, a call past `mcp.call_timeout_ms`
 * (the upstream cancelled), bad arguments. Each time the caller gets a JSON-RPC error it can
 * read, the ledger says what happened, and the next call works.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, startMcpWorld, type McpWorld } from './support/mcp-gateway.js';
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

  test('bad arguments: invalid params naming the field; the next call works', async () => {
    await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 1 } }), rejectsWith(-32602, /`b` must have required property 'b'/));
    await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 1, b: 2, c: 3 } }), rejectsWith(-32602, /must NOT have additional properties/));
    assert.equal(textOf(await client.callTool({ name: 'web__add', arguments: { a: 1, b: 2 } })), '3');
  });

  test('the ledger says what each fault was', async () => {
    const rows = await eventually(async () => {
      const mine = (await world.sluice.ledger()).filter((row) => row.key_id === key.id);
      return mine.some((row) => row.error_kind === 'upstream_timeout') ? mine : undefined;
    }, 5_000, 'the rows');
    const kinds = (model: string) => rows.filter((row) => row.model === model).map((row) => `${row.status} ${row.error_kind}`);
    assert.ok(kinds('web/slow').includes('502 upstream_unavailable'), kinds('web/slow').join(', '));
    assert.ok(kinds('web/slow').includes('504 upstream_timeout'));
    assert.ok(kinds('local/crash').includes('502 upstream_unavailable'));
    assert.deepEqual(kinds('web/big'), ['502 result_too_large']);
    assert.ok(kinds('web/add').includes('400 invalid_params'));
    assert.ok(kinds('web/add').includes('200 null'));
  });
});
