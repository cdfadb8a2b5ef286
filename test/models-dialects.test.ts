import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { cli, createKey, startSluice, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';

/** 45 models over 7 distinct dates, so dates tie and every SDK needs several pages. */
const MODELS = Array.from({ length: 45 }, (_, i) => ({
  id: `m-${String(i).padStart(2, '0')}`,
  created: 1_700_000_000 + (i % 7) * 86_400,
  displayName: `Model ${i}`,
}));
const NEWEST_FIRST = [...MODELS].sort((a, b) => b.created - a.created).map((m) => m.id);

let sluice: RunningSluice;
let full: string;
let restricted: string;
let disabled: string;
let noModels: string;

before(async () => {
  const models = MODELS.map(
    (m) => `  - { id: ${m.id}, provider: p, created: ${m.created}, display_name: '${m.displayName}', description: 'About ${m.id}', version: '00${m.id.slice(-1)}', context_window: 8192, max_output_tokens: 1024, endpoints: [completions, chat] }`,
  );
  sluice = await startSluice({
    config: `providers:\n  - { id: p, kind: openai, base_url: 'http://127.0.0.1:9/v1' }\nmodels:\n${models.join('\n')}\n  - { id: bare/model, provider: p }\n`,
  });
  full = (await createKey(sluice.dataDir, 'acme')).key;
  restricted = (await createKey(sluice.dataDir, 'acme', ['--models', 'm-03,m-10,bare/model'])).key;
  noModels = (await createKey(sluice.dataDir, 'acme', ['--models', 'not-in-catalogue'])).key;
  const toDisable = await createKey(sluice.dataDir, 'acme');
  await cli(['keys', 'disable', toDisable.id, '--data', sluice.dataDir]);
  disabled = toDisable.key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
});

async function get(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(sluice.url + path, { headers });
  return { status: response.status, body: (await response.json()) as any, requestId: response.headers.get('x-request-id') };
}

const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: sluice.url, maxRetries: 0 });
const gemini = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: sluice.url } });

