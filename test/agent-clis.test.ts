// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { AGENT_BIN, geminiCli, runClaudeCode, runCli } from './support/agent-cli.js';
import { createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

/**
 * The coding agents people point at gateways, installed from npm (package.json pins them), run
 * one-shot through Sluice to the fake upstreams: Claude Code speaks only Anthropic's Messages API,
 * the Gemini CLI only Google's generateContent, Codex only OpenAI's Responses API. Each runs in an empty environment with its own home,
 * no retries, and its calls home switched off (offline here, they would only fail).
 */

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;

const UPSTREAM_MODELS = { vllm: 'upstream-model', anthropic: 'claude-test', gemini: 'gemini-test' } as const;
const PROVIDER_IDS = { vllm: 'vllm', anthropic: 'anthropic', gemini: 'google' } as const;
type Upstream = keyof typeof UPSTREAM_MODELS;

/**
 * The gateway's models. Codex asks for `gpt-6.1-sol` when none is named: the `gpt-*` pattern sends
 * it to `codex-default`, on the upstream given (`gpt-native`, an exact id, wins before the pattern).
 */
function gatewayConfig(codexDefault: Upstream | 'native'): string {
  const sol = codexDefault === 'native' ? 'provider: vllm, upstream_model: upstream-model, endpoints: [responses], upstream_api: responses, owned_by: native' : `provider: ${PROVIDER_IDS[codexDefault]}, upstream_model: ${UPSTREAM_MODELS[codexDefault]}, endpoints: [chat], max_output_tokens: 8000`;
  return `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gpt-native, provider: vllm, upstream_model: upstream-model, endpoints: [responses], upstream_api: responses }
  - { id: claude-strict, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000, hosted_tools: refuse }
  - { id: codex-default, ${sol} }
model_aliases:
  "gpt-*": codex-default
`;
}

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({ config: gatewayConfig('vllm') });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

function claude(model: string, prompt: string) {
  return runClaudeCode(sluice.url, key, model, prompt);
}

function gemini(model: string, prompt: string) {
  const { work, env } = geminiCli(sluice.url, key);
  return runCli(process.execPath, [join(AGENT_BIN, 'gemini'), '-m', model, '-o', 'json', '-p', prompt], env, work);
}

describe('Claude Code through Sluice', () => {
  for (const [model, upstream] of [
    ['claude', 'anthropic'],
    ['llama-chat', 'vllm'],
    ['gemini-flash', 'gemini'],
  ] as const) {
    test(`claude -p answers through ${model} (${upstream} upstream), with its tools, thinking and cache markers`, async () => {
      const result = await claude(model, 'Say hello to the gateway.');
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const output = JSON.parse(result.stdout);
      assert.equal(output.is_error, false, result.stdout);
      assert.ok(typeof output.result === 'string' && output.result.length > 0);
      const calls = upstreams[upstream].requests.filter((r) => r.method === 'POST');
      assert.ok(calls.length >= 1, 'the prompt reached the upstream');
      const rows = await eventually(async () => {
        const found = (await sluice.ledger()).filter((row) => row.operation === 'messages' && row.model === model);
        return found.length >= calls.length ? found : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200 && row.stream === 1 && row.completion_tokens > 0), JSON.stringify(rows));
      if (upstream === 'anthropic') {
        const sent = calls[0]!;
        assert.equal(sent.body.model, 'claude-test');
        assert.ok(sent.body.tools.length > 10, 'Claude Code’s own tools go upstream');
        assert.match(String(sent.headers['anthropic-beta']), /claude-code-/);
        assert.equal(output.usage.output_tokens, rows.at(-1)!.completion_tokens);
      }
    });
  }
});

/** Codex one-shot through Sluice, with `model` named on its command line or (undefined) its own default. */
function codex(model: string | undefined, prompt: string) {
  const home = tempDir('sluice-codex-');
  const work = join(home, 'work');
  mkdirSync(work);
  mkdirSync(join(home, '.codex'));
  // The provider as docs/dialects.md gives it to a team, in config.toml (retries off for the tests).
  writeFileSync(
    join(home, '.codex', 'config.toml'),
    ['model_provider = "sluice"', '', '[model_providers.sluice]', 'name = "Sluice"', `base_url = "${sluice.url}/v1"`, 'env_key = "SLUICE_API_KEY"', 'wire_api = "responses"', 'request_max_retries = 0', 'stream_max_retries = 0', ''].join('\n'),
  );
  return runCli(
    join(AGENT_BIN, 'codex'),
    [
      'exec', '--ephemeral', '--skip-git-repo-check', '--sandbox', 'read-only', '--json', '-C', work,
      ...(model === undefined ? [] : ['-c', `model=${model}`]),
      // Its plugin and analytics calls go to GitHub and chatgpt.com.
      '-c', 'analytics.enabled=false', '-c', 'features.plugins=false',
      prompt,
    ],
    { HOME: home, CODEX_HOME: join(home, '.codex'), SLUICE_API_KEY: key },
    work,
  );
}

/** Codex's `--json` events: the last agent message and the turn's usage. */
function codexOutcome(stdout: string): { text: string | undefined; usage: { input_tokens: number; output_tokens: number } | undefined } {
  let text: string | undefined;
  let usage;
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line);
    if (event.type === 'item.completed' && event.item?.type === 'agent_message') text = event.item.text;
    if (event.type === 'turn.completed') usage = event.usage;
  }
  return { text, usage };
}

