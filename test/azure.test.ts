import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText } from 'ai';
import { weatherInTwoSteps } from './support/ai-sdk.js';
import OpenAI, { AzureOpenAI } from 'openai';
import { CONTENT_FILTER_TRIGGER, FILTER_CHUNK_ONLY_TRIGGER, startFakeAzure, type FakeAzure } from './fakes/fake-azure.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import { createKey, eventually, startSluice, type LedgerRow, type RunningSluice } from './support/sluice.js';

/**
 * The `azure` provider kind end to end: the real gateway in front of the Azure OpenAI fake (which
 * checks `api-key`, Entra ID bearer tokens from its own token endpoint, api-versions and
 * deployments), driven by the official clients of three dialects.
 */
const AZ_KEY = 'azure-key-7c1f9e2d4b6a8053';
const ENTRA_SECRET = 'entra-secret~Q8pL2vX9rT4mN6kW';
const BAD_SECRET = 'entra-secret~wrongWrongWrong1';
const TENANT = 'contoso-tenant';
const CLIENT = 'sluice-gateway-app';
const DEPLOYMENTS = { 'gpt4o-dep': 'gpt-4o', 'search-vectors': 'text-embedding-3-small', 'instruct-dep': 'gpt-35-turbo-instruct', 'throttled-dep': 'gpt-4o' };
const PRICING = '{ input_per_mtok: 2.5, output_per_mtok: 10 }';
const WORKERS = 2;

let azure: FakeAzure;
/** A second resource whose Entra tokens live three seconds, for the refresh under load. */
let shortLived: FakeAzure;
let openaiDirect: FakeUpstream;
let sluice: RunningSluice;
let key: string;
/** Every answer a caller got, for the secrets check at the end. */
const answers: string[] = [];
const seen = <T>(value: T): T => (answers.push(JSON.stringify(value)), value);

const entra = (fake: FakeAzure, secret = ENTRA_SECRET) => `{ tenant_id: ${TENANT}, client_id: ${CLIENT}, client_secret: '${secret}', authority_url: '${fake.authorityUrl}' }`;

