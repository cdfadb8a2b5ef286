/** The shared token of a provider: one request per lifetime, renewal before expiry, a failing issuer not asked per call. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RefreshingToken, type IssuedToken } from '../../../src/providers/auth/refreshing-token.js';

/** An issuer whose answers the test releases one by one, on a clock the test moves. */
function issuer(lifetimeMs: number) {
  let now = 0;
  let issued = 0;
  const waiting: { resolve: (token: IssuedToken) => void; reject: (error: Error) => void }[] = [];
  const token = new RefreshingToken(
    () =>
      new Promise<IssuedToken>((resolve, reject) => {
        issued++;
        waiting.push({ resolve, reject });
      }),
    () => now,
  );
  return {
    token,
    issued: () => issued,
    advance: (ms: number) => (now += ms),
    answer: async (value: string) => {
      waiting.shift()!.resolve({ token: value, lifetimeMs });
      await new Promise((resolve) => setImmediate(resolve));
    },
    fail: async (message: string) => {
      waiting.shift()!.reject(new Error(message));
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('RefreshingToken', () => {
  test('concurrent first calls share one request; later calls get the token without waiting', async () => {
    const t = issuer(10_000);
    const first = [t.token.current(), t.token.current(), t.token.current()];
    assert.equal(t.issued(), 1);
    await t.answer('tok-1');
    assert.deepEqual(await Promise.all(first), ['tok-1', 'tok-1', 'tok-1']);
    assert.equal(t.token.current(), 'tok-1');
    assert.deepEqual(t.token.secrets(), ['tok-1']);
  });

  test('renews once, in the background, three quarters into its lifetime; the old token serves meanwhile', async () => {
    const t = issuer(4_000);
    const first = t.token.current();
    await t.answer('tok-1');
    await first;
    t.advance(2_999);
    assert.equal(t.token.current(), 'tok-1');
    assert.equal(t.issued(), 1);
    t.advance(1);
    for (let i = 0; i < 50; i++) assert.equal(t.token.current(), 'tok-1');
    assert.equal(t.issued(), 2, 'one renewal, however many calls');
    await t.answer('tok-2');
    assert.equal(t.token.current(), 'tok-2');
  });

  test('a token in the last tenth of its life is not sent: the call waits for the new one', async () => {
    const t = issuer(10_000);
    const first = t.token.current();
    await t.answer('tok-1');
    await first;
    t.advance(7_500);
    t.token.current(); // starts the renewal
    await t.fail('issuer down');
    t.advance(1_600); // 9.1 s: past the usable part
    const waiting = t.token.current();
    assert.ok(waiting instanceof Promise);
    assert.equal(t.issued(), 3, 'asked again: the pause after the failure is over');
    await t.answer('tok-2');
    assert.equal(await waiting, 'tok-2');
  });

  test('after a failure the issuer is not asked again for a second; calls meanwhile get the failure', async () => {
    const t = issuer(10_000);
    const first = assert.rejects(t.token.current() as Promise<string>, /bad secret/);
    await t.fail('bad secret');
    await first;
    await assert.rejects(t.token.current() as Promise<string>, /bad secret/);
    assert.equal(t.issued(), 1);
    t.advance(1_000);
    const again = t.token.current();
    assert.equal(t.issued(), 2);
    await t.answer('tok-1');
    assert.equal(await again, 'tok-1');
  });

  test('a failed background renewal keeps the held token until its margin, and is retried after the pause', async () => {
    const t = issuer(60_000);
    const first = t.token.current();
    await t.answer('tok-1');
    await first;
    t.advance(45_000);
    assert.equal(t.token.current(), 'tok-1');
    await t.fail('blip');
    assert.equal(t.token.current(), 'tok-1');
    assert.equal(t.issued(), 2, 'not retried within the pause');
    t.advance(1_000);
    assert.equal(t.token.current(), 'tok-1');
    assert.equal(t.issued(), 3);
    await t.answer('tok-2');
    assert.equal(t.token.current(), 'tok-2');
  });

  test('an issuer that says a token lives 0 s is taken at a second: not a token request per call', async () => {
    const t = issuer(0);
    const first = t.token.current();
    await t.answer('tok-1');
    assert.equal(await first, 'tok-1');
    for (let i = 0; i < 20; i++) assert.equal(t.token.current(), 'tok-1');
    assert.equal(t.issued(), 1);
  });
});
