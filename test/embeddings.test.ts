import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { GoogleGenAI } from '@google/genai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { embed, embedMany } from 'ai';
import OpenAI from 'openai';
import { fakeVector, tokenText } from './fakes/embedding-vectors.js';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import type { RecordedRequest } from './fakes/fake-server.js';
import { cli, createKey, eventually, startSluice, type LedgerRow, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';

/**
 * Embeddings through the real gateway, called by real clients: the openai SDK, LangChain, the AI
 * SDK and @google/genai, over OpenAI's `/v1/embeddings` and Google's `:embedContent` /
 * `:batchEmbedContents`, to a vLLM-like upstream (which lists `data` in reverse order, so that
 * order is Sluice's doing) and to Gemini (100 requests a call at most). The fakes' vectors are
 * derived from the text (embedding-vectors.ts), so each answer is checked against its input.
 */

const METRICS_TOKEN = 'embeddings-metrics-token';
/** USD per million input tokens of the priced model: high, so that a small budget is spent by one call. */
const PRICE_PER_MTOK = 20;

let vllm: FakeUpstream;
let backup: FakeUpstream;
let gemini: FakeUpstream;
let anthropic: FakeUpstream;
/** A server that takes at most 4 inputs a call, as TEI's `max_client_batch_size` makes one. */
let small: FakeUpstream;
/** A server that serves embeddings alone, probed for /status. */
let probed: FakeUpstream;
let sluice: RunningSluice;
let key: string;

before(async () => {
  [vllm, backup, gemini, anthropic, small, probed] = await Promise.all([
    startFakeOpenAI({ apiKey: 'vllm-credential', models: ['embed-up', 'embed-fixed', 'embed-retry-up'], embeddings: { fixedDimensions: ['embed-fixed'], reversed: true } }),
    startFakeOpenAI({ apiKey: 'backup-credential', models: ['embed-up'] }),
    startFakeGemini({ apiKey: 'gemini-credential', models: ['gemini-embed'] }),
    startFakeAnthropic({ apiKey: 'anthropic-credential', models: ['claude-x'] }),
    startFakeOpenAI({ apiKey: 'small-credential', models: ['embed-small-batch'], embeddings: { maxInputs: 4 } }),
    startFakeOpenAI({ apiKey: 'probed-credential', models: ['embed-probed-up'] }),
  ]);
  const config = `
routing:
  backoff_ms: { initial: 10, max: 50 }
providers:
  - { id: vllm, kind: openai, base_url: '${vllm.url}', api_key: vllm-credential }
  - { id: backup, kind: openai, base_url: '${backup.url}', api_key: backup-credential }
  - { id: google, kind: gemini, base_url: '${gemini.url}', api_key: gemini-credential }
  - { id: claude, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential }
  - { id: small, kind: openai, base_url: '${small.url}', api_key: small-credential }
  - { id: small-split, kind: openai, base_url: '${small.url}', api_key: small-credential, max_embedding_inputs: 4 }
  - { id: probed, kind: openai, base_url: '${probed.url}', api_key: probed-credential, probe: { interval_ms: 1000, model: embed-probed } }
models:
  - id: embed-small
    provider: vllm
    upstream_model: embed-up
    endpoints: [embeddings]
    pricing: { input_per_mtok: ${PRICE_PER_MTOK}, output_per_mtok: 0 }
  - id: embed-fixed
    provider: vllm
    upstream_model: embed-fixed
    endpoints: [embeddings]
  - id: gemini-embedding
    provider: google
    upstream_model: gemini-embed
    endpoints: [embeddings]
  - id: claude-embed
    provider: claude
    upstream_model: claude-x
    endpoints: [embeddings]
  - id: embed-retry
    endpoints: [embeddings]
    deployments:
      - { provider: vllm, upstream_model: embed-retry-up }
      - { provider: backup, upstream_model: embed-up, priority: 1 }
  - id: embed-tei
    provider: small
    upstream_model: embed-small-batch
    endpoints: [embeddings]
  - id: embed-tei-split
    provider: small-split
    upstream_model: embed-small-batch
    endpoints: [embeddings]
  - id: chat-model
    provider: vllm
    upstream_model: embed-up
    endpoints: [chat]
  - id: embed-probed
    provider: probed
    upstream_model: embed-probed-up
    endpoints: [embeddings]
`;
  sluice = await startSluice({ config, args: ['--metrics-token', METRICS_TOKEN] });
  key = (await createKey(sluice.dataDir, 'embed-co')).key;
});

after(async () => {
  await sluice?.stop();
  await Promise.all([vllm, backup, gemini, anthropic, small, probed].map((upstream) => upstream?.close()));
});

const openai = (apiKey = key) => new OpenAI({ apiKey, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const genai = (apiKey = key) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: sluice.url } });

