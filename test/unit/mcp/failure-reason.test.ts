/** A server's state says why it failed in Sluice's fixed words, never quoting what the upstream answered. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { failureReason } from '../../../src/mcp/upstream/failure-reason.js';

const BODY = 'INTERNAL-SECRET-BODY: aws_secret_access_key=abc123';

test('an HTTP error gives its status and a fixed reason, never the body', () => {
  assert.equal(failureReason(new StreamableHTTPError(403, `Error POSTing to endpoint: ${BODY}`)), 'HTTP 403 forbidden');
  assert.equal(failureReason(new StreamableHTTPError(401, `Error POSTing to endpoint: ${BODY}`)), 'HTTP 401 unauthorized');
  assert.equal(failureReason(new StreamableHTTPError(404, BODY)), 'HTTP 404 not found');
  assert.equal(failureReason(new StreamableHTTPError(418, BODY)), 'HTTP 418');
  assert.equal(failureReason(new Error(`Error POSTing to endpoint (HTTP 500): ${BODY}`)), 'HTTP 500 internal server error');
  assert.match(failureReason(new StreamableHTTPError(-1, 'Unexpected content type: text/html')), /^not an MCP server/);
});

test('network failures are named by their code', () => {
  assert.equal(failureReason(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) })), 'connection refused');
  assert.equal(failureReason(Object.assign(new Error('x'), { code: 'ENOTFOUND' })), 'host name not found');
});

test('anything else is "not an MCP server", whatever its text', () => {
  const reason = failureReason(new SyntaxError(`Unexpected token '<', "${BODY}" is not valid JSON`));
  assert.match(reason, /^not an MCP server/);
  assert.ok(!reason.includes('INTERNAL'));
});
