/**
 * Header values are redacted whole and by their credential alone: an upstream's error quotes the
 * bare token (`UPSTREAM-SECRET-123`) more often than the header line (`Bearer UPSTREAM-SECRET-123`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { headerSecrets, mcpSecretValuesOf, secretValuesOf } from '../../../src/config/secret-values.js';
import { redact } from '../../../src/core/upstream-errors.js';

test('each auth scheme’s credential is held as well as the whole value', () => {
  const basic = Buffer.from('user:pass-word').toString('base64');
  const values = headerSecrets({ Authorization: 'Bearer UPSTREAM-SECRET-123', 'X-Basic': `Basic ${basic}`, 'X-Token': 'Token tok-456789', 'X-Bot': 'Bot bot-secret-1', 'X-Key': 'plain-key-value' });
  for (const expected of ['Bearer UPSTREAM-SECRET-123', 'UPSTREAM-SECRET-123', `Basic ${basic}`, basic, 'Token tok-456789', 'tok-456789', 'Bot bot-secret-1', 'bot-secret-1', 'plain-key-value']) assert.ok(values.includes(expected), expected);
  assert.ok(!values.includes('Bearer'), 'the scheme word alone is not a secret');
});

test('an MCP server’s bare token is redacted from an upstream error', () => {
  const secrets = mcpSecretValuesOf({ id: 'gh', url: 'https://mcp.example.com/mcp', transport: 'streamable_http', headers: { Authorization: 'Bearer UPSTREAM-SECRET-123' } });
  const text = redact('401: token UPSTREAM-SECRET-123 is not valid (sent "Bearer UPSTREAM-SECRET-123")', secrets);
  assert.ok(!text.includes('UPSTREAM-SECRET-123'), text);
});

test('a provider’s header credential is redacted the same way', () => {
  const secrets = secretValuesOf({ headers: { Authorization: 'Bearer PROVIDER-SECRET-999', 'X-Other': 'short' }, api_key: undefined, access_key_id: undefined, secret_access_key: undefined, session_token: undefined, credentials: undefined, entra: undefined });
  assert.ok(secrets.includes('PROVIDER-SECRET-999'));
  assert.ok(!redact('bad token PROVIDER-SECRET-999', secrets).includes('PROVIDER-SECRET-999'));
});

test('a stdio server’s environment values are held as they are', () => {
  assert.deepEqual(mcpSecretValuesOf({ id: 'f', command: 'x', args: [], env: { TOKEN: 'Bearer env-secret-1' } }), ['Bearer env-secret-1']);
});
