import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { ListedModel } from './fakes/model-lists.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, eventually, startSluice, tempDir, type LedgerRow, type RunningSluice } from './support/sluice.js';

/**
 * Aliases and `model_aliases` patterns through the official SDKs: a caller naming an alias is
 * served by the model it points at (allow-list, limits, prices and the ledger go by that model's
 * id), and every answer, streamed or whole, carries the name the caller asked for.
 */
let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let full: string;

const PRICES = { input: 1, output: 2 };

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - id: llama-chat
    provider: vllm
    upstream_model: upstream-model
    endpoints: [chat]
    aliases: [llama-latest]
    pricing: { input_per_mtok: ${PRICES.input}, output_per_mtok: ${PRICES.output} }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 2048 }
model_aliases:
  gpt-4o: llama-chat
  "claude-*": claude
  "llama-*": claude
`,
  });
  full = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
const hi = [{ role: 'user' as const, content: 'Say hi' }];

/** The ledger row of a request, by its id (every reply carries `x-request-id`). */
function rowOf(requestId: string | null): Promise<LedgerRow> {
  return eventually(async () => (await sluice.ledger()).find((row) => row.request_id === requestId));
}

describe('the OpenAI SDK asking for an alias', () => {
  test("a model's own alias: the reply names the alias, the upstream gets its model, the ledger the target's id and price", async () => {
    const { data, response } = await openai(full).chat.completions.create({ model: 'llama-latest', messages: hi }).withResponse();
    assert.equal(data.model, 'llama-latest');
    assert.equal(upstreams.vllm.requests.at(-1)!.body.model, 'upstream-model');
    const row = await rowOf(response.headers.get('x-request-id'));
    assert.equal(row.model, 'llama-chat');
    assert.equal(row.status, 200);
    const expected = (row.prompt_tokens * PRICES.input + row.completion_tokens * PRICES.output) / 1e6;
    assert.ok(expected > 0 && Math.abs(Number(row.cost_usd) - expected) < 1e-12, `cost ${row.cost_usd}, expected ${expected} at the target's price`);
  });

  test('an exact name of model_aliases, streamed: every chunk names it', async () => {
    const { data: stream, response } = await openai(full).chat.completions.create({ model: 'gpt-4o', messages: hi, stream: true, stream_options: { include_usage: true } }).withResponse();
    const models = new Set<string>();
    let text = '';
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.deepEqual([...models], ['gpt-4o']);
    assert.ok(text.length > 0);
    const row = await rowOf(response.headers.get('x-request-id'));
    assert.equal(row.model, 'llama-chat');
    assert.equal(row.stream, 1);
  });

  test('an exact alias wins over a pattern that also matches it (`llama-*` points elsewhere)', async () => {
    const reply = await openai(full).chat.completions.create({ model: 'llama-latest', messages: hi });
    assert.equal(reply.model, 'llama-latest');
    assert.equal(upstreams.vllm.requests.length, 1);
    assert.equal(upstreams.anthropic.requests.length, 0);
  });

  test('a name a pattern matches goes to its target, which answers under that name; models.retrieve describes it so', async () => {
    const reply = await openai(full).chat.completions.create({ model: 'llama-9000', messages: hi });
    assert.equal(reply.model, 'llama-9000');
    assert.equal(upstreams.anthropic.requests.at(-1)!.body.model, 'claude-test');
    const described = await openai(full).models.retrieve('gpt-4o');
    assert.equal(described.id, 'gpt-4o');
    await assert.rejects(openai(full).chat.completions.create({ model: 'mistral-large', messages: hi }), OpenAI.NotFoundError);
  });

  test('/v1/models lists each exact alias as an entry of its own beside its model; patterns are not listed', async () => {
    const ids: string[] = [];
    for await (const model of openai(full).models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['llama-chat', 'llama-latest', 'gpt-4o', 'claude']);
  });
});

