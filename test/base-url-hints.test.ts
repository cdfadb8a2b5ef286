/**
 * Clients configured with a wrong base URL, as a new user configures them: the `openai` SDK without
 * `/v1`, the Anthropic SDK with `/v1`, Google's SDK with `/v1beta` or `/v1` on its base. Each gets a
 * 404 in its own dialect whose message says what the base URL should be, and the SDK's own error
 * message carries the hint. Nothing goes upstream and no ledger row is written for a path no route takes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { createKey, startSluice, tempDir, type CreatedKey, type RunningSluice } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { thrown } from './support/thrown.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: CreatedKey;

before(async () => {
  upstreams = await startThreeUpstreams();
  const dataDir = tempDir();
  key = await createKey(dataDir, 'hints-co');
  sluice = await startSluice({
    dataDir,
    config: `${upstreams.providersYaml}
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat] }
  - { id: gemini, provider: google, upstream_model: gemini-test, endpoints: [chat] }
`,
  });
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await upstreams.close();
});

describe('the openai SDK with a base URL lacking /v1', () => {
  test('chat: a 404 whose message names /v1/chat/completions and says the base URL should end in /v1', async () => {
    const client = new OpenAI({ apiKey: key.key, baseURL: sluice.url, maxRetries: 0 });
    const error = await thrown(client.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof OpenAI.NotFoundError, String(error));
    assert.equal(error.code, 'route_not_found');
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.message, "404 There is no route POST /chat/completions; did you mean /v1/chat/completions? The client's base URL should end in /v1 (http://host:port/v1).");
    assert.equal(upstreams.vllm.requests.length, 0, 'nothing went upstream');
  });

  test('models.list() and models.retrieve(): the public catalogue page does not answer a key, the hint does', async () => {
    const client = new OpenAI({ apiKey: key.key, baseURL: sluice.url, maxRetries: 0 });
    for (const [call, path] of [[() => client.models.list(), '/models'], [() => client.models.retrieve('llama'), '/models/llama']] as const) {
      const error = await thrown(call());
      assert.ok(error instanceof OpenAI.NotFoundError, String(error));
      assert.equal(error.code, 'route_not_found');
      assert.equal(error.message, `404 There is no route GET ${path} for an API key (it is the public catalogue page); did you mean /v1${path}? The client's base URL should end in /v1 (http://host:port/v1).`);
    }
    // Without a key, the public page as ever.
    assert.equal((await fetch(`${sluice.url}/models`, { headers: { accept: 'application/json' } })).status, 200);
  });

  test('with /v1 twice: the base URL should not end in /v1', async () => {
    const error = await thrown(new OpenAI({ apiKey: key.key, baseURL: `${sluice.url}/v1/v1`, maxRetries: 0 }).chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof OpenAI.NotFoundError, String(error));
    assert.match(error.message, /There is no route POST \/v1\/v1\/chat\/completions; did you mean \/v1\/chat\/completions\? The client's base URL should not end in \/v1/);
  });
});

describe('the Anthropic SDK with a base URL ending in /v1', () => {
  test("a 404 not_found_error in Anthropic's shape: the base URL should not end in /v1", async () => {
    const client = new Anthropic({ apiKey: key.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const error = await thrown(client.messages.create({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof Anthropic.NotFoundError, String(error));
    const body = error.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error', "Anthropic's envelope");
    assert.equal(body.error.type, 'not_found_error');
    assert.equal(
      body.error.message,
      "There is no route POST /v1/v1/messages; did you mean /v1/messages? The client's base URL should not end in /v1: the client adds /v1 itself, so give it the gateway's address alone (http://host:port).",
    );
    assert.match(error.message, /did you mean \/v1\/messages\? The client's base URL should not end in \/v1/, "the SDK's own message carries the hint");
    assert.equal(upstreams.anthropic.requests.length, 0, 'nothing went upstream');
  });
});

describe("Google's SDK with a wrong base URL", () => {
  for (const base of ['/v1beta', '/v1']) {
    test(`a base ending in ${base}: a 404 NOT_FOUND in Google's shape naming the path it meant`, async () => {
      const client = new GoogleGenAI({ apiKey: key.key, httpOptions: { baseUrl: `${sluice.url}${base}` } });
      const error = await thrown(client.models.generateContent({ model: 'gemini', contents: 'hi' }));
      assert.equal((error as { status?: number }).status, 404, String(error));
      const body = JSON.parse(String((error as Error).message)) as { error: { code: number; status: string; message: string } };
      assert.deepEqual([body.error.code, body.error.status], [404, 'NOT_FOUND'], "Google's shape");
      // The SDK adds its own API version (v1beta, or v1 when its base has a path): the hint names the path without the base's.
      const match = new RegExp(`^There is no route POST ${base}(/v1(?:beta)?)/models/gemini:generateContent; did you mean (/v1(?:beta)?)/models/gemini:generateContent\\? The client's base URL should not end in ${base}: the client adds (/v1(?:beta)?) itself, so give it the gateway's address alone \\(http://host:port\\)\\.$`).exec(body.error.message);
      assert.ok(match, body.error.message);
      assert.equal(match[1], match[2], 'the path meant is the one asked for without the base URL\'s version');
      assert.equal(match[1], match[3]);
      assert.equal(upstreams.gemini.requests.length, 0, 'nothing went upstream');
    });
  }

  test('with the right base, the path the hint names serves', async () => {
    const answer = await new GoogleGenAI({ apiKey: key.key, httpOptions: { baseUrl: sluice.url } }).models.generateContent({ model: 'gemini', contents: 'hi' });
    assert.ok(answer.text !== undefined && answer.text.length > 0);
  });
});

describe('paths near no route', () => {
  test('stay a plain 404 without a hint, in the dialect the headers suggest', async () => {
    const plain = await fetch(`${sluice.url}/v1/nothing/here`, { method: 'POST', headers: { authorization: `Bearer ${key.key}` } });
    assert.equal(plain.status, 404);
    assert.deepEqual(await plain.json(), { error: { message: 'There is no route POST /v1/nothing/here.', type: 'invalid_request_error', param: null, code: 'route_not_found' } });
    const anthropic = await fetch(`${sluice.url}/v2/somewhere`, { method: 'POST', headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' } });
    assert.equal(anthropic.status, 404);
    const body = (await anthropic.json()) as { type: string; error: { type: string; message: string } };
    assert.deepEqual([body.type, body.error.type, body.error.message], ['error', 'not_found_error', 'There is no route POST /v2/somewhere.']);
    const google = await fetch(`${sluice.url}/nowhere`, { headers: { 'x-goog-api-key': key.key } });
    assert.equal(((await google.json()) as { error: { status: string } }).error.status, 'NOT_FOUND', "Google's shape for Google's header");
  });
});
