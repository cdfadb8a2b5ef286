import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { dayTag, humanDate, humanDay, timeTag } from '../../../src/console/html.js';

const at = (iso: string) => Date.parse(iso);

describe('human dates', () => {
  const now = at('2026-11-25T18:30:00.000Z');

  test('today and yesterday by the UTC day, with the time to the minute', () => {
    assert.equal(humanDate(at('2026-11-25T18:02:14.134Z'), now), 'today 18:02 UTC');
    assert.equal(humanDate(at('2026-11-25T00:00:00.000Z'), now), 'today 00:00 UTC');
    assert.equal(humanDate(at('2026-11-24T23:59:59.999Z'), now), 'yesterday 23:59 UTC');
    assert.equal(humanDate(at('2026-11-24T00:00:00.000Z'), now), 'yesterday 00:00 UTC');
  });

  test('any other day in full, past or future, with its year', () => {
    assert.equal(humanDate(at('2026-11-23T23:59:00.000Z'), now), '23 Nov 2026, 23:59 UTC');
    assert.equal(humanDate(at('2026-11-26T09:05:00.000Z'), now), '26 Nov 2026, 09:05 UTC');
    assert.equal(humanDate(at('2099-01-01T00:00:00.000Z'), now), '1 Jan 2099, 00:00 UTC');
    assert.equal(humanDate(at('2024-07-23T00:00:00.000Z'), now), '23 Jul 2024, 00:00 UTC');
  });

  test('a day alone: the date, never today or yesterday', () => {
    assert.equal(humanDay(at('2026-11-25T18:02:14.134Z')), '25 Nov 2026');
    assert.equal(humanDay(at('2024-07-23T00:00:00.000Z')), '23 Jul 2024');
  });

  test('the tag carries the exact ISO time for programs and on hover', () => {
    assert.equal(
      timeTag(at('2026-11-25T18:02:14.134Z'), now).value,
      '<time datetime="2026-11-25T18:02:14.134Z" title="2026-11-25T18:02:14.134Z">today 18:02 UTC</time>',
    );
    assert.equal(dayTag(at('2024-07-23T00:00:00.000Z')).value, '<time datetime="2024-07-23T00:00:00.000Z" title="2024-07-23T00:00:00.000Z">23 Jul 2024</time>');
    assert.equal(timeTag(null, now).value, '<span class="muted">never</span>');
  });
});