describe('the Anthropic SDK asking for a name a pattern matches', () => {
  test('whole and streamed, the message names what Claude Code asked for; the ledger the target', async () => {
    const { data, response } = await anthropic(full).messages.create({ model: 'claude-opus-4-8', max_tokens: 64, messages: hi }).withResponse();
    assert.equal(data.model, 'claude-opus-4-8');
    assert.equal(upstreams.anthropic.requests.at(-1)!.body.model, 'claude-test');
    assert.equal((await rowOf(response.headers.get('x-request-id'))).model, 'claude');

    const stream = anthropic(full).messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: hi });
    const final = await stream.finalMessage();
    assert.equal(final.model, 'claude-sonnet-4-6');
    const row = await rowOf((await stream.withResponse()).response.headers.get('x-request-id'));
    assert.equal(row.model, 'claude');
    assert.equal(row.stream, 1);
  });

  test('its model list (a key allowed every model) holds the exact aliases too', async () => {
    const ids: string[] = [];
    for await (const model of anthropic(full).models.list()) ids.push(model.id);
    assert.deepEqual(new Set(ids), new Set(['llama-chat', 'llama-latest', 'gpt-4o', 'claude']));
  });
});

describe('the Gemini list (x-goog-api-key)', () => {
  test("holds each exact alias as a model of its own, its base the model it stands for; one alias described alone", async () => {
    const listed = (await (await fetch(`${sluice.url}/v1beta/models`, { headers: { 'x-goog-api-key': full } })).json()) as { models: { name: string; baseModelId: string }[] };
    assert.deepEqual(listed.models.map((m) => [m.name, m.baseModelId]), [['models/llama-chat', 'llama-chat'], ['models/llama-latest', 'llama-chat'], ['models/gpt-4o', 'llama-chat'], ['models/claude', 'claude']]);
    const one = (await (await fetch(`${sluice.url}/v1beta/models/claude-haiku-4-5`, { headers: { 'x-goog-api-key': full } })).json()) as { name: string; baseModelId: string };
    assert.deepEqual([one.name, one.baseModelId], ['models/claude-haiku-4-5', 'claude']);
  });
});

describe("a key's model list and aliases", () => {
  test('a key allowed only the target uses its aliases, and sees them listed', async () => {
    const key = (await createKey(sluice.dataDir, 'acme', ['--models', 'llama-chat', '--config', join(sluice.dataDir, 'sluice.yaml')])).key;
    assert.equal((await openai(key).chat.completions.create({ model: 'gpt-4o', messages: hi })).model, 'gpt-4o');
    assert.equal((await openai(key).chat.completions.create({ model: 'llama-latest', messages: hi })).model, 'llama-latest');
    const ids: string[] = [];
    for await (const model of openai(key).models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['llama-chat', 'llama-latest', 'gpt-4o']);
    // `llama-9000` matches a pattern whose target this key may not use.
    await assert.rejects(openai(key).chat.completions.create({ model: 'llama-9000', messages: hi }), (error: unknown) => error instanceof OpenAI.PermissionDeniedError && /llama-9000/.test(error.message));
  });

  test('a key not allowed the target gets the usual 403 for its aliases, in each dialect, and does not see them listed', async () => {
    const key = (await createKey(sluice.dataDir, 'acme', ['--models', 'claude', '--config', join(sluice.dataDir, 'sluice.yaml')])).key;
    const refused: unknown = await openai(key).chat.completions.create({ model: 'llama-latest', messages: hi }).catch((error: unknown) => error);
    assert.ok(refused instanceof OpenAI.PermissionDeniedError);
    assert.match(refused.message, /may not use the model `llama-latest`\. Check/);
    assert.doesNotMatch(refused.message, /llama-chat/, 'the model the alias stands for is not told to a key that may not use it');
    const row = await rowOf(refused.headers.get('x-request-id'));
    assert.deepEqual([row.model, row.status, row.error_kind], ['llama-chat', 403, 'model_not_permitted'], 'the refusal is recorded under the model the alias stands for');
    await assert.rejects(anthropic(key).messages.create({ model: 'gpt-4o', max_tokens: 16, messages: hi }), Anthropic.PermissionDeniedError);
    assert.equal(upstreams.vllm.requests.length, 0, 'nothing reached the upstream');
    const ids: string[] = [];
    for await (const model of anthropic(key).models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['claude']);
  });

  test("a key's models are model ids: naming an alias is refused with the id to name", async () => {
    const result = await cli(['keys', 'create', '--account', 'acme', '--data', sluice.dataDir, '--config', join(sluice.dataDir, 'sluice.yaml'), '--models', 'llama-latest']);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /'llama-latest' stands for the model 'llama-chat'/);
  });

  test("limits count requests by alias and by id together, against the key (rpm 2: the third is refused)", async () => {
    const key = (await createKey(sluice.dataDir, 'acme', ['--rpm', '2'])).key;
    await openai(key).chat.completions.create({ model: 'llama-latest', messages: hi });
    await openai(key).chat.completions.create({ model: 'llama-chat', messages: hi });
    await assert.rejects(openai(key).chat.completions.create({ model: 'gpt-4o', messages: hi }), OpenAI.RateLimitError);
    assert.equal(upstreams.vllm.requests.length, 2);
  });
});