describe('Anthropic dialect', () => {
  test('the official SDK auto-pages through every model once, newest first', async () => {
    const seen = [];
    for await (const model of anthropic(full).models.list({ limit: 7 })) seen.push(model);
    assert.deepEqual(
      seen.map((m) => m.id),
      [...NEWEST_FIRST, 'bare/model'],
    );
    const first = seen.find((m) => m.id === 'm-06')!;
    assert.deepEqual({ ...first }, { type: 'model', id: 'm-06', display_name: 'Model 6', created_at: '2023-11-20T22:13:20Z' });
    const bare = seen.find((m) => m.id === 'bare/model')!;
    assert.equal(bare.display_name, 'bare/model', 'no display name: the id stands in');
    assert.equal(bare.created_at, '1970-01-01T00:00:00Z', 'no date: the epoch, never an invented date');
  });

  test('retrieve returns one Anthropic model object; unknown is NotFoundError', async () => {
    const model = await anthropic(full).models.retrieve('m-03');
    assert.deepEqual({ ...model }, { type: 'model', id: 'm-03', display_name: 'Model 3', created_at: '2023-11-17T22:13:20Z' });
    await assert.rejects(anthropic(full).models.retrieve('missing'), Anthropic.NotFoundError);
  });

  test('older clients: x-api-key with anthropic-version 2023-06-01, and the alpha-version alias', async () => {
    for (const version of ['anthropic-version', 'alpha-version']) {
      const page = await get('/v1/models?limit=3', { 'x-api-key': full, [version]: '2023-06-01' });
      assert.equal(page.status, 200);
      assert.deepEqual(
        page.body.data.map((m: any) => m.id),
        NEWEST_FIRST.slice(0, 3),
      );
      assert.equal(page.body.has_more, true);
      assert.equal(page.body.first_id, NEWEST_FIRST[0]);
      assert.equal(page.body.last_id, NEWEST_FIRST[2]);
    }
  });

  test('paging with after_id and before_id, default limit 20', async () => {
    const headers = { 'x-api-key': full, 'anthropic-version': '2023-06-01' };
    const firstPage = await get('/v1/models', headers);
    assert.equal(firstPage.body.data.length, 20);
    const second = await get(`/v1/models?limit=5&after_id=${NEWEST_FIRST[19]}`, headers);
    assert.deepEqual(
      second.body.data.map((m: any) => m.id),
      NEWEST_FIRST.slice(20, 25),
    );
    const back = await get(`/v1/models?limit=5&before_id=${NEWEST_FIRST[20]}`, headers);
    assert.deepEqual(
      back.body.data.map((m: any) => m.id),
      NEWEST_FIRST.slice(15, 20),
    );
    assert.equal(back.body.has_more, true);
    const start = await get(`/v1/models?limit=5&before_id=${NEWEST_FIRST[3]}`, headers);
    assert.deepEqual(
      start.body.data.map((m: any) => m.id),
      NEWEST_FIRST.slice(0, 3),
    );
    assert.equal(start.body.has_more, false);
    const last = await get('/v1/models?limit=1000', headers);
    assert.equal(last.body.data.length, 46);
    assert.equal(last.body.has_more, false);
  });

  test('a restricted key sees only its models', async () => {
    const seen = [];
    for await (const model of anthropic(restricted).models.list()) seen.push(model.id);
    // m-03 and m-10 share a date: the configuration's order breaks the tie.
    assert.deepEqual(seen, ['m-03', 'm-10', 'bare/model']);
  });

  test('errors come in Anthropic shape with the request id', async () => {
    const cases: [string, Record<string, string>, number, string][] = [
      ['/v1/models', { 'anthropic-version': '2023-06-01' }, 401, 'authentication_error'],
      ['/v1/models', { 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-wrong' }, 401, 'authentication_error'],
      ['/v1/models', { 'anthropic-version': '2023-06-01', 'x-api-key': disabled }, 403, 'permission_error'],
      ['/v1/models', { 'anthropic-version': '2023-06-01', 'x-api-key': noModels }, 403, 'permission_error'],
      ['/v1/models?limit=0', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 400, 'invalid_request_error'],
      ['/v1/models?limit=1001', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 400, 'invalid_request_error'],
      ['/v1/models?limit=ten', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 400, 'invalid_request_error'],
      ['/v1/models?after_id=nope', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 400, 'invalid_request_error'],
      ['/v1/models?after_id=m-01&before_id=m-02', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 400, 'invalid_request_error'],
      ['/v1/models/missing', { 'anthropic-version': '2023-06-01', 'x-api-key': full }, 404, 'not_found_error'],
      ['/v1/models/m-01', { 'anthropic-version': '2023-06-01', 'x-api-key': restricted }, 403, 'permission_error'],
    ];
    for (const [path, headers, status, type] of cases) {
      const response = await get(path, headers);
      assert.equal(response.status, status, `${path} ${JSON.stringify(headers)}`);
      assert.equal(response.body.type, 'error');
      assert.equal(response.body.error.type, type, path);
      assert.equal(typeof response.body.error.message, 'string');
      assert.equal(response.body.request_id, response.requestId);
    }
    await assert.rejects(anthropic('sk-wrong').models.list(), Anthropic.AuthenticationError);
    await assert.rejects(anthropic(disabled).models.list(), Anthropic.PermissionDeniedError);
  });
});

describe('Gemini dialect', () => {
  test('the official SDK pages through every model once, in order, with full metadata', async () => {
    const pager = await gemini(full).models.list({ config: { pageSize: 20 } });
    const seen = [];
    for await (const model of pager) seen.push(model);
    assert.deepEqual(
      seen.map((m) => m.name),
      [...MODELS.map((m) => `models/${m.id}`), 'models/bare/model'],
    );
    const m3 = seen[3]!;
    assert.equal(m3.displayName, 'Model 3');
    assert.equal(m3.description, 'About m-03');
    assert.equal(m3.version, '003');
    assert.equal(m3.inputTokenLimit, 8192);
    assert.equal(m3.outputTokenLimit, 1024);
    assert.deepEqual(m3.supportedActions, ['generateText', 'generateContent', 'streamGenerateContent', 'countTokens']);
  });

  test('get returns one model; unknown is an ApiError 404', async () => {
    const model = await gemini(full).models.get({ model: 'm-03' });
    assert.equal(model.name, 'models/m-03');
    const raw = await get('/v1beta/models/models/m-03', { 'x-goog-api-key': full });
    assert.equal(raw.body.name, 'models/m-03', 'the models/ prefix of a Gemini name is understood');
    await assert.rejects(gemini(full).models.get({ model: 'missing' }), (e: any) => e instanceof ApiError && e.status === 404);
  });

  test('?key= and x-goog-api-key select it on /v1/models; x-gamma-api-key is an alias', async () => {
    for (const [path, headers] of [
      [`/v1/models?key=${full}&pageSize=10`, {}],
      ['/v1/models?pageSize=10', { 'x-goog-api-key': full }],
      ['/v1/models?pageSize=10', { 'x-gamma-api-key': full }],
      [`/v1beta/models?key=${full}&pageSize=10`, {}],
    ] as const) {
      const page = await get(path, headers);
      assert.equal(page.status, 200, path);
      assert.equal(page.body.models.length, 10);
      assert.equal(page.body.models[0].name, 'models/m-00');
      assert.equal(page.body.models[0].baseModelId, 'm-00');
      assert.equal(typeof page.body.nextPageToken, 'string');
    }
  });

  test('nextPageToken is absent on the last page; pageSize defaults to 50 and is capped at 1000', async () => {
    const all = await get('/v1beta/models', { 'x-goog-api-key': full });
    assert.equal(all.body.models.length, 46);
    assert.ok(!('nextPageToken' in all.body));
    const capped = await get('/v1beta/models?pageSize=5000', { 'x-goog-api-key': full });
    assert.equal(capped.body.models.length, 46);
    const first = await get('/v1beta/models?pageSize=40', { 'x-goog-api-key': full });
    const rest = await get(`/v1beta/models?pageSize=40&pageToken=${first.body.nextPageToken}`, { 'x-goog-api-key': full });
    assert.equal(rest.body.models.length, 6);
    assert.ok(!('nextPageToken' in rest.body));
  });

  test('missing metadata is omitted, not invented', async () => {
    const bare = await get('/v1beta/models/bare/model', { 'x-goog-api-key': full });
    assert.deepEqual(bare.body, { name: 'models/bare/model', baseModelId: 'bare/model', supportedGenerationMethods: ['generateText', 'generateContent', 'streamGenerateContent', 'countTokens'] });
  });

  test('a restricted key sees only its models', async () => {
    const page = await get('/v1beta/models', { 'x-goog-api-key': restricted });
    assert.deepEqual(
      page.body.models.map((m: any) => m.name),
      ['models/m-03', 'models/m-10', 'models/bare/model'],
    );
  });

  test('errors come in Google shape with status names', async () => {
    const cases: [string, Record<string, string>, number, string][] = [
      ['/v1beta/models', {}, 401, 'UNAUTHENTICATED'],
      ['/v1beta/models?key=sk-wrong', {}, 401, 'UNAUTHENTICATED'],
      ['/v1/models', { 'x-goog-api-key': 'sk-wrong' }, 401, 'UNAUTHENTICATED'],
      ['/v1beta/models', { 'x-goog-api-key': disabled }, 403, 'PERMISSION_DENIED'],
      ['/v1/models', { 'x-goog-api-key': noModels }, 403, 'PERMISSION_DENIED'],
      ['/v1beta/models?pageSize=-1', { 'x-goog-api-key': full }, 400, 'INVALID_ARGUMENT'],
      ['/v1beta/models?pageToken=garbage', { 'x-goog-api-key': full }, 400, 'INVALID_ARGUMENT'],
      ['/v1beta/models/missing', { 'x-goog-api-key': full }, 404, 'NOT_FOUND'],
      ['/v1beta/models/m-01:predict', { 'x-goog-api-key': full, 'x-method': 'POST' }, 404, 'NOT_FOUND'],
      // A method Sluice serves, on a model that does not serve it: Google's 400.
      ['/v1beta/models/m-01:embedContent', { 'x-goog-api-key': full, 'x-method': 'POST', 'x-body': JSON.stringify({ content: { parts: [{ text: 'x' }] } }) }, 400, 'INVALID_ARGUMENT'],
    ];
    for (const [path, { 'x-method': method, 'x-body': body, ...headers }, status, name] of cases as [string, Record<string, string>, number, string][]) {
      const response = method === undefined ? await get(path, headers) : await (async () => {
        const r = await fetch(sluice.url + path, { method, headers, body: body ?? '{}' });
        return { status: r.status, body: (await r.json()) as any };
      })();
      assert.equal(response.status, status, path);
      assert.deepEqual(response.body, { error: { code: status, message: response.body.error.message, status: name } }, path);
      assert.ok(response.body.error.message.length > 0);
    }
    await assert.rejects(gemini('sk-wrong').models.list(), (e: any) => e instanceof ApiError && e.status === 401);
    await assert.rejects(gemini(disabled).models.list(), (e: any) => e instanceof ApiError && e.status === 403);
  });
});

describe('key carriers', () => {
  test('x-api-key without a version header is only a key carrier: OpenAI format', async () => {
    const page = await get('/v1/models', { 'x-api-key': full });
    assert.equal(page.status, 200);
    assert.equal(page.body.object, 'list');
  });

  test('two different keys are refused with 401 rather than guessed, in the selected dialect', async () => {
    const gem = await get('/v1/models', { authorization: `Bearer ${full}`, 'x-goog-api-key': restricted });
    assert.equal(gem.status, 401);
    assert.equal(gem.body.error.status, 'UNAUTHENTICATED');
    const anth = await get('/v1/models', { authorization: `Bearer ${full}`, 'x-api-key': restricted, 'anthropic-version': '2023-06-01' });
    assert.equal(anth.status, 401);
    assert.equal(anth.body.error.type, 'authentication_error');
    const openai = await get(`/v1/models?key=${restricted}`, { 'x-api-key': full });
    assert.equal(openai.status, 401);
    const same = await get(`/v1/models?key=${full}`, { authorization: `Bearer ${full}` });
    assert.equal(same.status, 200, 'the same key in two carriers is fine');
    assert.ok(Array.isArray(same.body.models));
  });

  test('anthropic-version takes precedence over Gemini carriers', async () => {
    const page = await get('/v1/models?limit=2', { 'anthropic-version': '2023-06-01', 'x-goog-api-key': full });
    assert.equal(page.status, 200);
    assert.equal(page.body.data[0].type, 'model');
  });
});

describe('a model-table failure is a 500 in every dialect, with nothing internal in the message', () => {
  test('an unreadable key row', async () => {
    const broken = await createKey(sluice.dataDir, 'broken', ['--models', 'm-01']);
    await queryStore(sluice.dataDir, 'UPDATE api_keys SET models = ? WHERE id = ?', ['{not json', broken.id]);
    const openai = await get('/v1/models', { authorization: `Bearer ${broken.key}` });
    assert.equal(openai.status, 500);
    assert.equal(openai.body.error.type, 'server_error');
    assert.doesNotMatch(openai.body.error.message, /JSON|SyntaxError|sqlite/i);
    const anth = await get('/v1/models', { 'x-api-key': broken.key, 'anthropic-version': '2023-06-01' });
    assert.equal(anth.status, 500);
    assert.equal(anth.body.error.type, 'api_error');
    const gem = await get('/v1beta/models', { 'x-goog-api-key': broken.key });
    assert.equal(gem.status, 500);
    assert.equal(gem.body.error.status, 'INTERNAL');
  });
});

describe('models of the operations that generate no text, in every vendor’s listing', () => {
  let gateway: RunningSluice;
  let key: string;
  const OPERATIONS: [id: string, endpoints: string][] = [
    ['writer', '[chat]'],
    ['embedder', '[embeddings]'],
    ['reranker', '[rerank]'],
    ['painter', '[images]'],
    ['listener', '[transcriptions, speech]'],
    ['moderator', '[moderations]'],
  ];

  before(async () => {
    const models = OPERATIONS.map(([id, endpoints]) => `  - { id: ${id}, provider: p, created: 1700000000, endpoints: ${endpoints} }`);
    gateway = await startSluice({ config: `providers:\n  - { id: p, kind: openai, base_url: 'http://127.0.0.1:9/v1' }\nmodels:\n${models.join('\n')}\n` });
    key = (await createKey(gateway.dataDir, 'acme')).key;
  });
  after(async () => {
    assert.equal(await gateway.stop(), 0);
  });

  test("OpenAI's and Anthropic's lists name every model, as OpenAI's own lists its embedding, image and audio models", async () => {
    const ids = OPERATIONS.map(([id]) => id);
    const openai = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as Promise<any>);
    assert.deepEqual(openai.data.map((m: any) => [m.id, m.object, m.owned_by]), ids.map((id) => [id, 'model', 'p']));
    const seen = [];
    for await (const model of new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 }).models.list()) seen.push(model.id);
    assert.deepEqual(seen, ids);
  });

  test("Google's list gives each model the methods it serves: embedContent and batchEmbedContents for an embedding model, none for what Google has no method for", async () => {
    const pager = await new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url } }).models.list();
    const actions = new Map<string, unknown>();
    for await (const model of pager) actions.set(model.name!, model.supportedActions);
    assert.deepEqual(Object.fromEntries(actions), {
      'models/writer': ['generateContent', 'streamGenerateContent', 'countTokens'],
      'models/embedder': ['embedContent', 'batchEmbedContents'],
      'models/reranker': [],
      'models/painter': [],
      'models/listener': [],
      'models/moderator': [],
    });
    const embedder = (await fetch(`${gateway.url}/v1beta/models/embedder`, { headers: { 'x-goog-api-key': key } }).then((r) => r.json())) as any;
    assert.deepEqual(embedder.supportedGenerationMethods, ['embedContent', 'batchEmbedContents']);
  });

  test('/models.json and /models name the operations each serves', async () => {
    const listed = ((await fetch(`${gateway.url}/models.json`).then((r) => r.json())) as any).data as any[];
    assert.deepEqual(Object.fromEntries(listed.map((m) => [m.id, m.operations])), {
      writer: ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1beta/models/{model}:generateContent', '/v1beta/models/{model}:streamGenerateContent'],
      embedder: ['/v1/embeddings', '/v1beta/models/{model}:embedContent', '/v1beta/models/{model}:batchEmbedContents'],
      reranker: ['/v1/rerank', '/v2/rerank'],
      painter: ['/v1/images/generations', '/v1/images/edits'],
      listener: ['/v1/audio/transcriptions', '/v1/audio/translations', '/v1/audio/speech'],
      moderator: ['/v1/moderations'],
    });
    const page = await (await fetch(`${gateway.url}/models`)).text();
    assert.match(/<tr data-model="reranker">[\s\S]*?<\/tr>/.exec(page)![0], /<code>\/v1\/rerank<\/code> <code>\/v2\/rerank<\/code>/);
    const detail = await (await fetch(`${gateway.url}/models/listener`)).text();
    assert.match(detail, /<code>POST \/v1\/audio\/transcriptions<\/code>, <code>POST \/v1\/audio\/translations<\/code>, <code>POST \/v1\/audio\/speech<\/code>/);
    assert.match(detail, /curl -sS &quot;\$SLUICE_URL\/v1\/audio\/speech&quot;[\s\S]*-o speech\.mp3/, 'its Try it example asks for what it serves');
  });
});
