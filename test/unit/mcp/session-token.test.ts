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

  test('a session id is read strictly: padding, a non-canonical last character or stray characters are forged', () => {
    const tokens = new SessionTokens(key);
    const { token } = tokens.issue('key_1', '', '2025-11-25');
    assert.equal(tokens.check(token, 'key_1', '').ok, true);
    const [payload, mac] = token.split('.') as [string, string];
    // 32 bytes take 43 characters whose last carries 4 bits: its low 2 bits are free for a lenient decoder.
    const last = mac.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
    assert.deepEqual(Buffer.from(`${mac.slice(0, -1)}${sibling}`, 'base64url'), Buffer.from(mac, 'base64url'), 'the lenient decoder takes both spellings');
    for (const variant of [`${mac}=`, `${mac.slice(0, -1)}${sibling}`, `${mac.slice(0, 20)}\n${mac.slice(20)}`, `${mac.slice(0, 20)}+${mac.slice(21)}`, ` ${mac}`]) {
      assert.deepEqual(tokens.check(`${payload}.${variant}`, 'key_1', ''), { ok: false, reason: 'forged' }, variant);
    }
  });

  test('ended sessions are remembered until they would have expired, then forgotten a whole hour-group at a time', () => {
    let now = 1_000_000;
    const ended = new EndedSessions(() => now);
    ended.add('a', now);
    assert.equal(ended.has('a'), true);
    now += SESSION_LIFETIME_MS - 1;
    assert.equal(ended.has('a'), true, 'not before its expiry');
    now += 2 * 60 * 60 * 1000;
    ended.add('b', now);
    assert.equal(ended.has('a'), false, 'dropped with its group');
    assert.equal(ended.has('b'), true);
    assert.equal(ended.size, 1);
    ended.add('old', now - SESSION_LIFETIME_MS - 3 * 60 * 60 * 1000);
    assert.equal(ended.has('old'), false, 'a session already expired is not kept');
  });

  test('ended sessions are capped: past the cap the groups that expire soonest are forgotten first', () => {
    let now = 0;
    const ended = new EndedSessions(() => now, 1000);
    // 3000 sessions issued over 3 hours, ended at once: one key looping initialize → DELETE.
    for (let index = 0; index < 3000; index++) {
      now = index * 3600;
      ended.add(`s${index}`, now);
    }
    assert.ok(ended.size <= 1000, `at most the cap (${ended.size})`);
    assert.equal(ended.has('s2999'), true, 'the latest is kept');
    assert.equal(ended.has('s0'), false, 'the earliest went first');
    // Out of order: an older session ended late still lands in its own (earlier) group, which is dropped first.
    ended.add('late', 0);
    assert.equal(ended.has('late'), true);
    assert.ok(ended.size <= 1000);
  });

  test('adding is constant work: 200k ends (DELETEs) of sessions issued over a day stay far from quadratic', () => {
    let now = 0;
    const ended = new EndedSessions(() => now);
    const started = process.hrtime.bigint();
    for (let index = 0; index < 200_000; index++) {
      now = Math.floor(index * (SESSION_LIFETIME_MS / 200_000));
      ended.add(`s${index}`, now);
    }
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(ended.size <= 100_000);
    // The old sweep was O(n) per add: quadratic, minutes for this.
    assert.ok(ms < 5000, `${ms} ms`);
  });
});
