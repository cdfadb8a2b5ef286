import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { EndedSessions, SESSION_LIFETIME_MS, SessionTokens } from '../../../src/mcp/session-token.js';

describe('MCP session tokens', () => {
  const key = randomBytes(32);

  test('a token issued by one process is checked by another with the same key, for the same key id and endpoint', () => {
    const { token, session } = new SessionTokens(key).issue('key_1', '', '2025-06-18');
    assert.match(token, /^[\x21-\x7e]+$/);
    const checked = new SessionTokens(Buffer.from(key)).check(token, 'key_1', '');
    assert.deepEqual(checked, { ok: true, session });
    assert.equal(session.protocolVersion, '2025-06-18');
  });

  test('another key id, another endpoint, another signing key, a changed payload, garbage and old age are refused', () => {
    let now = 1_800_000_000_000;
    const tokens = new SessionTokens(key, () => now);
    const { token } = tokens.issue('key_1', 'web', '2025-11-25');
    assert.deepEqual(tokens.check(token, 'key_2', 'web'), { ok: false, reason: 'other_key' });
    assert.deepEqual(tokens.check(token, 'key_1', ''), { ok: false, reason: 'other_endpoint' });
    assert.deepEqual(new SessionTokens(randomBytes(32)).check(token, 'key_1', 'web'), { ok: false, reason: 'forged' });
    const [payload, mac] = token.split('.') as [string, string];
    const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), k: 'key_2' })).toString('base64url');
    assert.deepEqual(tokens.check(`${tampered}.${mac}`, 'key_2', 'web'), { ok: false, reason: 'forged' });
    for (const garbage of ['', '.', 'abc', 'a.b', `${payload}.`, `.${mac}`, 'x'.repeat(5000), `${payload}.${mac}x`]) assert.equal(tokens.check(garbage, 'key_1', 'web').ok, false, garbage.slice(0, 30));
    now += SESSION_LIFETIME_MS + 1000;
    assert.deepEqual(tokens.check(token, 'key_1', 'web'), { ok: false, reason: 'expired' });
  });

  test('ended sessions are remembered until they would have expired, then forgotten', () => {
    let now = 1_000_000;
    const ended = new EndedSessions(() => now);
    ended.add('a', now);
    assert.equal(ended.has('a'), true);
    now += SESSION_LIFETIME_MS + 1;
    ended.add('b', now);
    assert.equal(ended.has('a'), false, 'swept');
    assert.equal(ended.has('b'), true);
  });
});
