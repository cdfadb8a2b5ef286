/**
 * Budgets fail closed on unpriced models: a key (or account) with a spend budget is refused a model
 * without a price, in the caller's dialect, before anything goes upstream; a model priced at 0 is
 * free, not unpriced; keys without budgets are unaffected. The CLI warns when a budget meets
 * unpriced models, the gateway logs it at start-up and on reload, and usage reports say "unpriced"
 * rather than $0. On the suite's store (SQLite, or PostgreSQL with SLUICE_TEST_STORE=postgres).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, eventually, startSluice, tempDir, type CreatedKey, type LedgerRow, type RunningSluice } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { thrown } from './support/thrown.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let dataDir: string;
let configFile: string;
let budgeted: CreatedKey;
let unbudgeted: CreatedKey;

const config = (providers: string, extra = '') => `${providers}
models:
  - { id: priced, provider: vllm, upstream_model: upstream-model, endpoints: [chat, embeddings], pricing: { input_per_mtok: 1, output_per_mtok: 2 } }
  - { id: free, provider: vllm, upstream_model: upstream-model, endpoints: [chat, embeddings], pricing: { input_per_mtok: 0, output_per_mtok: 0 } }
  - { id: unpriced, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
  - { id: unpriced-embed, provider: vllm, upstream_model: upstream-model, endpoints: [embeddings] }
  - { id: images-only, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: { per_image: 0.04 } }
  - { id: claude-unpriced, provider: anthropic, upstream_model: claude-test, endpoints: [chat] }
  - { id: claude-free, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 0, output_per_mtok: 0 } }
  - { id: gemini-unpriced, provider: google, upstream_model: gemini-test, endpoints: [chat] }
  - { id: falls-back, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 1, output_per_mtok: 1 }, fallbacks: [unpriced] }
${extra}`;

const logs = () => sluice.stdout() + sluice.stderr();
const startupWarnings = (text: string) => text.split('\n').filter((line) => line.includes('while spend budgets are set'));

before(async () => {
  upstreams = await startThreeUpstreams();
  dataDir = tempDir();
  configFile = join(dataDir, 'sluice.yaml');
  sluice = await startSluice({ config: config(upstreams.providersYaml), dataDir });
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await upstreams.close();
});

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const chat = (key: string, model: string) => openai(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 });
const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });

async function ledgerRow(keyId: string, model: string): Promise<LedgerRow> {
  return eventually(async () => (await sluice.ledger()).filter((row) => row.key_id === keyId && row.model === model).at(-1), 5000, `the ledger row of ${model}`);
}

describe('the CLI warns when a budget meets unpriced models', () => {
  test('keys create and keys limits with --budget-usd name the unpriced models the key may use; without a budget, or on priced models only, nothing', async () => {
    const made = await cli(['keys', 'create', '--account', 'budget-co', '--json', '--data', dataDir, '--config', configFile, '--budget-usd', '10']);
    assert.equal(made.code, 0, made.stderr);
    budgeted = JSON.parse(made.stdout.trim()) as CreatedKey;
    assert.match(made.stderr, /^Warning: This key has a spend budget, and 5 models it may use have no price: claude-unpriced, gemini-unpriced, images-only, unpriced, unpriced-embed\. A budget cannot be kept on an unpriced model, so requests to them will be refused \(403\) until they are priced: .*a price of 0 makes a model free\.$/m);

    const narrow = await cli(['keys', 'create', '--account', 'budget-co', '--json', '--data', dataDir, '--config', configFile, '--budget-usd', '10', '--models', 'priced,free,unpriced']);
    assert.equal(narrow.code, 0, narrow.stderr);
    assert.match(narrow.stderr, /a model it may use has no price: unpriced\. .*requests to it will be refused \(403\) until it is priced/, 'only its allow-list counts');

    const pricedOnly = await cli(['keys', 'create', '--account', 'budget-co', '--json', '--data', dataDir, '--config', configFile, '--budget-usd', '10', '--models', 'priced,free']);
    assert.equal(pricedOnly.code, 0, pricedOnly.stderr);
    assert.equal(pricedOnly.stderr, '', 'priced and free models: no warning');

    const plain = await cli(['keys', 'create', '--account', 'plain-co', '--json', '--data', dataDir, '--config', configFile, '--rpm', '100']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stderr, '', 'no budget: no warning');
    unbudgeted = JSON.parse(plain.stdout.trim()) as CreatedKey;

    const limited = await cli(['keys', 'limits', unbudgeted.id, '--budget-usd', '5', '--data', dataDir, '--config', configFile]);
    assert.equal(limited.code, 0, limited.stderr);
    assert.match(limited.stderr, /^Warning: This key has a spend budget, and 5 models it may use have no price: /m, 'keys limits warns too');
    const cleared = await cli(['keys', 'limits', unbudgeted.id, '--budget-usd', 'none', '--data', dataDir, '--config', configFile]);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(cleared.stderr, '', 'removing the budget: no warning');
  });

  test('accounts limits with --budget-usd warns of every unpriced model', async () => {
    await createKey(dataDir, 'account-budget-co');
    const result = await cli(['accounts', 'limits', 'account-budget-co', '--budget-usd', '20', '--data', dataDir, '--config', configFile]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /^Warning: The account account-budget-co has a spend budget, and 5 models it may use have no price: claude-unpriced, gemini-unpriced, images-only, unpriced, unpriced-embed\./m);
  });
});

describe('a budgeted key on an unpriced model', () => {
  test('the openai SDK gets a 403 naming the model and the missing price; nothing reaches the upstream; the ledger row costs nothing and is not unpriced', async () => {
    await eventually(async () => ((await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${budgeted.key}` } })).ok ? true : undefined), 5000, 'the new key');
    upstreams.reset();
    const error = await thrown(chat(budgeted.key, 'unpriced'));
    assert.ok(error instanceof OpenAI.PermissionDeniedError, `a 403 (${String(error)})`);
    assert.equal(error.status, 403);
    assert.equal(error.code, 'model_unpriced');
    assert.equal(error.type, 'permission_error');
    assert.equal(error.param, 'model');
    assert.match(error.message, /The model `unpriced` has no price for this request \(none of input_per_mtok, output_per_mtok\), and this API key has a spend budget, which cannot be kept on an unpriced model\. .*a price of 0 makes it free/);
    assert.equal(upstreams.vllm.requests.length, 0, 'nothing went upstream');
    const row = await ledgerRow(budgeted.id, 'unpriced');
    assert.deepEqual([row.status, row.error_kind, row.cost_usd, Number(row.unpriced), row.attempts], [403, 'model_unpriced', 0, 0, 0]);
  });

  test('a model priced in other units than the operation is billed in is unpriced for it; so are embeddings without a price', async () => {
    upstreams.reset();
    const images = await thrown(chat(budgeted.key, 'images-only'));
    assert.ok(images instanceof OpenAI.PermissionDeniedError && images.code === 'model_unpriced', 'a per_image price does not price chat');
    const embedding = await thrown(openai(budgeted.key).embeddings.create({ model: 'unpriced-embed', input: 'some text' }));
    assert.ok(embedding instanceof OpenAI.PermissionDeniedError && embedding.code === 'model_unpriced', `embeddings are refused too (${String(embedding)})`);
    assert.equal(upstreams.vllm.requests.length, 0, 'nothing went upstream');
  });

  test("the Anthropic SDK gets its 403 permission_error, and the Gemini SDK its PERMISSION_DENIED", async () => {
    upstreams.reset();
    const error = await thrown(anthropic(budgeted.key).messages.create({ model: 'claude-unpriced', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof Anthropic.PermissionDeniedError, `Anthropic's 403 (${String(error)})`);
    const body = error.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'permission_error');
    assert.match(body.error.message, /The model `claude-unpriced` has no price for this request .*spend budget/);
    assert.equal(upstreams.anthropic.requests.length, 0, 'nothing went to Anthropic');

    const gemini = await thrown(new GoogleGenAI({ apiKey: budgeted.key, httpOptions: { baseUrl: sluice.url } }).models.generateContent({ model: 'gemini-unpriced', contents: 'hi' }));
    assert.equal((gemini as { status?: number }).status, 403);
    const geminiBody = JSON.parse(String((gemini as Error).message)) as { error: { code: number; status: string; message: string } };
    assert.deepEqual([geminiBody.error.code, geminiBody.error.status], [403, 'PERMISSION_DENIED']);
    assert.match(geminiBody.error.message, /The model `gemini-unpriced` has no price for this request .*spend budget/);
    assert.equal(upstreams.gemini.requests.length, 0, 'nothing went to Google');
  });

  test('the same key on a model priced at 0 is served, at $0 and not unpriced', async () => {
    const answer = await chat(budgeted.key, 'free');
    assert.equal(answer.choices.length, 1);
    const message = await anthropic(budgeted.key).messages.create({ model: 'claude-free', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(message.type, 'message');
    const row = await ledgerRow(budgeted.id, 'free');
    assert.deepEqual([row.status, row.cost_usd, Number(row.unpriced)], [200, 0, 0]);
    assert.ok(row.prompt_tokens > 0, 'it consumed tokens, at a price of 0');
  });

  test("a key whose account has a budget is refused as well, naming the account's budget", async () => {
    const key = await createKey(dataDir, 'account-budget-co');
    await eventually(async () => ((await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } })).ok ? true : undefined), 5000, 'the new key');
    const error = await thrown(chat(key.key, 'unpriced'));
    assert.ok(error instanceof OpenAI.PermissionDeniedError, String(error));
    assert.match(error.message, /this key's account has a spend budget/);
  });
});

describe('a key without a budget', () => {
  test('is served on an unpriced model; the ledger marks the row unpriced', async () => {
    upstreams.reset();
    const answer = await chat(unbudgeted.key, 'unpriced');
    assert.equal(answer.choices.length, 1);
    assert.equal(upstreams.vllm.requests.length, 1, 'the upstream answered');
    const row = await ledgerRow(unbudgeted.id, 'unpriced');
    assert.deepEqual([row.status, row.cost_usd, Number(row.unpriced)], [200, 0, 1]);
    await chat(unbudgeted.key, 'free');
    const free = await ledgerRow(unbudgeted.id, 'free');
    assert.deepEqual([free.status, free.cost_usd, Number(free.unpriced)], [200, 0, 0], 'a free model is not unpriced');
  });
});

describe('fallbacks', () => {
  test('an unpriced fallback is passed over for a budgeted key, and serves a key without a budget', async () => {
    for (const [key, fallsBack] of [[budgeted, false], [unbudgeted, true]] as const) {
      upstreams.reset();
      upstreams.anthropic.behaviour = { fail: { status: 500, body: '{"type":"error","error":{"type":"api_error","message":"engine down"}}' } };
      const answer = chat(key.key, 'falls-back');
      if (fallsBack) assert.equal((await answer).choices.length, 1, 'the fallback answered');
      else assert.ok((await thrown(answer)) instanceof OpenAI.InternalServerError, 'the primary failure, no fallback');
      assert.ok(upstreams.anthropic.requests.length > 0, 'the priced primary was tried');
      assert.equal(upstreams.vllm.requests.length, fallsBack ? 1 : 0, fallsBack ? 'the unpriced fallback served' : 'the unpriced fallback was not asked');
    }
    upstreams.reset();
  });
});

describe('usage reports say "unpriced" where they would say $0', () => {
  test('sluice usage (table and --json)', async () => {
    // The unpriced model: two budgeted keys refused (403, at $0: nothing consumed), the unbudgeted key served twice (once as a fallback).
    const table = await eventually(async () => {
      const result = await cli(['usage', '--by', 'model', '--data', dataDir]);
      return /^unpriced +4 +/m.test(result.stdout) ? result : undefined;
    }, 5000, 'the roll-up of the unpriced requests');
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^unpriced +4 +2 +\d+ +\d+ +unpriced$/m, 'the unpriced model: "unpriced", not 0.0000');
    assert.match(table.stdout, /^free +2 +0 +\d+ +\d+ +0\.0000$/m, 'the free one: 0.0000');
    assert.match(table.stdout, /^total \S+ to \S+ +\d+ +\d+ +\d+ +\d+ +unpriced$/m, 'a total of free and unpriced requests is unpriced too');
    const json = JSON.parse((await cli(['usage', '--json', '--by', 'model', '--data', dataDir])).stdout) as { model: string; requests: number; cost_usd: number; unpriced_requests: number }[];
    const line = json.find((group) => group.model === 'unpriced')!;
    assert.deepEqual([line.requests, line.cost_usd, line.unpriced_requests], [4, 0, 2], '--json keeps cost_usd a number and counts the unpriced requests');
    assert.equal(json.find((group) => group.model === 'free')!.unpriced_requests, 0);
  });

  test('the console usage page and its CSV', async () => {
    await createAccount(dataDir, 'usage-admin', 'a long admin password', true);
    const admin = new ConsoleClient(sluice.url);
    await admin.signIn('usage-admin', 'a long admin password');
    const page = await admin.get('/app/usage?range=7');
    assert.equal(page.status, 200);
    const line = /data-model="unpriced"[\s\S]*?<\/tr>/.exec(page.text);
    assert.ok(line, 'the unpriced model has a line');
    assert.match(line[0], /<td class="num">unpriced<\/td>/, 'its spend says unpriced');
    assert.match(/data-model="free"[\s\S]*?<\/tr>/.exec(page.text)![0], /<td class="num">\$0<\/td>/, 'the free model is $0');
    const csv = await admin.get('/app/usage.csv?range=7');
    const rows = csv.text.trim().split('\r\n').map((row) => row.split(','));
    assert.deepEqual(rows[0]!.slice(9, 11), ['cost_usd', 'unpriced_requests']);
    const unpricedLines = rows.filter((row) => row[4] === 'unpriced');
    assert.deepEqual(unpricedLines.map((row) => row.slice(9, 11)).sort(), [['0', '0'], ['0', '0'], ['unpriced', '2']], 'the refused requests cost $0; the served one is unpriced');
    assert.ok(rows.filter((row) => row[4] === 'free').every((row) => row[9] === '0' && row[10] === '0'), 'free lines cost 0');
    // The keys page's 30-day spend, from the same roll-ups: the key that was served the unpriced model says so.
    const keys = (await admin.get('/app/keys')).text;
    const keyRow = new RegExp(`data-key-id="${unbudgeted.id}"[\\s\\S]*?</tr>`).exec(keys);
    assert.ok(keyRow, 'the key has a row');
    assert.match(keyRow[0], /<td class="num">unpriced<\/td>|<span class="muted">\+ unpriced<\/span><\/td>/, 'its spend is not shown as a plain dollar figure');
  });
});

describe("the console's limit forms", () => {
  test('saving a budget on a key says which of its models are refused until priced; on priced models only, nothing', async () => {
    const admin = new ConsoleClient(sluice.url);
    await admin.signIn('usage-admin', 'a long admin password');
    const narrow = await createKey(dataDir, 'console-co', ['--models', 'priced,unpriced']);
    const pricedOnly = await createKey(dataDir, 'console-co', ['--models', 'priced,free']);
    for (const [key, warned] of [[narrow, true], [pricedOnly, false]] as const) {
      const action = `/app/keys/${key.id}/limits`;
      const form = await admin.get(action);
      const saved = await admin.post(action, { ...ConsoleClient.formFields(form.text, action), budget_usd: '3', budget_period: 'month' });
      assert.equal(saved.status, 303, saved.text);
      const notice = /<p class="notice notice-ok" role="status">([^<]*)<\/p>/.exec((await admin.get(saved.headers.get('location')!)).text)?.[1];
      assert.match(notice ?? '', /saved: \$3\/month\. They apply within a second\./);
      if (warned) assert.match(notice!, /A budget cannot be kept on a model without a price, so these are refused until they are priced \(a price of 0 makes a model free\): unpriced\.$/);
      else assert.doesNotMatch(notice!, /without a price/);
    }
  });
});

describe('the gateway logs one warning when budgets meet unpriced models', () => {
  test('at start-up, and again on a reload of the configuration', async () => {
    assert.deepEqual(startupWarnings(logs()), [], 'the first start had no budgets: no warning');
    assert.equal(await sluice.stop(), 0);
    sluice = await startSluice({ config: config(upstreams.providersYaml), dataDir });
    const [warning, ...more] = await eventually(() => {
      const found = startupWarnings(logs());
      return found.length > 0 ? found : undefined;
    }, 5000, 'the start-up warning');
    assert.equal(more.length, 0, 'one warning');
    assert.match(warning!, /5 models have no price \(claude-unpriced, gemini-unpriced, images-only, unpriced, unpriced-embed\) while spend budgets are set \(\d+ keys, 1 accounts\)/);
    writeFileSync(configFile, config(upstreams.providersYaml, '  - { id: late, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }\n'));
    const reloaded = await eventually(() => {
      const found = startupWarnings(logs());
      return found.length > 1 ? found : undefined;
    }, 10_000, 'the warning after the reload');
    assert.equal(reloaded.length, 2, 'one more warning on the reload');
    assert.match(reloaded[1]!, /6 models have no price \(.*late.*\)/, 'naming the new unpriced model');
  });
});
