import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ArgumentChecks, branchingOf, MAX_BRANCHING, MAX_SCHEMA_BYTES } from '../../../src/mcp/arguments.js';

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

  test('patterns run on a linear-time engine: a polynomial pattern answers at once, a lookaround alone is left to the upstream', () => {
    const checks = new ArgumentChecks('s', logger);
    const polynomial = tool({ properties: { s: { type: 'string', pattern: '^a*a*a*a*a*a*a*a*a*a*a*a*b$' } } });
    let started = performance.now();
    assert.match(checks.check(polynomial, 'x', { s: `${'a'.repeat(40)}c` })!.message, /`s` must match pattern/);
    assert.match(checks.check(polynomial, 'x', { s: `${'a'.repeat(20_000)}c` })!.message, /`s` must match pattern/);
    assert.ok(performance.now() - started < 1000, `took ${performance.now() - started} ms`);
    const exponential = tool({ properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    started = performance.now();
    assert.deepEqual(checks.check(exponential, 'x', { s: `${'a'.repeat(40)}!` })?.data, { field: 's' });
    assert.ok(performance.now() - started < 1000);
    const lookaround = tool({ properties: { s: { type: 'string', pattern: '^(?=a)\\w+$' }, n: { type: 'number' } } });
    assert.equal(checks.check(lookaround, 'x', { s: '!!!' }), undefined, 'a pattern RE2 cannot run passes here');
    assert.deepEqual(checks.check(lookaround, 'x', { s: '!!!', n: 'one' })?.data, { field: 'n' }, 'the rest of the schema is still checked');
    const date = tool({ properties: { d: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } } });
    assert.equal(checks.check(date, 'x', { d: '2026-11-26' }), undefined);
    assert.match(checks.check(date, 'x', { d: 'yesterday' })!.message, /`d` must match pattern/);
  });

  test('uniqueItems is left to the upstream: 40,000 objects answer at once, the items still checked', () => {
    const checks = new ArgumentChecks('s', logger);
    const unique = tool({ properties: { list: { type: 'array', uniqueItems: true, items: { type: 'object', properties: { n: { type: 'number' } } } } } });
    const list = Array.from({ length: 40_000 }, (_, index) => ({ n: index, pad: 'x' }));
    const started = performance.now();
    assert.equal(checks.check(unique, 'x', { list }), undefined);
    assert.ok(performance.now() - started < 1000, `took ${performance.now() - started} ms`);
    assert.deepEqual(checks.check(unique, 'x', { list: [{ n: 1 }, { n: 'two' }] })?.data, { field: 'list[1].n' });
    assert.equal((unique.inputSchema as unknown as { properties: { list: { uniqueItems?: boolean } } }).properties.list.uniqueItems, true, 'the listed schema is untouched');
  });

  test('a schema that branches past the budget is left to the upstream; an ordinary one is measured small', () => {
    const defs: Record<string, unknown> = { leaf: { type: 'string' } };
    for (let level = 0; level < 41; level++) defs[`l${level}`] = { anyOf: [{ $ref: `#/$defs/${level === 40 ? 'leaf' : `l${level + 1}`}` }, { $ref: `#/$defs/${level === 40 ? 'leaf' : `l${level + 1}`}` }] };
    const bomb = tool({ $defs: defs, properties: { v: { $ref: '#/$defs/l0' } } });
    assert.equal(branchingOf(bomb.inputSchema as Record<string, unknown>), MAX_BRANCHING + 1);
    const checks = new ArgumentChecks('s', logger);
    const started = performance.now();
    assert.equal(checks.check(bomb, 'x', { v: 5 }), undefined);
    assert.ok(performance.now() - started < 1000, `took ${performance.now() - started} ms`);
    // The same bomb one data level per anyOf: 41 levels of nesting in the arguments.
    const nested: Record<string, unknown> = { leaf: { type: 'string' } };
    for (let level = 0; level < 41; level++) {
      const next = { $ref: `#/$defs/${level === 40 ? 'leaf' : `n${level + 1}`}` };
      nested[`n${level}`] = { anyOf: [{ type: 'object', properties: { a: next } }, { type: 'object', properties: { a: next } }] };
    }
    assert.ok(branchingOf({ $defs: nested, $ref: '#/$defs/n0' }) > MAX_BRANCHING);
    assert.equal(branchingOf({ $defs: { loop: { anyOf: [{ $ref: '#/$defs/loop' }] } }, $ref: '#/$defs/loop' }), Infinity, 'a cycle that consumes nothing');
    assert.equal(branchingOf({ $ref: 'https://example.com/x.json' }), Infinity);
    // A tree (recursion through members, one application per level) and zod's definitions are fine.
    const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } };
    assert.ok(branchingOf(tree) <= 2);
    assert.equal(branchingOf({ type: 'object', properties: { a: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } } }), Infinity, 'a recursion reaching a value twice per level');
    const zod = { $schema: 'http://json-schema.org/draft-07/schema#', definitions: { p: { type: 'object', properties: { x: { type: 'number' } } } }, type: 'object', properties: { a: { $ref: '#/definitions/p' }, b: { anyOf: [{ type: 'string' }, { type: 'number' }] } } };
    assert.ok(branchingOf(zod) < 10);
    const treeChecks = new ArgumentChecks('s', logger);
    assert.deepEqual(treeChecks.check(tool(tree), 'x', { name: 'a', children: [{ name: 'b', children: [{ name: 3 }] }] })?.data, { field: 'children[0].children[0].name' });
  });

  test('contains, dependentSchemas and unevaluatedProperties are checked, in linear time', () => {
    const checks = new ArgumentChecks('s', logger);
    const schema = tool({
      properties: { list: { type: 'array', contains: { type: 'number' }, minContains: 2, maxContains: 50_000 } },
      dependentSchemas: { list: { required: ['why'] } },
      unevaluatedProperties: false,
      patternProperties: { '^why$': { type: 'string' } },
    });
    const list = Array.from({ length: 40_000 }, (_, index) => index);
    const started = performance.now();
    assert.equal(checks.check(schema, 'x', { list, why: 'w' }), undefined);
    assert.ok(performance.now() - started < 1000, `took ${performance.now() - started} ms`);
    assert.equal(checks.check(schema, 'x', { list: ['a', 1], why: 'w' })?.code, -32602);
    assert.equal(checks.check(schema, 'x', { list })?.code, -32602);
    assert.equal(checks.check(schema, 'x', { list, why: 'w', other: 1 })?.code, -32602);
  });
});
