// postgres-pass: skip (real MCP clients over the wire; the store is reached only for the key and the ledger rows, which the /mcp endpoint's own tests run on PostgreSQL)
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Agent, MCPServerStreamableHttp, OpenAIChatCompletionsModel, run, setTracingDisabled } from '@openai/agents';
import OpenAI from 'openai';
import { DOTTED_TOOL_NAME, LONG_TOOL_NAME, startStreamableHttpMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';
import { AGENT_BIN, claudeCodeEnv, claudeCodeHome, geminiCli, runClaudeCode, runCli } from './support/agent-cli.js';
import { createKey, eventually, startSluice, tempDir, type LedgerRow, type RunningSluice } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';

/**
 * The MCP clients people point at a gateway, beyond the official SDK's own client (the endpoint's
 * own tests): the OpenAI Agents SDK, Claude Code, Codex and the Gemini CLI, each configured with
 * Sluice as an HTTP MCP server the way their users do, against one fake upstream MCP server (the official SDK's server
 * classes, Streamable HTTP) behind Sluice and the fake model upstreams scripted to ask for a tool.
 * Each run shows the same four things: the key's allow-list decides what the client sees, the call
 * runs on the upstream MCP server, its answer reaches the model, and the ledger has one row for it;
 * and the upstream sees its own token, never the caller's key.
 */

/** The upstream MCP server's id in Sluice: tools are `toolbox__echo` on /mcp. */
const SERVER = 'toolbox';
const UPSTREAM_TOKEN = 'upstream-mcp-token-7f3a9c21e5';

let models: ThreeUpstreams;
let toolbox: FakeMcpUpstream;
let sluice: RunningSluice;
/** Allowed two tools of the toolbox alone (`toolbox/echo,toolbox/add`). */
let key: string;
let keyId: string;
/** A key without an MCP allow-list: deny by default. */
let keyWithoutMcp: string;
/** Allowed the whole toolbox, with its tools whose names no function-calling API takes as they are. */
let keyForToolbox: string;

before(async () => {
  setTracingDisabled(true); // the Agents SDK would export its traces to OpenAI
  [models, toolbox] = await Promise.all([startThreeUpstreams(), startStreamableHttpMcpUpstream({ token: UPSTREAM_TOKEN })]);
  sluice = await startSluice({
    config: `${models.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
mcp_servers:
  - id: ${SERVER}
    url: ${toolbox.url}
    headers: { Authorization: "Bearer ${UPSTREAM_TOKEN}" }
`,
  });
  ({ key, id: keyId } = await createKey(sluice.dataDir, 'acme', ['--mcp', `${SERVER}/echo,${SERVER}/add`]));
  keyWithoutMcp = (await createKey(sluice.dataDir, 'acme')).key;
  keyForToolbox = (await createKey(sluice.dataDir, 'acme', ['--mcp', SERVER])).key;
});

after(async () => {
  // The fakes close whatever happened to the gateway, or the test process would never end.
  const stopped = sluice === undefined ? 0 : await sluice.stop();
  await Promise.all([models?.close(), toolbox?.close()]);
  assert.equal(stopped, 0);
});

beforeEach(() => {
  models.reset();
  toolbox.completedCalls.length = 0;
});

/** The ledger's MCP tool-call rows. */
async function toolCallRows(): Promise<LedgerRow[]> {
  return (await sluice.ledger()).filter((row) => row.operation === 'mcp.tools/call');
}

/** Waits for `count` more MCP tool-call rows than `before` and returns them: exactly that many, one per call. */
async function newToolCallRows(before: number, count: number): Promise<LedgerRow[]> {
  const rows = await eventually(
    async () => {
      const all = await toolCallRows();
      return all.length >= before + count ? all.slice(before) : undefined;
    },
    5000,
    `${count} mcp.tools/call ledger row(s)`,
  );
  assert.equal(rows.length, count, JSON.stringify(rows));
  return rows;
}

/** One successful call of the toolbox's echo tool with these arguments, as the ledger records it: server, tool, status, bytes in and out. */
function assertEchoRow(row: LedgerRow | undefined, args: Record<string, unknown>, keyId: string): void {
  assert.ok(row !== undefined);
  assert.deepEqual(
    { model: row.model, provider_id: row.provider_id, status: row.status, error_kind: row.error_kind, key_id: row.key_id, bytes_in: row.bytes_in },
    { model: `${SERVER}/echo`, provider_id: SERVER, status: 200, error_kind: null, key_id: keyId, bytes_in: Buffer.byteLength(JSON.stringify(args)) },
    JSON.stringify(row),
  );
  assert.ok((row.bytes_out ?? 0) > Buffer.byteLength(String(args.text)), 'the result’s bytes');
}

/** The tools/call requests the upstream MCP server received, with their arguments. */
function upstreamToolCalls(): { name: string; arguments: unknown }[] {
  return toolbox.requests.filter((r) => r.body?.method === 'tools/call').map((r) => ({ name: r.body.params.name, arguments: r.body.params.arguments }));
}

/** The caller's key never reached the upstream MCP server, which saw its own token on every request. */
function assertUpstreamSawOnlyItsToken(callerKey: string): void {
  assert.ok(toolbox.requests.length > 0);
  for (const request of toolbox.requests) {
    assert.equal(request.headers.authorization, `Bearer ${UPSTREAM_TOKEN}`);
    assert.ok(!JSON.stringify(request.headers).includes(callerKey) && !JSON.stringify(request.body ?? null).includes(callerKey), 'the caller’s Sluice key went upstream');
  }
}

describe('the OpenAI Agents SDK (MCPServerStreamableHttp) through Sluice', () => {
  const connect = async (apiKey: string) => {
    const server = new MCPServerStreamableHttp({ url: `${sluice.url}/mcp`, name: 'sluice', requestInit: { headers: { Authorization: `Bearer ${apiKey}` } }, timeout: 20_000 });
    // It probes `server/discover` first, without a session, and must fall back to `initialize`.
    await server.connect();
    return server;
  };

  test('connects, lists exactly the tools its key allows, and calls one on the upstream MCP server', async () => {
    const server = await connect(key);
    try {
      assert.ok(server.sessionId !== undefined && server.sessionId.length > 0, 'a Streamable HTTP session was opened');
      const tools = await server.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), [`${SERVER}__add`, `${SERVER}__echo`]);
      const echo = tools.find((tool) => tool.name === `${SERVER}__echo`)!;
      assert.deepEqual(echo.inputSchema.required, ['text'], 'the upstream’s input schema, passed on');
      const rowsBefore = (await toolCallRows()).length;
      const content = await server.callTool(`${SERVER}__echo`, { text: 'hello from the Agents SDK' });
      assert.deepEqual(content, [{ type: 'text', text: 'hello from the Agents SDK' }]);
      assert.deepEqual(toolbox.completedCalls, ['echo'], 'the tool ran on the upstream MCP server, under its own name');
      assert.deepEqual(upstreamToolCalls().at(-1), { name: 'echo', arguments: { text: 'hello from the Agents SDK' } });
      const [row] = await newToolCallRows(rowsBefore, 1);
      assertEchoRow(row, { text: 'hello from the Agents SDK' }, keyId);
      assertUpstreamSawOnlyItsToken(key);
    } finally {
      await server.close();
    }
  });

  test('a key without an MCP allow-list connects and sees no tool at all', async () => {
    const server = await connect(keyWithoutMcp);
    try {
      assert.deepEqual(await server.listTools(), []);
    } finally {
      await server.close();
    }
  });

  test('an Agent run: the model asks for the MCP tool, the SDK calls it through Sluice, its result reaches the model’s next request', async () => {
    const server = await connect(key);
    try {
      const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      const agent = new Agent({ name: 'toolbox user', instructions: 'Use the tools you are given.', model: new OpenAIChatCompletionsModel(client, 'llama-chat'), mcpServers: [server] });
      const rowsBefore = (await toolCallRows()).length;
      // The fake model calls the tool the prompt names, with the minimal instance of its schema ({"text":"example"}).
      const result = await run(agent, `Please call tool ${SERVER}__echo`, { maxTurns: 3 });
      const calls = models.vllm.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'));
      assert.equal(calls.length, 2, 'the tool call, then its result');
      const offered = calls[0]!.body.tools.map((tool: { function: { name: string } }) => tool.function.name).sort();
      assert.deepEqual(offered, [`${SERVER}__add`, `${SERVER}__echo`], 'the model was offered the MCP tools under their aggregated names');
      assert.deepEqual(upstreamToolCalls().at(-1), { name: 'echo', arguments: { text: 'example' } });
      const toolMessages = calls[1]!.body.messages.filter((m: { role: string }) => m.role === 'tool');
      assert.equal(toolMessages.length, 1);
      assert.match(JSON.stringify(toolMessages[0].content), /example/, 'the tool’s answer reached the model');
      assert.match(String(result.finalOutput), /^Result: .*example/);
      const [row] = await newToolCallRows(rowsBefore, 1);
      assertEchoRow(row, { text: 'example' }, keyId);
      assertUpstreamSawOnlyItsToken(key);
    } finally {
      await server.close();
    }
  });
});