/** The recorded first request of Codex 0.169 in each of its shapes (test/unit/fixtures/dialects/requests/openai-responses/). */
function recordedCodexBody(name: 'codex-exec' | 'codex-exec-default-model'): Record<string, any> {
  const file = join(dirname(fileURLToPath(import.meta.url)), 'unit', 'fixtures', 'dialects', 'requests', 'openai-responses', `${name}.json`);
  return JSON.parse(readFileSync(file, 'utf8')).request.body;
}

/** The function names a translated upstream was offered, in its own wire. */
function offeredNames(upstream: Upstream, body: any): string[] {
  if (upstream === 'gemini') return body.tools.flatMap((tool: any) => (tool.functionDeclarations ?? []).map((f: any) => f.name));
  if (upstream === 'anthropic') return body.tools.map((tool: any) => tool.name);
  return body.tools.map((tool: any) => tool.function.name);
}

/** The text of the tool results a translated upstream was sent (the last turn of its request). */
function toolResultTexts(upstream: Upstream, body: any): string[] {
  if (upstream === 'gemini') return body.contents.at(-1).parts.filter((p: any) => p.functionResponse).map((p: any) => JSON.stringify(p.functionResponse.response));
  if (upstream === 'anthropic') return body.messages.at(-1).content.filter((b: any) => b.type === 'tool_result').map((b: any) => JSON.stringify(b.content));
  return body.messages.filter((m: any) => m.role === 'tool').map((m: any) => JSON.stringify(m.content));
}