before(async () => {
  [azure, shortLived, openaiDirect] = await Promise.all([
    startFakeAzure({ apiKey: AZ_KEY, entra: { tenantId: TENANT, clientId: CLIENT, clientSecret: ENTRA_SECRET, tokenLifetimeSeconds: 3600 }, deployments: DEPLOYMENTS }),
    startFakeAzure({ entra: { tenantId: TENANT, clientId: CLIENT, clientSecret: ENTRA_SECRET, tokenLifetimeSeconds: 3 }, deployments: { 'load-dep': 'gpt-4o' } }),
    startFakeOpenAI({ apiKey: 'openai-credential', models: ['gpt-4o'] }),
  ]);
  sluice = await startSluice({
    // Two processes, each holding its own token per provider.
    args: ['--workers', String(WORKERS)],
    env: { SLUICE_LOG_LEVEL: 'info' },
    config: `
routing:
  backoff_ms: { initial: 20, max: 100 }
providers:
  - id: azure-key
    kind: azure
    base_url: ${azure.url}
    api_key: ${AZ_KEY}
    api_version: 2024-10-21
  - { id: azure-old, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', api_version: '2024-06-01' }
  - { id: azure-unknown-version, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', api_version: '2023-01-01' }
  - { id: azure-key-v1, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}' }
  - { id: azure-entra, kind: azure, base_url: '${azure.url}', entra: ${entra(azure)} }
  - { id: azure-entra-dated, kind: azure, base_url: '${azure.url}', api_version: '2025-04-01-preview', entra: ${entra(azure)} }
  - { id: azure-bad-secret, kind: azure, base_url: '${azure.url}', entra: ${entra(azure, BAD_SECRET)} }
  - { id: azure-discovered, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', discover: { interval_ms: 1000, id_prefix: 'azd/' } }
  - { id: azure-load, kind: azure, base_url: '${shortLived.url}', entra: ${entra(shortLived)} }
  - { id: azure-ods, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', api_version: '2024-10-21', allow_data_sources: true }
  - { id: openai-direct, kind: openai, base_url: '${openaiDirect.url}', api_key: openai-credential }
models:
  - { id: gpt-4o-key, provider: azure-key, upstream_model: gpt4o-dep, endpoints: [chat, completions, responses], pricing: ${PRICING} }
  - { id: gpt-4o-v1, provider: azure-key-v1, upstream_model: gpt4o-dep, endpoints: [chat, completions, responses], pricing: ${PRICING} }
  - { id: gpt-4o-entra, provider: azure-entra, upstream_model: gpt4o-dep, endpoints: [chat, completions, responses], pricing: ${PRICING} }
  - { id: gpt-4o-entra-dated, provider: azure-entra-dated, upstream_model: gpt4o-dep, endpoints: [chat, completions, responses], pricing: ${PRICING} }
  - { id: gpt-4o-ods, provider: azure-ods, upstream_model: gpt4o-dep, endpoints: [chat] }
  - { id: gpt-4o-old, provider: azure-old, upstream_model: gpt4o-dep, endpoints: [chat], pricing: ${PRICING} }
  - { id: embed-key, provider: azure-key, upstream_model: search-vectors, endpoints: [embeddings], pricing: { input_per_mtok: 0.02 } }
  - { id: embed-entra, provider: azure-entra, upstream_model: search-vectors, endpoints: [embeddings] }
  - { id: instruct-key, provider: azure-key, upstream_model: instruct-dep, endpoints: [completions] }
  - { id: gpt-4o-unknown-version, provider: azure-unknown-version, upstream_model: gpt4o-dep, endpoints: [chat] }
  - { id: gpt-4o-missing, provider: azure-key, upstream_model: no-such-deployment, endpoints: [chat] }
  - { id: gpt-4o-bad-secret, provider: azure-bad-secret, upstream_model: gpt4o-dep, endpoints: [chat] }
  - { id: gpt-4o-load, provider: azure-load, upstream_model: load-dep, endpoints: [chat], pricing: ${PRICING} }
  - id: gpt-4o-filtered
    provider: azure-key-v1
    upstream_model: gpt4o-dep
    endpoints: [chat]
    routing: { circuit: { failures: 2, window_ms: 60000, cooldown_ms: 60000 } }
  - id: gpt-4o-failover
    endpoints: [chat]
    pricing: ${PRICING}
    deployments:
      - { provider: azure-key, upstream_model: throttled-dep }
      - { provider: openai-direct, upstream_model: gpt-4o, priority: 1 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([azure.close(), shortLived.close(), openaiDirect.close()]);
});

const openai = () => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
const genai = () => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } });

/** The calls the Azure fake got since `from`, as method and path (discovery's listings, which poll it, left out). */
function pathsSince(from: number): string[] {
  return azure.requests.slice(from).flatMap((r) => (r.method === 'POST' ? [`${r.method} ${r.path}`] : []));
}

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe('the Azure fake against the vendor’s own client (AzureOpenAI)', () => {
  test('api-key on a deployment: chat answers; a stream opens with Azure’s empty prompt-filter chunk; a wrong key is refused', async () => {
    const client = new AzureOpenAI({ endpoint: azure.url, apiKey: AZ_KEY, apiVersion: '2024-10-21', deployment: 'gpt4o-dep', maxRetries: 0 });
    const whole = await client.chat.completions.create({ model: 'gpt4o-dep', messages: [{ role: 'user', content: 'Hello there' }] });
    assert.ok(whole.choices[0]!.message.content!.length > 0);
    assert.equal(azure.requests.at(-1)!.path, '/openai/deployments/gpt4o-dep/chat/completions?api-version=2024-10-21');
    const chunks = [];
    for await (const chunk of await client.chat.completions.create({ model: 'gpt4o-dep', messages: [{ role: 'user', content: 'Hello there' }], stream: true })) chunks.push(chunk);
    assert.equal(chunks[0]!.id, '');
    assert.deepEqual(chunks[0]!.choices, []);
    assert.ok(chunks.slice(1).some((c) => (c.choices[0]?.delta.content ?? '') !== ''));
    const wrong = new AzureOpenAI({ endpoint: azure.url, apiKey: 'not-the-key', apiVersion: '2024-10-21', deployment: 'gpt4o-dep', maxRetries: 0 });
    await assert.rejects(wrong.chat.completions.create({ model: 'gpt4o-dep', messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => error instanceof OpenAI.AuthenticationError);
  });

  test('an Entra token from the fake’s token endpoint: Responses on a new api-version; an old one has no Responses', async () => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT, client_secret: ENTRA_SECRET, scope: 'https://cognitiveservices.azure.com/.default' });
    const tokenAnswer = (await (await fetch(`${azure.authorityUrl}/${TENANT}/oauth2/v2.0/token`, { method: 'POST', body: form })).json()) as { access_token: string; expires_in: number };
    assert.equal(tokenAnswer.expires_in, 3600);
    const client = new AzureOpenAI({ endpoint: azure.url, apiVersion: '2025-04-01-preview', azureADTokenProvider: async () => tokenAnswer.access_token, maxRetries: 0 });
    const response = await client.responses.create({ model: 'gpt4o-dep', input: 'Hello there' });
    assert.ok(response.output_text.length > 0);
    assert.equal(azure.requests.at(-1)!.path, '/openai/responses?api-version=2025-04-01-preview');
    const old = new AzureOpenAI({ endpoint: azure.url, apiVersion: '2024-10-21', azureADTokenProvider: async () => tokenAnswer.access_token, maxRetries: 0 });
    await assert.rejects(old.responses.create({ model: 'gpt4o-dep', input: 'Hello' }), (error: unknown) => error instanceof OpenAI.NotFoundError);
    const badSecret = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT, client_secret: 'nope', scope: 'https://cognitiveservices.azure.com/.default' });
    const refused = await fetch(`${azure.authorityUrl}/${TENANT}/oauth2/v2.0/token`, { method: 'POST', body: badSecret });
    assert.equal(refused.status, 401);
    assert.deepEqual(((await refused.json()) as { error_codes: number[] }).error_codes, [7000215]);
  });
});

const CHAT_MODELS = [
  { model: 'gpt-4o-key', credential: 'api-key', chatPath: '/openai/deployments/gpt4o-dep/chat/completions?api-version=2024-10-21', responsesPath: '/openai/v1/responses' },
  { model: 'gpt-4o-v1', credential: 'api-key', chatPath: '/openai/v1/chat/completions', responsesPath: '/openai/v1/responses' },
  { model: 'gpt-4o-entra', credential: 'entra', chatPath: '/openai/v1/chat/completions', responsesPath: '/openai/v1/responses' },
  { model: 'gpt-4o-entra-dated', credential: 'entra', chatPath: '/openai/deployments/gpt4o-dep/chat/completions?api-version=2025-04-01-preview', responsesPath: '/openai/responses?api-version=2025-04-01-preview' },
] as const;

for (const { model, credential, chatPath, responsesPath } of CHAT_MODELS) {
  describe(`the openai SDK through Sluice on ${model} (${credential}, ${chatPath.includes('api-version') ? 'api_version' : 'v1 API'})`, () => {
    test('chat: relayed to the deployment with the provider’s credential', async () => {
      const from = azure.requests.length;
      const answer = seen(await openai().chat.completions.create({ model, messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 12 }));
      assert.equal(answer.model, model);
      assert.ok(answer.choices[0]!.message.content!.length > 0);
      assert.ok(answer.usage!.prompt_tokens > 0);
      const sent = azure.requests.slice(from).find((r) => r.method === 'POST')!;
      assert.equal(sent.path, chatPath);
      assert.equal(sent.body.model, 'gpt4o-dep');
      if (credential === 'api-key') {
        assert.equal(sent.headers['api-key'], AZ_KEY);
        assert.equal(sent.headers.authorization, undefined);
      } else {
        assert.match(sent.headers.authorization ?? '', /^Bearer eyJ/);
        assert.equal(sent.headers['api-key'], undefined);
      }
    });

    test('a stream: no chunk without an id (Azure’s prompt-filter chunk folded into the next), text and usage', async () => {
      const chunks = [];
      for await (const chunk of await openai().chat.completions.create({ model, messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 12, stream: true, stream_options: { include_usage: true } })) chunks.push(chunk);
      seen(chunks);
      assert.ok(chunks.length > 2);
      for (const chunk of chunks) assert.ok(chunk.id !== '' && chunk.model === model, JSON.stringify(chunk));
      assert.ok('prompt_filter_results' in chunks[0]!, 'Azure’s prompt filter results travel on the first chunk');
      assert.ok(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('').length > 0);
      assert.ok(chunks.at(-1)!.usage!.completion_tokens > 0);
    });

    test('tools: a call, then its result answered', async () => {
      const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
      const first = seen(await openai().chat.completions.create({ model, messages: [question], tools: [weatherTool] }));
      const call = first.choices[0]!.message.tool_calls![0]!;
      assert.equal(first.choices[0]!.finish_reason, 'tool_calls');
      assert.equal(call.type === 'function' && call.function.name, 'get_weather');
      const second = seen(
        await openai().chat.completions.create({ model, tools: [weatherTool], messages: [question, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }] }),
      );
      assert.match(second.choices[0]!.message.content!, /Result: sunny/);
    });

    test(`Responses, whole and streamed, relayed to ${responsesPath}`, async () => {
      const from = azure.requests.length;
      const whole = seen(await openai().responses.create({ model, input: 'Tell me about the sea.', max_output_tokens: 16 }));
      assert.equal(whole.status, 'completed');
      assert.ok(whole.output_text.length > 0);
      assert.deepEqual(pathsSince(from), [`POST ${responsesPath}`]);
      const types: string[] = [];
      for await (const event of await openai().responses.create({ model, input: 'Tell me about the sea.', max_output_tokens: 16, stream: true })) types.push(seen(event).type);
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(types.includes('response.output_text.delta'));
    });
  });
}

describe('embeddings and legacy completions', () => {
  for (const [model, credential, path] of [
    ['embed-key', 'api-key', '/openai/deployments/search-vectors/embeddings?api-version=2024-10-21'],
    ['embed-entra', 'entra', '/openai/v1/embeddings'],
  ] as const) {
    test(`embeddings on ${model} (${credential})`, async () => {
      const from = azure.requests.length;
      const answer = seen(await openai().embeddings.create({ model, input: ['the sea', 'the sky'] }));
      assert.equal(answer.data.length, 2);
      assert.ok(answer.data[0]!.embedding.length > 0);
      assert.notDeepEqual(answer.data[0]!.embedding, answer.data[1]!.embedding);
      assert.ok(answer.usage.prompt_tokens > 0);
      assert.deepEqual(pathsSince(from), [`POST ${path}`]);
    });
  }

  test('legacy completions: relayed to a completions-only deployment, translated over chat on a chat one', async () => {
    const from = azure.requests.length;
    const relayed = seen(await openai().completions.create({ model: 'instruct-key', prompt: 'Once upon a time', max_tokens: 8 }));
    assert.ok(relayed.choices[0]!.text.length > 0);
    const translated = seen(await openai().completions.create({ model: 'gpt-4o-key', prompt: 'Once upon a time', max_tokens: 8 }));
    assert.ok(translated.choices[0]!.text.length > 0);
    assert.deepEqual(pathsSince(from), ['POST /openai/deployments/instruct-dep/completions?api-version=2024-10-21', 'POST /openai/deployments/gpt4o-dep/chat/completions?api-version=2024-10-21']);
  });
});

describe('an api_version older than stream_options (2024-06-01)', () => {
  test("streams are not asked for their usage, not even by the caller's own stream_options (Azure would refuse the field); the meter counts them", async () => {
    const from = azure.requests.length;
    let text = '';
    const stream = await openai().chat.completions.create({ model: 'gpt-4o-old', messages: [{ role: 'user', content: 'Tell me about the sea.' }], stream: true, stream_options: { include_usage: true } });
    for await (const chunk of stream) text += seen(chunk).choices[0]?.delta.content ?? '';
    assert.ok(text.length > 0);
    const translated = seen(await anthropic().messages.stream({ model: 'gpt-4o-old', max_tokens: 50, messages: [{ role: 'user', content: 'Tell me about the sea.' }] }).finalMessage());
    assert.ok(translated.content.length > 0 && translated.usage.output_tokens > 0);
    const sent = azure.requests.slice(from).filter((r) => r.method === 'POST');
    assert.deepEqual(sent.map((r) => [r.path, r.body.stream_options]), Array.from({ length: 2 }, () => ['/openai/deployments/gpt4o-dep/chat/completions?api-version=2024-06-01', undefined]));
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((row) => row.model === 'gpt-4o-old');
      return found.length === 2 ? found : undefined;
    }, 5000, 'two ledger rows');
    assert.ok(rows.every((row) => row.status === 200 && row.completion_tokens > 0 && row.cost_usd > 0), JSON.stringify(rows));
  });
});

describe('other dialects on an Azure model (translated)', () => {
  test('Anthropic SDK: a message, and a stream', async () => {
    const message = seen(await anthropic().messages.create({ model: 'gpt-4o-entra', max_tokens: 50, messages: [{ role: 'user', content: 'Tell me about the sea.' }] }));
    assert.equal(message.type, 'message');
    assert.equal(message.stop_reason, 'end_turn');
    assert.ok(message.content[0]!.type === 'text' && message.content[0]!.text.length > 0);
    assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
    const stream = anthropic().messages.stream({ model: 'gpt-4o-key', max_tokens: 50, messages: [{ role: 'user', content: 'Tell me about the sea.' }] });
    const text: string[] = [];
    stream.on('text', (delta) => text.push(delta));
    const final = seen(await stream.finalMessage());
    assert.ok(text.join('').length > 0);
    assert.ok(final.id.length > 0 && final.id !== 'msg_');
    assert.ok(final.usage.output_tokens > 0);
  });

  test('what Azure would refuse is refused up front in the caller’s dialect: an Anthropic top_k', async () => {
    const from = azure.requests.length;
    await assert.rejects(anthropic().messages.create({ model: 'gpt-4o-key', max_tokens: 50, top_k: 5, messages: [{ role: 'user', content: 'Hi' }] } as Anthropic.MessageCreateParamsNonStreaming), (error: unknown) => {
      assert.ok(error instanceof Anthropic.BadRequestError, String(error));
      assert.match(error.message, /top_k/);
      return true;
    });
    assert.deepEqual(pathsSince(from), []);
  });

  test('@google/genai: generateContent, and a stream', async () => {
    const answer = seen(await genai().models.generateContent({ model: 'gpt-4o-v1', contents: 'Tell me about the sea.' }));
    assert.ok((answer.text ?? '').length > 0);
    assert.equal(answer.candidates![0]!.finishReason, 'STOP');
    let streamed = '';
    for await (const chunk of await genai().models.generateContentStream({ model: 'gpt-4o-entra-dated', contents: 'Tell me about the sea.' })) streamed += seen(chunk).text ?? '';
    assert.ok(streamed.length > 0);
  });
});

describe('the AI SDK (OpenAI provider) on Azure models', () => {
  const provider = () => createOpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });

  test('generateText over chat with a tool, two steps (Entra, api_version)', async () => {
    seen(await weatherInTwoSteps(provider().chat('gpt-4o-entra-dated')));
  });

  test('streamText over the Responses API (an api_version without it: the v1 API)', async () => {
    const from = azure.requests.length;
    const result = streamText({ model: provider().responses('gpt-4o-key'), prompt: 'Tell me about the sea.', maxRetries: 0 });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    assert.ok(text.length > 0);
    assert.ok((await result.usage).outputTokens! > 0);
    assert.deepEqual(pathsSince(from), ['POST /openai/v1/responses']);
  });
});

describe('content filtering', () => {
  const filtered = `Tell me something ${CONTENT_FILTER_TRIGGER} about the sea.`;

  test('an OpenAI caller gets Azure’s own 400 content_filter, whole and streamed', async () => {
    for (const stream of [false, true]) {
      await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-key', messages: [{ role: 'user', content: filtered }], stream }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.code, 'content_filter');
        assert.match(error.message, /content management policy/);
        seen(error.error);
        return true;
      });
    }
  });

  test('a legacy completions caller on a chat deployment (translated) gets an empty completion finished content_filter', async () => {
    const completion = seen(await openai().completions.create({ model: 'gpt-4o-key', prompt: filtered, max_tokens: 8 }));
    assert.equal(completion.choices[0]!.finish_reason, 'content_filter');
    assert.equal(completion.choices[0]!.text, '');
  });

  test('an Anthropic caller gets a refusal: stop_reason "refusal", no content; streamed too', async () => {
    const message = seen(await anthropic().messages.create({ model: 'gpt-4o-entra', max_tokens: 50, messages: [{ role: 'user', content: filtered }] }));
    assert.equal(message.stop_reason, 'refusal');
    assert.deepEqual(message.content, []);
    const final = seen(await anthropic().messages.stream({ model: 'gpt-4o-key', max_tokens: 50, messages: [{ role: 'user', content: filtered }] }).finalMessage());
    assert.equal(final.stop_reason, 'refusal');
  });

  test('a Gemini caller gets a candidate blocked for SAFETY, with no content; streamed too', async () => {
    const answer = seen(await genai().models.generateContent({ model: 'gpt-4o-v1', contents: filtered }));
    assert.equal(answer.candidates![0]!.finishReason, 'SAFETY');
    assert.equal(answer.candidates![0]!.content, undefined);
    const reasons: unknown[] = [];
    for await (const chunk of await genai().models.generateContentStream({ model: 'gpt-4o-entra', contents: filtered })) reasons.push(seen(chunk).candidates?.[0]?.finishReason);
    assert.ok(reasons.includes('SAFETY'), JSON.stringify(reasons));
  });

  test('a filtered answer (finish_reason content_filter) reaches an OpenAI caller as such, an Anthropic caller as a refusal', async () => {
    const chat = seen(await openai().chat.completions.create({ model: 'gpt-4o-v1', messages: [{ role: 'user', content: 'Something forbidden' }] }));
    assert.equal(chat.choices[0]!.finish_reason, 'content_filter');
    const message = seen(await anthropic().messages.create({ model: 'gpt-4o-v1', max_tokens: 50, messages: [{ role: 'user', content: 'Something forbidden' }] }));
    assert.equal(message.stop_reason, 'refusal');
  });

  test('refusals are not the deployment’s fault: its circuit (2 failures) stays closed after ten of them', async () => {
    // Spread over the worker processes (each keeps its own circuit): every one sees several refusals, then answers.
    for (let i = 0; i < 10; i++) {
      await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-filtered', messages: [{ role: 'user', content: filtered }] }), OpenAI.BadRequestError);
    }
    for (let i = 0; i < 6; i++) {
      const fine = seen(await openai().chat.completions.create({ model: 'gpt-4o-filtered', messages: [{ role: 'user', content: 'Hello' }] }));
      assert.ok(fine.choices[0]!.message.content!.length > 0);
    }
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((row) => row.model === 'gpt-4o-filtered');
      return found.length === 16 ? found : undefined;
    }, 5000, 'sixteen ledger rows');
    assert.deepEqual(rows.map((row) => `${row.status} ${row.error_kind}`).sort(), [...Array.from({ length: 6 }, () => '200 null'), ...Array.from({ length: 10 }, () => '400 upstream_rejected_request')]);
  });
});

describe('On Your Data (data_sources)', () => {
  const dataSources = [{ type: 'azure_search', parameters: { endpoint: 'https://search.example.net', index_name: 'hr-records', authentication: { type: 'system_assigned_managed_identity' } } }];

  test('refused with the caller’s 400 naming data_sources, nothing sent to the resource; a provider that allows it passes it on', async () => {
    const from = azure.requests.length;
    for (const stream of [false, true]) {
      await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-key', messages: [{ role: 'user', content: 'What is in the index?' }], stream, ...({ data_sources: dataSources } as object) }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.param, 'data_sources');
        assert.match(error.message, /'data_sources' \(Azure OpenAI On Your Data\) is not allowed on model 'gpt-4o-key'/);
        seen(error.error);
        return true;
      });
    }
    const translated = await fetch(`${sluice.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-key', max_tokens: 16, messages: [{ role: 'user', content: 'x' }], data_sources: dataSources }) });
    const refusal = seen(await translated.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(translated.status, 400, JSON.stringify(refusal));
    assert.match(refusal.error.message, /data_sources/);
    assert.deepEqual(pathsSince(from), [], 'the resource got none of them');
    const allowed = seen(await openai().chat.completions.create({ model: 'gpt-4o-ods', messages: [{ role: 'user', content: 'What is in the index?' }], ...({ data_sources: dataSources } as object) }));
    assert.ok(allowed.choices[0]!.message.content!.length > 0);
    assert.deepEqual(azure.requests.at(-1)!.body.data_sources, dataSources);
  });
});

describe('a stream of nothing but Azure’s prompt-filter chunk and [DONE]', () => {
  const prompt = `Hello ${FILTER_CHUNK_ONLY_TRIGGER}`;
  const failsOrErrs = async (run: () => Promise<unknown>, caller: string) => {
    const outcome = await run().then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    assert.equal(outcome.ok, false, `${caller}: a stream that finished nothing ended as a success: ${JSON.stringify(outcome.ok ? outcome.value : null)}`);
    seen(String(outcome.ok ? '' : outcome.error));
  };

  test('is a failure for every caller, not an empty success: OpenAI (relayed), Anthropic and Gemini (translated)', async () => {
    await failsOrErrs(async () => {
      const chunks: unknown[] = [];
      for await (const chunk of await openai().chat.completions.create({ model: 'gpt-4o-key', messages: [{ role: 'user', content: prompt }], stream: true })) chunks.push(chunk);
      return chunks;
    }, 'OpenAI');
    await failsOrErrs(() => anthropic().messages.stream({ model: 'gpt-4o-key', max_tokens: 50, messages: [{ role: 'user', content: prompt }] }).finalMessage(), 'Anthropic');
    await failsOrErrs(async () => {
      const chunks: unknown[] = [];
      for await (const chunk of await genai().models.generateContentStream({ model: 'gpt-4o-key', contents: prompt })) chunks.push(chunk);
      return chunks;
    }, 'Gemini');
  });
});

describe('failures name what to fix', () => {
  test('a deployment the resource does not have: named, with the setting (upstream_model)', async () => {
    await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-missing', messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError && error.status === 502, String(error));
      assert.match(error.message, /no deployment named 'no-such-deployment'/);
      assert.match(error.message, /upstream_model of model 'gpt-4o-missing'/);
      seen(error.error);
      return true;
    });
  });

  test('an api-version the resource does not know: Azure’s 404 "Resource not found" becomes a 502 naming api_version', async () => {
    await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-unknown-version', messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError && error.status === 502, String(error));
      assert.match(error.message, /answered "Resource not found" for api_version '2023-01-01': check api_version and base_url/);
      seen(error.error);
      return true;
    });
  });

  test('a client secret Entra ID refuses: upstream_auth_failed naming entra.client_secret, never the secret', async () => {
    await assert.rejects(openai().chat.completions.create({ model: 'gpt-4o-bad-secret', messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError && error.status === 502, String(error));
      assert.match(error.message, /check entra\.client_secret of provider 'azure-bad-secret'/);
      assert.match(error.message, /AADSTS7000215/);
      assert.ok(!error.message.includes(BAD_SECRET));
      seen(error.error);
      return true;
    });
    assert.ok(azure.tokensRefused >= 1);
  });
});