/** The embedding requests an upstream received since `from`. */
function embeddingCalls(upstream: FakeUpstream, from: number): RecordedRequest[] {
  return upstream.requests.slice(from).filter((r) => r.path.endsWith('/embeddings') || r.path.includes('mbedContent'));
}

/** A raw POST to the gateway; the status and the parsed body. */
async function post(path: string, body: unknown, apiKey = key): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${sluice.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

function float32(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

/** `n` words of one token each, by Sluice's count and the fake's alike. */
const words = (n: number) => Array.from({ length: n }, () => 'hello').join(' ');

describe('OpenAI dialect: the openai SDK', () => {
  test('by default the SDK asks base64, which the upstream is asked for and the SDK decodes; usage and the public model come back', async () => {
    const from = vllm.requests.length;
    const response = await openai().embeddings.create({ model: 'embed-small', input: 'hello embedding world' });
    assert.deepEqual(response.data[0]!.embedding, fakeVector('hello embedding world'), 'the vector of the input, decoded from little-endian float32');
    assert.equal(response.model, 'embed-small', 'the public model id');
    assert.deepEqual(response.usage, { prompt_tokens: 3, total_tokens: 3 }, "the upstream's usage");
    const [sent] = embeddingCalls(vllm, from);
    assert.equal(sent!.body.encoding_format, 'base64', 'the caller asked base64 (the SDK does by default), and so is the upstream');
    assert.equal(sent!.body.model, 'embed-up', 'the upstream model');
    assert.equal(sent!.headers.authorization, 'Bearer vllm-credential', "the gateway's credential, not the caller's key");
  });

  test("encoding_format float, an array: vectors in input order though the upstream lists them reversed", async () => {
    const input = ['first text', 'second one here', 'third'];
    const response = await openai().embeddings.create({ model: 'embed-small', input, encoding_format: 'float' });
    assert.deepEqual(response.data.map((d) => d.index), [0, 1, 2]);
    assert.deepEqual(response.data.map((d) => d.embedding), input.map((text) => fakeVector(text)));
    assert.equal(response.usage.prompt_tokens, 6);
  });

  test('token ids: one array and an array of arrays, each counted by its length', async () => {
    const one = await openai().embeddings.create({ model: 'embed-small', input: [101, 202, 303], encoding_format: 'float' });
    assert.deepEqual(one.data[0]!.embedding, fakeVector(tokenText([101, 202, 303])));
    assert.equal(one.usage.prompt_tokens, 3);
    const many = await openai().embeddings.create({ model: 'embed-small', input: [[1, 2], [3]] });
    assert.deepEqual(many.data.map((d) => d.embedding), [fakeVector(tokenText([1, 2])), fakeVector(tokenText([3]))]);
    assert.equal(many.usage.total_tokens, 3);
  });

  test('dimensions reach an upstream that takes them; one whose model refuses them is a 400 naming dimensions', async () => {
    const short = await openai().embeddings.create({ model: 'embed-small', input: 'shorter please', dimensions: 4, encoding_format: 'float' });
    assert.deepEqual(short.data[0]!.embedding, fakeVector('shorter please', 4));
    await assert.rejects(openai().embeddings.create({ model: 'embed-fixed', input: 'x', dimensions: 4 }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'dimensions');
      assert.match(error.message, /dimensions/);
      return true;
    });
  });

  test('base64 written by Sluice from floats (a Gemini upstream) and floats from base64 (raw HTTP)', async () => {
    const translated = await post('/v1/embeddings', { model: 'gemini-embedding', input: ['alpha', 'beta'], encoding_format: 'base64' });
    assert.equal(translated.status, 200);
    assert.deepEqual(translated.body.data.map((d: { embedding: string }) => float32(d.embedding)), [fakeVector('alpha'), fakeVector('beta')]);
    assert.deepEqual(translated.body.usage, { prompt_tokens: 2, total_tokens: 2 }, 'counted by Sluice: Gemini reports no usage');
    const relayed = await post('/v1/embeddings', { model: 'embed-small', input: 'gamma' });
    assert.deepEqual(relayed.body.data[0].embedding, fakeVector('gamma'), 'float is the default on the wire');
    assert.equal(relayed.body.object, 'list');
    assert.equal(relayed.body.data[0].object, 'embedding');
  });

  test('unknown fields pass on to an OpenAI-compatible upstream; task_type and title become Gemini fields, the rest are not sent there', async () => {
    const from = vllm.requests.length;
    await post('/v1/embeddings', { model: 'embed-small', input: 'x', truncate_prompt_tokens: 10, user: 'u-1' });
    const [sent] = embeddingCalls(vllm, from);
    assert.equal(sent!.body.truncate_prompt_tokens, 10, "vLLM's own field");
    assert.equal(sent!.body.user, 'u-1');
    const fromGemini = gemini.requests.length;
    const answered = await post('/v1/embeddings', { model: 'gemini-embedding', input: 'doc', task_type: 'RETRIEVAL_DOCUMENT', title: 'A title', truncate_prompt_tokens: 10 });
    assert.equal(answered.status, 200);
    const [call] = embeddingCalls(gemini, fromGemini);
    assert.deepEqual(call!.body.requests, [{ model: 'models/gemini-embed', content: { parts: [{ text: 'doc' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'A title' }]);
  });
});

describe('other clients', () => {
  test("LangChain's OpenAIEmbeddings: embedQuery, and embedDocuments in batches of batchSize", async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'embed-small', apiKey: key, configuration: { baseURL: `${sluice.url}/v1` }, batchSize: 2, maxRetries: 0 });
    assert.deepEqual(await embeddings.embedQuery('what is sluice'), fakeVector('what is sluice'));
    const from = vllm.requests.length;
    const documents = ['doc one', 'doc two', 'doc three', 'doc four', 'doc five'];
    assert.deepEqual(await embeddings.embedDocuments(documents), documents.map((text) => fakeVector(text)));
    assert.equal(embeddingCalls(vllm, from).length, 3, 'three calls of at most two');
  });

  test('the AI SDK: embed and embedMany (it asks float and reads data by position)', async () => {
    const provider = createOpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });
    const model = provider.embedding('embed-small');
    const one = await embed({ model, value: 'sunny day at the beach', maxRetries: 0 });
    assert.deepEqual(one.embedding, fakeVector('sunny day at the beach'));
    assert.equal(one.usage.tokens, 5);
    const values = ['rain', 'snow', 'wind', 'fog'];
    const many = await embedMany({ model, values, maxRetries: 0 });
    assert.deepEqual(many.embeddings, values.map((text) => fakeVector(text)), 'in input order');
    assert.equal(many.usage.tokens, 4);
  });
});

