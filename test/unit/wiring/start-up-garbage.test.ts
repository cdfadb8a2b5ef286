/**
 * The start-up collection gives back what loading grew (the young generation's pages) and leaves
 * no `gc` behind in the gateway's global scope, nor the flag on for contexts made later.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { collectStartUpGarbage } from '../../../src/wiring/start-up-garbage.js';

const youngGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;

test('the young generation grown by a burst of allocation is shrunk again', () => {
  // Survivors of many scavenges make V8 grow the young generation, as loading modules does.
  const kept: unknown[] = [];
  for (let i = 0; i < 400_000; i++) kept.push({ i, text: `item ${i}` });
  const grown = youngGeneration();
  kept.length = 0;
  collectStartUpGarbage();
  assert.ok(youngGeneration() < grown, `young generation ${youngGeneration()} bytes after, ${grown} before`);
});

test('no gc function is left in this scope or in a context made afterwards', () => {
  collectStartUpGarbage();
  assert.equal((globalThis as { gc?: unknown }).gc, undefined);
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});