describe('the public /models page', () => {
  test("marks each alias under the model it names, and shows the patterns in order with their targets", async () => {
    const page = await (await fetch(`${sluice.url}/models`)).text();
    const row = (id: string) => page.slice(page.indexOf(`<tr data-model="${id}">`), page.indexOf('</tr>', page.indexOf(`<tr data-model="${id}">`)));
    assert.match(row('llama-chat'), /aliases: <code>llama-latest<\/code>, <code>gpt-4o<\/code>/);
    assert.doesNotMatch(row('claude'), /aliases:/);
    assert.ok(!page.includes('<tr data-model="gpt-4o">'), 'an alias is no row of its own');
    const patterns = page.slice(page.indexOf('id="model-patterns"'));
    assert.match(patterns, /<code>claude-\*<\/code> → <a href="\/models\/claude"><code>claude<\/code><\/a>; <code>llama-\*<\/code> → <a href="\/models\/claude">/);
    const aliasPage = await fetch(`${sluice.url}/models/gpt-4o?format=json`, { redirect: 'manual' });
    assert.equal(aliasPage.status, 303);
    assert.equal(aliasPage.headers.get('location'), '/models/llama-chat?format=json', "an alias's page is its model's");
    const searched = await (await fetch(`${sluice.url}/models?q=gpt-4o`)).text();
    assert.ok(searched.includes('<tr data-model="llama-chat">') && !searched.includes('<tr data-model="claude">'), 'a search finds a model by its alias');
  });
});

