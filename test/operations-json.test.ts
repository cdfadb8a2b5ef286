// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
/**
 * The JSON operations besides generation, relayed to OpenAI-compatible upstreams: rerank (Cohere's
 * and Jina's shapes, on /v1/rerank and /v2/rerank), moderations and image generations, through the
 * real gateway, with the `openai` SDK where it has the call and raw HTTP where it has none. Each
 * goes through the same stages as a chat: the key and its allow-list, the limits and budgets,
 * routing's retries, one ledger row with its operation name and cost, the metrics.
 *
 * Costs are asserted to the price units each is sold in: tokens (the upstream's, else Sluice's
 * count) and, beside them, `per_request` (a rerank's search units, a moderation), `per_image` (the
 * images in the answer; a dall-e model priced per image alone). A budget binds on a unit price: one
 * image spends it, and `n` images beyond what the whole budget buys are refused up front.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import type { Behaviour, RecordedRequest } from './fakes/fake-server.js';
import { TINY_PNG_BASE64 } from './fakes/chat-model.js';
import { closedPort } from './support/redis.js';
import { cli, createKey, eventually, startSluice, type LedgerRow, type RunningSluice } from './support/sluice.js';

const UPSTREAM_MODELS = ['m-rerank', 'cohere-rerank-v3.5', 'omni-moderation-latest', 'text-moderation-latest', 'gpt-image-1', 'dall-e-2', 'dall-e-3', 'm-chat'];

let a: FakeUpstream;
let b: FakeUpstream;
let anthropicUpstream: FakeUpstream;
let geminiUpstream: FakeUpstream;
let sluice: RunningSluice;
let metricsPort: number;
let key: string;
let openai: OpenAI;

/** Two deployments of one upstream model, on `a` then `b`, so that a failure on `a` is retried on `b`. */
function pair(id: string, upstreamModel: string, endpoint: string, pricing: string): string {
  return `
  - id: ${id}
    endpoints: [${endpoint}]
    pricing: ${pricing}
    deployments:
      - { provider: a, upstream_model: ${upstreamModel} }
      - { provider: b, upstream_model: ${upstreamModel}, priority: 1 }`;
}

// USD per million tokens; large, so that one call's cost is well above a rounding error.
const RERANK_PRICE = 1000;
const MODERATION_PRICE = 500;
const IMAGE_IN = 5;
const IMAGE_OUT = 40;
// USD per call (a rerank's search unit, a moderation) and per image: the units beside the tokens.
const RERANK_CALL = 0.002;
const MODERATION_CALL = 0.001;
const PAINTER_IMAGE = 0.04;
const DALLE_IMAGE = 0.02;

before(async () => {
  [a, b, anthropicUpstream, geminiUpstream] = await Promise.all([
    startFakeOpenAI({ apiKey: 'a-credential', models: UPSTREAM_MODELS }),
    startFakeOpenAI({ apiKey: 'b-credential', models: UPSTREAM_MODELS }),
    startFakeAnthropic({ apiKey: 'anthropic-credential', models: ['claude-x'] }),
    startFakeGemini({ apiKey: 'gemini-credential', models: ['gemini-x'] }),
  ]);
  metricsPort = await closedPort();
  const config = `
routing:
  backoff_ms: { initial: 10, max: 20 }
  circuit: { failures: 100, window_ms: 60000, cooldown_ms: 60000 }
providers:
  - { id: a, kind: openai, base_url: '${a.url}', api_key: a-credential }
  - { id: b, kind: openai, base_url: '${b.url}', api_key: b-credential }
  - { id: anthropic, kind: anthropic, base_url: '${anthropicUpstream.url}', api_key: anthropic-credential }
  - { id: google, kind: gemini, base_url: '${geminiUpstream.url}', api_key: gemini-credential }
models:
${pair('reranker', 'm-rerank', 'rerank', `{ input_per_mtok: ${RERANK_PRICE}, output_per_mtok: 0, per_request: ${RERANK_CALL} }`)}
  - { id: cohere-reranker, provider: a, upstream_model: cohere-rerank-v3.5, endpoints: [rerank], pricing: { input_per_mtok: ${RERANK_PRICE}, output_per_mtok: 0, per_request: ${RERANK_CALL} } }
${pair('moderator', 'omni-moderation-latest', 'moderations', `{ input_per_mtok: ${MODERATION_PRICE}, output_per_mtok: 0, per_request: ${MODERATION_CALL} }`)}
  - { id: text-moderator, provider: a, upstream_model: text-moderation-latest, endpoints: [moderations] }
${pair('painter', 'gpt-image-1', 'images', `{ input_per_mtok: ${IMAGE_IN}, output_per_mtok: ${IMAGE_OUT}, per_image: ${PAINTER_IMAGE} }`)}
  - { id: dalle, provider: a, upstream_model: dall-e-2, endpoints: [images], pricing: { per_image: ${DALLE_IMAGE} } }
  - { id: dalle-3, provider: a, upstream_model: dall-e-3, endpoints: [images] }
  - { id: chatty, provider: a, upstream_model: m-chat, endpoints: [chat] }
  - { id: claude-everything, provider: anthropic, upstream_model: claude-x, endpoints: [rerank, moderations, images] }
  - { id: gemini-everything, provider: google, upstream_model: gemini-x, endpoints: [rerank, moderations, images] }
`;
  sluice = await startSluice({ config, args: ['--workers', '1', '--metrics-listen', `127.0.0.1:${metricsPort}`] });
  ({ key } = await createKey(sluice.dataDir, 'acme'));
  openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([a.close(), b.close(), anthropicUpstream.close(), geminiUpstream.close()]);
});

