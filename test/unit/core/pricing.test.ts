/**
 * What a request costs (src/pricing/cost.ts) and where the price comes from: a model's own entry,
 * else a price list (src/pricing/price-list.ts), whose loading refuses bad input with one line
 * naming the entry and field.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Catalogue, modelFromConfig, withListPrices, type CatalogueModel } from '../../../src/catalogue/catalogue.js';
import { modelSchema, parseConfig, type ProviderKind } from '../../../src/config/config-file.js';
import { addUsage, usageOf, type Usage } from '../../../src/generation/model.js';
import { parsePriceList, PriceListError, pricesInForce, shippedPriceList } from '../../../src/pricing/price-list.js';
import { billingUnitsOf, costUsd, pricedFor } from '../../../src/pricing/cost.js';
import { vendorModelOf } from '../../../src/pricing/vendor-model.js';

function priced(pricing: Record<string, number> | undefined): CatalogueModel {
  return modelFromConfig(modelSchema.parse({ id: 'm', provider: 'p', ...(pricing === undefined ? {} : { pricing }) }));
}

/** Equal to within a billionth of a cent's millionth: the sums here are exact in decimal, not always in binary. */
function assertUsd(actual: number, expected: number, what?: string): void {
  assert.ok(Math.abs(actual - expected) <= 1e-15 * Math.max(1, Math.abs(expected)), `${what ?? 'cost'}: ${actual}, expected ${expected}`);
}

describe('whether a model is priced for a request', () => {
  test('tokens always count; a unit besides tokens counts when the request names it, even at 0', () => {
    assert.deepEqual(billingUnitsOf(undefined), ['tokens']);
    assert.deepEqual(billingUnitsOf({ images: 2 }), ['tokens', 'images']);
    assert.deepEqual(billingUnitsOf({ audioSeconds: 0, requests: 1 }), ['tokens', 'audioSeconds', 'requests']);
  });

  test('priced when some unit billed has a price, zero included; unpriced without pricing or with prices in other units only', () => {
    assert.equal(pricedFor(undefined, ['tokens']), false, 'no pricing');
    assert.equal(pricedFor({ inputPerMtok: 0, outputPerMtok: 0 }, ['tokens']), true, 'priced at zero: free');
    assert.equal(pricedFor({ outputPerMtok: 2 }, ['tokens']), true, 'an output price alone prices tokens');
    assert.equal(pricedFor({ perImage: 0.04 }, ['tokens']), false, 'a per_image price does not price chat');
    assert.equal(pricedFor({ perImage: 0.04 }, ['tokens', 'images']), true);
    assert.equal(pricedFor({ inputPerMtok: 5 }, ['tokens', 'images']), true, 'gpt-image models are sold by the token');
    assert.equal(pricedFor({ perAudioMinute: 0.006 }, ['tokens', 'audioSeconds']), true);
    assert.equal(pricedFor({ perMchar: 15 }, ['tokens', 'audioSeconds']), false, 'a speech price does not price transcription');
    assert.equal(pricedFor({ perRequest: 0.002 }, ['tokens', 'requests']), true);
  });
});