/** Points `codex-default` (where `gpt-6.1-sol` goes) at another upstream: the gateway reloads its file, seen in /v1/models' owned_by. */
async function codexDefaultOn(upstream: Upstream | 'native'): Promise<void> {
  writeFileSync(join(sluice.dataDir, 'sluice.yaml'), gatewayConfig(upstream));
  const owner = upstream === 'native' ? 'native' : PROVIDER_IDS[upstream];
  await eventually(
    async () => {
      const list = (await (await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: { id: string; owned_by: string }[] };
      return list.data.find((m) => m.id === 'codex-default')?.owned_by === owner ? true : undefined;
    },
    10_000,
    `codex-default on ${upstream}`,
  );
}

describe('Codex through Sluice', () => {
  test('codex exec with no model on a native Responses upstream: its additional_tools and new fields reach it untouched', async () => {
    await codexDefaultOn('native');
    const result = await codex(undefined, 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.ok((codexOutcome(result.stdout).text ?? '').length > 0, result.stdout);
    const sent = upstreams.vllm.requests.filter((r) => r.method === 'POST')[0]!;
    assert.match(sent.path, /\/responses$/);
    assert.equal(sent.body.tools, undefined);
    assert.deepEqual(sent.body.input[0].tools.map((tool: { type: string; name: string }) => `${tool.type} ${tool.name}`), ['namespace functions', 'namespace clock', 'namespace collaboration']);
    assert.equal(sent.body.input[0].tools[0].tools[0].type, 'custom');
    assert.deepEqual([sent.body.reasoning.context, sent.body.text.verbosity], ['all_turns', 'low']);
  });

  test('codex exec answers through gpt-native (a native Responses upstream), its hosted tools and namespace reaching it', async () => {
    const result = await codex('gpt-native', 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const { text, usage } = codexOutcome(result.stdout);
    assert.ok(text !== undefined && text.length > 0, result.stdout);
    const calls = upstreams.vllm.requests.filter((r) => r.method === 'POST');
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((row) => row.operation === 'responses' && row.model === 'gpt-native');
      return found.length >= calls.length ? found : undefined;
    });
    assert.ok(rows.every((row) => row.status === 200 && row.stream === 1), JSON.stringify(rows));
    assert.equal(usage?.output_tokens, rows.reduce((sum, row) => sum + row.completion_tokens, 0), 'Codex reports the usage the ledger holds');
    const sent = calls[0]!;
    assert.match(sent.path, /\/responses$/);
    assert.deepEqual(sent.body.tools.filter((tool: { type: string }) => tool.type !== 'function').map((tool: { type: string }) => tool.type), ['namespace', 'web_search'], 'hosted tools reach a native Responses upstream');
  });

  // Neither shape needs a per-model flag: namespaces are flattened, the custom tool becomes a function, web_search is left out.
  for (const [model, upstream] of [
    ['llama-chat', 'vllm'],
    ['claude', 'anthropic'],
    ['gemini-flash', 'gemini'],
  ] as const) {
    test(`codex exec -c model=${model} (${upstream}, translated): its namespaced tool’s call round-trips, web_search left out`, async () => {
      const result = await codex(model, 'Tidy up: call tool multi_agent_v1__close_agent');
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const { text, usage } = codexOutcome(result.stdout);
      const calls = upstreams[upstream].requests.filter((r) => r.method === 'POST');
      assert.equal(calls.length, 2, 'the call, then its result');
      const names = offeredNames(upstream, calls[0]!.body);
      assert.ok(names.includes('exec_command') && names.includes('multi_agent_v1__close_agent'), names.join());
      assert.ok(!names.some((name) => /web_search/.test(name)), 'no hosted tool reaches the upstream');
      const results = toolResultTexts(upstream, calls[1]!.body);
      assert.equal(results.length, 1, JSON.stringify(calls[1]!.body).slice(-2000));
      assert.doesNotMatch(results[0]!, /unsupported call/, 'Codex ran its namespaced tool: the call came back with its namespace');
      assert.match(text ?? '', /^Result: /, result.stdout);
      const rows = await eventually(async () => {
        const found = (await sluice.ledger()).filter((row) => row.operation === 'responses' && row.model === model);
        return found.length >= calls.length ? found : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200 && row.stream === 1), JSON.stringify(rows));
      assert.equal(usage?.output_tokens, rows.reduce((sum, row) => sum + row.completion_tokens, 0), 'Codex reports the usage the ledger holds');
    });

    test(`codex exec with no model (gpt-6.1-sol, by the gpt-* pattern, on ${upstream}, translated): its additional_tools, the custom tool exec’s call round-trips`, async () => {
      await codexDefaultOn(upstream);
      const result = await codex(undefined, 'Compute it: call tool functions__exec');
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const { text } = codexOutcome(result.stdout);
      const calls = upstreams[upstream].requests.filter((r) => r.method === 'POST');
      assert.equal(calls.length, 2, 'the call, then its result');
      const names = offeredNames(upstream, calls[0]!.body);
      assert.ok(['functions__exec', 'clock__sleep', 'collaboration__spawn_agent'].every((name) => names.includes(name)), names.join());
      const results = toolResultTexts(upstream, calls[1]!.body);
      assert.equal(results.length, 1);
      assert.doesNotMatch(results[0]!, /unsupported call/, 'Codex ran its custom tool: the call came back as a custom_tool_call');
      assert.match(results[0]!, /Script/, 'the exec tool’s own report');
      assert.match(text ?? '', /^Result: /, result.stdout);
      const rows = await eventually(async () => {
        const found = (await sluice.ledger()).filter((row) => row.operation === 'responses' && row.model === 'codex-default' && row.provider_id === PROVIDER_IDS[upstream]);
        return found.length >= calls.length ? found : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200), JSON.stringify(rows));
    });
  }

  test('the openai SDK sees x-sluice-dropped-tools on Codex’s recorded requests, whole and streamed; nothing is named when nothing was left out', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    for (const model of ['llama-chat', 'claude', 'gemini-flash']) {
      const body = { ...recordedCodexBody('codex-exec'), model };
      const whole = await client.responses.create({ ...body, stream: false } as never).withResponse();
      assert.equal(whole.response.headers.get('x-sluice-dropped-tools'), 'web_search', model);
      const streamed = await client.responses.create({ ...body, stream: true } as never).withResponse();
      assert.equal(streamed.response.headers.get('x-sluice-dropped-tools'), 'web_search', model);
      for await (const _ of streamed.data as unknown as AsyncIterable<unknown>);
      const noModel = await client.responses.create({ ...recordedCodexBody('codex-exec-default-model'), model, stream: false } as never).withResponse();
      assert.equal(noModel.response.headers.get('x-sluice-dropped-tools'), null, 'Codex’s additional_tools hold nothing hosted');
    }
  });

  test('hosted_tools: refuse restores the 400, in the Responses error shape, for the SDK and for Codex', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const before = upstreams.anthropic.requests.length;
    await assert.rejects(
      client.responses.create({ ...recordedCodexBody('codex-exec'), model: 'claude-strict', stream: true } as never),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.status, 400);
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.code, 'unsupported_parameter');
        assert.equal(error.param, 'tools[4].type');
        assert.match(error.message, /`web_search`.*hosted_tools: refuse/);
        return true;
      },
    );
    const result = await codex('claude-strict', 'Say hello to the gateway.');
    assert.notEqual(result.code, 0);
    assert.match(result.stdout, /hosted_tools: refuse/);
    assert.equal(upstreams.anthropic.requests.length, before, 'nothing reached the upstream');
  });
});

