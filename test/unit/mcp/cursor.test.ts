import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeCursor, encodeCursor, pageAfter, sortedByKey, type Keyed } from '../../../src/mcp/cursor.js';

const keyed = (names: readonly string[]): Keyed<string>[] => sortedByKey(names.map((name) => ({ key: name, item: name })));

/** Every page of a walk, the list possibly changing between pages. */
function walk(list: () => Keyed<string>[], pageSize: number, between: (page: number) => void = () => undefined): string[] {
  const seen: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const { page: items, nextCursor } = pageAfter('tools', list(), after, pageSize);
    seen.push(...items);
    if (nextCursor === undefined) return seen;
    after = decodeCursor('tools', nextCursor);
    assert.notEqual(after, undefined);
    between(page);
  }
  throw new Error('the walk did not end');
}

describe('keyset cursors', () => {
  test('pages a merged list in name order, the last page without a cursor', () => {
    const names = Array.from({ length: 250 }, (_, index) => `s${index % 3}__tool_${String(index).padStart(3, '0')}`);
    const sorted = keyed(names);
    assert.deepEqual(walk(() => sorted, 100), [...names].sort());
    const first = pageAfter('tools', sorted, undefined, 100);
    assert.equal(first.page.length, 100);
    assert.equal(decodeCursor('tools', first.nextCursor), sorted[99]!.key);
    assert.deepEqual(pageAfter('tools', sorted, 'zzz', 100), { page: [], nextCursor: undefined }, 'past the end: an empty page');
    assert.equal(pageAfter('tools', [], undefined, 100).nextCursor, undefined);
    assert.deepEqual(sortedByKey([{ key: 'b', item: 1 }, { key: 'a', item: 2 }, { key: 'b', item: 3 }]), [{ key: 'a', item: 2 }, { key: 'b', item: 1 }], 'a key kept once, the first');
  });

  test('a server going down mid-walk takes only its own entries; an entry added behind the cursor is not repeated', () => {
    const servers = new Map([
      ['alpha', Array.from({ length: 30 }, (_, index) => `alpha__t${String(index).padStart(2, '0')}`)],
      ['beta', Array.from({ length: 30 }, (_, index) => `beta__t${String(index).padStart(2, '0')}`)],
      ['gamma', Array.from({ length: 30 }, (_, index) => `gamma__t${String(index).padStart(2, '0')}`)],
    ]);
    const current = () => keyed([...servers.values()].flat());
    const seen = walk(current, 20, (page) => {
      if (page === 0) servers.delete('beta');
      if (page === 1) servers.get('alpha')!.push('alpha__a_new');
    });
    assert.equal(new Set(seen).size, seen.length, 'no entry repeated');
    for (const name of servers.get('gamma')!) assert.ok(seen.includes(name), `${name} not skipped`);
    for (const name of servers.get('alpha')!.slice(0, 30)) assert.ok(seen.includes(name), `${name} not skipped`);
    assert.ok(!seen.includes('alpha__a_new'), 'added behind the cursor: seen on the next walk');
  });

  test('garbage, edited cursors and another list’s cursor are refused', () => {
    const good = encodeCursor('tools', 'web__echo');
    assert.equal(decodeCursor('tools', good), 'web__echo');
    const [body, check] = good.split('.') as [string, string];
    const edited = Buffer.from(JSON.stringify({ l: 'tools', a: 'web__zzz' })).toString('base64url');
    for (const cursor of [undefined, null, 7, '', 'garbage!', 'not base64 json', body, `${body}.`, `${edited}.${check}`, `${body}.${check.slice(1)}x`, 'x'.repeat(20_000), encodeCursor('prompts', 'web__echo'), Buffer.from('{"l":"tools","o":5}').toString('base64url')]) {
      assert.equal(decodeCursor('tools', cursor), undefined, String(cursor).slice(0, 40));
    }
  });
});