describe('the cost of a request', () => {
  const gpt = priced({ input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 });

  test('input and output at their prices per million tokens', () => {
    assertUsd(costUsd(gpt, usageOf(1_000_000, 500_000)), 2.5 + 5);
    assertUsd(costUsd(gpt, usageOf(1_234, 567)), (1_234 * 2.5 + 567 * 10) / 1e6);
  });

  test('cached input at the cached price: it is part of the input, not on top of it', () => {
    // 1,000 input of which 800 from the cache: 200 × 2.5 + 800 × 1.25.
    assertUsd(costUsd(gpt, usageOf(1_000, 0, { cachedInput: 800 })), (200 * 2.5 + 800 * 1.25) / 1e6);
  });

  test('cache writes at the cache-write price, cache reads at the cached price, the rest at the input price', () => {
    const claude = priced({ input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 });
    assertUsd(costUsd(claude, usageOf(10_000, 100, { cachedInput: 6_000, cacheWrite: 3_000 })), (1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75 + 100 * 15) / 1e6);
  });

  test('reasoning tokens are output tokens: counted once, at the output price', () => {
    assertUsd(costUsd(gpt, usageOf(0, 100, { reasoning: 80 })), (100 * 10) / 1e6);
  });

  test('unset cache prices are the input price', () => {
    const plain = priced({ input_per_mtok: 2, output_per_mtok: 8 });
    assert.deepEqual(plain.pricing, { inputPerMtok: 2, outputPerMtok: 8, cachedInputPerMtok: 2, cacheWritePerMtok: 2 });
    assertUsd(costUsd(plain, usageOf(1_000, 0, { cachedInput: 500, cacheWrite: 250 })), (1_000 * 2) / 1e6);
  });

  test('an unpriced model, or none, costs nothing', () => {
    assert.equal(costUsd(priced(undefined), usageOf(1_000_000, 1_000_000)), 0);
    assert.equal(costUsd(undefined, usageOf(1_000_000, 1_000_000)), 0);
    assert.equal(costUsd(gpt, usageOf(0, 0)), 0);
  });

  test('inconsistent usage (more cached than input) never makes a negative input charge', () => {
    assertUsd(costUsd(gpt, usageOf(100, 0, { cachedInput: 300 })), (300 * 1.25) / 1e6);
  });

  test('not rounded: a single token costs its fraction of a cent, and a million of them add up to the whole', () => {
    const mini = priced({ input_per_mtok: 0.15, output_per_mtok: 0.6 });
    assertUsd(costUsd(mini, usageOf(1, 0)), 1.5e-7, 'one input token');
    let total = 0;
    for (let i = 0; i < 1_000_000; i++) total += costUsd(mini, usageOf(1, 0));
    assert.ok(Math.abs(total - 0.15) < 1e-9, `a million single-token requests: ${total}`);
  });
});

describe('the cost of a request sold in other units than tokens', () => {
  const units = (more: NonNullable<Usage['units']>, input = 0): Usage => ({ ...usageOf(input, 0), units: more });

  test('images at the price per image, by how many were made', () => {
    const images = priced({ per_image: 0.04 });
    assertUsd(costUsd(images, units({ images: 3 })), 0.12);
    assert.deepEqual(images.pricing, { perImage: 0.04 }, 'an image model states no token price');
  });

  test('input audio at the price per minute, to the second', () => {
    assertUsd(costUsd(priced({ per_audio_minute: 0.006 }), units({ audioSeconds: 90 })), 0.009);
    assertUsd(costUsd(priced({ per_audio_minute: 0.006 }), units({ audioSeconds: 1 })), 0.006 / 60);
  });

  test('input characters at the price per million (speech)', () => {
    assertUsd(costUsd(priced({ per_mchar: 15 }), units({ characters: 2_000 })), 0.03);
  });

  test('calls at the price per request (rerank, moderations)', () => {
    assertUsd(costUsd(priced({ per_request: 0.002 }), units({ requests: 1 })), 0.002);
  });

  test('tokens and units add up: a model may be sold in both', () => {
    const both = priced({ input_per_mtok: 5, per_image: 0.01 });
    assertUsd(costUsd(both, units({ images: 2 }, 1_000)), (1_000 * 5) / 1e6 + 0.02);
  });

  test('a unit the model has no price for costs nothing; one it has a price for but did not use, nothing either', () => {
    const embedding = priced({ input_per_mtok: 0.02 });
    assert.deepEqual(embedding.pricing, { inputPerMtok: 0.02, cachedInputPerMtok: 0.02, cacheWritePerMtok: 0.02 });
    assertUsd(costUsd(embedding, units({ images: 5, requests: 1 }, 1_000_000)), 0.02);
    assertUsd(costUsd(embedding, usageOf(1_000, 1_000)), (1_000 * 0.02) / 1e6, 'no output price: output tokens are not billed');
    assert.equal(costUsd(priced({ per_image: 0.04 }), usageOf(1_000, 1_000)), 0, 'tokens of a model sold by the image');
  });

  test('units summed across the calls of one request are billed once each', () => {
    const images = priced({ per_image: 0.04, per_request: 0.001 });
    const total = addUsage(units({ images: 1, requests: 1 }), units({ images: 2, requests: 1 }));
    assert.deepEqual(total.units, { images: 3, requests: 2 });
    assertUsd(costUsd(images, total), 0.12 + 0.002);
  });

  test('an unpriced model costs nothing in any unit', () => {
    assert.equal(costUsd(priced(undefined), units({ images: 10, audioSeconds: 600, characters: 1e6, requests: 5 })), 0);
  });
});

