import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Backoff } from '../../../src/mcp/upstream/backoff.js';
import { stdioEnvironment } from '../../../src/mcp/upstream/stdio-transport.js';

describe('Backoff', () => {
  test('1 s doubling to 60 s; reset once it stayed up long enough', () => {
    let now = 0;
    const backoff = new Backoff({ initialMs: 1_000, maxMs: 60_000, resetAfterMs: 60_000 }, () => now);
    assert.deepEqual(Array.from({ length: 9 }, () => backoff.failed()), [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    backoff.up();
    now += 59_999;
    assert.equal(backoff.failed(), 60_000, 'up for less than a minute: still backing off');
    backoff.up();
    now += 60_000;
    assert.equal(backoff.failed(), 1_000);
    assert.equal(backoff.failed(), 2_000);
  });
});

describe('stdioEnvironment', () => {
  test('PATH, HOME and LANG of the gateway, then the entry env; nothing else', () => {
    const parent = { PATH: '/bin', HOME: '/home/s', LANG: 'C.UTF-8', SLUICE_MASTER_KEY: 'secret', AWS_SECRET_ACCESS_KEY: 'x' };
    assert.deepEqual(stdioEnvironment({ env: { TOKEN: 't', PATH: '/opt/bin' } }, parent), { PATH: '/opt/bin', HOME: '/home/s', LANG: 'C.UTF-8', TOKEN: 't' });
  });
});
