// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { Validator } from '@seriousme/openapi-schema-validator';
import OpenAI, { toFile } from 'openai';
import { EDITED_PNG } from './fakes/fake-openai-media.js';
import { pcmWav } from './fakes/wav.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import { DocumentSchemas } from './support/openapi.js';
import { createKey, startSluice, type RunningSluice } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';

/**
 * `/openapi.json` served by a running gateway, and real answers to real clients (the official SDKs
 * where they hand over the raw response, fetch elsewhere) checked against it: each answer's status
 * and content type must be documented for its operation, and its body must fit the schema there.
 */
let upstreams: ThreeUpstreams;
let media: FakeUpstream;
let sluice: RunningSluice;
let key: string;
let document: Record<string, any>;
let schemas: DocumentSchemas;
const METRICS_TOKEN = 'openapi-metrics-token';
const checked = new Set<string>();

before(async () => {
  upstreams = await startThreeUpstreams();
  media = await startFakeOpenAI({ apiKey: 'media-credential', models: ['embed-up', 'rerank-up', 'omni-moderation-latest', 'gpt-image-1', 'whisper-up', 'tts-up', 'image-up'] });
  sluice = await startSluice({
    args: ['--metrics-token', METRICS_TOKEN],
    config: `${upstreams.providersYaml}
  - { id: media, kind: openai, base_url: '${media.url}', api_key: media-credential }
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions, responses], max_output_tokens: 8000 }
  - { id: embed, provider: media, upstream_model: embed-up, endpoints: [embeddings] }
  - { id: reranker, provider: media, upstream_model: rerank-up, endpoints: [rerank] }
  - { id: moderation, provider: media, upstream_model: omni-moderation-latest, endpoints: [moderations] }
  - { id: image, provider: media, upstream_model: gpt-image-1, endpoints: [images] }
  - { id: whisper, provider: media, upstream_model: whisper-up, endpoints: [transcriptions] }
  - { id: tts, provider: media, upstream_model: tts-up, endpoints: [speech] }
  - { id: image-editor, provider: media, upstream_model: image-up, endpoints: [images] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  const served = await fetch(`${sluice.url}/openapi.json`);
  assert.equal(served.status, 200);
  document = (await served.json()) as Record<string, any>;
  schemas = new DocumentSchemas(document);
});

after(async () => {
  try {
    const untested = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
      .filter((route) => !checked.has(route));
    assert.deepEqual(untested, [], 'every documented route had a real answer checked against the document');
    // The live router's own names for what it served (its metrics labels) are the document's.
    const metrics = await (await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const served = new Set([...metrics.matchAll(/^sluice_http_requests_total\{route="([^"]+)"/gm)].map((match) => match[1]!));
    served.delete('unmatched');
    assert.ok(served.size >= 30, `routes served: ${[...served].join(', ')}`);
    assert.deepEqual([...served].filter((route) => !checked.has(route)), [], 'every route the gateway served is documented under the same name');
  } finally {
    assert.equal(await sluice.stop(), 0);
    await upstreams.close();
    await media.close();
  }
});

/**
 * Checks a real answer against the document: `route` is the operation (`POST /v1/chat/completions`,
 * `POST /v1beta/models/{model}:generateContent`). Returns the parsed body.
 */
async function conforms(route: string, response: Response): Promise<unknown> {
  const [method, path] = route.split(' ') as [string, string];
  const operation = document.paths[path]?.[method.toLowerCase()];
  assert.ok(operation, `${route} is documented`);
  const documented = operation.responses[String(response.status)] ?? operation.responses.default;
  assert.ok(documented, `${route}: status ${response.status} is documented`);
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const text = await response.text();
  if (method === 'HEAD') {
    checked.add(route);
    return undefined;
  }
  const content = documented.content?.[type] ?? documented.content?.[`${type.split('/')[0]}/*`];
  assert.ok(content, `${route}: ${response.status} ${type} is documented (${Object.keys(documented.content ?? {}).join(', ')})`);
  const name = DocumentSchemas.refName(content.schema);
  let body: unknown = text;
  if (type === 'application/json') {
    body = JSON.parse(text);
    assert.ok(name, `${route}: a JSON answer has a schema`);
  }
  if (name !== undefined) assert.equal(schemas.check(name, body), null, `${route} ${response.status}: ${text.slice(0, 300)}`);
  checked.add(route);
  return body;
}

const bearer = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const post = (path: string, body: unknown, headers: Record<string, string> = bearer()) => fetch(`${sluice.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

describe('GET /openapi.json', () => {
  test('is valid OpenAPI 3.1, served with caching headers, and a repeated request with its ETag gets a 304', async () => {
    const result = await new Validator().validate(structuredClone(document));
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    const response = await fetch(`${sluice.url}/openapi.json`);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(response.headers.get('cache-control'), 'public, max-age=3600');
    const etag = response.headers.get('etag');
    assert.match(etag ?? '', /^"[A-Za-z0-9_-]+"$/);
    assert.deepEqual(await response.json(), document, 'built once: every request gets the same document');
    const again = await fetch(`${sluice.url}/openapi.json`, { headers: { 'if-none-match': etag! } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
    await conforms('GET /openapi.json', await fetch(`${sluice.url}/openapi.json`));
  });
});

describe('real answers match the document', () => {
  test('OpenAI: chat, legacy completions, Responses (stored, read back, deleted), embeddings, models, through the openai SDK', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await conforms('POST /v1/chat/completions', await openai.chat.completions.create({ model: 'llama-chat', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }).asResponse());
    await conforms('POST /v1/chat/completions', await openai.chat.completions.create({ model: 'llama-chat', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8, stream: true }).asResponse());
    await conforms('POST /v1/completions', await openai.completions.create({ model: 'llama-chat', prompt: 'hello', max_tokens: 8 }).asResponse());
    const created = (await conforms('POST /v1/responses', await openai.responses.create({ model: 'llama-chat', input: 'hello', max_output_tokens: 16 }).asResponse())) as { id: string };
    await conforms('GET /v1/responses/{id}', await openai.responses.retrieve(created.id).asResponse());
    await conforms('DELETE /v1/responses/{id}', await openai.responses.delete(created.id).asResponse());
    await conforms('GET /v1/responses/{id}', await fetch(`${sluice.url}/v1/responses/${created.id}`, { headers: bearer() }));
    await conforms('POST /v1/embeddings', await openai.embeddings.create({ model: 'embed', input: ['a cat', 'a dog'] }).asResponse());
    await conforms('GET /v1/models', await openai.models.list().asResponse());
    await conforms('GET /v1/models/{model}', await openai.models.retrieve('llama-chat').asResponse());
    // Errors: a bad value, a wrong key, an unknown model.
    await conforms('POST /v1/chat/completions', await post('/v1/chat/completions', { model: 'llama-chat', messages: [], temperature: 9 }));
    await conforms('POST /v1/chat/completions', await post('/v1/chat/completions', { model: 'llama-chat', messages: [{ role: 'user', content: 'x' }] }, { authorization: 'Bearer sk-wrong', 'content-type': 'application/json' }));
    await conforms('GET /v1/models/{model}', await fetch(`${sluice.url}/v1/models/nope`, { headers: bearer() }));
  });

  test('rerank, moderations and images', async () => {
    await conforms('POST /v1/rerank', await post('/v1/rerank', { model: 'reranker', query: 'cat', documents: ['a cat', 'a dog'] }));
    await conforms('POST /v2/rerank', await post('/v2/rerank', { model: 'reranker', query: 'cat', documents: ['a cat', 'a dog'] }));
    await conforms('POST /v1/moderations', await post('/v1/moderations', { model: 'moderation', input: 'hello' }));
    await conforms('POST /v1/images/generations', await post('/v1/images/generations', { model: 'image', prompt: 'a cat', size: '1024x1024' }));
    await conforms('POST /v1/moderations', await post('/v1/moderations', { model: 'moderation' }));
  });

  test('uploads and speech: transcriptions (JSON and text), translations, image edits, speech, through the openai SDK', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const wav = () => toFile(pcmWav(16_000, 16_000, (i) => Math.sin((2 * Math.PI * 440 * i) / 16_000) * 8000), 'hello.wav', { type: 'audio/wav' });
    await conforms('POST /v1/audio/transcriptions', await openai.audio.transcriptions.create({ file: await wav(), model: 'whisper' }).asResponse());
    await conforms('POST /v1/audio/transcriptions', await openai.audio.transcriptions.create({ file: await wav(), model: 'whisper', response_format: 'text' }).asResponse());
    await conforms('POST /v1/audio/translations', await openai.audio.translations.create({ file: await wav(), model: 'whisper' }).asResponse());
    const notAudio = new FormData();
    notAudio.set('model', 'whisper');
    notAudio.set('file', new Blob([new Uint8Array(EDITED_PNG)], { type: 'image/png' }), 'picture.png');
    const refused = await fetch(`${sluice.url}/v1/audio/translations`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: notAudio });
    assert.equal(refused.status, 400);
    await conforms('POST /v1/audio/translations', refused);
    await conforms('POST /v1/images/edits', await openai.images.edit({ image: await toFile(EDITED_PNG, 'in.png', { type: 'image/png' }), prompt: 'add a hat', model: 'image-editor' }).asResponse());
    await conforms('POST /v1/audio/speech', await openai.audio.speech.create({ model: 'tts', input: 'hello', voice: 'alloy', response_format: 'wav' }).asResponse());
  });

  test('Anthropic: messages (whole and streamed), count_tokens, models, errors, through the Anthropic SDK', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
    await conforms('POST /v1/messages', await anthropic.messages.create({ model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }).asResponse());
    await conforms('POST /v1/messages', await anthropic.messages.create({ model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }], stream: true }).asResponse());
    await conforms('POST /v1/messages/count_tokens', await anthropic.messages.countTokens({ model: 'claude', messages: [{ role: 'user', content: 'hello' }] }).asResponse());
    await conforms('GET /v1/models', await anthropic.models.list().asResponse());
    await conforms('GET /v1/models/{model}', await anthropic.models.retrieve('claude').asResponse());
    const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
    const refused = await post('/v1/messages', { model: 'claude', messages: [{ role: 'user', content: 'hello' }] }, headers);
    assert.equal(refused.status, 400);
    await conforms('POST /v1/messages', refused);
  });

  test('Gemini: generateContent, streamed, countTokens, embedContent, batchEmbedContents, models, errors, through @google/genai and fetch', async () => {
    let raw: Response | undefined;
    const google = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } });
    const generated = await google.models.generateContent({ model: 'gemini-flash', contents: 'hello' });
    assert.ok(generated.text);
    const headers = { 'x-goog-api-key': key, 'content-type': 'application/json' };
    const body = { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] };
    for (const prefix of ['/v1beta/models/', '/v1/models/']) {
      await conforms(`POST ${prefix}{model}:generateContent`, await post(`${prefix}gemini-flash:generateContent`, body, headers));
      await conforms(`POST ${prefix}{model}:streamGenerateContent`, await post(`${prefix}gemini-flash:streamGenerateContent?alt=sse`, body, headers));
      await conforms(`POST ${prefix}{model}:streamGenerateContent`, await post(`${prefix}gemini-flash:streamGenerateContent`, body, headers));
      await conforms(`POST ${prefix}{model}:countTokens`, await post(`${prefix}gemini-flash:countTokens`, body, headers));
      await conforms(`POST ${prefix}{model}:embedContent`, await post(`${prefix}embed:embedContent`, { content: { parts: [{ text: 'a cat' }] } }, headers));
      await conforms(`POST ${prefix}{model}:batchEmbedContents`, await post(`${prefix}embed:batchEmbedContents`, { requests: [{ model: 'models/embed', content: { parts: [{ text: 'a cat' }] } }] }, headers));
      raw = await post(`${prefix}gemini-flash:generateContent`, { contents: [{ role: 'wizard', parts: [{ text: 'x' }] }] }, headers);
      assert.equal(raw.status, 400);
      await conforms(`POST ${prefix}{model}:generateContent`, raw);
    }
    await conforms('GET /v1beta/models', await fetch(`${sluice.url}/v1beta/models`, { headers: { 'x-goog-api-key': key } }));
    await conforms('GET /v1beta/models/{model}', await fetch(`${sluice.url}/v1beta/models/gemini-flash?key=${key}`));
    await conforms('GET /v1beta/models/{model}', await fetch(`${sluice.url}/v1beta/models/gemini-flash`, { headers: { 'x-goog-api-key': 'wrong' } }));
  });

  test('the platform routes: probes, healthz, metrics', async () => {
    for (const path of ['/livez', '/readyz']) {
      await conforms(`GET ${path}`, await fetch(`${sluice.url}${path}`));
      await conforms(`HEAD ${path}`, await fetch(`${sluice.url}${path}`, { method: 'HEAD' }));
    }
    await conforms('GET /healthz', await fetch(`${sluice.url}/healthz`));
    await conforms('GET /metrics', await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }));
    await conforms('GET /metrics', await fetch(`${sluice.url}/metrics`, { headers: { authorization: 'Bearer wrong' } }));
  });
});