describe('pricing as written', () => {
  const parse = (pricing: unknown) => modelSchema.safeParse({ id: 'm', provider: 'p', pricing });

  test('only the units the model is sold in: tokens in, images, audio minutes, characters, calls', () => {
    for (const pricing of [{ input_per_mtok: 0.02 }, { per_image: 0.04 }, { per_audio_minute: 0.006 }, { per_mchar: 15 }, { per_request: 0.002 }, { output_per_mtok: 1 }]) {
      assert.equal(parse(pricing).success, true, JSON.stringify(pricing));
    }
  });

  test('an empty pricing is an error naming it: unpriced is no pricing at all', () => {
    assert.throws(
      () => parseConfig("providers: [{ id: p, kind: openai, base_url: 'http://upstream' }]\nmodels: [{ id: m, provider: p, pricing: {} }]", 'sluice.yaml'),
      (error: Error) => error.message === "sluice.yaml: models[0] (id: m): field 'pricing': gives no price: state at least one of input_per_mtok, output_per_mtok, cached_input_per_mtok, cache_write_per_mtok, per_image, per_audio_minute, per_mchar, per_request",
    );
    assert.equal(priced(undefined).pricing, undefined);
  });

  test('a negative or unknown unit is refused, naming it', () => {
    assert.equal(parse({ per_image: -1 }).error?.issues[0]?.path.join('.'), 'pricing.per_image');
    assert.equal(parse({ per_token: 1 }).error?.issues[0]?.code, 'unrecognized_keys');
    assert.equal(parse({ cache_write_per_mtok: 1 }).error?.issues[0]?.path.join('.'), 'pricing.cache_write_per_mtok');
  });
});

const LIST = JSON.stringify({
  as_of: '2026-06-01',
  models: [
    { family: 'openai', model: 'gpt-x', aliases: ['gpt-x-latest'], input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 },
    { family: 'openai', model: 'gpt-x-2026-01-01', input_per_mtok: 3, output_per_mtok: 9 },
    { family: 'anthropic', model: 'claude-y', input_per_mtok: 3, output_per_mtok: 15, cache_write_per_mtok: 3.75 },
    { family: 'google', model: 'gemini-z', input_per_mtok: 1, output_per_mtok: 4 },
    { family: 'anthropic', model: 'gpt-x', input_per_mtok: 99, output_per_mtok: 99 },
  ],
});

