// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

/**
 * The coding agents people point at gateways, installed from npm (package.json pins them), run
 * one-shot through Sluice to the fake upstreams: Claude Code speaks only Anthropic's Messages API,
 * the Gemini CLI only Google's generateContent, Codex only OpenAI's Responses API. Each runs in an empty environment with its own home,
 * no retries, and its calls home switched off (offline here, they would only fail).
 */
const BIN = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.bin');
const SYSTEM_PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gpt-native, provider: vllm, upstream_model: upstream-model, endpoints: [responses], upstream_api: responses }
  - { id: llama-agent, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000, drop_hosted_tools: true }
  - { id: claude-agent, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000, drop_hosted_tools: true }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

/** Runs a CLI with stdin closed (each waits for more input on an open pipe) and a hard timeout. */
function runCli(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: SYSTEM_PATH, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: 90_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function claude(model: string, prompt: string) {
  const home = tempDir('sluice-claude-');
  const work = join(home, 'work');
  mkdirSync(work);
  return runCli(
    join(BIN, 'claude'),
    ['-p', prompt, '--output-format', 'json', '--model', model],
    {
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      ANTHROPIC_BASE_URL: sluice.url,
      ANTHROPIC_API_KEY: key,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_MAX_RETRIES: '0',
    },
    work,
  );
}

function gemini(model: string, prompt: string) {
  const home = tempDir('sluice-gemini-');
  const work = join(home, 'work');
  mkdirSync(join(home, '.gemini'), { recursive: true });
  mkdirSync(work);
  // Headless, the CLI takes the API-key sign-in only from settings; the base URL from the environment.
  writeFileSync(
    join(home, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1 },
      ide: { enabled: false },
    }),
  );
  return runCli(
    process.execPath,
    [join(BIN, 'gemini'), '-m', model, '-o', 'json', '-p', prompt],
    {
      HOME: home,
      GEMINI_CLI_HOME: home,
      GOOGLE_GEMINI_BASE_URL: sluice.url,
      GEMINI_API_KEY: key,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      GEMINI_CLI_NO_RELAUNCH: 'true',
      TERM: 'dumb',
    },
    work,
  );
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

function codex(model: string, prompt: string) {
  const home = tempDir('sluice-codex-');
  const work = join(home, 'work');
  mkdirSync(work);
  mkdirSync(join(home, '.codex'));
  const provider = `{name="Sluice",base_url="${sluice.url}/v1",env_key="SLUICE_API_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}`;
  return runCli(
    join(BIN, 'codex'),
    [
      'exec', '--ephemeral', '--skip-git-repo-check', '--sandbox', 'read-only', '--json', '-C', work,
      '-c', `model=${model}`, '-c', 'model_provider=sluice', '-c', `model_providers.sluice=${provider}`,
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

describe('Codex through Sluice', () => {
  for (const [model, upstream, native] of [
    ['gpt-native', 'vllm', true],
    ['llama-agent', 'vllm', false],
    ['claude-agent', 'anthropic', false],
  ] as const) {
    test(`codex exec answers through ${model} (${native ? 'a native Responses upstream' : `${upstream}, translated, hosted tools dropped`})`, async () => {
      const result = await codex(model, 'Say hello to the gateway.');
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      const { text, usage } = codexOutcome(result.stdout);
      assert.ok(text !== undefined && text.length > 0, result.stdout);
      const calls = upstreams[upstream].requests.filter((r) => r.method === 'POST');
      assert.ok(calls.length >= 1);
      const rows = await eventually(async () => {
        const found = (await sluice.ledger()).filter((row) => row.operation === 'responses' && row.model === model);
        return found.length >= calls.length ? found : undefined;
      });
      assert.ok(rows.every((row) => row.status === 200 && row.stream === 1), JSON.stringify(rows));
      assert.equal(usage?.output_tokens, rows.reduce((sum, row) => sum + row.completion_tokens, 0), 'Codex reports the usage the ledger holds');
      const sent = calls[0]!;
      if (native) {
        assert.match(sent.path, /\/responses$/);
        assert.ok(sent.body.tools.some((tool: { type: string }) => tool.type !== 'function'), 'hosted tools reach a native Responses upstream');
      } else {
        const tools = upstream === 'anthropic' ? sent.body.tools : sent.body.tools.map((tool: { function: unknown }) => tool.function);
        assert.ok(tools.length > 3, 'Codex’s function tools go upstream');
      }
    });
  }
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
