import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parsePriceList, priceListSchema } from '../src/pricing/price-list.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, eventually, startSluice, tempDir, type LedgerRow, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';

// Prices without typing: the shipped price list fills the price of catalogue entries without their
// own, `sluice prices import` puts a newer list in force in every running process, and the ledger
// costs requests at the price in force.

const SHIPPED_FILE = join(import.meta.dirname, '../prices/price-list.json');
const SHIPPED = JSON.parse(readFileSync(SHIPPED_FILE, 'utf8')) as { as_of: string; models: { family: string; model: string; input_per_mtok: number; output_per_mtok: number; cached_input_per_mtok?: number; cache_write_per_mtok?: number }[] };
const shippedEntry = (family: string, model: string) => SHIPPED.models.find((entry) => entry.family === family && entry.model === model)!;

/** A newer list with other prices for Claude Sonnet 4.5 and GPT-4o mini, and nothing for Gemini. */
const NEWER_SONNET = { family: 'anthropic', model: 'claude-sonnet-4-5', input_per_mtok: 4, output_per_mtok: 20, cached_input_per_mtok: 0.4, cache_write_per_mtok: 5 };
const NEWER = {
  as_of: '2099-01-01',
  models: [
    NEWER_SONNET,
    { family: 'openai', model: 'gpt-4o-mini', input_per_mtok: 0.2, output_per_mtok: 0.8 },
    // Sold by the image and by the call, without token prices.
    { family: 'openai', model: 'image-maker', per_image: 0.04, per_request: 0.001 },
  ],
};

let anthropic: FakeUpstream;
let gemini: FakeUpstream;
let openai: FakeUpstream;
let config: string;

before(async () => {
  [anthropic, gemini, openai] = await Promise.all([
    startFakeAnthropic({ apiKey: 'anthropic-credential', models: ['claude-sonnet-4-5-20250929'] }),
    startFakeGemini({ apiKey: 'gemini-credential', models: ['gemini-2.5-flash'] }),
    startFakeOpenAI({ apiKey: 'openai-credential', models: ['gpt-4o-mini', 'llama-3.1-8b'] }),
  ]);
  config = `
providers:
  - { id: anthropic, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential }
  - { id: google, kind: gemini, base_url: '${gemini.url}', api_key: gemini-credential }
  - { id: openai, kind: openai, base_url: '${openai.url}', api_key: openai-credential }
models:
  - { id: sonnet, provider: anthropic, upstream_model: claude-sonnet-4-5-20250929, endpoints: [chat] }
  - { id: flash, provider: google, upstream_model: gemini-2.5-flash, endpoints: [chat] }
  - { id: mini, provider: openai, upstream_model: gpt-4o-mini, endpoints: [chat] }
  - id: own-price
    provider: anthropic
    upstream_model: claude-sonnet-4-5-20250929
    endpoints: [chat]
    pricing: { input_per_mtok: 1, output_per_mtok: 2 }
  - { id: selfhosted, provider: openai, upstream_model: llama-3.1-8b, endpoints: [chat] }
  - { id: embed-small, provider: openai, upstream_model: text-embedding-3-small, endpoints: [embeddings] }
  - { id: gecko, provider: google, upstream_model: gemini-embedding-001, endpoints: [embeddings] }
  - id: painter
    provider: openai
    upstream_model: image-maker
    endpoints: [images]
    pricing: { per_image: 0.04 }
  - id: voice
    provider: openai
    upstream_model: tts-maker
    endpoints: [speech, transcriptions]
    pricing: { per_mchar: 15, per_audio_minute: 0.006 }
`;
});
after(async () => {
  await Promise.all([anthropic.close(), gemini.close(), openai.close()]);
});