describe('a price list', () => {
  const list = parsePriceList(LIST, 'prices.json');

  test('finds a model by its name or an alias, within its family only', () => {
    assert.equal(list.asOf, '2026-06-01');
    assert.equal(list.find('openai', 'gpt-x')?.input_per_mtok, 2);
    assert.equal(list.find('openai', 'gpt-x-latest')?.model, 'gpt-x');
    assert.equal(list.find('anthropic', 'gpt-x')?.input_per_mtok, 99, 'the same name in another family is another model');
    assert.equal(list.find('google', 'claude-y'), undefined);
    assert.equal(list.find('openai', 'gpt-unknown'), undefined);
  });

  test('a dated snapshot or revision is priced as its model, unless the list names the snapshot itself', () => {
    assert.equal(list.find('openai', 'gpt-x-20260315')?.model, 'gpt-x');
    assert.equal(list.find('openai', 'gpt-x-2026-03-15')?.model, 'gpt-x');
    assert.equal(list.find('openai', 'gpt-x-002')?.model, 'gpt-x');
    assert.equal(list.find('openai', 'gpt-x-2026-01-01')?.input_per_mtok, 3, 'listed itself');
    assert.equal(list.find('openai', 'gpt-x-preview'), undefined, 'only dates and revisions are suffixes');
    assert.equal(list.find('google', 'models/gemini-z-001')?.model, 'gemini-z', "Gemini's models/ prefix is ignored");
  });

  test("fills the price of every catalogue entry without one, from its first deployment's upstream model in its provider's family", () => {
    const config = parseConfig(
      `
providers:
  - { id: oa, kind: openai, base_url: 'http://127.0.0.1:9/v1' }
  - { id: an, kind: anthropic }
  - { id: gg, kind: gemini }
models:
  - { id: listed, provider: oa, upstream_model: gpt-x-20260315 }
  - { id: own, provider: oa, upstream_model: gpt-x, pricing: { input_per_mtok: 7, output_per_mtok: 7 } }
  - { id: claude, provider: an, upstream_model: claude-y }
  - { id: gemini, provider: gg, upstream_model: gemini-z }
  - { id: unknown, provider: oa, upstream_model: homegrown }
  - { id: two, deployments: [{ provider: an, upstream_model: claude-y }, { provider: oa, upstream_model: gpt-x }] }
`,
      'unit.yaml',
    );
    const kinds = new Map<string, ProviderKind>(config.providers.map((provider) => [provider.id, provider.kind]));
    const catalogue = withListPrices(Catalogue.fromConfig(config), { list, origin: 'imported' }, (id) => kinds.get(id));
    const pricing = (id: string) => catalogue.get(id)!.pricing;
    assert.deepEqual(pricing('listed'), { inputPerMtok: 2, outputPerMtok: 8, cachedInputPerMtok: 0.5, cacheWritePerMtok: 2 });
    assert.deepEqual(catalogue.get('listed')!.pricingSource, { kind: 'price_list', asOf: '2026-06-01', origin: 'imported' });
    assert.equal(pricing('own')!.inputPerMtok, 7, "an entry's own price beats the list");
    assert.deepEqual(catalogue.get('own')!.pricingSource, { kind: 'entry' });
    assert.deepEqual(pricing('claude'), { inputPerMtok: 3, outputPerMtok: 15, cachedInputPerMtok: 3, cacheWritePerMtok: 3.75 });
    assert.equal(pricing('gemini')!.inputPerMtok, 1, 'a gemini provider is priced from the google family');
    assert.equal(pricing('unknown'), undefined, 'a model the list does not know stays unpriced');
    assert.equal(costUsd(catalogue.get('unknown'), usageOf(1_000, 1_000)), 0);
    const two = catalogue.get('two')!;
    assert.equal(two.pricing!.inputPerMtok, 3, "the first deployment's price is the model's");
    assert.ok(two.deployments.every((deployment) => deployment.model.pricing?.inputPerMtok === 3), "every deployment's view carries it");
  });
});