describe('routing across clouds', () => {
  test('a throttled Azure deployment (429, retry-after) falls over to the OpenAI-compatible one, and cools', async () => {
    azure.throttled.add('throttled-dep');
    const from = azure.requests.length;
    const before = openaiDirect.requests.length;
    for (let i = 0; i < 6; i++) {
      const answer = seen(await openai().chat.completions.create({ model: 'gpt-4o-failover', messages: [{ role: 'user', content: 'Hello' }] }));
      assert.ok(answer.choices[0]!.message.content!.length > 0);
    }
    assert.equal(openaiDirect.requests.length, before + 6);
    // Each process asked Azure once at most: the deployment then cools for the 3 s its retry-after asked.
    const asked = pathsSince(from);
    assert.ok(asked.length >= 1 && asked.length <= WORKERS, JSON.stringify(asked));
    assert.ok(asked.every((path) => path === 'POST /openai/deployments/throttled-dep/chat/completions?api-version=2024-10-21'));
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((r) => r.model === 'gpt-4o-failover');
      return found.length === 6 ? found : undefined;
    }, 5000, 'six ledger rows');
    assert.ok(rows.every((row) => row.status === 200 && row.provider_id === 'openai-direct'));
    const failedOver = rows.filter((row) => row.attempts === 2);
    assert.equal(failedOver.length, asked.length);
    for (const row of failedOver) assert.match(row.attempt_log ?? '', /upstream_rate_limited/);
  });
});

