/**
 * What an upstream cannot do to the gateway, and what every call to an upstream costs: tool
 * schemas that are costly to check are answered at once (the gateway still serving), every method
 * that reaches an upstream (resources/read, prompts/get, batch members one by one) is admitted
 * against rpm and leaves one ledger row, `price_per_call` is charged once a call was sent (a call
 * cancelled after sending pays, a refused one does not), and an upstream echoing its own
 * credential never shows it to the caller.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult, TextContent } from '@modelcontextprotocol/sdk/types.js';
import { startStreamableHttpMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';
import { connectClient, initialize, rpc } from './support/mcp-gateway.js';
import { cli, createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

const PRICE = 0.5;
const textOf = (result: unknown) => ((result as CallToolResult).content[0] as TextContent).text;

describe('MCP: hostile upstreams, every upstream method metered, charging, secrets', () => {
  let upstream: FakeMcpUpstream;
  let sluice: RunningSluice;

  before(async () => {
    upstream = await startStreamableHttpMcpUpstream({ token: `hostile-token-${randomUUID()}`, hostile: true });
    sluice = await startSluice({
      config: `mcp_servers:\n  - id: web\n    url: ${upstream.url}\n    headers: { Authorization: "Bearer ${upstream.token}" }\n    price_per_call: ${PRICE}\n`,
      env: { SLUICE_LOG_LEVEL: 'info' },
    });
  });
  after(async () => {
    await sluice?.stop();
    await upstream?.close();
  });

  const key = (extra: string[] = []) => createKey(sluice.dataDir, `team-${randomUUID().slice(0, 8)}`, ['--mcp', 'web', ...extra]);

  test('costly schemas are answered at once: a polynomial pattern, uniqueItems over 40,000 objects, an anyOf bomb; the gateway still serves', async () => {
    const client = await connectClient(sluice.url, (await key()).key);
    try {
      let started = performance.now();
      await assert.rejects(client.callTool({ name: 'web__hostile_pattern', arguments: { s: `${'a'.repeat(40)}c` } }), (error: Error & { code?: number }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /`s` must match pattern/);
        return true;
      });
      assert.ok(performance.now() - started < 2_000, `the pattern took ${performance.now() - started} ms`);
      started = performance.now();
      const list = Array.from({ length: 40_000 }, (_, index) => ({ n: index }));
      assert.equal(textOf(await client.callTool({ name: 'web__hostile_unique', arguments: { list } })), 'hostile_unique ran', 'uniqueItems is left to the upstream');
      assert.ok(performance.now() - started < 5_000, `uniqueItems took ${performance.now() - started} ms`);
      started = performance.now();
      assert.equal(textOf(await client.callTool({ name: 'web__hostile_anyof', arguments: { v: 5 } })), 'hostile_anyof ran', 'the bomb is left to the upstream');
      assert.ok(performance.now() - started < 2_000, `the anyOf bomb took ${performance.now() - started} ms`);
      assert.equal(textOf(await client.callTool({ name: 'web__echo', arguments: { text: 'still here' } })), 'still here');
    } finally {
      await client.close();
    }
  });

  test('resources/read and prompts/get are admitted like tool calls: a batch past rpm reaches the upstream only as far as the limit, one ledger row each', async () => {
    const limited = await key(['--rpm', '2']);
    // Batches are part of the 2025-03-26 revision: each member is a call of its own.
    const { session } = await initialize(sluice.url, limited.key, '2025-03-26');
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-03-26', accept: 'application/json' };
    const readsBefore = upstream.requests.filter((request) => request.body?.method === 'resources/read').length;
    const batch = Array.from({ length: 5 }, (_, index) => ({ jsonrpc: '2.0', id: index, method: 'resources/read', params: { uri: 'sluice-mcp://web/fake://docs/readme' } }));
    const answered = await rpc(sluice.url, limited.key, batch, headers);
    assert.equal(answered.status, 200, answered.text);
    const answers = answered.json as { id: number; result?: { contents: { text: string }[] }; error?: { code: number } }[];
    assert.equal(answers.filter((answer) => answer.result?.contents[0]?.text === 'The fake upstream README.').length, 2);
    assert.deepEqual(answers.filter((answer) => answer.error !== undefined).map((answer) => answer.error!.code), [-32029, -32029, -32029]);
    assert.equal(upstream.requests.filter((request) => request.body?.method === 'resources/read').length - readsBefore, 2, 'refused reads never reached the upstream');
    const refusedPrompt = await rpc(sluice.url, limited.key, { jsonrpc: '2.0', id: 9, method: 'prompts/get', params: { name: 'web__plain' } }, headers);
    assert.equal(refusedPrompt.json.error.code, -32029, 'prompts/get counts against the same rpm');

    const other = await key();
    const client = await connectClient(sluice.url, other.key);
    try {
      await client.getPrompt({ name: 'web__plain' });
      await client.readResource({ uri: 'sluice-mcp://web/fake://docs/readme' });
    } finally {
      await client.close();
    }
    const rows = await eventually(async () => {
      const mine = (await sluice.ledger()).filter((row) => row.key_id === limited.id);
      return mine.length === 6 ? mine : undefined;
    }, 5_000, 'six rows');
    assert.deepEqual(rows.map((row) => `${row.operation} ${row.model} ${row.status}`).sort(), [
      'mcp.prompts/get web/plain 429',
      'mcp.resources/read web 200',
      'mcp.resources/read web 200',
      'mcp.resources/read web 429',
      'mcp.resources/read web 429',
      'mcp.resources/read web 429',
    ]);
    const others = await eventually(async () => {
      const mine = (await sluice.ledger()).filter((row) => row.key_id === other.id);
      return mine.length === 2 ? mine : undefined;
    }, 5_000, 'two rows');
    assert.deepEqual(others.map((row) => `${row.operation} ${row.model} ${row.status} ${Number(row.cost_usd)}`).sort(), ['mcp.prompts/get web/plain 200 0', 'mcp.resources/read web 200 0']);
    // The usage reports file reads and prompts as MCP lines, never as models.
    const usage = await cli(['usage', '--json', '--by', 'model', '--data', sluice.dataDir]);
    assert.equal(usage.code, 0, usage.stderr);
    const lines = JSON.parse(usage.stdout) as Record<string, unknown>[];
    assert.equal(lines.find((line) => line.mcp_tool === 'resources/read web')?.calls, 6);
    assert.equal(lines.find((line) => line.mcp_tool === 'prompts/get web/plain')?.calls, 2);
    assert.ok(!lines.some((line) => line.model !== undefined), 'no MCP call is taken for a model');
  });

  test('price_per_call is charged once the call was sent (a cancellation after sending pays), never for a call refused before', async () => {
    const payer = await key();
    const client = await connectClient(sluice.url, payer.key);
    try {
      const controller = new AbortController();
      const slow = client.callTool({ name: 'web__slow', arguments: { ms: 20_000 } }, undefined, { signal: controller.signal });
      const upstreamCall = await eventually(() => upstream.requests.find((request) => request.body?.params?.arguments?.ms === 20_000), 5_000, 'the call upstream');
      controller.abort('the caller changed its mind');
      await assert.rejects(slow);
      const cancellation = await eventually(() => upstream.cancellations.find((entry) => entry.requestId === upstreamCall.body.id), 5_000, 'the cancellation upstream');
      assert.equal(cancellation.reason, 'cancelled by the caller', 'a plain reason, not a stringified Error');
      await assert.rejects(client.callTool({ name: 'web__add', arguments: { a: 'one', b: 2 } }), /`a` must be number/);
      await assert.rejects(client.callTool({ name: 'web__nothing', arguments: {} }), /Unknown tool/);
      assert.equal(textOf(await client.callTool({ name: 'web__fail', arguments: {} })), 'the tool failed');
    } finally {
      await client.close();
    }
    const rows = await eventually(async () => {
      const mine = (await sluice.ledger()).filter((row) => row.key_id === payer.id);
      return mine.length === 4 ? mine : undefined;
    }, 5_000, 'four rows');
    const cost = (model: string) => Number(rows.find((row) => row.model === model)!.cost_usd);
    assert.equal(cost('web/slow'), PRICE, 'cancelled after it was sent: charged');
    assert.equal(rows.find((row) => row.model === 'web/slow')!.status, 499);
    assert.equal(cost('web/fail'), PRICE, 'an isError result: charged');
    assert.equal(cost('web/add'), 0, 'bad arguments: refused before sending, free');
    assert.equal(cost('web__nothing'), 0, 'unknown: free');
  });

  test('an upstream echoing its own credential, in a result or an error, never shows it to the caller', async () => {
    const client = await connectClient(sluice.url, (await key()).key);
    let answers = '';
    try {
      const result = await client.callTool({ name: 'web__leak', arguments: {} });
      answers += JSON.stringify(result);
      assert.match(textOf(result), /^whole: \[redacted\]; bare: \[redacted\]$/);
      await client.callTool({ name: 'web__leak_error', arguments: {} }).then(
        () => assert.fail('leak_error must fail'),
        (error: Error & { data?: unknown }) => {
          answers += `${error.message} ${JSON.stringify(error.data)}`;
          assert.match(error.message, /whole: \[redacted\]; bare: \[redacted\]/);
          assert.doesNotMatch(error.message, /MCP error -?\d+: MCP error/, 'the SDK prefix once, as the client adds it');
        },
      );
    } finally {
      await client.close();
    }
    assert.ok(answers.includes('[redacted]'));
    assert.equal(answers.includes(upstream.token), false, 'the bare token never reaches the caller');
  });
});
