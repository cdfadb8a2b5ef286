import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ArgumentChecks, MAX_SCHEMA_BYTES, mayBacktrackWithoutBound } from '../../../src/mcp/arguments.js';

const logger = pino({ level: 'silent' });
const tool = (inputSchema: Record<string, unknown>): Tool => ({ name: 't', inputSchema: { type: 'object', ...inputSchema } as Tool['inputSchema'] });

describe('tool argument checks', () => {
  test('the first fault names the field, nested ones by their path', () => {
    const checks = new ArgumentChecks('s', logger);
    const schema = tool({ properties: { a: { type: 'number' }, nested: { type: 'object', properties: { list: { type: 'array', items: { type: 'string' } } }, required: ['list'] } }, required: ['a'] });
    assert.equal(checks.check(schema, 's__t', { a: 1, nested: { list: ['x'] } }), undefined);
    const missing = checks.check(schema, 's__t', {});
    assert.equal(missing?.code, -32602);
    assert.match(missing!.message, /Invalid arguments for tool s__t: `a` must have required property 'a'/);
    assert.deepEqual(missing!.data, { field: 'a' });
    assert.deepEqual(checks.check(schema, 's__t', { a: 1, nested: { list: ['x', 2] } })?.data, { field: 'nested.list[1]' });
    assert.deepEqual(checks.check(schema, 's__t', { a: 1, nested: {} })?.data, { field: 'nested.list' });
  });

  test('draft-07 and 2020-12 schemas both compile', () => {
    const checks = new ArgumentChecks('s', logger);
    const draft07 = tool({ $schema: 'http://json-schema.org/draft-07/schema#', properties: { a: { type: 'string' } }, additionalProperties: false });
    assert.match(checks.check(draft07, 'x', { b: 1 })!.message, /additional properties/);
    const draft2020 = tool({ $schema: 'https://json-schema.org/draft/2020-12/schema', properties: { a: { type: 'array', prefixItems: [{ type: 'string' }] } } });
    assert.equal(checks.check(draft2020, 'x', { a: [3] })?.code, -32602);
  });

  test('a schema too large or that cannot compile leaves the check to the upstream (no throw)', () => {
    const checks = new ArgumentChecks('s', logger);
    const huge = tool({ properties: Object.fromEntries(Array.from({ length: 3000 }, (_, index) => [`field_${index}`, { type: 'string', description: 'x'.repeat(20) }])) });
    assert.ok(JSON.stringify(huge.inputSchema).length > MAX_SCHEMA_BYTES);
    assert.equal(checks.check(huge, 'x', { field_1: 5 }), undefined);
    const remote = tool({ properties: { a: { $ref: 'https://example.com/schema.json' } } });
    assert.equal(checks.check(remote, 'x', { a: 1 }), undefined, 'nothing is fetched; the $ref does not compile');
  });

  test('patterns that could backtrack without bound are not run; safe ones are', () => {
    for (const risky of ['(a+)+$', '(a*)*b', '(a|a)*', '(x+x+)+y', '^(\\w+\\s?)*$', '(.*a){20}', '(a)\\1', '((ab)+)+']) assert.equal(mayBacktrackWithoutBound(risky), true, risky);
    for (const safe of ['^[a-z]+$', '^\\d{4}-\\d{2}-\\d{2}$', '^(foo|bar)$', '[(+*)]+', '^a+b+c*$', '\\(a+\\)+']) assert.equal(mayBacktrackWithoutBound(safe), false, safe);
    const checks = new ArgumentChecks('s', logger);
    const evil = tool({ properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    const started = performance.now();
    assert.equal(checks.check(evil, 'x', { s: `${'a'.repeat(40)}!` }), undefined);
    assert.ok(performance.now() - started < 500, 'a catastrophic pattern is not run');
    const date = tool({ properties: { d: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } } });
    assert.equal(checks.check(date, 'x', { d: '2026-11-26' }), undefined);
    assert.match(checks.check(date, 'x', { d: 'yesterday' })!.message, /`d` must match pattern/);
  });
});