describe('the Gemini CLI through Sluice', () => {
  for (const [model, upstream] of [
    ['gemini-flash', 'gemini'],
    ['llama-chat', 'vllm'],
    // Its thinking config with its default topK 64: extended thinking, which takes no top_k.
    ['claude', 'anthropic'],
  ] as const) {
    test(`gemini -p answers through ${model} (${upstream} upstream), with its tools and thinking config`, async () => {
      const result = await gemini(model, 'Say hello to the gateway.');
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const output = JSON.parse(result.stdout);
      assert.ok(typeof output.response === 'string' && output.response.length > 0, result.stdout);
      const calls = upstreams[upstream].requests.filter((r) => r.method === 'POST');
      assert.ok(calls.length >= 1);
      const rows = await eventually(async () => {
        const found = (await sluice.ledger()).filter((row) => row.operation === 'generate_content' && row.model === model);
        return found.length >= calls.length ? found : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200 && row.stream === 1), JSON.stringify(rows));
      if (upstream === 'gemini') {
        assert.match(calls[0]!.path, /\/models\/gemini-test:streamGenerateContent\?alt=sse$/);
        assert.ok(calls[0]!.body.tools[0].functionDeclarations.length > 3, 'the CLI’s own tools go upstream');
      } else {
        assert.ok(calls[0]!.body.tools.length > 3, 'its tools are translated to functions');
      }
      if (upstream === 'anthropic') assert.equal(calls[0]!.body.top_k, undefined);
    });
  }
});