describe('tool names an OpenAI model takes, through the Agents SDK', () => {
  test('every aggregated name fits [A-Za-z0-9_-]{1,64}, and an Agent calls the tool whose upstream name is 84 characters long', async () => {
    const server = new MCPServerStreamableHttp({ url: `${sluice.url}/mcp`, name: 'sluice', requestInit: { headers: { Authorization: `Bearer ${keyForToolbox}` } }, timeout: 20_000 });
    await server.connect();
    try {
      const names = (await server.listTools()).map((tool) => tool.name);
      assert.ok(names.length >= 10, names.join());
      for (const name of names) assert.match(name, /^[A-Za-z0-9_-]{1,64}$/);
      const long = names.find((name) => name.startsWith(`${SERVER}__a_tool_with`));
      assert.ok(long !== undefined && long.length === 64 && LONG_TOOL_NAME.length > 64, String(long));
      assert.ok(names.some((name) => name.startsWith(`${SERVER}__files_read_`)), `${DOTTED_TOOL_NAME} is renamed: ${names.join()}`);
      const client = new OpenAI({ apiKey: keyForToolbox, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      const agent = new Agent({ name: 'toolbox user', instructions: 'Use the tools you are given.', model: new OpenAIChatCompletionsModel(client, 'llama-chat'), mcpServers: [server] });
      // The fake OpenAI upstream refuses a function name outside OpenAI's rule, as OpenAI does: every one offered passed.
      const result = await run(agent, `Please call tool ${long}`, { maxTurns: 3 });
      assert.deepEqual(toolbox.completedCalls, [LONG_TOOL_NAME], 'the upstream ran its tool under its own long name');
      assert.match(String(result.finalOutput), /^Result: .*long/);
    } finally {
      await server.close();
    }
  });
});

describe('Claude Code with Sluice added as an HTTP MCP server', () => {
  /** A Claude Code home where `claude mcp add --transport http sluice <url>/mcp --header "Authorization: Bearer <key>"` was run, as a user does. */
  async function homeWithSluiceMcp(apiKey: string, name = 'sluice', path = '/mcp'): Promise<string> {
    const home = claudeCodeHome();
    const added = await runCli(join(AGENT_BIN, 'claude'), ['mcp', 'add', '--transport', 'http', name, `${sluice.url}${path}`, '--header', `Authorization: Bearer ${apiKey}`], claudeCodeEnv(home, sluice.url, apiKey), join(home, 'work'));
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    assert.doesNotMatch(added.stdout, new RegExp(apiKey), 'Claude Code does not print the header’s value');
    // It keeps the header in its own config file, as the issue says.
    assert.match(readFileSync(join(home, '.claude', '.claude.json'), 'utf8'), new RegExp(`Bearer ${apiKey}`));
    // Its health check opens a session with Sluice.
    const listed = await runCli(join(AGENT_BIN, 'claude'), ['mcp', 'list'], claudeCodeEnv(home, sluice.url, apiKey), join(home, 'work'));
    assert.ok(listed.stdout.split('\n').includes(`${name}: ${sluice.url}${path} (HTTP) - ✔ Connected`), `${listed.stdout}\n${listed.stderr}`);
    return home;
  }

  /** The tools Claude Code offered the model from its MCP server `sluice`. */
  const sluiceTools = (body: { tools?: { name: string }[] }) => (body.tools ?? []).map((tool) => tool.name).filter((name) => name.startsWith('mcp__sluice__')).sort();

  test('claude -p --allowedTools mcp__sluice__toolbox__echo: the tool runs on the upstream MCP server and its answer reaches the model', async () => {
    const home = await homeWithSluiceMcp(key);
    const tool = `mcp__sluice__${SERVER}__echo`;
    const rowsBefore = (await toolCallRows()).length;
    const result = await runClaudeCode(sluice.url, key, 'claude', `Please call tool ${tool}`, { home, args: ['--allowedTools', tool] });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.equal(output.is_error, false, result.stdout);
    assert.deepEqual(output.permission_denials, []);

    const calls = models.anthropic.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages') && Array.isArray(r.body.tools) && r.body.tools.length > 0);
    assert.equal(calls.length, 2, 'the tool call, then its result');
    assert.deepEqual(sluiceTools(calls[0]!.body), [`mcp__sluice__${SERVER}__add`, tool], 'Claude Code offered the tools the key allows, under mcp__sluice__<server>__<tool>');
    assert.deepEqual(toolbox.completedCalls, ['echo']);
    assert.deepEqual(upstreamToolCalls().at(-1), { name: 'echo', arguments: { text: 'example' } });
    const lastTurn = calls[1]!.body.messages.at(-1);
    const toolResults = lastTurn.content.filter((block: { type: string }) => block.type === 'tool_result');
    assert.equal(toolResults.length, 1, JSON.stringify(lastTurn).slice(0, 1000));
    assert.notEqual(toolResults[0].is_error, true, JSON.stringify(toolResults[0]));
    assert.deepEqual(toolResults[0].content, [{ type: 'text', text: 'example' }], 'the upstream tool’s answer reached the model');
    assert.equal(output.result, 'Result: example');

    const [row] = await newToolCallRows(rowsBefore, 1);
    assertEchoRow(row, { text: 'example' }, keyId);
    assertUpstreamSawOnlyItsToken(key);
  });

  test('Sluice’s /mcp/toolbox added as its own server: Claude Code calls mcp__toolbox__add under the upstream’s own name', async () => {
    const home = await homeWithSluiceMcp(key, SERVER, `/mcp/${SERVER}`);
    const tool = `mcp__${SERVER}__add`;
    const rowsBefore = (await toolCallRows()).length;
    const result = await runClaudeCode(sluice.url, key, 'claude', `Please call tool ${tool}`, { home, args: ['--allowedTools', tool] });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const calls = models.anthropic.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages') && Array.isArray(r.body.tools) && r.body.tools.length > 0);
    assert.equal(calls.length, 2, 'the tool call, then its result');
    const offered = calls[0]!.body.tools.map((t: { name: string }) => t.name).filter((name: string) => name.startsWith(`mcp__${SERVER}__`)).sort();
    assert.deepEqual(offered, [tool, `mcp__${SERVER}__echo`]);
    // The minimal instance of add's schema: {"a":1,"b":1}.
    assert.deepEqual(upstreamToolCalls().at(-1), { name: 'add', arguments: { a: 1, b: 1 } });
    const toolResults = calls[1]!.body.messages.at(-1).content.filter((block: { type: string }) => block.type === 'tool_result');
    assert.equal(toolResults.length, 1);
    // Claude Code gives the model a result's structuredContent when it has one: Sluice passed it on.
    assert.deepEqual(JSON.parse(toolResults[0].content), { sum: 2 }, 'the sum reached the model');
    const [row] = await newToolCallRows(rowsBefore, 1);
    assert.deepEqual([row!.model, row!.provider_id, row!.status], [`${SERVER}/add`, SERVER, 200]);
  });

  test('with a key without an MCP allow-list, Claude Code is offered no tool of Sluice’s', async () => {
    const home = await homeWithSluiceMcp(keyWithoutMcp);
    const result = await runClaudeCode(sluice.url, keyWithoutMcp, 'claude', 'Say hello.', { home });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const calls = models.anthropic.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages') && Array.isArray(r.body.tools) && r.body.tools.length > 0);
    assert.ok(calls.length >= 1);
    assert.deepEqual(sluiceTools(calls[0]!.body), []);
    assert.ok(calls[0]!.body.tools.length > 10, 'Claude Code’s own tools are still there');
  });
});

describe('Codex with Sluice added as an HTTP MCP server', () => {
  /**
   * A Codex home with the model provider of docs/dialects.md and `codex mcp add sluice --url
   * <url>/mcp --bearer-token-env-var SLUICE_API_KEY` run as a user does; Codex asks before any MCP
   * tool runs, which `codex exec` cannot, so the server's tools are approved in its config.
   */
  async function codexHome(): Promise<string> {
    const home = tempDir('sluice-codex-');
    mkdirSync(join(home, 'work'));
    mkdirSync(join(home, '.codex'));
    writeFileSync(
      join(home, '.codex', 'config.toml'),
      ['model_provider = "sluice"', '', '[model_providers.sluice]', 'name = "Sluice"', `base_url = "${sluice.url}/v1"`, 'env_key = "SLUICE_API_KEY"', 'wire_api = "responses"', 'request_max_retries = 0', 'stream_max_retries = 0', ''].join('\n'),
    );
    const added = await runCli(join(AGENT_BIN, 'codex'), ['mcp', 'add', 'sluice', '--url', `${sluice.url}/mcp`, '--bearer-token-env-var', 'SLUICE_API_KEY'], codexEnv(home), join(home, 'work'));
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    const config = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
    assert.match(config, /\[mcp_servers\.sluice\]\nurl = "http:\/\/127\.0\.0\.1:\d+\/mcp"\nbearer_token_env_var = "SLUICE_API_KEY"/);
    assert.doesNotMatch(config, new RegExp(key), 'the key stays in the environment, out of the config file');
    writeFileSync(join(home, '.codex', 'config.toml'), `${config.trimEnd()}\ndefault_tools_approval_mode = "approve"\n`);
    return home;
  }

  const codexEnv = (home: string) => ({ HOME: home, CODEX_HOME: join(home, '.codex'), SLUICE_API_KEY: key });

  test('codex exec: the model asks for the MCP tool, Codex calls it through Sluice, its result reaches the model', async () => {
    const home = await codexHome();
    const rowsBefore = (await toolCallRows()).length;
    const tool = `mcp__sluice__${SERVER}__echo`;
    const result = await runCli(
      join(AGENT_BIN, 'codex'),
      ['exec', '--ephemeral', '--skip-git-repo-check', '--sandbox', 'read-only', '--json', '-C', join(home, 'work'), '-c', 'model=llama-chat', '-c', 'analytics.enabled=false', '-c', 'features.plugins=false', `Please call tool ${tool}`],
      codexEnv(home),
      join(home, 'work'),
    );
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const events = result.stdout.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
    const toolCall = events.find((event) => event.type === 'item.completed' && event.item?.type === 'mcp_tool_call')?.item;
    assert.ok(toolCall !== undefined, result.stdout);
    assert.deepEqual([toolCall.server, toolCall.tool, toolCall.status, toolCall.error], ['sluice', `${SERVER}__echo`, 'completed', null]);
    assert.deepEqual(toolCall.result.content, [{ type: 'text', text: 'example' }]);

    const calls = models.vllm.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'));
    assert.equal(calls.length, 2, 'the tool call, then its result');
    const offered = calls[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name).filter((name: string) => name.startsWith('mcp__sluice__')).sort();
    assert.deepEqual(offered, [`mcp__sluice__${SERVER}__add`, tool]);
    assert.deepEqual(toolbox.completedCalls, ['echo']);
    assert.deepEqual(upstreamToolCalls().at(-1), { name: 'echo', arguments: { text: 'example' } });
    const toolMessages = calls[1]!.body.messages.filter((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMessages.length, 1);
    assert.match(JSON.stringify(toolMessages[0].content), /example/, 'the upstream tool’s answer reached the model');

    const [row] = await newToolCallRows(rowsBefore, 1);
    assertEchoRow(row, { text: 'example' }, keyId);
    assertUpstreamSawOnlyItsToken(key);
  });
});

describe('the Gemini CLI with Sluice added as an HTTP MCP server', () => {
  test('gemini -p: the model asks for the MCP tool, the CLI calls it through Sluice, its result reaches the model', async () => {
    const { home, work, env } = geminiCli(sluice.url, key);
    // As a user adds it; --trust: the CLI asks before an MCP tool runs otherwise, which -p cannot.
    const added = await runCli(process.execPath, [join(AGENT_BIN, 'gemini'), 'mcp', 'add', '--scope', 'user', '--transport', 'http', '--trust', '-H', `Authorization: Bearer ${key}`, 'sluice', `${sluice.url}/mcp`], env, work);
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    assert.deepEqual(JSON.parse(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8')).mcpServers.sluice, { url: `${sluice.url}/mcp`, type: 'http', headers: { Authorization: `Bearer ${key}` }, trust: true });

    const rowsBefore = (await toolCallRows()).length;
    // The CLI names MCP tools mcp_<its name for the server>_<tool>.
    const tool = `mcp_sluice_${SERVER}__echo`;
    const result = await runCli(process.execPath, [join(AGENT_BIN, 'gemini'), '-m', 'gemini-flash', '-o', 'json', '-p', `Please call tool ${tool}`], env, work);
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);

    const calls = models.gemini.requests.filter((r) => r.method === 'POST' && /:streamGenerateContent/.test(r.path));
    assert.equal(calls.length, 2, 'the tool call, then its result');
    const offered = calls[0]!.body.tools.flatMap((t: { functionDeclarations?: { name: string }[] }) => (t.functionDeclarations ?? []).map((f) => f.name)).filter((name: string) => name.startsWith('mcp_sluice_')).sort();
    assert.deepEqual(offered, [`mcp_sluice_${SERVER}__add`, tool]);
    assert.deepEqual(toolbox.completedCalls, ['echo']);
    assert.deepEqual(upstreamToolCalls().at(-1), { name: 'echo', arguments: { text: 'example' } });
    const responses = calls[1]!.body.contents.at(-1).parts.filter((part: { functionResponse?: unknown }) => part.functionResponse !== undefined);
    assert.equal(responses.length, 1);
    assert.equal(responses[0].functionResponse.name, tool);
    assert.match(JSON.stringify(responses[0].functionResponse.response), /example/, 'the upstream tool’s answer reached the model');
    assert.match(JSON.parse(result.stdout).response, /^Result: .*example/s);

    const [row] = await newToolCallRows(rowsBefore, 1);
    assertEchoRow(row, { text: 'example' }, keyId);
    assertUpstreamSawOnlyItsToken(key);
  });
});
