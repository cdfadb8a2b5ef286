// The pure parts of the MCP operator's side: the allow-list as the CLI flag and the limits form read
// it, the roll-up's name of a tool call, the MCP form, and how the console tells the gateway's own address.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { applyLimitFlags, mcpAllowList } from '../../../src/cli/options.js';
import { emptyLimitValues, parseLimitValues } from '../../../src/console/limits-view.js';
import { readMcpServerForm } from '../../../src/console/pages/mcp/forms.js';
import { reachesGateway } from '../../../src/console/pages/mcp/routes.js';
import { overallWith, statusJson } from '../../../src/console/pages/status.js';
import { rolledUpName, toolOfRolledUp, TOOL_CALL_OPERATION } from '../../../src/core/tool-calls.js';
import type { McpServerView } from '../../../src/mcp/mcp-server-status.js';
import type { StatusSnapshot } from '../../../src/status/status-monitor.js';

describe('--mcp', () => {
  test('comma-separated entries, trimmed and deduplicated; none', () => {
    assert.deepEqual(mcpAllowList(' github , files/read_file,github,'), ['github', 'files/read_file']);
    assert.deepEqual(mcpAllowList('files/a/b'), ['files/a/b'], 'a tool name may hold a slash');
    assert.equal(mcpAllowList('none'), 'none');
  });

  test('an empty list, a bad entry or too many are refused, naming the entry', () => {
    assert.throws(() => mcpAllowList(' , '), { name: 'InvalidArgumentError' });
    assert.throws(() => mcpAllowList('ok,a__b'), /'a__b' must be an MCP server id or 'server\/tool'/);
    assert.throws(() => mcpAllowList('-x'), { name: 'InvalidArgumentError' });
    assert.throws(() => mcpAllowList('x/'), { name: 'InvalidArgumentError' });
    assert.throws(() => mcpAllowList('x'.repeat(33)), { name: 'InvalidArgumentError' });
    assert.throws(() => mcpAllowList(Array.from({ length: 501 }, (_, i) => `s${i}`).join(',')), /at most 500 entries/);
    assert.doesNotThrow(() => mcpAllowList(Array.from({ length: 500 }, (_, i) => `s${i}`).join(',')));
  });

  test('replaces the list whole; none removes it; other limits stay', () => {
    assert.deepEqual(applyLimitFlags({ rpm: 5, mcp: ['a'] }, { mcp: ['b', 'c/d'] }), { rpm: 5, mcp: ['b', 'c/d'] });
    assert.deepEqual(applyLimitFlags({ rpm: 5, mcp: ['a'] }, { mcp: 'none' }), { rpm: 5 });
    assert.deepEqual(applyLimitFlags({ mcp: ['a'] }, { rpm: 7 }), { rpm: 7, mcp: ['a'] });
  });
});

describe('the limits form’s MCP field', () => {
  const withMcp = (mcp: string) => parseLimitValues({ ...emptyLimitValues(), mcp });

  test('commas or spaces; empty or none is no list (no MCP server), not "no limit"', () => {
    assert.deepEqual(withMcp('github, files/read_file  files/x').limits, { mcp: ['github', 'files/read_file', 'files/x'] });
    assert.equal(withMcp('').limits, null);
    assert.equal(withMcp(' none ').limits, null);
    assert.deepEqual(parseLimitValues({ ...emptyLimitValues(), rpm: '3', mcp: 'a' }).limits, { rpm: 3, mcp: ['a'] });
  });

  test('a bad entry is the field’s error, quoting it shortened', () => {
    const { limits, errors } = withMcp(`ok bad__one ${'y'.repeat(100)}/`);
    assert.equal(limits, null);
    assert.match(errors.mcp!, /^'bad__one', 'y{60}…' must be an MCP server id or 'server\/tool'; a server id is 1-32 letters/);
  });
});

describe('the roll-up name of a tool call', () => {
  test('a tool call goes under a prefix no model id has, and back', () => {
    assert.equal(rolledUpName(TOOL_CALL_OPERATION, 'files/read_file'), 'mcp files/read_file');
    assert.equal(rolledUpName('chat', 'files/read_file'), 'files/read_file', 'a model keeps its name');
    assert.equal(toolOfRolledUp('mcp files/read_file'), 'files/read_file');
    assert.equal(toolOfRolledUp('files/read_file'), undefined);
    assert.equal(toolOfRolledUp('mcp:x/y'), undefined, 'a model id with mcp: is a model');
  });
});

describe('the MCP server form', () => {
  test('headers: blank keeps them, lines replace them, the box removes them; a bad line is the field’s error', () => {
    const form = (fields: Record<string, string>) => readMcpServerForm(new URLSearchParams({ id: 'x', url: 'https://a.example/mcp', ...fields }));
    assert.equal(form({}).headers, undefined);
    assert.deepEqual(form({ headers: 'Authorization: Bearer t\r\n\r\nX-A:  b ' }).headers, { Authorization: 'Bearer t', 'X-A': 'b' });
    assert.equal(form({ headers: 'A: b', clear_headers: '1' }).headers, null);
    assert.match(form({ headers: 'no colon' }).errors.headers!, /Name: value/);
    assert.doesNotMatch(form({ headers: 'bad name: secret-value' }).errors.headers!, /secret-value/, 'never quoting a value');
  });

  test('a stdio field posted is passed on, for the admin to refuse by name; a price is a number', () => {
    const { raw } = readMcpServerForm(new URLSearchParams([['id', 'x'], ['url', 'https://a.example/mcp'], ['command', 'sh'], ['args', '-c'], ['args', 'id']]));
    assert.deepEqual(raw.command, ['sh']);
    assert.deepEqual(raw.args, ['-c', 'id']);
    assert.equal(readMcpServerForm(new URLSearchParams({ price_per_call: '$0.5' })).raw.price_per_call, 0.5);
    assert.match(readMcpServerForm(new URLSearchParams({ price_per_call: 'lots' })).errors.price_per_call!, /amount in USD/);
  });
});

