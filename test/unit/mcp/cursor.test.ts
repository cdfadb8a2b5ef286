import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeCursor, encodeCursor, pageOf } from '../../../src/mcp/cursor.js';

describe('list cursors', () => {
  test('pages a merged list, the last page without a cursor', () => {
    const items = Array.from({ length: 250 }, (_, index) => index);
    const first = pageOf('tools', items, 0, 100);
    assert.deepEqual(first.page, items.slice(0, 100));
    const offset = decodeCursor('tools', first.nextCursor);
    assert.equal(offset, 100);
    const last = pageOf('tools', items, 200, 100);
    assert.equal(last.page.length, 50);
    assert.equal(last.nextCursor, undefined);
    assert.deepEqual(pageOf('tools', items, 1000, 100), { page: [], nextCursor: undefined }, 'past the end (the list shrank): an empty page');
    assert.equal(pageOf('tools', [], 0, 100).nextCursor, undefined);
  });

  test('garbage, another list’s cursor and bad offsets are refused', () => {
    for (const cursor of [undefined, null, 7, '', 'garbage!', 'not base64 json', 'x'.repeat(201), encodeCursor('prompts', 5), Buffer.from('{"l":"tools","o":-1}').toString('base64url'), Buffer.from('{"l":"tools","o":1.5}').toString('base64url'), Buffer.from('{"l":"tools","o":"5"}').toString('base64url'), Buffer.from('[1,2]').toString('base64url'), Buffer.from('null').toString('base64url'), Buffer.from('{"l":"tools","o":1e300}').toString('base64url')]) {
      assert.equal(decodeCursor('tools', cursor), undefined, String(cursor).slice(0, 40));
    }
    assert.equal(decodeCursor('tools', encodeCursor('tools', 0)), 0);
  });
});