let requestCount = 0;
/** A request id of the test's own, which the gateway keeps (x-request-id) and the ledger row carries. */
function newRequestId(): string {
  return `ops-json-${process.pid}-${++requestCount}`;
}

async function rowOf(requestId: string): Promise<LedgerRow> {
  return eventually(async () => (await sluice.ledger()).find((row) => row.request_id === requestId), 5000, `the ledger row of ${requestId}`);
}

interface Answered {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
  readonly requestId: string;
}

async function post(path: string, body: unknown, bearer = key, headers: Record<string, string> = {}): Promise<Answered> {
  const requestId = newRequestId();
  const response = await fetch(`${sluice.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text), requestId };
}

/** Every request either fake OpenAI-compatible upstream has had. */
function upstreamCalls(): number {
  return a.requests.length + b.requests.length + anthropicUpstream.requests.length + geminiUpstream.requests.length;
}

const modelOf = (request: RecordedRequest): unknown => request.body?.model;

async function metricsText(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
}

/** The sum of a metric's series whose labels hold every one of `labels`. */
function metricSum(text: string, metric: string, labels: readonly string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labelText = line.slice(metric.length + 1, line.lastIndexOf('}'));
    if (labels.every((label) => labelText.includes(label))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('rerank over raw HTTP', () => {
  for (const path of ['/v1/rerank', '/v2/rerank']) {
    test(`Jina's and vLLM's shape on ${path}: documents as strings and {text}, top_n, the answer passed back with the public model; tokens as the upstream counted them`, async () => {
      const before = a.requests.length;
      const documents = ['Paris is the capital of France', 'Berlin is in Germany', { text: 'France is a country in Europe' }];
      const answered = await post(path, { model: 'reranker', query: 'capital of France', documents, top_n: 2, return_documents: true, truncate_prompt_tokens: 128 });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.model, 'reranker', 'the public id, not the upstream model');
      assert.deepEqual(answered.body.results.map((r: any) => r.index), [0, 2], 'best first, cut to top_n');
      assert.equal(answered.body.results[0].document.text, 'Paris is the capital of France');
      assert.equal(answered.body.results[0].relevance_score, 1);
      const sent = a.requests.slice(before).find((r) => r.path === '/v1/rerank');
      assert.ok(sent, 'relayed to {base_url}/rerank');
      assert.equal(sent.body.model, 'm-rerank', 'model rewritten to the upstream one');
      assert.deepEqual(sent.body.documents, documents, 'the documents as the caller sent them');
      assert.equal(sent.body.truncate_prompt_tokens, 128, 'an unknown field passed on');

      const row = await rowOf(answered.requestId);
      assert.equal(row.operation, 'rerank');
      assert.equal(row.model, 'reranker');
      assert.equal(row.status, 200);
      assert.equal(row.prompt_tokens, answered.body.usage.total_tokens, "the upstream's usage.total_tokens are the input tokens");
      assert.equal(row.completion_tokens, 0);
      assert.equal(row.tokens_counted, 0, "the upstream's count");
      assert.ok(Math.abs(row.cost_usd - ((answered.body.usage.total_tokens * RERANK_PRICE) / 1e6 + RERANK_CALL)) < 1e-12, `the input tokens at their price, and one call (${row.cost_usd})`);
    });

    test(`Cohere's shape on ${path}: results without documents and billed search units; Sluice counts the tokens the upstream did not`, async () => {
      const answered = await post(path, { model: 'cohere-reranker', query: 'What is the capital of the United States?', documents: ['Carson City is the capital city of the American state of Nevada.', 'Washington, D.C. is the capital of the United States.'], top_n: 1 });
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.deepEqual(answered.body.results.map((r: any) => Object.keys(r).sort()), [['index', 'relevance_score']], "Cohere's results");
      assert.equal(answered.body.results[0].index, 1);
      assert.equal(answered.body.meta.billed_units.search_units, 1, "Cohere's meta passed back");
      assert.equal('model' in answered.body, false, 'no model added where the upstream gave none');
      const row = await rowOf(answered.requestId);
      assert.equal(row.operation, 'rerank');
      assert.equal(row.tokens_counted, 1, "Sluice's own count");
      assert.ok(row.prompt_tokens >= 20 && row.prompt_tokens <= 40, `the query's and the documents' tokens (${row.prompt_tokens})`);
      assert.ok(Math.abs(row.cost_usd - ((row.prompt_tokens * RERANK_PRICE) / 1e6 + 1 * RERANK_CALL)) < 1e-12, `the input tokens at their price, and one search unit per_request (${row.cost_usd})`);
    });
  }

  test("Cohere's search units are billed per_request: 150 documents are two (one per 100)", async () => {
    const documents = Array.from({ length: 150 }, (_, i) => `document ${i}`);
    const answered = await post('/v2/rerank', { model: 'cohere-reranker', query: 'which document', documents, top_n: 3 });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.equal(answered.body.meta.billed_units.search_units, 2);
    const row = await rowOf(answered.requestId);
    assert.ok(row.prompt_tokens > 150, `Sluice's count of the query and documents (${row.prompt_tokens})`);
    assert.ok(Math.abs(row.cost_usd - ((row.prompt_tokens * RERANK_PRICE) / 1e6 + 2 * RERANK_CALL)) < 1e-12, `two search units at per_request beside the tokens (${row.cost_usd})`);
  });

  test("top_n 0 (vLLM's \"all\", an error to Cohere) is refused by name before any upstream", async () => {
    const before = upstreamCalls();
    const zero = await post('/v1/rerank', { model: 'reranker', query: 'q', documents: ['d'], top_n: 0 });
    assert.equal(zero.status, 400);
    assert.equal(zero.body.error.param, 'top_n');
    assert.equal(upstreamCalls(), before);
  });
});