describe("Google's dialect", () => {
  test('@google/genai embedContent, single and several contents, on an OpenAI-compatible model and a Gemini one', async () => {
    const client = genai();
    for (const model of ['embed-small', 'gemini-embedding']) {
      const single = await client.models.embedContent({ model, contents: 'a single text' });
      assert.deepEqual(single.embeddings?.map((e) => e.values), [fakeVector('a single text')], `${model}: one vector`);
      const texts = ['one', 'two', 'three'];
      const batch = await client.models.embedContent({ model, contents: texts, config: { outputDimensionality: 4 } });
      assert.deepEqual(batch.embeddings?.map((e) => e.values), texts.map((text) => fakeVector(text, 4)), `${model}: in order, shortened`);
    }
  });

  test('the public model in each batch request is rewritten to the upstream model; the task type reaches Gemini only', async () => {
    const fromGemini = gemini.requests.length;
    await genai().models.embedContent({ model: 'gemini-embedding', contents: ['q'], config: { taskType: 'RETRIEVAL_QUERY' } });
    const [call] = embeddingCalls(gemini, fromGemini);
    assert.equal(call!.path, '/v1beta/models/gemini-embed:batchEmbedContents');
    assert.deepEqual(call!.body.requests, [{ model: 'models/gemini-embed', content: { parts: [{ text: 'q' }] }, taskType: 'RETRIEVAL_QUERY' }]);
    const fromVllm = vllm.requests.length;
    await genai().models.embedContent({ model: 'embed-small', contents: ['q'], config: { taskType: 'RETRIEVAL_QUERY' } });
    const [relayed] = embeddingCalls(vllm, fromVllm);
    assert.deepEqual(Object.keys(relayed!.body).sort(), ['encoding_format', 'input', 'model'], 'an OpenAI-compatible upstream gets nothing of Google wire');
  });

  test("the model lists say which models embed: Google's methods, OpenAI's list", async () => {
    const listed = await genai().models.get({ model: 'gemini-embedding' });
    assert.deepEqual(listed.supportedActions, ['embedContent', 'batchEmbedContents']);
    const chat = await genai().models.get({ model: 'chat-model' });
    assert.ok(!chat.supportedActions?.includes('embedContent'), 'a chat model does not embed');
    const ids = (await openai().models.list()).data.map((model) => model.id);
    assert.ok(ids.includes('embed-small') && ids.includes('gemini-embedding'));
  });

  test('a single :embedContent with model in the body, raw; a body naming another model is refused in Google shape', async () => {
    const ok = await post('/v1beta/models/gemini-embedding:embedContent', { model: 'models/gemini-embedding', content: { parts: [{ text: 'hi' }] } });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { embedding: { values: fakeVector('hi') } });
    const from = gemini.requests.length;
    const wrong = await post('/v1beta/models/gemini-embedding:batchEmbedContents', { requests: [{ model: 'models/other', content: { parts: [{ text: 'hi' }] } }] });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.status, 'INVALID_ARGUMENT');
    assert.match(wrong.body.error.message, /requests\[0\]\.model/);
    const unknown = await post('/v1/models/gemini-embedding:embedContent', { content: { parts: [{ text: 'hi' }] }, temperature: 1 });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /Unknown name "temperature"/);
    assert.equal(embeddingCalls(gemini, from).length, 0, 'nothing reached the upstream');
  });
});

