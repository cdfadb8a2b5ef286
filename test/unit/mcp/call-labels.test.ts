import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { printableName } from '../../../src/core/tool-calls.js';
import { ERROR_CODES } from '../../../src/mcp/jsonrpc.js';
import { GatewayMetrics, MAX_TOOL_LABELS } from '../../../src/telemetry/metrics.js';

const sources = {
  inFlight: () => 0,
  ledger: () => ({ buffered: 0, written: 0, writeFailures: 0 }),
  keyCache: () => ({ hits: 0, misses: 0 }),
  catalogueCache: () => ({ hits: 0, misses: 0 }),
  limitRefusals: () => [],
  deployments: () => [],
  connections: () => [],
  degraded: () => [],
};

describe('MCP call names in labels, the ledger and reports', () => {
  test('an upstream name loses its control and format characters and is capped', () => {
    assert.equal(printableName('bad\u0000\u001b[31mname\n', 64), 'bad[31mname');
    assert.equal(printableName('a\u202eb\u200bc', 64), 'abc', 'bidirectional overrides and zero-width characters');
    assert.equal(printableName('x'.repeat(500), 64).length, 64);
    assert.equal(printableName('read_file', 64), 'read_file');
  });

  test('tool labels are printable and bounded per server: past MAX_TOOL_LABELS they are `other`', async () => {
    const metrics = new GatewayMetrics(sources);
    const end = (server: string, tool: string) => metrics.toolCallEnded('tools/call', { server, tool: printableName(tool, 64), status: 200, errorKind: null, durationMs: 5, upstreamMs: 4 });
    end('web', 'bad\u0000\u001b[31mname\n');
    for (let index = 0; index < MAX_TOOL_LABELS + 50; index++) end('web', `tool_${index}`);
    end('other_server', 'tool_1');
    metrics.toolCallEnded('resources/read', { server: 'web', tool: null, status: 200, errorKind: null, durationMs: 5, upstreamMs: 4 });
    const text = await metrics.registry.metrics();
    const counts = text.split('\n').filter((line) => line.startsWith('mcp_server_operation_duration_seconds_count'));
    assert.ok(!/[\u0000-\u001f]/.test(text.replace(/\n/g, '')), 'no control character in the exposition');
    assert.ok(counts.some((line) => line.includes('gen_ai_tool_name="bad[31mname"')));
    const webTools = new Set(counts.filter((line) => line.includes('server="web"') && line.includes('tools/call')).map((line) => /gen_ai_tool_name="([^"]*)"/.exec(line)![1]));
    assert.equal(webTools.size, MAX_TOOL_LABELS + 1, 'the first tools by name, then one `other`');
    assert.ok(webTools.has('other'));
    assert.ok(counts.some((line) => line.includes('server="other_server"') && line.includes('gen_ai_tool_name="tool_1"')), 'each server has its own allowance');
    assert.ok(counts.some((line) => line.includes('mcp_method_name="resources/read"') && !line.includes('gen_ai_tool_name')));
  });

  test("Sluice's own error codes collide with none of JSON-RPC's, MCP's or the SDK's", () => {
    const standard = new Set<number>([-32700, -32600, -32601, -32602, -32603, -32002]);
    const sdk = new Set<number>(Object.values(ErrorCode).filter((value): value is number => typeof value === 'number'));
    const codes = Object.entries(ERROR_CODES);
    assert.equal(new Set(codes.map(([, code]) => code)).size, codes.length, 'each code once');
    for (const [name, code] of codes) {
      if (standard.has(code)) continue;
      assert.equal(sdk.has(code), false, `${name} ${code} is one of the SDK's`);
    }
  });
});