describe('the gateway’s own address', () => {
  const request = (host: string | undefined, localPort: number) => ({ headers: host === undefined ? {} : { host }, socket: { localPort } }) as unknown as IncomingMessage;

  test('the address the browser used, and loopback on the listening port', () => {
    const own = reachesGateway(request('gw.example.com:8080', 8080));
    assert.equal(own(new URL('http://gw.example.com:8080/mcp')), true);
    assert.equal(own(new URL('http://GW.example.com:8080/anything')), true);
    assert.equal(own(new URL('http://localhost:8080/mcp')), true);
    assert.equal(own(new URL('http://127.0.0.5:8080/mcp')), true);
    assert.equal(own(new URL('http://[::1]:8080/mcp')), true);
    assert.equal(own(new URL('http://127.0.0.1:8081/mcp')), false, 'another port on this host');
    assert.equal(own(new URL('https://gw.example.com/mcp')), false, 'another port by scheme');
    assert.equal(own(new URL('http://mcp.example.com:8080/mcp')), false);
  });

  test('a default port is the scheme’s', () => {
    const own = reachesGateway(request('gw.example.com', 3000));
    assert.equal(own(new URL('http://gw.example.com/mcp')), true);
    assert.equal(own(new URL('http://gw.example.com:80/mcp')), true);
    assert.equal(reachesGateway(request(undefined, 3000))(new URL('http://gw.example.com/mcp')), false, 'no Host header: loopback only');
  });
});

describe('/status.json and MCP servers', () => {
  const snapshot = (overall: 'up' | 'degraded' | 'down' | 'unknown'): StatusSnapshot => ({ generatedAt: Date.parse('2026-11-26T10:00:00Z'), overall, providers: [], degraded: [] });
  const view = (id: string, state: 'ready' | 'connecting' | 'down' | null): McpServerView => ({
    entry: { id, origin: 'config', config: { id, url: 'https://user:pw@mcp.example.com/mcp?token=t', transport: 'streamable_http', headers: { Authorization: 'Bearer secret-value' } }, headerNames: ['Authorization'] },
    transport: 'streamable_http',
    state: state === null ? null : { state, since: Date.parse('2026-11-26T09:00:00Z'), error: state === 'down' ? 'connect ECONNREFUSED' : null, protocolVersion: null, restarts: 0 },
    tools: null,
  });

  test('each server’s id, state and since; nothing of its address, headers or error', () => {
    const json = statusJson(snapshot('up'), [view('github', 'ready'), view('files', 'down'), view('new', null)]);
    assert.deepEqual(json.mcp_servers, [
      { id: 'github', status: 'ready', since: '2026-11-26T09:00:00.000Z' },
      { id: 'files', status: 'down', since: '2026-11-26T09:00:00.000Z' },
      { id: 'new', status: 'unknown', since: null },
    ]);
    assert.doesNotMatch(JSON.stringify(json), /mcp\.example\.com|secret-value|Authorization|ECONNREFUSED|token/);
  });

  test('beside models, a server down makes a gateway that is up read as degraded; it never hides worse', () => {
    const withModels = (overall: 'up' | 'degraded' | 'down' | 'unknown'): StatusSnapshot => ({ ...snapshot(overall), providers: [{ id: 'p' } as StatusSnapshot['providers'][number]] });
    assert.equal(overallWith(withModels('up'), [view('files', 'down')]), 'degraded');
    assert.equal(overallWith(withModels('up'), [view('files', 'connecting'), view('github', 'ready')]), 'up');
    assert.equal(overallWith(withModels('down'), [view('files', 'down')]), 'down');
    assert.equal(overallWith(withModels('unknown'), [view('files', 'down'), view('github', 'down')]), 'unknown', 'models without traffic stay unknown');
  });

  test('a gateway of MCP servers alone is judged by them', () => {
    assert.equal(statusJson(snapshot('unknown'), [view('files', 'ready'), view('github', 'ready')]).status, 'up');
    assert.equal(statusJson(snapshot('unknown'), [view('files', 'down'), view('github', 'ready')]).status, 'degraded');
    assert.equal(statusJson(snapshot('unknown'), [view('files', 'down'), view('github', 'down')]).status, 'down');
    assert.equal(statusJson(snapshot('unknown'), [view('files', 'connecting'), view('github', 'ready')]).status, 'unknown', 'still connecting');
    assert.equal(statusJson(snapshot('degraded'), [view('files', 'ready')]).status, 'degraded', 'a degradation of the gateway itself (Redis) still shows');
    assert.equal(statusJson(snapshot('unknown'), []).status, 'unknown', 'no servers: as before');
  });
});
