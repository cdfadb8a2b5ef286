/**
 * The change-driven cache behind the key cache and the live catalogue (src/changes/versioned-cache.ts):
 * made again only when the store's counter moved, at once on a notification of its topic, by the
 * poll without one; reads never overlap; a failing store is reported once in 30 s.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { ChangeListener } from '../../../src/changes/change-feed.js';
import { VERSION_POLL_MS, VersionedCache } from '../../../src/changes/versioned-cache.js';

/** A counter standing in for the store's, and a value that says which version it was made at. */
function subject(options: { failing?: () => boolean; readDelayMs?: number } = {}) {
  const counter = { version: 1, reads: 0, loads: 0 };
  const failures: unknown[] = [];
  const cache = new VersionedCache('made at nothing', {
    topic: 'keys',
    version: async () => {
      counter.reads++;
      if (options.readDelayMs !== undefined) await sleep(options.readDelayMs);
      if (options.failing?.()) throw new Error('the store is down');
      return counter.version;
    },
    load: async () => {
      counter.loads++;
      return `made at ${counter.version}`;
    },
    failed: (error) => failures.push(error),
  });
  return { cache, counter, failures };
}

function feed() {
  const listeners = new Set<ChangeListener>();
  return {
    subscribe: (listener: ChangeListener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit: (topic: 'keys' | 'catalogue') => listeners.forEach((listener) => listener(topic)),
  };
}

describe('a versioned cache', () => {
  test('is made again only when the counter moved', async () => {
    const { cache, counter } = subject();
    await cache.refresh();
    assert.equal(cache.value, 'made at 1');
    await cache.refresh();
    assert.deepEqual({ ...cache.checks, loads: counter.loads }, { hits: 1, misses: 1, loads: 1 });
    counter.version = 2;
    await cache.refresh();
    assert.equal(cache.value, 'made at 2');
  });

  test('a notification of its topic is acted on at once; another topic is not', async () => {
    const { cache, counter } = subject();
    const changes = feed();
    await cache.start(changes);
    try {
      counter.version = 2;
      changes.emit('catalogue');
      await sleep(20);
      assert.equal(cache.value, 'made at 1', 'another topic changes nothing before the poll');
      changes.emit('keys');
      await sleep(20);
      assert.equal(cache.value, 'made at 2', 'seen well before the poll');
    } finally {
      await cache.stop();
    }
  });

  test('without a notification, the poll sees a change within its interval', async () => {
    const { cache, counter } = subject();
    await cache.start();
    try {
      counter.version = 2;
      await sleep(VERSION_POLL_MS * 2);
      assert.equal(cache.value, 'made at 2');
    } finally {
      await cache.stop();
    }
  });

  test('calls during a read share one read after it, which sees what changed before them', async () => {
    const { cache, counter } = subject({ readDelayMs: 30 });
    const first = cache.refresh();
    await sleep(5);
    counter.version = 2;
    const [second, third] = [cache.refresh(), cache.refresh()];
    assert.equal(second, third, 'one read serves both');
    await Promise.all([first, second]);
    assert.equal(counter.reads, 2);
    assert.equal(cache.value, 'made at 2');
  });

  test('reload makes the value again whatever the counter says, preparing in turn', async () => {
    const { cache, counter } = subject();
    await cache.refresh();
    const order: string[] = [];
    await cache.reload(() => order.push('prepared'));
    assert.deepEqual(order, ['prepared']);
    assert.equal(counter.loads, 2);
  });

  test('a failing store keeps the value and is reported once, not on every poll', async () => {
    let down = false;
    const { cache, failures } = subject({ failing: () => down });
    await cache.start();
    try {
      down = true;
      await sleep(VERSION_POLL_MS * 4);
      assert.equal(failures.length, 1);
      assert.equal(cache.value, 'made at 1');
    } finally {
      await cache.stop();
    }
  });
});