describe('token refresh under load', () => {
  test('Entra tokens living 3 s, 16 concurrent streams for 10 s: nothing fails, one token request per lifetime', async () => {
    shortLived.backend.behaviour = { tokenDelayMs: 40 };
    const started = Date.now();
    let calls = 0;
    const worker = async (): Promise<void> => {
      while (Date.now() - started < 10_000) {
        const stream = await openai().chat.completions.create({ model: 'gpt-4o-load', messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 12, stream: true });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        assert.ok(text.length > 0);
        calls++;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const elapsed = Date.now() - started;
    assert.ok(calls >= 64, `${calls} streams`);
    assert.equal(shortLived.expiredTokensSeen, 0, 'no request carried an expired token');
    // Each process renews at three quarters of each 3 s lifetime: its first request, then about one per 2.25 s.
    const perProcess = Math.ceil(elapsed / 2250) + 1;
    const issued = shortLived.tokensIssued;
    assert.ok(issued >= WORKERS * 3 && issued <= WORKERS * perProcess, `${issued} token requests for ${calls} streams in ${elapsed} ms (between ${WORKERS * 3} and ${WORKERS * perProcess})`);
    assert.equal(shortLived.tokensRefused, 0);
  });
});

describe('discovery, the ledger and prices', () => {
  test('the resource’s deployments are discovered (with the model each carries)', async () => {
    const ids = await eventually(async () => {
      const listed = (await openai().models.list()).data.map((m) => m.id);
      return listed.includes('azd/gpt4o-dep') ? listed : undefined;
    }, 15_000, 'the discovered deployments');
    for (const deployment of Object.keys(DEPLOYMENTS)) assert.ok(ids.includes(`azd/${deployment}`), deployment);
    assert.ok(azure.requests.some((r) => r.method === 'GET' && r.path === '/openai/deployments?api-version=2022-12-01' && r.headers['api-key'] === AZ_KEY));
    // Each is usable as listed: a chat deployment for chat, the embedding one (told by the model it carries) for embeddings.
    const chat = seen(await openai().chat.completions.create({ model: 'azd/gpt4o-dep', messages: [{ role: 'user', content: 'Hello' }] }));
    assert.ok(chat.choices[0]!.message.content!.length > 0);
    const vectors = seen(await openai().embeddings.create({ model: 'azd/search-vectors', input: 'the sea' }));
    assert.equal(vectors.data.length, 1);
    // The instruct deployment serves legacy completions only: relayed to /completions, never translated over chat (which it refuses).
    const listed = await (await fetch(`${sluice.url}/v1/models/azd%2Finstruct-dep`, { headers: { authorization: `Bearer ${key}` } })).json();
    const from = azure.requests.length;
    const completion = seen(await openai().completions.create({ model: 'azd/instruct-dep', prompt: 'Once upon a time', max_tokens: 8 }));
    assert.ok(completion.choices[0]!.text.length > 0, JSON.stringify(listed));
    assert.deepEqual(pathsSince(from), ['POST /openai/v1/completions']);
  });

  test('ledger rows name the Azure provider, count the tokens and price them', async () => {
    const rows: LedgerRow[] = await sluice.ledger();
    for (const model of ['gpt-4o-key', 'gpt-4o-v1', 'gpt-4o-entra', 'gpt-4o-entra-dated']) {
      const ok = rows.filter((row) => row.model === model && row.status === 200 && row.prompt_tokens > 0);
      assert.ok(ok.length >= 4, `${model}: ${ok.length} rows`);
      for (const row of ok) {
        assert.equal(row.provider_id, model === 'gpt-4o-key' ? 'azure-key' : model === 'gpt-4o-v1' ? 'azure-key-v1' : model === 'gpt-4o-entra' ? 'azure-entra' : 'azure-entra-dated');
        assert.ok(Math.abs(row.cost_usd - (row.prompt_tokens * 2.5 + row.completion_tokens * 10) / 1e6) < 1e-9, JSON.stringify(row));
        assert.equal(row.unpriced, 0);
      }
    }
    const embedded = rows.find((row) => row.model === 'embed-key' && row.status === 200)!;
    assert.ok(embedded.prompt_tokens > 0 && embedded.cost_usd > 0);
    // The discovered instruct deployment reports gpt-35-turbo-instruct: priced as OpenAI's gpt-3.5-turbo-instruct.
    const instruct = await eventually(async () => (await sluice.ledger()).find((row) => row.model === 'azd/instruct-dep' && row.status === 200), 5000, 'the instruct row');
    assert.ok(instruct.cost_usd > 0 && instruct.unpriced === 0, JSON.stringify(instruct));
    assert.ok(Math.abs(instruct.cost_usd - (instruct.prompt_tokens * 1.5 + instruct.completion_tokens * 2) / 1e6) < 1e-9, JSON.stringify(instruct));
    const load = rows.filter((row) => row.model === 'gpt-4o-load');
    assert.ok(load.length >= 64 && load.every((row) => row.status === 200 && row.cost_usd > 0));
  });

  test('no secret in the logs or any answer: keys, client secrets, access tokens', async () => {
    const tokens = [...azure.issuedTokens(), ...shortLived.issuedTokens()];
    assert.ok(tokens.length >= 4);
    const logs = sluice.stdout() + sluice.stderr();
    assert.ok(logs.length > 0);
    for (const secret of [AZ_KEY, ENTRA_SECRET, BAD_SECRET, ...tokens]) {
      assert.ok(!logs.includes(secret), `a secret in the logs: ${secret.slice(0, 6)}…`);
      for (const answer of answers) assert.ok(!answer.includes(secret), `a secret in an answer: ${secret.slice(0, 6)}…`);
    }
    assert.ok(answers.length > 40);
  });
});