describe('loading a price list', () => {
  const entry = (fields: Record<string, unknown>) => ({ family: 'openai', model: 'x', input_per_mtok: 1, output_per_mtok: 1, ...fields });
  const doc = (fields: Record<string, unknown>) => JSON.stringify({ as_of: '2026-02-01', models: [entry({})], ...fields });
  const cases: [string, string, string][] = [
    ['not JSON', '{"as_of": ', 'prices.json: not valid JSON (Unexpected end of JSON input)'],
    ['not a calendar date', doc({ as_of: '2026-02-30' }), "prices.json: field 'as_of': is not a calendar date"],
    ['a negative price', doc({ models: [entry({ input_per_mtok: -1 })] }), "prices.json: models[0] (model: x): field 'input_per_mtok': Too small: expected number to be >=0"],
    ['an unknown family', doc({ models: [entry({ family: 'deepseek' })] }), 'prices.json: models[0] (model: x): field \'family\': Invalid option: expected one of "openai"|"anthropic"|"google"|"amazon"|"meta"|"mistral"|"cohere"'],
    [
      'an entry with no price at all',
      doc({ models: [{ family: 'openai', model: 'x' }] }),
      'prices.json: models[0] (model: x): gives no price: state at least one of input_per_mtok, output_per_mtok, cached_input_per_mtok, cache_write_per_mtok, per_image, per_audio_minute, per_mchar, per_request',
    ],
    ['a cache price without the input price it is a share of', doc({ models: [{ family: 'openai', model: 'x', cached_input_per_mtok: 1 }] }), "prices.json: models[0] (model: x): field 'cached_input_per_mtok': needs input_per_mtok beside it"],
    ['a negative price per image', doc({ models: [{ family: 'openai', model: 'x', per_image: -0.04 }] }), "prices.json: models[0] (model: x): field 'per_image': Too small: expected number to be >=0"],
    ['an empty name', doc({ models: [entry({ model: '' })] }), "prices.json: models[0] (model: ): field 'model': Too small: expected string to have >=1 characters"],
    ['a name listed twice', doc({ models: [entry({}), entry({ input_per_mtok: 9 })] }), "prices.json: models[1] (model: x): field 'model': 'x' is listed twice for openai"],
    ['an alias that is another entry’s name', doc({ models: [entry({}), entry({ model: 'y', aliases: ['z', 'x'] })] }), "prices.json: models[1] (model: y): field 'aliases.1': 'x' is listed twice for openai"],
    ['an unknown field in an entry', doc({ models: [entry({ per: 'token' })] }), "prices.json: models[0] (model: x): unknown field(s) 'per'"],
    ['an unknown top-level field', doc({ currency: 'EUR' }), "prices.json: top level: unknown field(s) 'currency'"],
    ['no models', JSON.stringify({ as_of: '2026-02-01' }), "prices.json: field 'models': is required (array)"],
  ];
  for (const [what, text, message] of cases) {
    test(`refused: ${what}`, () => {
      assert.throws(() => parsePriceList(text, 'prices.json'), (error) => error instanceof PriceListError && error.message === message);
    });
  }

  test('refused with a one-line message, not a crash: a date in another format, or a month that does not exist', () => {
    assert.throws(
      () => parsePriceList(doc({ as_of: '26-11-01' }), 'prices.json'),
      (error) => error instanceof PriceListError && error.message === "prices.json: field 'as_of': must be a date written YYYY-MM-DD",
    );
    assert.throws(
      () => parsePriceList(doc({ as_of: '2026-13-01' }), 'prices.json'),
      (error) => error instanceof PriceListError && error.message === "prices.json: field 'as_of': is not a calendar date",
    );
  });

  test('refused, saying what is wrong: a price written as text is not a missing price', () => {
    assert.throws(
      () => parsePriceList(doc({ models: [entry({ input_per_mtok: '1' })] }), 'prices.json'),
      (error) => error instanceof PriceListError && error.message === "prices.json: models[0] (model: x): field 'input_per_mtok': Invalid input: expected number, received string",
    );
  });

  test('the same name in two families is two models, not a duplicate', () => {
    assert.doesNotThrow(() => parsePriceList(doc({ models: [entry({}), entry({ family: 'anthropic' })] }), 'prices.json'));
  });
});

describe('the list in force', () => {
  const shipped = shippedPriceList();
  const dated = (asOf: string) => JSON.stringify({ as_of: asOf, models: [] });

  test('the shipped list when none was imported, or when it is newer than the imported one', () => {
    assert.deepEqual(pricesInForce(undefined), { list: shipped, origin: 'shipped' });
    assert.equal(pricesInForce(dated('2000-01-01')).origin, 'shipped');
  });

  test('an imported list as new as the shipped one, or newer, is in force', () => {
    assert.equal(pricesInForce(dated(shipped.asOf)).origin, 'imported');
    const newer = pricesInForce(dated('2999-12-31'));
    assert.deepEqual([newer.origin, newer.list.asOf], ['imported', '2999-12-31']);
  });

  test('an imported list that no longer parses is reported, and the shipped one used', () => {
    const reported: PriceListError[] = [];
    const inForce = pricesInForce('{"as_of": "2999-01-01", "models": [{}]}', (error) => reported.push(error));
    assert.equal(inForce.origin, 'shipped');
    assert.equal(reported.length, 1);
    assert.equal(reported[0]!.message, 'the imported price list: models[0]: field \'family\': Invalid option: expected one of "openai"|"anthropic"|"google"|"amazon"|"meta"|"mistral"|"cohere"');
  });

  test('an imported list whose date does not exist is reported too, rather than failing whoever prices the catalogue', () => {
    const reported: PriceListError[] = [];
    assert.equal(pricesInForce(dated('2999-13-01'), (error) => reported.push(error)).origin, 'shipped');
    assert.equal(reported[0]?.message, "the imported price list: field 'as_of': is not a calendar date");
  });
});

