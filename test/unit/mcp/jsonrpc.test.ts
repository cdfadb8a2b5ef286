import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorMessage, McpError, parseMessage, resultMessage, SerializedResult } from '../../../src/mcp/jsonrpc.js';

describe('JSON-RPC messages', () => {
  test('requests, notifications and client responses are told apart', () => {
    assert.deepEqual(parseMessage({ jsonrpc: '2.0', id: 1, method: 'ping' }), { kind: 'request', id: 1, method: 'ping', params: {} });
    assert.deepEqual(parseMessage({ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x' } }), { kind: 'request', id: 'a', method: 'tools/call', params: { name: 'x' } });
    assert.deepEqual(parseMessage({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }), { kind: 'notification', method: 'notifications/cancelled', params: { requestId: 1 } });
    assert.deepEqual(parseMessage({ jsonrpc: '2.0', id: 5, result: {} }), { kind: 'response' });
  });

  test('what is no message is refused with the right code', () => {
    const cases: [unknown, number][] = [
      [null, -32600],
      [[], -32600],
      ['ping', -32600],
      [{ id: 1, method: 'ping' }, -32600],
      [{ jsonrpc: '1.0', id: 1, method: 'ping' }, -32600],
      [{ jsonrpc: '2.0', id: 1 }, -32600],
      [{ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, -32600],
      [{ jsonrpc: '2.0', id: 'x'.repeat(300), method: 'ping' }, -32600],
      [{ jsonrpc: '2.0', id: 1, method: 'ping', params: [1] }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'ping', params: 'x' }, -32602],
    ];
    for (const [value, code] of cases) {
      const parsed = parseMessage(value);
      assert.ok(parsed instanceof McpError, JSON.stringify(value)?.slice(0, 40));
      assert.equal(parsed.code, code);
    }
  });

  test('answers are JSON-RPC 2.0; a result already written is not written again', () => {
    assert.deepEqual(JSON.parse(resultMessage(1, { a: 1 })), { jsonrpc: '2.0', id: 1, result: { a: 1 } });
    assert.deepEqual(JSON.parse(resultMessage('x"y', new SerializedResult('{"content":[]}'))), { jsonrpc: '2.0', id: 'x"y', result: { content: [] } });
    assert.deepEqual(JSON.parse(errorMessage(null, new McpError(-32602, 'bad', 400, 'invalid_params', { field: 'a' }))), { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'bad', data: { field: 'a' } } });
  });
});
