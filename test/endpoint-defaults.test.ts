// postgres-pass: skip (which operations a configured model serves is decided from the configuration file; the store only looks up the key)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { FakeUpstream } from './fakes/fake-server.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, startSluice, type RunningSluice } from './support/sluice.js';

// Models written by hand without `endpoints` serve every generation operation their upstream can:
// chat in all four dialects, and legacy completions (relayed, or translated into a chat turn).
let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;
let openai: OpenAI;
let anthropic: Anthropic;
let genai: GoogleGenAI;

/** Each model without `endpoints`, its fake upstream, and the upstream path a legacy completion reaches. */
const DEFAULT_MODELS: { id: string; fake: () => FakeUpstream; legacyPath: RegExp }[] = [
  { id: 'vllm-default', fake: () => upstreams.vllm, legacyPath: /^\/v1\/completions$/ },
  { id: 'vllm-chat-api', fake: () => upstreams.vllm, legacyPath: /^\/v1\/chat\/completions$/ },
  { id: 'claude-default', fake: () => upstreams.anthropic, legacyPath: /^\/v1\/messages$/ },
  { id: 'gemini-default', fake: () => upstreams.gemini, legacyPath: /:generateContent/ },
];

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: vllm-default, provider: vllm, upstream_model: upstream-model }
  - { id: vllm-chat-api, provider: vllm, upstream_model: upstream-model, upstream_api: chat }
  - { id: claude-default, provider: anthropic, upstream_model: claude-test }
  - { id: gemini-default, provider: google, upstream_model: gemini-test }
  - { id: completions-listed, provider: vllm, upstream_model: upstream-model, endpoints: [completions] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
  genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

for (const model of DEFAULT_MODELS) {
  describe(`a model without endpoints: ${model.id}`, () => {
    test('answers chat through the openai SDK', async () => {
      const completion = await openai.chat.completions.create({ model: model.id, messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 });
      assert.equal(completion.object, 'chat.completion');
      assert.equal(completion.model, model.id);
      assert.ok(completion.choices[0]!.message.content!.length > 0);
      assert.equal(model.fake().requests.length, 1);
    });

    test('answers legacy completions, relayed or translated', async () => {
      const completion = await openai.completions.create({ model: model.id, prompt: 'Say hi', max_tokens: 3 });
      assert.equal(completion.object, 'text_completion');
      assert.ok(completion.choices[0]!.text.length > 0);
      const sent = model.fake().requests;
      assert.equal(sent.length, 1);
      assert.match(sent[0]!.path, model.legacyPath);
    });

    test('answers Anthropic Messages, the Responses API and Gemini generateContent', async () => {
      const message = await anthropic.messages.create({ model: model.id, max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(message.type, 'message');
      assert.equal(message.model, model.id);
      assert.equal(message.content[0]!.type, 'text');
      const response = await openai.responses.create({ model: model.id, input: 'hello', max_output_tokens: 16 });
      assert.equal(response.status, 'completed');
      assert.ok(response.output_text.length > 0);
      const generated = await genai.models.generateContent({ model: model.id, contents: 'hello', config: { maxOutputTokens: 3 } });
      assert.ok(generated.text!.length > 0);
      assert.equal(model.fake().requests.length, 3);
    });
  });
}

describe('a model that lists its endpoints', () => {
  test('serves exactly those: chat is refused, naming what it serves, and reaches no upstream', async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: 'completions-listed', messages: [{ role: 'user', content: 'hello' }] }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && (error.error as { code?: string }).code === 'unsupported_endpoint' && /serves \/v1\/completions/.test(error.message),
    );
    await assert.rejects(
      anthropic.messages.create({ model: 'completions-listed', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] }),
      (error: unknown) => error instanceof Anthropic.BadRequestError && /\/v1\/completions/.test(error.message),
    );
    assert.equal(upstreams.vllm.requests.length, 0);
    const completion = await openai.completions.create({ model: 'completions-listed', prompt: 'Say hi', max_tokens: 3 });
    assert.equal(completion.object, 'text_completion');
  });

  test('the listings say the same: Gemini methods and the /models operations', async () => {
    const methods = async (id: string) => (await genai.models.get({ model: id })).supportedActions;
    assert.deepEqual(await methods('vllm-default'), ['generateText', 'generateContent', 'streamGenerateContent', 'countTokens']);
    assert.deepEqual(await methods('completions-listed'), ['generateText']);
    const listed = ((await (await fetch(`${sluice.url}/models.json`)).json()) as { data: { id: string; operations: string[] }[] }).data;
    const operations = new Map(listed.map((m) => [m.id, m.operations]));
    assert.ok(operations.get('claude-default')!.includes('/v1/chat/completions'));
    assert.ok(operations.get('claude-default')!.includes('/v1/completions'));
    assert.deepEqual(operations.get('completions-listed'), ['/v1/completions']);
  });
});