describe('splitting', () => {
  test("a batch above Gemini's 100 is split and re-joined in order, from either dialect", async () => {
    const texts = Array.from({ length: 250 }, (_, i) => `text number ${i}`);
    let from = gemini.requests.length;
    const google = await genai().models.embedContent({ model: 'gemini-embedding', contents: texts });
    assert.deepEqual(google.embeddings?.map((e) => e.values), texts.map((text) => fakeVector(text)));
    assert.deepEqual(embeddingCalls(gemini, from).map((call) => call.body.requests.length).sort((x, y) => y - x), [100, 100, 50]);
    from = gemini.requests.length;
    const viaOpenAI = await openai().embeddings.create({ model: 'gemini-embedding', input: texts });
    assert.deepEqual(viaOpenAI.data.map((d) => d.embedding), texts.map((text) => fakeVector(text)), 'base64 of floats decoded by the SDK, in order');
    assert.equal(embeddingCalls(gemini, from).length, 3);
    assert.equal(viaOpenAI.usage.prompt_tokens, viaOpenAI.usage.total_tokens);
    assert.ok(viaOpenAI.usage.prompt_tokens >= 750, 'counted by Sluice over every input');
  });
});

describe("an upstream's own refusals", () => {
  test("a server's smaller batch limit: its 400 reaches the caller with its words; within it, the call is answered", async () => {
    const refused = await post('/v1/embeddings', { model: 'embed-tei', input: ['a', 'b', 'c', 'd', 'e'] });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.message, /batch size 5 > maximum allowed batch size 4/);
    const answered = await post('/v1/embeddings', { model: 'embed-tei', input: ['a', 'b', 'c', 'd'] });
    assert.equal(answered.status, 200);
    assert.equal(answered.body.data.length, 4);
  });

  test('a provider with max_embedding_inputs: the request is split at that size and joined in order', async () => {
    const from = small.requests.length;
    const input = Array.from({ length: 10 }, (_, i) => `split input ${i}`);
    const answered = await openai().embeddings.create({ model: 'embed-tei-split', input });
    assert.deepEqual(answered.data.map((d) => d.embedding), input.map((text) => fakeVector(text)));
    assert.deepEqual(embeddingCalls(small, from).map((call) => call.body.input.length).sort(), [2, 4, 4]);
    assert.equal(answered.usage.prompt_tokens, 30, 'the calls’ usage summed');
  });

  test("outputDimensionality for a model that cannot shorten its vectors: Google's 400 naming it", async () => {
    const refused = await post('/v1beta/models/embed-fixed:batchEmbedContents', { requests: [{ model: 'models/embed-fixed', content: { parts: [{ text: 'x' }] }, outputDimensionality: 4 }] });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.status, 'INVALID_ARGUMENT');
    assert.match(refused.body.error.message, /matryoshka|dimensions/);
  });
});