describe('the vendor model a cloud deployment carries', () => {
  test('a Bedrock model id, inference profile or ARN names its vendor and model; the version and revision are dropped in turn', () => {
    const claude = { family: 'anthropic', names: ['claude-sonnet-4-5-20250929-v1', 'claude-sonnet-4-5-20250929'] };
    for (const id of [
      'anthropic.claude-sonnet-4-5-20250929-v1:0',
      'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'eu.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'apac.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0',
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0',
    ]) {
      assert.deepEqual(vendorModelOf('bedrock', id), claude, id);
    }
    assert.deepEqual(vendorModelOf('bedrock', 'amazon.nova-pro-v1:0'), { family: 'amazon', names: ['nova-pro-v1', 'nova-pro'] });
    assert.deepEqual(vendorModelOf('bedrock', 'meta.llama3-3-70b-instruct-v1:0'), { family: 'meta', names: ['llama3-3-70b-instruct-v1', 'llama3-3-70b-instruct'] });
    assert.deepEqual(vendorModelOf('bedrock', 'mistral.mistral-large-2407-v1:0'), { family: 'mistral', names: ['mistral-large-2407-v1', 'mistral-large-2407'] });
    assert.deepEqual(vendorModelOf('bedrock', 'cohere.embed-english-v3'), { family: 'cohere', names: ['embed-english-v3', 'embed-english'] });
    assert.deepEqual(vendorModelOf('bedrock', 'cohere.embed-v4:0'), { family: 'cohere', names: ['embed-v4', 'embed'] });
    assert.deepEqual(vendorModelOf('bedrock', 'amazon.titan-embed-text-v2:0'), { family: 'amazon', names: ['titan-embed-text-v2', 'titan-embed-text'] });
    assert.deepEqual(vendorModelOf('bedrock', 'anthropic.claude-3-sonnet-20240229-v1:0:200k'), { family: 'anthropic', names: ['claude-3-sonnet-20240229-v1', 'claude-3-sonnet-20240229'] }, 'a context-window variant');
  });

  test('a Bedrock model no list can know is unpriced: another vendor, an application profile, a provisioned model', () => {
    assert.equal(vendorModelOf('bedrock', 'ai21.jamba-1-5-large-v1:0'), undefined);
    assert.equal(vendorModelOf('bedrock', 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6'), undefined);
    assert.equal(vendorModelOf('bedrock', 'arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abcdef123456'), undefined);
  });

  test('a Vertex publisher model: claude- is Anthropic’s without its @snapshot, gemini- and the embedding models Google’s', () => {
    assert.deepEqual(vendorModelOf('vertex', 'claude-sonnet-4-5@20250929'), { family: 'anthropic', names: ['claude-sonnet-4-5'] });
    assert.deepEqual(vendorModelOf('vertex', 'publishers/anthropic/models/claude-opus-4-1@20250805'), { family: 'anthropic', names: ['claude-opus-4-1'] });
    assert.deepEqual(vendorModelOf('vertex', 'gemini-2.5-pro'), { family: 'google', names: ['gemini-2.5-pro'] });
    assert.deepEqual(vendorModelOf('vertex', 'gemini-embedding-001'), { family: 'google', names: ['gemini-embedding-001'] });
    assert.deepEqual(vendorModelOf('vertex', 'text-embedding-005'), { family: 'google', names: ['text-embedding-005'] });
    assert.equal(vendorModelOf('vertex', 'llama-3.3-70b-instruct-maas'), undefined, 'a partner model is not priced by name');
  });

  test('an Azure deployment is priced only by the model its resource reports, never by its own name', () => {
    assert.equal(vendorModelOf('azure', 'gpt-4o'), undefined, 'a deployment called gpt-4o may serve anything');
    assert.deepEqual(vendorModelOf('azure', 'my-gpt4o-deployment', 'gpt-4o'), { family: 'openai', names: ['gpt-4o'] });
  });

  test('Azure’s gpt-35-turbo names are OpenAI’s gpt-3.5-turbo ones', () => {
    assert.deepEqual(vendorModelOf('azure', 'instruct-dep', 'gpt-35-turbo-instruct'), { family: 'openai', names: ['gpt-35-turbo-instruct', 'gpt-3.5-turbo-instruct'] });
    assert.deepEqual(vendorModelOf('azure', 'chat-dep', 'gpt-35-turbo'), { family: 'openai', names: ['gpt-35-turbo', 'gpt-3.5-turbo'] });
  });

  test('the direct vendors keep their own names', () => {
    assert.deepEqual(vendorModelOf('openai', 'gpt-4o'), { family: 'openai', names: ['gpt-4o'] });
    assert.deepEqual(vendorModelOf('anthropic', 'claude-sonnet-4-5'), { family: 'anthropic', names: ['claude-sonnet-4-5'] });
    assert.deepEqual(vendorModelOf('gemini', 'models/gemini-2.5-pro'), { family: 'google', names: ['gemini-2.5-pro'] });
  });
});

describe('cloud models priced by the shipped list', () => {
  const config = parseConfig(
    `
providers:
  - { id: az, kind: azure, base_url: 'https://res.openai.azure.com', api_key: k }
  - { id: br, kind: bedrock, region: us-east-1 }
  - { id: vx, kind: vertex, project: p, location: global }
models:
  - { id: azure-named, provider: az, upstream_model: my-gpt4o-deployment }
  - { id: azure-unreported, provider: az, upstream_model: gpt-4o }
  - { id: azure-instruct, provider: az, upstream_model: instruct-dep }
  - { id: azure-35, provider: az, upstream_model: chat35 }
  - { id: bedrock-claude, provider: br, upstream_model: us.anthropic.claude-sonnet-4-5-20250929-v1:0 }
  - { id: bedrock-arn, provider: br, upstream_model: 'arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0' }
  - { id: nova, provider: br, upstream_model: amazon.nova-pro-v1:0 }
  - { id: titan, provider: br, upstream_model: amazon.titan-embed-text-v2:0 }
  - { id: llama, provider: br, upstream_model: meta.llama3-70b-instruct-v1:0 }
  - { id: mistral, provider: br, upstream_model: mistral.mistral-large-2402-v1:0 }
  - { id: cohere, provider: br, upstream_model: cohere.embed-v4:0 }
  - { id: vertex-claude, provider: vx, upstream_model: claude-sonnet-4-5@20250929 }
  - { id: vertex-gemini, provider: vx, upstream_model: gemini-2.5-pro }
`,
    'clouds.yaml',
  );
  const kinds = new Map<string, ProviderKind>(config.providers.map((provider) => [provider.id, provider.kind]));
  const reported = new Map([
    ['az\u0000my-gpt4o-deployment', 'gpt-4o'],
    ['az\u0000instruct-dep', 'gpt-35-turbo-instruct'],
    ['az\u0000chat35', 'gpt-35-turbo'],
  ]);
  const catalogue = withListPrices(Catalogue.fromConfig(config), { list: shippedPriceList(), origin: 'shipped' }, (id) => kinds.get(id), (provider, upstream) => reported.get(`${provider}\u0000${upstream}`));
  const input = (id: string) => catalogue.get(id)!.pricing?.inputPerMtok;

  test('Bedrock and Vertex Claude at Anthropic’s prices, Vertex Gemini at Google’s', () => {
    assert.deepEqual(catalogue.get('bedrock-claude')!.pricing, { inputPerMtok: 3, outputPerMtok: 15, cachedInputPerMtok: 0.3, cacheWritePerMtok: 3.75 });
    assert.equal(input('bedrock-arn'), 1, 'Claude Haiku 4.5 through an inference profile ARN');
    assert.deepEqual(catalogue.get('vertex-claude')!.pricing, catalogue.get('bedrock-claude')!.pricing);
    assert.equal(input('vertex-gemini'), 1.25);
    assert.equal(catalogue.get('vertex-gemini')!.pricing!.outputPerMtok, 10);
  });

  test('Amazon, Meta, Mistral and Cohere models at Bedrock’s prices', () => {
    assert.deepEqual(catalogue.get('nova')!.pricing, { inputPerMtok: 0.8, outputPerMtok: 3.2, cachedInputPerMtok: 0.2, cacheWritePerMtok: 0.8 });
    assert.equal(input('titan'), 0.02);
    assert.equal(input('llama'), 2.65);
    assert.equal(input('mistral'), 4);
    assert.equal(input('cohere'), 0.12);
  });

  test('an Azure deployment by the model its resource reports; unreported, it stays unpriced whatever its name', () => {
    assert.equal(input('azure-named'), 2.5);
    assert.equal(catalogue.get('azure-unreported')!.pricing, undefined);
    assert.deepEqual([input('azure-instruct'), catalogue.get('azure-instruct')!.pricing!.outputPerMtok], [1.5, 2], 'gpt-35-turbo-instruct at gpt-3.5-turbo-instruct’s price');
    assert.equal(input('azure-35'), 0.5);
  });
});