/** GET over a connection of its own, so that consecutive calls reach a gateway's workers in turn. */
function getJson(url: string): Promise<any> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${url}: ${res.statusCode} ${body}`))));
    }).on('error', reject);
  });
}

async function catalogueModel(sluice: RunningSluice, id: string): Promise<any> {
  return ((await getJson(`${sluice.url}/models.json`)).data as any[]).find((m) => m.id === id);
}

/** Resolves once `count` requests in a row (each on a new connection) see `check` hold. */
async function everyWorkerSees(sluice: RunningSluice, check: (model: any) => boolean, id: string, what: string, count = 6): Promise<void> {
  await eventually(
    async () => {
      for (let i = 0; i < count; i++) if (!check(await catalogueModel(sluice, id))) return undefined;
      return true;
    },
    10_000,
    what,
  );
}

async function chat(sluice: RunningSluice, key: string, model: string): Promise<void> {
  const response = await fetch(`${sluice.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Tell me something about the price lists of hosted language models.' }] }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  await response.text();
}

/** The ledger rows of a model, once there are `count`. */
function ledgerRows(sluice: RunningSluice, model: string, count: number): Promise<LedgerRow[]> {
  return eventually(async () => {
    const rows = (await sluice.ledger()).filter((row) => row.model === model);
    return rows.length >= count ? rows : undefined;
  }, 5000, `${count} ledger rows of ${model}`);
}

/** What a row costs at these prices (USD per million tokens; unset cache prices are the input price). */
function expectedCost(row: LedgerRow, prices: { input_per_mtok: number; output_per_mtok: number; cached_input_per_mtok?: number; cache_write_per_mtok?: number }): number {
  const cached = Number(row.cached_input_tokens);
  const written = Number(row.cache_write_tokens);
  const uncached = Number(row.prompt_tokens) - cached - written;
  return (
    (uncached * prices.input_per_mtok +
      cached * (prices.cached_input_per_mtok ?? prices.input_per_mtok) +
      written * (prices.cache_write_per_mtok ?? prices.input_per_mtok) +
      Number(row.completion_tokens) * prices.output_per_mtok) /
    1_000_000
  );
}

function assertCost(row: LedgerRow, prices: Parameters<typeof expectedCost>[1], what: string): void {
  const expected = expectedCost(row, prices);
  assert.ok(expected > 0, `${what}: the request used tokens`);
  assert.ok(Math.abs(Number(row.cost_usd) - expected) <= 1e-12, `${what}: cost ${row.cost_usd}, expected ${expected}`);
}

