// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { AGENT_BIN, runClaudeCode, runCli } from './support/agent-cli.js';
import { createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

/**
 * The coding agents as a developer runs them: no `--model`, no `-m`, only the lines
 * docs/dialects.md gives (the base URL and the key; the Gemini CLI's sign-in choice). Each asks for its own default model
 * names (Claude Code `claude-opus-…`, the Gemini CLI a `gemini-…-flash-lite` classifier, then
 * `gemini-…-flash`), which no catalogue lists: `model_aliases` patterns send them to the
 * operator's models. Two gateways: one whose patterns point at models on translated upstreams
 * (`claude-*` → a vLLM model, `gemini-*` → an Anthropic model), one at same-dialect upstreams.
 */

let upstreams: ThreeUpstreams;
let translated: RunningSluice;
let sameDialect: RunningSluice;
const keys = new Map<RunningSluice, string>();

const MODELS = `
models:
  - { id: claude-house, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-house, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
`;

before(async () => {
  upstreams = await startThreeUpstreams();
  [translated, sameDialect] = await Promise.all([
    startSluice({ config: `${upstreams.providersYaml}${MODELS}\nmodel_aliases:\n  "claude-*": llama-chat\n  "gemini-*": claude-house\n` }),
    startSluice({ config: `${upstreams.providersYaml}${MODELS}\nmodel_aliases:\n  "claude-*": claude-house\n  "gemini-*": gemini-house\n` }),
  ]);
  for (const sluice of [translated, sameDialect]) keys.set(sluice, (await createKey(sluice.dataDir, 'acme')).key);
});

after(async () => {
  assert.equal(await translated.stop(), 0);
  assert.equal(await sameDialect.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

/** A fresh home; the agents' calls home are switched off (offline here, they would only fail), which a developer need not do. */
function home(prefix: string): { home: string; work: string } {
  const dir = tempDir(prefix);
  const work = join(dir, 'work');
  mkdirSync(work);
  return { home: dir, work };
}

/** `claude -p`, with the two lines a developer sets: ANTHROPIC_BASE_URL and the key (no `--model`). */
function claude(sluice: RunningSluice, prompt: string) {
  return runClaudeCode(sluice.url, keys.get(sluice)!, undefined, prompt);
}

/**
 * `gemini -p`, with the three lines a developer sets: GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY and
 * GEMINI_CLI_TRUST_WORKSPACE. Headless, the CLI 0.61 takes a base URL in the environment for its
 * `gateway` sign-in, which it then refuses ("Invalid auth method selected."): the API-key sign-in
 * must be chosen in its settings, the one line docs/dialects.md gives (interactive, it asks once).
 */
function gemini(sluice: RunningSluice, prompt: string) {
  const { home: dir, work } = home('sluice-gemini-');
  mkdirSync(join(dir, '.gemini'));
  writeFileSync(join(dir, '.gemini', 'settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }));
  return runCli(
    process.execPath,
    [join(AGENT_BIN, 'gemini'), '-o', 'json', '-p', prompt],
    {
      GOOGLE_GEMINI_BASE_URL: sluice.url,
      GEMINI_API_KEY: keys.get(sluice)!,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      HOME: dir,
      GEMINI_CLI_HOME: dir,
      // The test's own: the CLI would re-launch itself with a bigger heap, and draw colours for a terminal.
      GEMINI_CLI_NO_RELAUNCH: 'true',
      TERM: 'dumb',
    },
    work,
  );
}

/** The ledger rows of `operation`, once there are at least `count`. */
function rowsOf(sluice: RunningSluice, operation: string, count: number) {
  return eventually(async () => {
    const found = (await sluice.ledger()).filter((row) => row.operation === operation);
    return found.length >= count ? found : undefined;
  });
}

describe('Claude Code with no --model', () => {
  test('HEAD / (its first call) is answered as GET / is, not with an error', async () => {
    const head = await fetch(`${translated.url}/`, { method: 'HEAD', redirect: 'manual' });
    const get = await fetch(`${translated.url}/`, { redirect: 'manual' });
    assert.equal(head.status, get.status);
    assert.ok(head.status < 400, `HEAD / answered ${head.status}`);
    assert.equal(await head.text(), '');
  });

  test('its default claude-opus-… model is served by the vLLM model `claude-*` points at, translated', async () => {
    const result = await claude(translated, 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.equal(output.is_error, false, result.stdout);
    assert.ok(typeof output.result === 'string' && output.result.length > 0);
    const calls = upstreams.vllm.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 1, 'the prompt reached the vLLM upstream');
    assert.ok(calls.every((call) => call.body.model === 'upstream-model'), 'the upstream is asked for its own model');
    assert.equal(upstreams.anthropic.requests.length, 0);
    const rows = await rowsOf(translated, 'messages', calls.length);
    assert.ok(rows.every((row) => row.model === 'llama-chat' && row.status === 200), JSON.stringify(rows));
    // The agent's own default (2.1.197's, `[1m]` its mark for the context-1m beta), which the answers carried back to it.
    assert.deepEqual(Object.keys(output.modelUsage ?? {}), ['claude-opus-4-8[1m]'], JSON.stringify(output.modelUsage));
  });

  test('on a same-dialect upstream its body is relayed, with its context-1m beta, to the Anthropic model `claude-*` points at', async () => {
    const result = await claude(sameDialect, 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.equal(output.is_error, false, result.stdout);
    const calls = upstreams.anthropic.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 1);
    assert.equal(calls[0]!.body.model, 'claude-test');
    assert.ok(calls[0]!.body.tools.length > 10, 'Claude Code’s own tools go upstream');
    assert.match(String(calls[0]!.headers['anthropic-beta']), /context-1m/, 'its beta headers are passed on');
    const rows = await rowsOf(sameDialect, 'messages', calls.length);
    assert.ok(rows.every((row) => row.model === 'claude-house' && row.status === 200 && row.stream === 1), JSON.stringify(rows));
    assert.equal(output.usage.output_tokens, rows.at(-1)!.completion_tokens);
  });
});

describe('the Gemini CLI with no -m', () => {
  test('its classifier and its main model are both served by the Anthropic model `gemini-*` points at, translated', async () => {
    const result = await gemini(translated, 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.ok(typeof output.response === 'string' && output.response.length > 0, result.stdout);
    const calls = upstreams.anthropic.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 1);
    assert.ok(calls.every((call) => call.body.model === 'claude-test'));
    // The classifier's Google-style schema (upper-case types) arrives as a closed JSON Schema, which Anthropic takes.
    const classifier = calls.find((call) => call.body.output_config !== undefined);
    assert.equal(classifier?.body.output_config.format.schema.type, 'object', JSON.stringify(classifier?.body.output_config));
    assert.equal(classifier?.body.output_config.format.schema.additionalProperties, false);
    assert.equal(upstreams.gemini.requests.length, 0);
    const rows = await rowsOf(translated, 'generate_content', calls.length);
    assert.ok(rows.every((row) => row.model === 'claude-house' && row.status === 200), JSON.stringify(rows));
    // The CLI 0.61's own defaults, the classifier's and the main model's, each served under its name.
    assert.deepEqual(Object.keys(output.stats?.models ?? {}), ['gemini-3.5-flash-lite', 'gemini-3.8-flash'], JSON.stringify(output.stats));
  });

  test('on a same-dialect upstream the classifier (JSON Schema output) and the stream go to the Gemini model `gemini-*` points at', async () => {
    const result = await gemini(sameDialect, 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.ok(typeof output.response === 'string' && output.response.length > 0, result.stdout);
    const calls = upstreams.gemini.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 1);
    assert.ok(calls.every((call) => /\/models\/gemini-test:(stream)?[gG]enerateContent/.test(call.path)), JSON.stringify(calls.map((c) => c.path)));
    assert.ok(calls.some((call) => call.path.includes(':generateContent') && call.body.generationConfig?.responseJsonSchema !== undefined), 'the classifier call came');
    assert.ok(calls.some((call) => call.path.includes(':streamGenerateContent')), 'the answer is streamed');
    const rows = await rowsOf(sameDialect, 'generate_content', calls.length);
    assert.ok(rows.every((row) => row.model === 'gemini-house' && row.status === 200), JSON.stringify(rows));
  });
});

// Codex with no flags (its default `gpt-6.1-sol` sent by a `gpt-*` pattern, its tools in an `additional_tools` item) runs in
// agent-clis.test.ts, on every translated upstream and on a native Responses one.