describe('refusals before the upstream', () => {
  test('bad input: an empty input, an empty array, an empty string among them, 10,000 inputs: 400 naming input; nothing reaches the upstream', async () => {
    const from = vllm.requests.length;
    for (const input of ['', [], ['a', ''], Array.from({ length: 10_000 }, () => 'x'), [[]]]) {
      const refused = await post('/v1/embeddings', { model: 'embed-small', input });
      assert.equal(refused.status, 400, JSON.stringify(input).slice(0, 40));
      assert.equal(refused.body.error.param, 'input');
      assert.equal(refused.body.error.type, 'invalid_request_error');
    }
    const badFormat = await post('/v1/embeddings', { model: 'embed-small', input: 'x', encoding_format: 'int8' });
    assert.equal(badFormat.body.error.param, 'encoding_format');
    const badDimensions = await post('/v1/embeddings', { model: 'embed-small', input: 'x', dimensions: 0 });
    assert.equal(badDimensions.body.error.param, 'dimensions');
    const tooMany = await post('/v1beta/models/gemini-embedding:batchEmbedContents', { requests: Array.from({ length: 3000 }, () => ({ model: 'models/gemini-embedding', content: { parts: [{ text: 'x' }] } })) });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.error.message, /at most 2048/);
    assert.equal(embeddingCalls(vllm, from).length, 0, 'nothing reached the upstream');
  });

  test('a model without an embedding API (Anthropic) and token ids for a text-only upstream (Gemini) are 400s naming model and input', async () => {
    const refused = await post('/v1/embeddings', { model: 'claude-embed', input: 'x' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, 'model');
    assert.match(refused.body.error.message, /claude-embed.*cannot make embeddings/);
    assert.equal(anthropic.requests.length, 0);
    const from = gemini.requests.length;
    const ids = await post('/v1/embeddings', { model: 'gemini-embedding', input: [1, 2, 3] });
    assert.equal(ids.status, 400);
    assert.equal(ids.body.error.param, 'input');
    assert.equal(embeddingCalls(gemini, from).length, 0);
    const chat = await post('/v1/embeddings', { model: 'chat-model', input: 'x' });
    assert.equal(chat.status, 400, 'a model that does not list embeddings');
    assert.match(chat.body.error.message, /does not serve \/v1\/embeddings/);
    const missing = await post('/v1/embeddings', { model: 'no-such-model', input: 'x' });
    assert.equal(missing.status, 404);
  });

  test("a key whose allow-list excludes the model is refused, upstream untouched; a disabled key is 403", async () => {
    const limited = await createKey(sluice.dataDir, 'allow-co', ['--models', 'gemini-embedding']);
    const from = vllm.requests.length;
    await assert.rejects(openai(limited.key).embeddings.create({ model: 'embed-small', input: 'x' }), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 403);
    const google = await post('/v1beta/models/embed-small:embedContent', { content: { parts: [{ text: 'x' }] } }, limited.key);
    assert.equal(google.status, 403);
    assert.equal(google.body.error.status, 'PERMISSION_DENIED', "Google's error shape");
    assert.equal(embeddingCalls(vllm, from).length, 0);
    const allowed = await openai(limited.key).embeddings.create({ model: 'gemini-embedding', input: 'x' });
    assert.equal(allowed.data.length, 1, 'the model it may use answers');

    const disabled = await createKey(sluice.dataDir, 'disabled-co');
    assert.equal((await cli(['keys', 'disable', disabled.id, '--data', sluice.dataDir])).code, 0);
    const refused = await eventually(async () => {
      const answer = await post('/v1/embeddings', { model: 'embed-small', input: 'x' }, disabled.key);
      return answer.status === 403 ? answer : undefined;
    }, 5000, 'the disabled key to be refused');
    assert.equal(refused.body.error.type, 'permission_error');
  });
});