function writeList(dir: string, name: string, content: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('the shipped price list', () => {
  test('parses with the schema that imports use, covers the three families, and ships in the package', () => {
    const list = parsePriceList(readFileSync(SHIPPED_FILE, 'utf8'), SHIPPED_FILE);
    assert.equal(priceListSchema.safeParse(SHIPPED).success, true);
    assert.match(list.asOf, /^\d{4}-\d{2}-\d{2}$/);
    for (const family of ['openai', 'anthropic', 'google']) assert.ok(SHIPPED.models.some((m) => m.family === family), family);
    // Exact names first, then the name without a snapshot date or revision.
    assert.equal(list.find('openai', 'gpt-4o-2024-05-13')?.input_per_mtok, 5);
    assert.equal(list.find('openai', 'gpt-4o-2024-08-06')?.model, 'gpt-4o');
    assert.equal(list.find('anthropic', 'claude-sonnet-4-5-20250929')?.model, 'claude-sonnet-4-5');
    assert.equal(list.find('google', 'models/gemini-2.0-flash-001')?.model, 'gemini-2.0-flash');
    assert.equal(list.find('google', 'gpt-4o'), undefined, 'a name is looked up in its family only');
    const files = (JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as { files: string[] }).files;
    assert.ok(files.includes('prices'), 'package.json ships prices/');
  });
});

describe('list prices in a gateway', () => {
  let sluice: RunningSluice;
  let key: string;

  before(async () => {
    sluice = await startSluice({ config });
    key = (await createKey(sluice.dataDir, 'acme')).key;
  });
  after(async () => {
    assert.equal(await sluice.stop(), 0);
  });

  test('an entry without pricing gets the shipped price of its upstream model, shown with its source', async () => {
    const shipped = { kind: 'price_list', origin: 'shipped', as_of: SHIPPED.as_of };
    const expectations: [string, string, string][] = [
      ['sonnet', 'anthropic', 'claude-sonnet-4-5'],
      ['flash', 'google', 'gemini-2.5-flash'],
      ['mini', 'openai', 'gpt-4o-mini'],
    ];
    const listed = ((await getJson(`${sluice.url}/models.json`)).data as any[]);
    for (const [id, family, name] of expectations) {
      const entry = shippedEntry(family, name);
      const model = listed.find((m) => m.id === id);
      assert.deepEqual(model.pricing, { input_per_mtok: entry.input_per_mtok, output_per_mtok: entry.output_per_mtok, currency: 'USD' }, id);
      assert.deepEqual(model.pricing_source, shipped, id);
    }
    const own = listed.find((m) => m.id === 'own-price');
    assert.deepEqual(own.pricing, { input_per_mtok: 1, output_per_mtok: 2, currency: 'USD' }, "an entry's own pricing wins");
    assert.deepEqual(own.pricing_source, { kind: 'entry' });
    // Embedding models are priced by their input tokens only.
    assert.deepEqual(listed.find((m) => m.id === 'embed-small').pricing, { input_per_mtok: 0.02, currency: 'USD' });
    assert.deepEqual(listed.find((m) => m.id === 'gecko').pricing, { input_per_mtok: 0.15, currency: 'USD' });
    assert.deepEqual(listed.find((m) => m.id === 'embed-small').pricing_source, shipped);
    // A model sold in other units lists those, and no token price.
    assert.deepEqual(listed.find((m) => m.id === 'painter').pricing, { per_image: 0.04, currency: 'USD' });
    assert.deepEqual(listed.find((m) => m.id === 'voice').pricing, { per_audio_minute: 0.006, per_mchar: 15, currency: 'USD' });
    const selfhosted = listed.find((m) => m.id === 'selfhosted');
    assert.equal(selfhosted.pricing, null, 'a model the list does not know stays unpriced');
    assert.equal(selfhosted.pricing_source, null);

    const page = await (await fetch(`${sluice.url}/models`)).text();
    const row = (id: string) => new RegExp(`<tr data-model="${id}">[\\s\\S]*?</tr>`).exec(page)![0];
    assert.match(row('sonnet'), new RegExp(`price-source">Sluice price list of ${SHIPPED.as_of}<`));
    assert.match(row('own-price'), /price-source">its own pricing</);
    assert.match(row('selfhosted'), /price-source"><span class="muted">—/);
    assert.match(row('painter'), /price-units small">\$0\.04 per image<[\s\S]*price-in"><span class="muted">—<\/span>/);
    assert.match(row('voice'), /price-units small">\$0\.006 per minute of audio, \$15\.00 per million characters</);
    assert.match(row('embed-small'), /price-in">\$0\.02<[\s\S]*price-out"><span class="muted">—<\/span>/);
    assert.doesNotMatch(row('embed-small'), /price-units/, 'no other units: nothing more under the model');
    const painter = await (await fetch(`${sluice.url}/models/painter`)).text();
    assert.match(painter, /<dt>Input price<\/dt><dd>not sold by the token<\/dd>/);
    assert.match(painter, /<dt>Other prices<\/dt><dd class="price-units">\$0\.04 per image<\/dd>/);
    assert.match(painter, /\/v1\/images\/generations/, 'its Try it example calls what it serves');
    const embedder = await (await fetch(`${sluice.url}/models/embed-small`)).text();
    assert.match(embedder, /<dt>Input price<\/dt><dd>\$0\.02 per million tokens<\/dd>/);
    assert.match(embedder, /curl -sS &quot;\$SLUICE_URL\/v1\/embeddings&quot;/);
    const detail = await (await fetch(`${sluice.url}/models/sonnet`)).text();
    assert.match(detail, new RegExp(`<dt>Price from</dt><dd class="price-source">Sluice price list of ${SHIPPED.as_of}</dd>`));
    assert.match(detail, /<dt>Cached input price<\/dt><dd>\$0\.30 per million tokens/);
    assert.deepEqual((await getJson(`${sluice.url}/models/flash?format=json`)).pricing_source, shipped);
  });

  test('the ledger costs a request at the list price, and at its own price when the entry has one', async () => {
    for (const model of ['sonnet', 'flash', 'mini', 'own-price', 'selfhosted']) await chat(sluice, key, model);
    assertCost((await ledgerRows(sluice, 'sonnet', 1))[0]!, shippedEntry('anthropic', 'claude-sonnet-4-5'), 'sonnet');
    assertCost((await ledgerRows(sluice, 'flash', 1))[0]!, shippedEntry('google', 'gemini-2.5-flash'), 'flash');
    assertCost((await ledgerRows(sluice, 'mini', 1))[0]!, shippedEntry('openai', 'gpt-4o-mini'), 'mini');
    assertCost((await ledgerRows(sluice, 'own-price', 1))[0]!, { input_per_mtok: 1, output_per_mtok: 2 }, 'own-price');
    const selfhosted = (await ledgerRows(sluice, 'selfhosted', 1))[0]!;
    assert.ok(Number(selfhosted.prompt_tokens) > 0);
    assert.equal(Number(selfhosted.cost_usd), 0, 'an unpriced model costs nothing');
  });
});

describe('sluice prices import, show and reset, with a running gateway of two workers', () => {
  let sluice: RunningSluice;
  let key: string;
  let dir: string;

  before(async () => {
    sluice = await startSluice({ config, args: ['--workers', '2'] });
    key = (await createKey(sluice.dataDir, 'acme')).key;
    await createAccount(sluice.dataDir, 'admin', 'prices-admin-password', true);
    dir = tempDir();
  });
  after(async () => {
    assert.equal(await sluice.stop(), 0);
  });

  const catalogueVersion = async () => Number((await queryStore<{ value: number }>(sluice.dataDir, "SELECT value FROM meta WHERE name = 'catalogue_version'"))[0]!.value);
  const show = async () => {
    const result = await cli(['prices', 'show', '--json', '--data', sluice.dataDir]);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as any;
  };

  test('a bad file is refused with a one-line message naming the entry and field, and changes nothing', async () => {
    const version = await catalogueVersion();
    const missing = { as_of: '2099-01-01', models: [{ family: 'anthropic', model: 'claude-sonnet-4-5' }] };
    const negative = { as_of: '2099-01-01', models: [{ family: 'openai', model: 'gpt-4o', input_per_mtok: 1, output_per_mtok: -1 }] };
    const twice = { as_of: '2099-01-01', models: [NEWER.models[1], { ...NEWER.models[1], input_per_mtok: 9 }] };
    const cases: [string, unknown, RegExp][] = [
      ['missing.json', missing, /models\[0\] \(model: claude-sonnet-4-5\): gives no price: state at least one of input_per_mtok, output_per_mtok, .*per_request/],
      ['empty-unit.json', { as_of: '2099-01-01', models: [{ family: 'openai', model: 'image-maker', per_image: -1 }] }, /models\[0\] \(model: image-maker\): field 'per_image': /],
      ['negative.json', negative, /models\[0\] \(model: gpt-4o\): field 'output_per_mtok': /],
      ['family.json', { as_of: '2099-01-01', models: [{ ...NEWER.models[1], family: 'deepseek' }] }, /models\[0\] \(model: gpt-4o-mini\): field 'family': /],
      ['date.json', { ...NEWER, as_of: '2099-02-30' }, /field 'as_of': is not a calendar date/],
      ['twice.json', twice, /models\[1\] \(model: gpt-4o-mini\): field 'model': 'gpt-4o-mini' is listed twice for openai/],
      ['unknown.json', { ...NEWER, currency: 'EUR' }, /top level: unknown field\(s\) 'currency'/],
      ['broken.json', '{"as_of": "2099-01-01", "models": [', /broken\.json: not valid JSON/],
      ['older.json', { ...NEWER, as_of: '2000-01-01' }, new RegExp(`as of 2000-01-01, older than the shipped list of ${SHIPPED.as_of}.*nothing was imported`)],
    ];
    for (const [name, content, message] of cases) {
      const result = await cli(['prices', 'import', writeList(dir, name, content), '--data', sluice.dataDir]);
      assert.equal(result.code, 1, name);
      assert.match(result.stderr, message, name);
      assert.equal(result.stderr.trim().split('\n').length, 1, `${name}: one line`);
    }
    assert.equal((await cli(['prices', 'import', join(dir, 'absent.json'), '--data', sluice.dataDir])).code, 1);
    assert.equal(await catalogueVersion(), version, 'the catalogue version did not move');
    const status = await show();
    assert.deepEqual([status.in_force, status.imported], [{ origin: 'shipped', as_of: SHIPPED.as_of }, null]);
    assert.deepEqual((await catalogueModel(sluice, 'sonnet')).pricing_source, { kind: 'price_list', origin: 'shipped', as_of: SHIPPED.as_of });
  });

  test('an imported newer list prices every worker without a restart; reset brings the shipped list back', async () => {
    const pid = sluice.child.pid;
    const imported = await cli(['prices', 'import', writeList(dir, 'newer.json', NEWER), '--data', sluice.dataDir]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /Imported the price list as of 2099-01-01 \(3 models\)/);

    await everyWorkerSees(sluice, (m) => m.pricing?.input_per_mtok === 4, 'sonnet', 'the imported price of sonnet in every worker');
    const source = { kind: 'price_list', origin: 'imported', as_of: '2099-01-01' };
    const sonnet = await catalogueModel(sluice, 'sonnet');
    assert.deepEqual([sonnet.pricing, sonnet.pricing_source], [{ input_per_mtok: 4, output_per_mtok: 20, currency: 'USD' }, source]);
    assert.deepEqual((await catalogueModel(sluice, 'mini')).pricing, { input_per_mtok: 0.2, output_per_mtok: 0.8, currency: 'USD' });
    assert.equal((await catalogueModel(sluice, 'flash')).pricing, null, 'the imported list replaces the shipped one: Gemini is unpriced now');
    assert.deepEqual((await catalogueModel(sluice, 'own-price')).pricing_source, { kind: 'entry' });
    assert.equal(sluice.child.pid, pid);
    assert.equal(sluice.child.exitCode, null, 'the gateway kept running');

    const page = await (await fetch(`${sluice.url}/models/sonnet`)).text();
    assert.match(page, /price-source">imported price list of 2099-01-01</);
    const console = new ConsoleClient(sluice.url);
    await console.signIn('admin', 'prices-admin-password');
    const admin = (await console.get('/app/catalogue')).text;
    assert.match(/<tr data-model="sonnet">[\s\S]*?<\/tr>/.exec(admin)![0], /price-source">imported price list of 2099-01-01</);
    assert.match(/<tr data-model="own-price">[\s\S]*?<\/tr>/.exec(admin)![0], /price-source">its own pricing</);

    await chat(sluice, key, 'sonnet');
    assertCost((await ledgerRows(sluice, 'sonnet', 1))[0]!, NEWER_SONNET, 'sonnet at the imported price');

    const status = await show();
    assert.deepEqual(status.in_force, { origin: 'imported', as_of: '2099-01-01' });
    assert.equal(status.shipped.as_of, SHIPPED.as_of);
    assert.equal(status.imported.as_of, '2099-01-01');
    assert.deepEqual(status.models, NEWER.models);
    const text = await cli(['prices', 'show', '--data', sluice.dataDir]);
    assert.match(text.stdout, /In force: the imported price list as of 2099-01-01 \(3 models\)/);
    assert.match(text.stdout, /anthropic\s+claude-sonnet-4-5\s+4\s+20\s+0\.4\s+5\s+-\n/);
    assert.match(text.stdout, /openai\s+image-maker\s+-\s+-\s+-\s+-\s+per_image=0\.04 per_request=0\.001\n/);
    assert.match(text.stdout, /OTHER\n/);

    const reset = await cli(['prices', 'reset', '--data', sluice.dataDir]);
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, new RegExp(`Removed the imported price list; the shipped list as of ${SHIPPED.as_of} is in force`));
    await everyWorkerSees(sluice, (m) => m.pricing_source?.origin === 'shipped', 'flash', 'the shipped list in every worker again');
    // Each worker reloads on its own: the one answering next may be the other one, so sonnet is asked of every worker too.
    const shippedSonnet = shippedEntry('anthropic', 'claude-sonnet-4-5').input_per_mtok;
    await everyWorkerSees(sluice, (m) => m.pricing?.input_per_mtok === shippedSonnet, 'sonnet', 'the shipped price of sonnet in every worker');
    assert.deepEqual((await show()).imported, null);
    assert.match((await cli(['prices', 'reset', '--data', sluice.dataDir])).stdout, /No price list was imported/);
  });
});
