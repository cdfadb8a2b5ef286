// postgres-pass: skip (wire behaviour of one provider kind: the store is reached only for the key and the ledger rows, which usage, limits and ledger-durability run on PostgreSQL)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { GoogleGenAI } from '@google/genai';
import { generateText, streamText } from 'ai';
import { importPKCS8, SignJWT } from 'jose';
import OpenAI from 'openai';
import { providerSchema, type ProviderConfig } from '../src/config/config-file.js';
import { GoogleServiceAccountAuth } from '../src/providers/auth/google-service-account.js';
import { createProvider } from '../src/providers/registry.js';
import { VertexProvider } from '../src/providers/vertex.js';
import { startFakeVertex, type FakeVertex } from './fakes/fake-vertex.js';
import { createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The `vertex` provider kind end to end: the real gateway, real clients, and a fake Vertex AI that
 * checks what Google checks (the service account's RS256 assertion at the key file's token_uri,
 * bearer tokens on every call, the project and location in the path, Claude's
 * `anthropic_version: vertex-2023-10-16` in the body and no `model`). The fakes answer by the rules
 * of test/fakes/chat-model.ts: `[<prompt>]` then one word per token; "weather" calls get_weather
 * {"city":"Paris"}; a tool result gets "Result: …"; thinking is "Let me think.".
 */
const PROJECT = 'sluice-test-project';
const LOCATION = 'europe-west4';
const GEMINI = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4-5@20250929';
const GOOGLE_PATH = `/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models`;
const ANTHROPIC_PATH = `/v1/projects/${PROJECT}/locations/${LOCATION}/publishers/anthropic/models`;

let vertex: FakeVertex;
let sluice: RunningSluice;
let key: string;
const answers: string[] = [];

/** Keeps every answer's text, so that the last test can show no secret was in any of them. */
function seen<T>(value: T): T {
  answers.push(JSON.stringify(value));
  return value;
}

const weatherTool = { name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };
const openAiWeather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

before(async () => {
  vertex = await startFakeVertex({ project: PROJECT, location: LOCATION, geminiModels: [GEMINI], claudeModels: [CLAUDE], listPageMax: 2 });
  const missing = join(tempDir(), 'absent.json');
  sluice = await startSluice({
    config: `providers:
  - id: vertex-eu
    kind: vertex
    project: ${PROJECT}
    location: ${LOCATION}
    base_url: ${vertex.url}
    credentials_file: ${vertex.keyFile}
  - id: vertex-wrong-key
    kind: vertex
    project: ${PROJECT}
    location: ${LOCATION}
    base_url: ${vertex.url}
    credentials: '${JSON.stringify(vertex.wrongKey)}'
  - id: vertex-no-file
    kind: vertex
    project: ${PROJECT}
    location: ${LOCATION}
    base_url: ${vertex.url}
    credentials_file: ${missing}
models:
  - { id: gemini-vx, provider: vertex-eu, upstream_model: ${GEMINI}, endpoints: [chat, completions, responses] }
  - { id: claude-vx, provider: vertex-eu, upstream_model: '${CLAUDE}', endpoints: [chat, completions, responses] }
  - { id: embed-vx, provider: vertex-eu, upstream_model: text-embedding-005, endpoints: [embeddings] }
  - { id: gemini-embed-vx, provider: vertex-eu, upstream_model: gemini-embedding-001, endpoints: [embeddings] }
  - { id: gemini-wrong-key, provider: vertex-wrong-key, upstream_model: ${GEMINI}, endpoints: [chat] }
  - { id: gemini-no-file, provider: vertex-no-file, upstream_model: ${GEMINI}, endpoints: [chat] }
  - { id: gemini-gone, provider: vertex-eu, upstream_model: gemini-0.9-retired, endpoints: [chat] }
  - { id: claude-gone, provider: vertex-eu, upstream_model: claude-2-retired, endpoints: [chat] }
  - id: gemini-fallover
    endpoints: [chat]
    deployments:
      - { provider: vertex-eu, upstream_model: gemini-0.9-retired }
      - { provider: vertex-eu, upstream_model: ${GEMINI}, priority: 1 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await vertex.close();
});

const vertexConfig = (id: string, credentialsFile: string): ProviderConfig => ({ ...providerSchema.parse({ id, kind: 'vertex', project: PROJECT, location: LOCATION, base_url: vertex.url, credentials_file: credentialsFile }), base_url: vertex.url });
const openai = () => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
const genai = () => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } });
const lastRequest = () => vertex.requests.at(-1)!;

describe('Gemini on Vertex AI', () => {
  test('@google/genai generateContent is relayed to the publisher path with a bearer token', async () => {
    const response = seen(await genai().models.generateContent({ model: 'gemini-vx', contents: 'Hello there', config: { systemInstruction: 'Be brief.' } }));
    assert.equal(response.text, '[Hello there] The quick brown fox jumps over the lazy dog.');
    const sent = lastRequest();
    assert.equal(sent.path, `${GOOGLE_PATH}/${GEMINI}:generateContent`);
    assert.match(String(sent.headers.authorization), /^Bearer ya29\.fake-/);
    assert.equal(sent.headers['x-goog-api-key'], undefined, 'the caller\'s key never goes upstream');
    assert.equal(sent.body.systemInstruction.parts[0].text, 'Be brief.', 'relayed as the caller wrote it');
  });

  test('@google/genai streams, and countTokens takes Vertex\'s flat body', async () => {
    let text = '';
    for await (const chunk of await genai().models.generateContentStream({ model: 'gemini-vx', contents: 'Stream please' })) text += seen(chunk).text ?? '';
    assert.equal(text, '[Stream please] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastRequest().path, `${GOOGLE_PATH}/${GEMINI}:streamGenerateContent?alt=sse`);
    const counted = await genai().models.countTokens({ model: 'gemini-vx', contents: 'one two three' });
    assert.equal(counted.totalTokens, 3);
    assert.equal(lastRequest().path, `${GOOGLE_PATH}/${GEMINI}:countTokens`);
    assert.equal(lastRequest().body.generateContentRequest, undefined);
  });

  test('the openai SDK: chat, stream and tools, translated to generateContent', async () => {
    const chat = seen(await openai().chat.completions.create({ model: 'gemini-vx', messages: [{ role: 'user', content: 'Hi' }] }));
    assert.equal(chat.choices[0]!.message.content, '[Hi] The quick brown fox jumps over the lazy dog.');
    assert.ok(chat.usage!.prompt_tokens > 0);
    const stream = await openai().chat.completions.create({ model: 'gemini-vx', messages: [{ role: 'user', content: 'Streamed' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    for await (const chunk of stream) text += seen(chunk).choices[0]?.delta.content ?? '';
    assert.equal(text, '[Streamed] The quick brown fox jumps over the lazy dog.');
    const tools = seen(await openai().chat.completions.create({ model: 'gemini-vx', messages: [{ role: 'user', content: 'What is the weather?' }], tools: [openAiWeather] }));
    assert.equal(tools.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(JSON.parse(tools.choices[0]!.message.tool_calls![0]!.type === 'function' ? tools.choices[0]!.message.tool_calls![0]!.function.arguments : '{}'), { city: 'Paris' });
    assert.equal(lastRequest().path, `${GOOGLE_PATH}/${GEMINI}:generateContent`);
  });

  test('the AI SDK generates and streams on Vertex Gemini', async () => {
    const provider = createOpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });
    const generated = await generateText({ model: provider.chat('gemini-vx'), prompt: 'From the AI SDK' });
    assert.equal(seen(generated.text), '[From the AI SDK] The quick brown fox jumps over the lazy dog.');
    const streamed = streamText({ model: provider.chat('gemini-vx'), prompt: 'Streaming SDK' });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    assert.equal(seen(text), '[Streaming SDK] The quick brown fox jumps over the lazy dog.');
  });

  test('a 429 RESOURCE_EXHAUSTED with RetryInfo reaches the caller as a rate limit with its wait', async () => {
    vertex.behaviour = {
      fail: {
        status: 429,
        body: JSON.stringify({ error: { code: 429, message: 'Resource exhausted. Please try again later.', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '6.5s' }] } }),
      },
    };
    try {
      const response = await fetch(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gemini-vx', messages: [{ role: 'user', content: 'x' }] }) });
      const body = seen(await response.json()) as { error: { type: string } };
      assert.equal(response.status, 429);
      assert.equal(response.headers.get('retry-after'), '7');
      assert.ok(body.error.type.length > 0);
    } finally {
      vertex.behaviour = {};
    }
  });
});

describe('Claude on Vertex AI', () => {
  test('@anthropic-ai/sdk messages are relayed through rawPredict with Vertex\'s API version, no model, betas as a header', async () => {
    const message = seen(
      await anthropic().messages.create(
        { model: 'claude-vx', max_tokens: 200, messages: [{ role: 'user', content: [{ type: 'text', text: 'Cache me', cache_control: { type: 'ephemeral' } }] }] },
        { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
      ),
    );
    assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', '[Cache me] The quick brown fox jumps over the lazy dog.');
    const sent = lastRequest();
    assert.equal(sent.path, `${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`);
    assert.equal(sent.body.anthropic_version, 'vertex-2023-10-16');
    assert.equal(sent.body.model, undefined);
    assert.equal(sent.headers['anthropic-version'], undefined, 'the caller\'s API version is not sent: Vertex reads its own from the body');
    assert.equal(sent.headers['anthropic-beta'], 'context-1m-2025-08-07');
    assert.deepEqual(sent.body.messages[0].content[0].cache_control, { type: 'ephemeral' });
    assert.ok(message.usage.cache_creation_input_tokens! > 0);
  });

  test('@anthropic-ai/sdk streams through streamRawPredict, and counts tokens at count-tokens:rawPredict', async () => {
    let text = '';
    const stream = anthropic().messages.stream({ model: 'claude-vx', max_tokens: 200, messages: [{ role: 'user', content: 'Stream it' }] });
    for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += seen(event).delta.type === 'text_delta' ? event.delta.text : '';
    assert.equal(text, '[Stream it] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastRequest().path, `${ANTHROPIC_PATH}/${CLAUDE}:streamRawPredict`);
    const counted = await anthropic().messages.countTokens({ model: 'claude-vx', messages: [{ role: 'user', content: 'one two three four' }] });
    assert.equal(counted.input_tokens, 4);
    assert.equal(lastRequest().path, `${ANTHROPIC_PATH}/count-tokens:rawPredict`);
    assert.equal(lastRequest().body.model, CLAUDE);
  });

  test('tools with thinking over two turns: the signature passes back and the fake accepts it', async () => {
    const params = { model: 'claude-vx', max_tokens: 4000, tools: [weatherTool], thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
    const first = seen(await anthropic().messages.create({ ...params, messages: [{ role: 'user', content: 'What is the weather in Paris?' }] }));
    assert.equal(first.stop_reason, 'tool_use');
    const thinking = first.content.find((block): block is Anthropic.ThinkingBlock => block.type === 'thinking')!;
    assert.ok(thinking.signature.length > 0);
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    assert.deepEqual(call.input, { city: 'Paris' });
    const second = seen(
      await anthropic().messages.create({
        ...params,
        messages: [
          { role: 'user', content: 'What is the weather in Paris?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny' }] },
        ],
      }),
    );
    assert.equal(second.content.find((block) => block.type === 'text')?.type === 'text' ? (second.content.find((block) => block.type === 'text') as Anthropic.TextBlock).text : '', 'Result: Sunny');
    assert.equal(lastRequest().body.messages[1].content[0].signature, thinking.signature);
  });

  test('the openai SDK: chat, stream and tools, translated to the Messages wire on rawPredict', async () => {
    const chat = seen(await openai().chat.completions.create({ model: 'claude-vx', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }));
    assert.equal(chat.choices[0]!.message.content, '[Hi] The quick brown fox jumps over the lazy dog.');
    const sent = lastRequest();
    assert.equal(sent.path, `${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`);
    assert.equal(sent.body.anthropic_version, 'vertex-2023-10-16');
    assert.equal(sent.body.model, undefined);
    const stream = await openai().chat.completions.create({ model: 'claude-vx', messages: [{ role: 'user', content: 'Streamed' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += seen(chunk).choices[0]?.delta.content ?? '';
    assert.equal(text, '[Streamed] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastRequest().path, `${ANTHROPIC_PATH}/${CLAUDE}:streamRawPredict`);
    const tools = seen(await openai().chat.completions.create({ model: 'claude-vx', messages: [{ role: 'user', content: 'What is the weather?' }], tools: [openAiWeather] }));
    assert.equal(tools.choices[0]!.finish_reason, 'tool_calls');
  });

  test('an overloaded_error inside the answer is Anthropic\'s 529, retryable', async () => {
    vertex.behaviour = { fail: { status: 529, body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) } };
    try {
      const response = await fetch(`${sluice.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-vx', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }) });
      const body = seen(await response.json()) as { type: string; error: { type: string } };
      assert.equal(body.type, 'error');
      assert.equal(body.error.type, 'overloaded_error');
    } finally {
      vertex.behaviour = {};
    }
  });

  test('the fake is what Vertex is to its own client: @anthropic-ai/vertex-sdk with a token it obtained', async () => {
    // A token from the same flow the gateway uses, handed to the vendor's client as its AuthClient would.
    const headers = await new GoogleServiceAccountAuth('probe', { setting: 'credentials_file', path: vertex.keyFile }).headersFor({ method: 'POST', path: '/', headers: {}, body: undefined }, new AbortController().signal);
    const token = headers.authorization!.slice('Bearer '.length);
    {
      const client = new AnthropicVertex({
        region: LOCATION,
        projectId: PROJECT,
        baseURL: `${vertex.url}/v1`,
        // The SDK copies the anthropic-version header into the body, and its default (the first-party API's) is not Vertex's.
        defaultHeaders: { 'anthropic-version': 'vertex-2023-10-16' },
        authClient: { getRequestHeaders: async () => new Headers({ authorization: `Bearer ${token}` }) } as never,
      });
      const message = await client.messages.create({ model: CLAUDE, max_tokens: 100, messages: [{ role: 'user', content: 'From the vendor SDK' }] });
      assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', '[From the vendor SDK] The quick brown fox jumps over the lazy dog.');
      assert.equal(lastRequest().body.anthropic_version, 'vertex-2023-10-16');
      assert.equal(lastRequest().path, `${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`);
    }
  });
});

describe('every dialect on both publishers', () => {
  for (const [model, path] of [
    ['gemini-vx', `${GOOGLE_PATH}/${GEMINI}:generateContent`],
    ['claude-vx', `${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`],
  ] as const) {
    test(`Responses and legacy completions on ${model}`, async () => {
      const response = seen(await openai().responses.create({ model, input: 'Through Responses', store: false }));
      assert.equal(response.output_text, '[Through Responses] The quick brown fox jumps over the lazy dog.');
      assert.equal(lastRequest().path, path);
      const completion = seen(await openai().completions.create({ model, prompt: 'Legacy', max_tokens: 50 }));
      assert.equal(completion.choices[0]!.text, '[Legacy] The quick brown fox jumps over the lazy dog.');
      assert.equal(lastRequest().path, path);
    });
  }
  test('Anthropic Messages on Vertex Gemini and Gemini generateContent on Vertex Claude are translated', async () => {
    const message = seen(await anthropic().messages.create({ model: 'gemini-vx', max_tokens: 100, messages: [{ role: 'user', content: 'Cross over' }] }));
    assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', '[Cross over] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastRequest().path, `${GOOGLE_PATH}/${GEMINI}:generateContent`);
    const generated = seen(await genai().models.generateContent({ model: 'claude-vx', contents: 'And back' }));
    assert.equal(generated.text, '[And back] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastRequest().path, `${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`);
  });
});

describe('embeddings on Vertex AI', () => {
  test('/v1/embeddings through :predict: text-embedding models take a batch, gemini-embedding one text a call; usage from Vertex\'s counts', async () => {
    const before = vertex.requests.length;
    const batch = seen(await openai().embeddings.create({ model: 'embed-vx', input: ['alpha beta', 'gamma', 'delta epsilon zeta'], dimensions: 4 }));
    assert.equal(batch.data.length, 3);
    assert.ok(batch.data.every((item) => item.embedding.length === 4));
    assert.equal(batch.usage.prompt_tokens, 6);
    const calls = vertex.requests.slice(before);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.path, `${GOOGLE_PATH}/text-embedding-005:predict`);
    assert.deepEqual(calls[0]!.body, { instances: [{ content: 'alpha beta' }, { content: 'gamma' }, { content: 'delta epsilon zeta' }], parameters: { outputDimensionality: 4 } });
    const one = vertex.requests.length;
    const split = seen(await openai().embeddings.create({ model: 'gemini-embed-vx', input: ['one', 'two', 'three'] }));
    assert.equal(split.data.length, 3);
    assert.deepEqual(split.data.map((item) => item.index), [0, 1, 2]);
    assert.equal(vertex.requests.length - one, 3, 'one instance per call');
  });

  test('Gemini\'s embedContent on a Vertex model', async () => {
    const response = seen(await genai().models.embedContent({ model: 'embed-vx', contents: 'embed this', config: { taskType: 'RETRIEVAL_DOCUMENT', title: 'A title' } }));
    assert.equal(response.embeddings?.[0]?.values?.length, 8);
    assert.deepEqual(lastRequest().body.instances, [{ content: 'embed this', task_type: 'RETRIEVAL_DOCUMENT', title: 'A title' }]);
  });
});

describe('credentials', () => {
  test('a wrong key is refused by the token endpoint: the caller sees an auth failure that names what to check, not the key', async () => {
    const response = await fetch(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gemini-wrong-key', messages: [{ role: 'user', content: 'x' }] }) });
    const text = seen(await response.text());
    assert.equal(response.status, 502);
    assert.match(text, /upstream_auth_failed/);
    assert.match(text, /invalid_grant: Invalid JWT Signature/);
    assert.match(text, /Check the key in credentials/);
  });

  test("an unreadable key file is named by its setting, not by its path on the gateway's host", async () => {
    const response = await fetch(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gemini-no-file', messages: [{ role: 'user', content: 'x' }] }) });
    const text = seen(await response.text());
    assert.equal(response.status, 502);
    assert.match(text, /credentials_file cannot be read \(ENOENT\)/);
    assert.ok(!text.includes('absent.json'), 'the host’s path is not the caller’s to see');
    await eventually(async () => ((sluice.stdout() + sluice.stderr()).includes('absent.json') ? true : undefined), 5000, 'the path in the operator’s log');
  });

  test('a gcloud authorized_user file is named as such: a service-account key is needed', async () => {
    const file = join(tempDir(), 'adc.json');
    writeFileSync(file, JSON.stringify({ type: 'authorized_user', client_id: 'x.apps.googleusercontent.com', client_secret: 'd-secret', refresh_token: '1//refresh-token-value' }));
    const adapter = createProvider(vertexConfig('adc', file));
    try {
      await assert.rejects(adapter.listModels(AbortSignal.timeout(5000)), (error: Error) => {
        assert.match(error.message, /is not a service-account key \(its 'type' is not service_account; a user's gcloud login, authorized_user, cannot be used/);
        assert.ok(!error.message.includes('refresh-token-value') && !error.message.includes('adc.json'));
        return true;
      });
    } finally {
      await adapter.close();
    }
  });

  test('a key file without its private key is refused before any token request, naming the field', async () => {
    const file = join(tempDir(), 'partial.json');
    writeFileSync(file, JSON.stringify({ ...vertex.key, private_key: undefined }));
    const adapter = createProvider(vertexConfig('partial', file));
    const tokenRequests = vertex.tokenRequests;
    try {
      await assert.rejects(adapter.listModels(AbortSignal.timeout(5000)), (error: Error) => /has no 'private_key' in PEM form/.test(error.message) && error.message.includes('credentials_file'));
      assert.equal(vertex.tokenRequests, tokenRequests);
    } finally {
      await adapter.close();
    }
  });
});

describe('a model Vertex does not serve', () => {
  test('is the operator’s 502 naming upstream_model and the location, never the project path; Gemini and Claude alike', async () => {
    for (const model of ['gemini-gone', 'claude-gone']) {
      const response = await fetch(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }) });
      const text = seen(await response.text());
      assert.equal(response.status, 502, text);
      assert.match(text, new RegExp(`does not serve '${model === 'gemini-gone' ? 'gemini-0.9-retired' : 'claude-2-retired'}' in location '${LOCATION}': check the upstream_model of model '${model}'`));
      assert.ok(!text.includes(`projects/${PROJECT}`) && !text.includes(PROJECT), text);
    }
  });

  test('is tried on the model’s next deployment', async () => {
    const from = vertex.requests.length;
    const chat = seen(await openai().chat.completions.create({ model: 'gemini-fallover', messages: [{ role: 'user', content: 'Hi' }] }));
    assert.equal(chat.choices[0]!.message.content, '[Hi] The quick brown fox jumps over the lazy dog.');
    assert.deepEqual(vertex.requests.slice(from).map((r) => r.path), [`${GOOGLE_PATH}/gemini-0.9-retired:generateContent`, `${GOOGLE_PATH}/${GEMINI}:generateContent`]);
  });

  test('an embedding model’s refusal names Vertex’s :predict API, not generateContent', async () => {
    const response = await fetch(`${sluice.url}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'embed-vx', input: [[1, 2, 3]] }) });
    const text = seen(await response.text());
    assert.equal(response.status, 400, text);
    assert.match(text, /text-embeddings API \(:predict\)/);
    assert.doesNotMatch(text, /generateContent/);
  });
});

describe('the key from GOOGLE_APPLICATION_CREDENTIALS', () => {
  test('a provider without credentials or credentials_file reads the file the environment names', async () => {
    const { credentials_file: _file, ...config } = vertexConfig('from-env', vertex.keyFile);
    const adapter = new VertexProvider(config, { GOOGLE_APPLICATION_CREDENTIALS: vertex.keyFile });
    const without = new VertexProvider(config, {});
    try {
      assert.ok((await adapter.listModels(AbortSignal.timeout(5000))).length > 0);
      await assert.rejects(without.listModels(AbortSignal.timeout(5000)), /set credentials or credentials_file, or GOOGLE_APPLICATION_CREDENTIALS/);
    } finally {
      await Promise.all([adapter.close(), without.close()]);
    }
  });
});

describe('discovery', () => {
  test('publisher models of Google and Anthropic, every page, only what the adapter serves', async () => {
    const adapter = createProvider(vertexConfig('lister', vertex.keyFile));
    try {
      const models = await adapter.listModels(AbortSignal.timeout(5000));
      assert.deepEqual(
        models.map((model) => [model.id, model.endpoints ?? null]),
        [
          [GEMINI, null],
          ['text-embedding-005', ['embeddings']],
          ['gemini-embedding-001', ['embeddings']],
          [CLAUDE, null],
        ],
      );
      const pages = vertex.requests.filter((request) => request.path.startsWith('/v1beta1/publishers/google/models'));
      assert.ok(pages.some((request) => request.path.includes('pageToken=')), 'the pages are followed');
    } finally {
      await adapter.close();
    }
  });
});

describe('the ledger and secrets', () => {
  test('each call leaves a ledger row on the vertex provider', async () => {
    // The ledger is written in batches: wait for the rows asserted on, not for a count.
    const rows = await eventually(async () => {
      const all = (await sluice.ledger()).filter((row) => row.provider_id === 'vertex-eu');
      const landed = all.length >= 10 && all.some((row) => row.model === 'claude-vx' && row.status === 200) && all.some((row) => row.model === 'embed-vx') && all.some((row) => row.model === 'gemini-vx' && row.status === 429);
      return landed ? all : undefined;
    }, 10_000, 'the ledger rows of the calls before');
    const claude = rows.find((row) => row.model === 'claude-vx' && row.status === 200)!;
    assert.ok(claude.prompt_tokens > 0 && claude.completion_tokens > 0);
    assert.ok(rows.some((row) => row.model === 'embed-vx' && row.prompt_tokens === 6));
    const limited = rows.find((row) => row.model === 'gemini-vx' && row.status === 429);
    assert.ok(limited, JSON.stringify(rows.filter((row) => row.status !== 200)));
  });

  test('no key, token or assertion appears in the logs or any answer', async () => {
    const logs = sluice.stdout() + sluice.stderr();
    const privateKeyLines = vertex.key.private_key.split('\n').filter((line) => line.length > 40);
    const secrets = [...vertex.issuedTokens, ...privateKeyLines, ...vertex.wrongKey.private_key.split('\n').filter((line) => line.length > 40)];
    assert.ok(vertex.issuedTokens.length > 0 && privateKeyLines.length > 10);
    for (const secret of secrets) {
      assert.ok(!logs.includes(secret), 'a secret in the logs');
      assert.ok(!answers.some((answer) => answer.includes(secret)), 'a secret in an answer');
    }
    // Every token request carried an assertion; none of them is in the logs either.
    assert.ok(!/eyJ[A-Za-z0-9_-]{20,}\.eyJ/.test(logs));
  });
});

describe('token refresh under load', () => {
  test('tokens living 3 s while 16 streams run for 10 s: nothing fails, one token request per expiry', async () => {
    const fake = await startFakeVertex({ project: PROJECT, location: LOCATION, geminiModels: [GEMINI], claudeModels: [CLAUDE], tokenLifetimeS: 3 });
    const gateway = await startSluice({
      config: `providers:
  - { id: vertex-short, kind: vertex, project: ${PROJECT}, location: ${LOCATION}, base_url: '${fake.url}', credentials_file: '${fake.keyFile}' }
models:
  - { id: gemini-vx, provider: vertex-short, upstream_model: ${GEMINI}, endpoints: [chat] }
  - { id: claude-vx, provider: vertex-short, upstream_model: '${CLAUDE}', endpoints: [chat] }
`,
      // One process, so that its token requests are counted alone (each worker holds its own token).
      args: ['--workers', '1'],
    });
    try {
      const loadKey = (await createKey(gateway.dataDir, 'load')).key;
      const client = new OpenAI({ apiKey: loadKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
      // Each stream lasts about half a second; each of the 16 clients keeps one open for 10 s.
      fake.behaviour = { tokenDelayMs: 40 };
      const started = Date.now();
      const failures: unknown[] = [];
      let completed = 0;
      await Promise.all(
        Array.from({ length: 16 }, async (_, worker) => {
          while (Date.now() - started < 10_000) {
            try {
              const stream = await client.chat.completions.create({ model: worker % 2 === 0 ? 'gemini-vx' : 'claude-vx', messages: [{ role: 'user', content: `worker ${worker}` }], stream: true });
              let text = '';
              for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
              assert.equal(text, `[worker ${worker}] The quick brown fox jumps over the lazy dog.`);
              completed++;
            } catch (error) {
              failures.push(error);
            }
          }
        }),
      );
      const elapsed = Date.now() - started;
      assert.deepEqual(failures, []);
      assert.ok(completed > 100, `${completed} streams completed`);
      // A 3 s token is renewed after 2.25 s: about elapsed / 2.25 s renewals beside the first token.
      const expected = Math.ceil(elapsed / 2250) + 1;
      assert.ok(fake.tokenRequests >= expected - 2 && fake.tokenRequests <= expected, `${fake.tokenRequests} token requests in ${elapsed} ms (expected about ${expected})`);
      assert.equal(fake.issuedTokens.length, fake.tokenRequests);
    } finally {
      fake.behaviour = {};
      await gateway.stop();
      await fake.close();
    }
  });
});

describe('the fake refuses what Google refuses', () => {
  const assertion = async (claims: Record<string, unknown>, privateKey = vertex.key.private_key, kid = vertex.key.private_key_id) => {
    const key = await importPKCS8(privateKey, 'RS256');
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ scope: 'https://www.googleapis.com/auth/cloud-platform', ...claims })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
      .setIssuer(vertex.key.client_email)
      .setAudience(typeof claims.aud === 'string' ? claims.aud : vertex.tokenUri)
      .setIssuedAt(typeof claims.iat === 'number' ? claims.iat : now)
      .setExpirationTime(typeof claims.exp === 'number' ? claims.exp : now + 3600)
      .sign(key);
  };
  const exchange = async (jwt: string, grantType = 'urn:ietf:params:oauth:grant-type:jwt-bearer') => {
    const response = await fetch(vertex.tokenUri, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: grantType, assertion: jwt }) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  test('the token endpoint: a good assertion gets a token; an expired, wrongly signed or misaddressed one is invalid_grant', async () => {
    const good = await exchange(await assertion({}));
    assert.equal(good.status, 200);
    assert.equal(good.body.token_type, 'Bearer');
    assert.ok(typeof good.body.access_token === 'string' && typeof good.body.expires_in === 'number');
    const now = Math.floor(Date.now() / 1000);
    const expired = await exchange(await assertion({ iat: now - 7200, exp: now - 3600 }));
    assert.deepEqual([expired.status, expired.body.error], [400, 'invalid_grant']);
    assert.match(String(expired.body.error_description), /short-lived token/);
    const tooLong = await exchange(await assertion({ iat: now, exp: now + 7200 }));
    assert.deepEqual([tooLong.status, tooLong.body.error], [400, 'invalid_grant']);
    const wronglySigned = await exchange(await assertion({}, vertex.wrongKey.private_key));
    assert.deepEqual([wronglySigned.status, wronglySigned.body.error, wronglySigned.body.error_description], [400, 'invalid_grant', 'Invalid JWT Signature.']);
    const unknownKey = await exchange(await assertion({}, vertex.key.private_key, 'not-a-key-id'));
    assert.deepEqual([unknownKey.status, unknownKey.body.error], [400, 'invalid_grant']);
    const otherAudience = await exchange(await assertion({ aud: 'https://oauth2.googleapis.com/token' }));
    assert.deepEqual([otherAudience.status, otherAudience.body.error], [400, 'invalid_grant']);
    const wrongGrant = await exchange(await assertion({}), 'client_credentials');
    assert.deepEqual([wrongGrant.status, wrongGrant.body.error], [400, 'unsupported_grant_type']);
  });

  test('the model endpoints: no token, an unknown or expired token, another project; Claude without Vertex\'s version or with a model', async () => {
    const call = async (path: string, body: unknown, token?: string) => {
      const response = await fetch(`${vertex.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as any };
    };
    const gemini = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    assert.deepEqual(Object.values(await call(`${GOOGLE_PATH}/${GEMINI}:generateContent`, gemini)).map((v) => (typeof v === 'number' ? v : v.error.status)), [401, 'UNAUTHENTICATED']);
    assert.equal((await call(`${GOOGLE_PATH}/${GEMINI}:generateContent`, gemini, 'ya29.made-up')).status, 401);
    vertex.tokenLifetimeS = 1;
    try {
      const shortLived = String((await exchange(await assertion({}))).body.access_token);
      assert.equal((await call(`${GOOGLE_PATH}/${GEMINI}:generateContent`, gemini, shortLived)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const expired = await call(`${GOOGLE_PATH}/${GEMINI}:generateContent`, gemini, shortLived);
      assert.deepEqual([expired.status, expired.body.error.status], [401, 'UNAUTHENTICATED']);
    } finally {
      vertex.tokenLifetimeS = 3599;
    }
    const token = String((await exchange(await assertion({}))).body.access_token);
    const otherProject = await call(GOOGLE_PATH.replace(PROJECT, 'someone-else') + `/${GEMINI}:generateContent`, gemini, token);
    assert.deepEqual([otherProject.status, otherProject.body.error.status], [403, 'PERMISSION_DENIED']);
    const messages = { max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const noVersion = await call(`${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`, messages, token);
    assert.deepEqual([noVersion.status, noVersion.body.error.type], [400, 'invalid_request_error']);
    const firstPartyVersion = await call(`${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`, { ...messages, anthropic_version: '2023-06-01' }, token);
    assert.equal(firstPartyVersion.status, 400);
    const withModel = await call(`${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`, { ...messages, anthropic_version: 'vertex-2023-10-16', model: CLAUDE }, token);
    assert.deepEqual([withModel.status, withModel.body.error.message], [400, 'model: Extra inputs are not permitted']);
    assert.equal((await call(`${ANTHROPIC_PATH}/${CLAUDE}:rawPredict`, { ...messages, anthropic_version: 'vertex-2023-10-16' }, token)).status, 200);
    const tooMany = await call(`${GOOGLE_PATH}/gemini-embedding-001:predict`, { instances: [{ content: 'a' }, { content: 'b' }] }, token);
    assert.equal(tooMany.status, 400);
  });
});