describe('moderations through the openai SDK', () => {
  test('strings: one result each, the public model, tokens counted by Sluice, one ledger row', async () => {
    const before = a.requests.length;
    const requestId = newRequestId();
    const result = await openai.moderations.create({ model: 'moderator', input: ['I will kill the process', 'hello there'] }, { headers: { 'x-request-id': requestId } });
    assert.equal(result.model, 'moderator');
    assert.equal(result.results.length, 2);
    assert.equal(result.results[0]!.flagged, true);
    assert.equal(result.results[0]!.categories.violence, true);
    assert.equal(result.results[1]!.flagged, false);
    assert.ok(result.results[0]!.category_applied_input_types, 'an omni model says which inputs each category applied to');
    const sent = a.requests.slice(before).find((r) => r.path === '/v1/moderations');
    assert.equal(sent?.body.model, 'omni-moderation-latest');
    const row = await rowOf(requestId);
    assert.equal(row.operation, 'moderations');
    assert.equal(row.tokens_counted, 1);
    assert.ok(row.prompt_tokens >= 6 && row.prompt_tokens <= 10, `the inputs' tokens (${row.prompt_tokens})`);
    assert.ok(Math.abs(row.cost_usd - ((row.prompt_tokens * MODERATION_PRICE) / 1e6 + MODERATION_CALL)) < 1e-12, `the input tokens at their price, and one call per_request, whatever the number of inputs (${row.cost_usd})`);
  });

  test('multimodal parts reach an omni model; a text-only model refuses the image as its API does', async () => {
    const input: OpenAI.ModerationMultiModalInput[] = [
      { type: 'text', text: 'a harmless picture' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${TINY_PNG_BASE64}` } },
    ];
    const result = await openai.moderations.create({ model: 'moderator', input });
    assert.equal(result.results.length, 1);
    assert.deepEqual(result.results[0]!.category_applied_input_types.violence, ['text', 'image']);
    await assert.rejects(openai.moderations.create({ model: 'text-moderator', input }), (error: unknown) => error instanceof OpenAI.BadRequestError && /image/.test(error.message));
  });
});

describe('image generations through the openai SDK', () => {
  test('gpt-image: b64_json images, the tokens it reports billed at the token prices and each image per_image, one ledger row', async () => {
    const requestId = newRequestId();
    const result = await openai.images.generate({ model: 'painter', prompt: 'a red fox in the snow', n: 2, quality: 'low', size: '1024x1024' }, { headers: { 'x-request-id': requestId } });
    assert.equal(result.data?.length, 2);
    assert.equal(result.data![0]!.b64_json, TINY_PNG_BASE64, 'the image as the upstream gave it');
    assert.equal(result.usage?.output_tokens, 544);
    const row = await rowOf(requestId);
    assert.equal(row.operation, 'images.generations');
    assert.equal(row.model, 'painter');
    assert.equal(row.prompt_tokens, 6, "gpt-image's input_tokens (the fake's: the prompt's words)");
    assert.equal(row.completion_tokens, 544, "gpt-image's output (image) tokens");
    assert.equal(row.tokens_counted, 0);
    assert.ok(Math.abs(row.cost_usd - ((6 * IMAGE_IN + 544 * IMAGE_OUT) / 1e6 + 2 * PAINTER_IMAGE)) < 1e-12, `the tokens at their prices, and two images (${row.cost_usd})`);
  });

  test('dall-e: url answers and b64_json answers passed as they came, revised prompts included; a model priced per_image alone bills n images', async () => {
    const requestId = newRequestId();
    const byUrl = await openai.images.generate({ model: 'dalle', prompt: 'a lighthouse at dusk', response_format: 'url', size: '256x256' }, { headers: { 'x-request-id': requestId } });
    assert.match(byUrl.data![0]!.url!, /^https:\/\/images\.fake\.example\/.+\.png$/);
    const row = await rowOf(requestId);
    assert.equal(row.operation, 'images.generations');
    assert.equal(row.tokens_counted, 1, 'dall-e reports no tokens: the prompt is counted');
    assert.ok(row.prompt_tokens >= 4 && row.prompt_tokens <= 6);
    assert.ok(Math.abs(row.cost_usd - DALLE_IMAGE) < 1e-12, `one image, no token price (${row.cost_usd})`);
    const threeId = newRequestId();
    const three = await openai.images.generate({ model: 'dalle', prompt: 'three lighthouses', n: 3, response_format: 'b64_json', size: '256x256' }, { headers: { 'x-request-id': threeId } });
    assert.equal(three.data?.length, 3);
    const threeRow = await rowOf(threeId);
    assert.ok(Math.abs(threeRow.cost_usd - 3 * DALLE_IMAGE) < 1e-12, `three images (${threeRow.cost_usd})`);
    const inline = await openai.images.generate({ model: 'dalle-3', prompt: 'a lighthouse', response_format: 'b64_json', style: 'natural' });
    assert.equal(inline.data![0]!.b64_json, TINY_PNG_BASE64);
    assert.equal(inline.data![0]!.revised_prompt, 'A picture of a lighthouse');
    await assert.rejects(openai.images.generate({ model: 'dalle-3', prompt: 'two lighthouses', n: 2 }), (error: unknown) => error instanceof OpenAI.BadRequestError && /Invalid 'n'/.test(error.message), "the upstream's own refusal, in its words");
  });
});

describe('a budget binds on a unit price', () => {
  test("one image at per_image spends a budget below it; the next request is the budget's 429 in OpenAI's shape and reaches no upstream", async () => {
    const { key: budgeted } = await createKey(sluice.dataDir, 'image-budget-co', ['--budget-usd', String(DALLE_IMAGE / 2), '--budget-period', 'day']);
    const client = new OpenAI({ apiKey: budgeted, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const requestId = newRequestId();
    const made = await client.images.generate({ model: 'dalle', prompt: 'a boat', size: '256x256' }, { headers: { 'x-request-id': requestId } });
    assert.equal(made.data?.length, 1, 'admitted while the budget is unspent');
    const spent = await rowOf(requestId);
    assert.ok(Math.abs(spent.cost_usd - DALLE_IMAGE) < 1e-12, `one image, priced per_image, spends the whole budget (${spent.cost_usd})`);
    const before = upstreamCalls();
    const refused = await post('/v1/images/generations', { model: 'dalle', prompt: 'another boat', size: '256x256' }, budgeted);
    assert.equal(refused.status, 429);
    assert.deepEqual(refused.body, { error: { message: refused.body.error.message, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } });
    assert.match(refused.body.error.message, /has used its spend budget/);
    assert.equal(upstreamCalls(), before, 'the refusal reached no upstream');
    const row = await rowOf(refused.requestId);
    assert.equal(row.error_kind, 'budget_exhausted');
    assert.equal(row.cost_usd, 0);
    // The SDK reads it as OpenAI's own quota error.
    const error = await client.images.generate({ model: 'dalle', prompt: 'a third boat', size: '256x256' }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.RateLimitError && error.code === 'insufficient_quota', String(error));
  });

  test('n images that cost more beyond one image than the whole budget are refused up front, with no Retry-After; fewer are admitted', async () => {
    const { key: budgeted } = await createKey(sluice.dataDir, 'images-budget-co', ['--budget-usd', '0.05', '--budget-period', 'day']);
    const before = upstreamCalls();
    // Four at $0.02: $0.06 beyond one image, more than the whole $0.05.
    const refused = await post('/v1/images/generations', { model: 'dalle', prompt: 'four boats', n: 4, size: '256x256' }, budgeted);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'insufficient_quota');
    assert.match(refused.body.error.message, /reserves \$0\.06 more than an ordinary request \(one image\), which is more than this API key's whole spend budget \(\$0\.05\)\. Ask for fewer images \(n\)\./);
    assert.equal(refused.headers.get('retry-after'), null, 'no period would admit it');
    assert.equal(upstreamCalls(), before, 'the refusal reached no upstream');
    // Two: $0.02 beyond one, within the budget.
    const two = await post('/v1/images/generations', { model: 'dalle', prompt: 'two boats', n: 2, size: '256x256' }, budgeted);
    assert.equal(two.status, 200, JSON.stringify(two.body));
    assert.ok(Math.abs((await rowOf(two.requestId)).cost_usd - 2 * DALLE_IMAGE) < 1e-12);
  });
});

/** One operation as the shared checks call it. */
interface Op {
  readonly name: string;
  readonly path: string;
  readonly model: string;
  readonly upstreamModel: string;
  readonly body: Record<string, unknown>;
}

const OPS: readonly Op[] = [
  { name: 'rerank', path: '/v1/rerank', model: 'reranker', upstreamModel: 'm-rerank', body: { query: 'capital of France', documents: ['Paris is the capital of France', 'Lyon'] } },
  { name: 'moderations', path: '/v1/moderations', model: 'moderator', upstreamModel: 'omni-moderation-latest', body: { input: 'I will kill the process' } },
  { name: 'images.generations', path: '/v1/images/generations', model: 'painter', upstreamModel: 'gpt-image-1', body: { prompt: 'a red fox', quality: 'high' } },
];

const UPSTREAM_503 = { status: 503, body: JSON.stringify({ error: { message: 'Service Unavailable', type: 'ServiceUnavailableError', param: null, code: 503 } }) };

for (const op of OPS) {
  describe(`${op.name}: the stages every operation goes through`, () => {
    const call = (bearer = key) => post(op.path, { model: op.model, ...op.body }, bearer);

    test('a key whose allow-list leaves the model out is refused, and the upstream is untouched', async () => {
      const { key: limited } = await createKey(sluice.dataDir, 'allow-co', ['--models', 'chatty']);
      const before = upstreamCalls();
      const refused = await call(limited);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.param, 'model');
      assert.equal(upstreamCalls(), before, 'nothing reached an upstream');
      const row = await rowOf(refused.requestId);
      assert.equal(row.operation, op.name);
      assert.equal(row.error_kind, 'model_not_permitted');
    });

    test('a disabled key is a 403', async () => {
      const created = await createKey(sluice.dataDir, 'disabled-co');
      assert.equal((await cli(['keys', 'disable', created.id, '--data', sluice.dataDir])).code, 0);
      const refused = await eventually(async () => {
        const answered = await call(created.key);
        return answered.status === 403 ? answered : undefined;
      }, 5000, 'the disabled key to be refused');
      assert.match(refused.body.error.message, /disabled/i);
      const before = upstreamCalls();
      assert.equal((await call(created.key)).status, 403);
      assert.equal(upstreamCalls(), before, 'a refused key reaches no upstream');
    });

    test("an rpm limit's 429, with its headers", async () => {
      const { key: limited } = await createKey(sluice.dataDir, 'rpm-co', ['--rpm', '1']);
      const first = await call(limited);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.headers.get('x-ratelimit-limit-requests'), '1');
      const before = upstreamCalls();
      const refused = await call(limited);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'rate_limit_exceeded');
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.equal(upstreamCalls(), before, 'the refusal reached no upstream');
    });

    test('a budget refuses once spent', async () => {
      const { key: budgeted } = await createKey(sluice.dataDir, 'budget-co', ['--budget-usd', '0.000001', '--budget-period', 'day']);
      const first = await call(budgeted);
      assert.equal(first.status, 200, 'admitted while the budget is unspent');
      const spent = await rowOf(first.requestId);
      assert.ok(spent.cost_usd > 0.000001, `one call spends the whole budget (${spent.cost_usd})`);
      const before = upstreamCalls();
      const refused = await call(budgeted);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'insufficient_quota');
      assert.equal(upstreamCalls(), before, 'the refusal reached no upstream');
    });

    test('a 503 from the first deployment is retried on the second; one ledger row for the request, billed once', async () => {
      const aimed: Behaviour = { fail: UPSTREAM_503, only: (request) => modelOf(request) === op.upstreamModel };
      a.behaviour = aimed;
      const beforeA = a.requests.length;
      const beforeB = b.requests.length;
      try {
        const answered = await call();
        assert.equal(answered.status, 200, JSON.stringify(answered.body));
        assert.equal(answered.headers.get('x-sluice-attempts'), '2');
        assert.equal(a.requests.length - beforeA, 1, 'the first deployment was tried once');
        assert.equal(b.requests.length - beforeB, 1, 'the second answered');
        const row = await rowOf(answered.requestId);
        assert.equal(row.operation, op.name);
        assert.equal(row.attempts, 2);
        assert.equal(row.deployment, `b/${op.upstreamModel}`);
        assert.ok(row.cost_usd > 0);
        const rows = (await sluice.ledger()).filter((r) => r.request_id === answered.requestId);
        assert.equal(rows.length, 1, 'exactly one ledger row');
      } finally {
        a.behaviour = {};
      }
    });

    test("the metrics count it under Sluice's own operation name, on the gateway's side and the upstream's", async () => {
      const answered = await call();
      assert.equal(answered.status, 200);
      await rowOf(answered.requestId);
      const text = await eventually(async () => {
        const scraped = await metricsText();
        return metricSum(scraped, 'gen_ai_server_request_duration_seconds_count', [`gen_ai_operation_name="${op.name}"`, `gen_ai_request_model="${op.model}"`]) > 0 ? scraped : undefined;
      }, 5000, 'the metrics of the call');
      assert.ok(metricSum(text, 'gen_ai_client_operation_duration_seconds_count', [`gen_ai_operation_name="${op.name}"`, `gen_ai_request_model="${op.upstreamModel}"`]) > 0, 'the upstream call');
      assert.ok(metricSum(text, 'sluice_cost_usd_total', [`model="${op.model}"`]) > 0, 'its cost');
      assert.equal(metricSum(text, 'gen_ai_server_request_duration_seconds_count', ['gen_ai_operation_name="chat"', `gen_ai_request_model="${op.model}"`]), 0, 'never reported as a chat');
    });
  });
}

describe('bad input reaches no upstream', () => {
  const cases: readonly { what: string; path: string; body: Record<string, unknown>; status: number; param: string; message?: RegExp }[] = [
    { what: 'an empty query', path: '/v1/rerank', body: { model: 'reranker', query: '', documents: ['d'] }, status: 400, param: 'query' },
    { what: 'no query', path: '/v2/rerank', body: { model: 'reranker', documents: ['d'] }, status: 400, param: 'query' },
    { what: 'no documents', path: '/v1/rerank', body: { model: 'reranker', query: 'q', documents: [] }, status: 400, param: 'documents' },
    { what: '10,001 documents', path: '/v1/rerank', body: { model: 'reranker', query: 'q', documents: Array.from({ length: 10_001 }, () => 'd') }, status: 400, param: 'documents' },
    { what: 'a document that is a number', path: '/v1/rerank', body: { model: 'reranker', query: 'q', documents: ['d', 7] }, status: 400, param: 'documents[1]', message: /string or an object/ },
    { what: 'top_n of -1', path: '/v1/rerank', body: { model: 'reranker', query: 'q', documents: ['d'], top_n: -1 }, status: 400, param: 'top_n' },
    { what: 'a moderation without a model', path: '/v1/moderations', body: { input: 'hi' }, status: 400, param: 'model' },
    { what: 'a moderation input that is a number', path: '/v1/moderations', body: { model: 'moderator', input: 42 }, status: 400, param: 'input', message: /string, a non-empty array/ },
    { what: 'an empty moderation array', path: '/v1/moderations', body: { model: 'moderator', input: [] }, status: 400, param: 'input' },
    { what: 'n: 0', path: '/v1/images/generations', body: { model: 'painter', prompt: 'p', n: 0 }, status: 400, param: 'n' },
    { what: 'n: 11', path: '/v1/images/generations', body: { model: 'painter', prompt: 'p', n: 11 }, status: 400, param: 'n' },
    { what: 'a missing prompt', path: '/v1/images/generations', body: { model: 'painter' }, status: 400, param: 'prompt', message: /Missing required parameter: 'prompt'/ },
    { what: 'an empty prompt', path: '/v1/images/generations', body: { model: 'painter', prompt: '' }, status: 400, param: 'prompt' },
    { what: 'a response_format of neither', path: '/v1/images/generations', body: { model: 'dalle', prompt: 'p', response_format: 'gif' }, status: 400, param: 'response_format' },
    { what: 'a size that is no size', path: '/v1/images/generations', body: { model: 'dalle', prompt: 'p', size: 'big' }, status: 400, param: 'size' },
    { what: 'a stream of partial images', path: '/v1/images/generations', body: { model: 'painter', prompt: 'p', stream: true, partial_images: 2 }, status: 400, param: 'stream' },
    { what: 'a chat model asked to rerank', path: '/v1/rerank', body: { model: 'chatty', query: 'q', documents: ['d'] }, status: 400, param: 'model', message: /`chatty` does not serve \/v1\/rerank/ },
    { what: 'a chat model asked for images', path: '/v1/images/generations', body: { model: 'chatty', prompt: 'p' }, status: 400, param: 'model', message: /`chatty` does not serve \/v1\/images\/generations/ },
    { what: 'an unknown model', path: '/v1/moderations', body: { model: 'ghost', input: 'hi' }, status: 404, param: 'model' },
  ];
  for (const c of cases) {
    test(`${c.what}: ${c.status} naming '${c.param}'`, async () => {
      const before = upstreamCalls();
      const refused = await post(c.path, c.body);
      assert.equal(refused.status, c.status, JSON.stringify(refused.body));
      assert.equal(refused.body.error.param, c.param, refused.body.error.message);
      assert.equal(typeof refused.body.error.type, 'string', "OpenAI's error shape");
      if (c.message !== undefined) assert.match(refused.body.error.message, c.message);
      assert.equal(upstreamCalls(), before, 'nothing reached an upstream');
    });
  }

  for (const model of ['claude-everything', 'gemini-everything']) {
    test(`a model on an upstream that cannot serve them (${model}): 400 naming the model and the operation, for each of the three`, async () => {
      const before = upstreamCalls();
      const asks = [
        ['/v1/rerank', { model, query: 'q', documents: ['d'] }, /\/v1\/rerank.*does not serve rerank/],
        ['/v1/moderations', { model, input: 'hi' }, /\/v1\/moderations.*does not serve moderations/],
        ['/v1/images/generations', { model, prompt: 'p' }, /\/v1\/images\/generations.*does not serve images\.generations/],
      ] as const;
      for (const [path, body, message] of asks) {
        const refused = await post(path, body);
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.equal(refused.body.error.param, 'model');
        assert.match(refused.body.error.message, new RegExp(`\`${model}\``));
        assert.match(refused.body.error.message, message);
      }
      assert.equal(upstreamCalls(), before, 'nothing reached an upstream');
    });
  }
});