describe('limits, budgets, routing, the ledger and the metrics', () => {
  test('tpm counts the input tokens of embeddings', async () => {
    const { key: limited } = await createKey(sluice.dataDir, 'tpm-embed-co', ['--tpm', '30']);
    const first = await post('/v1/embeddings', { model: 'embed-small', input: words(20) }, limited);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '30');
    const remaining = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    assert.ok(remaining <= 10 && remaining >= 0, `about 20 input tokens reserved, and no output: ${remaining} left`);
    const from = vllm.requests.length;
    const refused = await post('/v1/embeddings', { model: 'embed-small', input: words(20) }, limited);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.type, 'tokens');
    const huge = await post('/v1/embeddings', { model: 'embed-small', input: words(40) }, limited);
    assert.equal(huge.status, 429);
    assert.match(huge.body.error.message, /smaller than this request's input tokens; send fewer or shorter inputs/, 'no output cap to lower: the inputs are the request');
    assert.equal(huge.headers.get('retry-after'), null, 'no wait would admit it');
    assert.equal(embeddingCalls(vllm, from).length, 0);
  });

  test('a budget refuses embeddings once spent; each call leaves one ledger row with its cost', async () => {
    // 10 input tokens at $20 per million: $0.0002 a call, more than the whole budget.
    const { key: budgeted, id } = await createKey(sluice.dataDir, 'budget-embed-co', ['--budget-usd', '0.0001', '--budget-period', 'day']);
    const first = await post('/v1/embeddings', { model: 'embed-small', input: words(10) }, budgeted);
    assert.equal(first.status, 200);
    const rows = await rowsOf(id, 1);
    assert.equal(rows.length, 1, 'exactly one ledger row');
    const [row] = rows;
    assert.equal(row!.operation, 'embeddings');
    assert.equal(row!.model, 'embed-small');
    assert.equal(row!.prompt_tokens, 10);
    assert.equal(row!.completion_tokens, 0);
    assert.equal(row!.tokens_counted, 0, "the upstream's count");
    assert.ok(Math.abs(row!.cost_usd - (10 * PRICE_PER_MTOK) / 1e6) < 1e-12, `cost ${row!.cost_usd}`);
    const refused = await post('/v1/embeddings', { model: 'embed-small', input: 'x' }, budgeted);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'insufficient_quota');
    const google = await post('/v1beta/models/embed-small:batchEmbedContents', { requests: [{ model: 'models/embed-small', content: { parts: [{ text: 'x' }] } }] }, budgeted);
    assert.equal(google.status, 429, "Google's dialect is refused too");
    assert.equal(google.body.error.status, 'RESOURCE_EXHAUSTED');
    const all = await rowsOf(id, 3);
    // Refusals are written as they end, not in request order.
    assert.deepEqual(all.map((r) => `${r.operation} ${r.status} ${r.error_kind}`).sort(), ['embeddings 200 null', 'embeddings 429 budget_exhausted', 'gemini.batch_embed_contents 429 budget_exhausted']);
  });

  test('a failing first deployment is retried on the second', async () => {
    vllm.behaviour = { fail: { status: 503, body: JSON.stringify({ error: { message: 'overloaded', type: 'ServiceUnavailable', param: null, code: 503 } }) }, only: (r) => r.body?.model === 'embed-retry-up' };
    try {
      const from = backup.requests.length;
      const answer = await post('/v1/embeddings', { model: 'embed-retry', input: ['retry me', 'and me'] });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('x-sluice-attempts'), '2');
      assert.deepEqual(answer.body.data.map((d: { embedding: number[] }) => d.embedding), [fakeVector('retry me'), fakeVector('and me')]);
      assert.equal(embeddingCalls(backup, from).length, 1, 'the second deployment answered');
    } finally {
      vllm.behaviour = {};
    }
  });

  test('usage counted by Sluice when the upstream reports none; the metrics count embeddings under their GenAI name', async () => {
    const { key: own, id } = await createKey(sluice.dataDir, 'metrics-embed-co');
    const before = await embeddingRequestsCounted();
    vllm.behaviour = { omitUsage: true };
    try {
      const answer = await post('/v1/embeddings', { model: 'embed-small', input: 'counted by the gateway' }, own);
      assert.equal(answer.status, 200);
      assert.ok(answer.body.usage.prompt_tokens > 0 && answer.body.usage.total_tokens === answer.body.usage.prompt_tokens, 'usage always present');
    } finally {
      vllm.behaviour = {};
    }
    const [row] = await rowsOf(id, 1);
    assert.equal(row!.tokens_counted, 1, 'marked as counted by Sluice');
    assert.ok(row!.prompt_tokens > 0 && row!.cost_usd > 0, 'and billed');
    // The meter stage runs once the answer is written: the count follows the ledger row.
    await eventually(async () => ((await embeddingRequestsCounted()) === before + 1 ? true : undefined), 5000, 'the request in gen_ai.server.request.duration');
    assert.match(await metricsText(), /gen_ai_client_token_usage_sum\{[^}]*gen_ai_operation_name="embeddings"[^}]*gen_ai_request_model="embed-up"[^}]*gen_ai_token_type="input"[^}]*\} [1-9]/, "the upstream calls' input tokens, as embedding calls");
  });
});

