import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CALLER_NAME, callerName, callerUri, NameMap, upstreamUriOf } from '../../../src/mcp/names.js';

describe('caller names of upstream tools and prompts', () => {
  test('a name that fits is the server id, two underscores, and the name; alone, the name itself', () => {
    assert.equal(callerName('github', 'create_issue'), 'github__create_issue');
    assert.equal(callerName(null, 'create_issue'), 'create_issue');
    assert.equal(callerName('a-b_c', 'x-y'), 'a-b_c__x-y');
  });

  test('every result fits [A-Za-z0-9_-]{1,64}, whatever the server id and name', () => {
    const server = 'S'.repeat(32);
    for (const name of ['read', 'files.read', 'a b c', 'ünïcödé', '/', '', 'x'.repeat(500), '__', 'a/b/c', 'emoji 🎉 tool', '-'.repeat(70)]) {
      for (const prefix of [server, 'g', null]) {
        const made = callerName(prefix, name);
        assert.match(made, CALLER_NAME, `${prefix}/${name} → ${made}`);
        if (prefix !== null) assert.ok(made.startsWith(`${prefix}__`), 'the server prefix is kept whole');
      }
    }
  });

  test('changed or shortened names get a stable hash suffix, so names that sanitise alike stay apart', () => {
    const dotted = callerName('files', 'files.read');
    assert.match(dotted, /^files__files_read_[A-Za-z0-9]{8}$/);
    assert.equal(callerName('files', 'files.read'), dotted, 'stable');
    assert.notEqual(callerName('files', 'files read'), dotted, 'another name that sanitises alike differs by its hash');
    assert.notEqual(callerName('files', 'files_read'), dotted, 'a literal name is not shadowed');
    const long = 'a_tool_with_a_deliberately_very_long_name_that_no_function_calling_api_accepts_as_is';
    const shortened = callerName('web', long);
    assert.equal(shortened.length, 64);
    assert.ok(shortened.startsWith('web__a_tool_with_a_deliberately'));
    assert.notEqual(callerName('web', `${long}_2`), shortened, 'two long names with one beginning stay apart');
  });

  test('the name map keeps the first of two names that come out the same', () => {
    const map = new NameMap<string>();
    assert.equal(map.add('web__x', 'first'), true);
    assert.equal(map.add('web__x', 'second'), false);
    assert.equal(map.get('web__x'), 'first');
    assert.equal(map.get('web__y'), undefined);
  });
});

describe('caller URIs of upstream resources', () => {
  test('the upstream URI is appended unchanged and maps back, template variables intact', () => {
    for (const uri of ['file:///srv/a.txt', 'fake://greetings/{name}', 'https://example.com/x?y=1#z', 'db://{+path}/rows{?q}', 'weird uri with spaces']) {
      const made = callerUri('files', uri);
      assert.equal(made, `sluice-mcp://files/${uri}`);
      assert.deepEqual(upstreamUriOf(made), { serverId: 'files', uri });
    }
  });

  test('what is not one of ours maps to nothing', () => {
    for (const uri of ['file:///a', 'sluice-mcp://', 'sluice-mcp://files', 'sluice-mcp://files/', 'sluice-mcp:///x', 'SLUICE-MCP://files/x']) assert.equal(upstreamUriOf(uri), undefined, uri);
  });
});