describe('a model registered in the console with aliases', () => {
  test('its aliases are served and listed like the file\'s; an alias another model holds is refused, naming it', async () => {
    await createAccount(sluice.dataDir, 'admin', 'admin-password-1', true);
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('admin', 'admin-password-1');
    const entry = { csrf, id: 'console-llama', provider: 'vllm', upstream_model: 'upstream-model', endpoints: 'chat' };
    const clash = await client.post('/app/catalogue/models/new', { ...entry, aliases: 'house-llama llama-latest' });
    assert.equal(clash.status, 400);
    assert.match(clash.text, /&#39;llama-latest&#39; is already an alias of &#39;llama-chat&#39;/);
    const saved = await client.post('/app/catalogue/models/new', { ...entry, aliases: 'house-llama, house-llama-2' });
    assert.equal(saved.status, 303, saved.text);
    assert.match((await client.get('/app/catalogue/models/console-llama/edit')).text, /name="aliases" type="text" value="house-llama, house-llama-2"/);
    try {
      const { data, response } = await openai(full).chat.completions.create({ model: 'house-llama-2', messages: hi }).withResponse();
      assert.equal(data.model, 'house-llama-2');
      assert.equal((await rowOf(response.headers.get('x-request-id'))).model, 'console-llama');
      const ids: string[] = [];
      for await (const model of openai(full).models.list()) ids.push(model.id);
      assert.deepEqual(ids.slice(-3), ['console-llama', 'house-llama', 'house-llama-2']);
    } finally {
      assert.equal((await client.post('/app/catalogue/models/console-llama/delete', { csrf })).status, 303);
    }
  });
});

describe('a pattern pointing at a discovered model', () => {
  test('serves once discovery lists the model, names nothing (404, and a warning in the log) while it is gone, and serves again when it returns', async () => {
    const listed: ListedModel[] = [{ id: 'qwen-7b' }];
    const upstream = await startFakeOpenAI({ models: ['qwen-7b'], listed });
    const discovering = await startSluice({
      config: `providers:\n  - { id: vllm, kind: openai, base_url: '${upstream.url}', discover: { interval_ms: 1000 } }\nmodel_aliases:\n  "claude-*": qwen-7b\n`,
    });
    try {
      const key = (await createKey(discovering.dataDir, 'acme')).key;
      const client = new OpenAI({ apiKey: key, baseURL: `${discovering.url}/v1`, maxRetries: 0 });
      const ask = () => client.chat.completions.create({ model: 'claude-opus-4-8', messages: hi }).withResponse();
      const served = await eventually(async () => ask().catch(() => undefined), 10_000, 'the discovered target');
      assert.equal(served.data.model, 'claude-opus-4-8');
      assert.equal((await eventually(async () => (await discovering.ledger()).find((row) => row.request_id === served.response.headers.get('x-request-id')))).model, 'qwen-7b');

      listed.length = 0;
      await eventually(async () => ask().then(() => undefined, (error: unknown) => (error instanceof OpenAI.NotFoundError ? true : undefined)), 10_000, 'the alias to name nothing');
      await eventually(() => (discovering.stderr().includes("model_aliases 'claude-*': no model has the id 'qwen-7b'") ? true : undefined), 10_000, 'the warning');

      listed.push({ id: 'qwen-7b' });
      assert.equal((await eventually(async () => ask().catch(() => undefined), 10_000, 'the target back')).data.model, 'claude-opus-4-8');
    } finally {
      assert.equal(await discovering.stop(), 0);
      await upstream.close();
    }
  });
});

describe('aliases at start-up and on reload', () => {
  const withAliases = (aliases: string) => `${upstreams.providersYaml}
models:
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
model_aliases:
${aliases}`;

  test('serve refuses to start on an alias that cannot stand, naming the entry', async () => {
    const data = tempDir();
    const file = join(data, 'sluice.yaml');
    writeFileSync(file, withAliases('  "claude-*": claude-sonnet\n'));
    const result = await cli(['serve', '--listen', '127.0.0.1:0', '--data', data, '--config', file]);
    assert.equal(result.code, 1);
    assert.ok(result.stderr.includes(`${file}: model_aliases ('claude-*': claude-sonnet): no model has the id 'claude-sonnet'`), result.stderr);
  });

  test('a reload with a bad alias keeps the aliases in force; a good one brings its own', async () => {
    const running = await startSluice({ config: withAliases('  "claude-*": llama-chat\n') });
    try {
      const client = new OpenAI({ apiKey: (await createKey(running.dataDir, 'acme')).key, baseURL: `${running.url}/v1`, maxRetries: 0 });
      const ask = (model: string) => client.chat.completions.create({ model, messages: hi });
      assert.equal((await ask('claude-opus-4-8')).model, 'claude-opus-4-8');
      const file = join(running.dataDir, 'sluice.yaml');
      writeFileSync(file, withAliases('  "claude-*": llama-chat\n  "gpt-*": gpt-4o\n'));
      running.child.kill('SIGHUP');
      const refusal = await eventually(() => running.stderr().split('\n').find((line) => line.includes('configuration not reloaded')), 10_000, 'the refusal in the log');
      assert.match(JSON.parse(refusal).msg, /model_aliases \('gpt-\*': gpt-4o\): no model has the id 'gpt-4o'/);
      assert.equal((await ask('claude-opus-4-8')).model, 'claude-opus-4-8', 'the aliases in force stay');

      writeFileSync(file, withAliases('  "gpt-*": llama-chat\n'));
      running.child.kill('SIGHUP');
      await eventually(() => ask('gpt-6.1-sol').then(() => true, () => undefined), 10_000, 'the new pattern');
      await assert.rejects(ask('claude-opus-4-8'), OpenAI.NotFoundError, 'the pattern taken out names nothing');
    } finally {
      assert.equal(await running.stop(), 0);
    }
  });
});