async function metricsText(): Promise<string> {
  const response = await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(response.status, 200);
  return response.text();
}

/** `gen_ai_server_request_duration_seconds_count` of successful embeddings on embed-small. */
async function embeddingRequestsCounted(): Promise<number> {
  const series = /^gen_ai_server_request_duration_seconds_count\{([^}]*)\} (\d+)$/gm;
  let total = 0;
  for (const [, labels, count] of (await metricsText()).matchAll(series)) {
    if (labels!.includes('gen_ai_operation_name="embeddings"') && labels!.includes('gen_ai_request_model="embed-small"') && !labels!.includes('error_type')) total += Number(count);
  }
  return total;
}

async function rowsOf(keyId: string, count: number): Promise<LedgerRow[]> {
  return eventually(async () => {
    const rows = (await sluice.ledger()).filter((row) => row.key_id === keyId);
    return rows.length >= count ? rows : undefined;
  }, 5000, `${count} ledger rows`);
}

describe('the status probe', () => {
  test('a provider that serves embeddings alone is probed with one embedding, not a chat turn; the probe is recorded and never billed', async () => {
    const probe = await eventually(() => probed.requests.find((r) => r.path === '/v1/embeddings'), 5000, 'a probe at the upstream');
    assert.deepEqual(probe.body.input, ['ping'], 'one word embedded');
    assert.equal(probe.body.model, 'embed-probed-up', 'the upstream model');
    assert.equal(probed.requests.filter((r) => r.path.endsWith('/completions')).length, 0, 'no chat or completion was sent to an embedding server');
    const ok = await eventually(async () => {
      const rows = await queryStore<{ ok: number | boolean }>(sluice.dataDir, "SELECT ok FROM status_probes WHERE provider_id = 'probed'");
      return rows.length > 0 ? rows : undefined;
    }, 5000, 'a recorded probe');
    assert.ok(ok.every((row) => Boolean(row.ok)), 'every probe succeeded');
    assert.equal((await sluice.ledger()).filter((row) => row.model === 'embed-probed').length, 0, 'no probe is in the ledger');
  });
});
