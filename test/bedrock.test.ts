// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { GoogleGenAI } from '@google/genai';
import { streamText } from 'ai';
import { weatherInTwoSteps } from './support/ai-sdk.js';
import OpenAI from 'openai';
import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { runClaudeCode } from './support/agent-cli.js';
import { cli, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { fakeVector } from './fakes/embedding-vectors.js';
import { PDF_BASE64 } from './support/documents.js';
import { bedrockFailure, CLAUDE_MODEL, COHERE_EMBED_MODEL, NOVA_MODEL, startFakeBedrock, TITAN_EMBED_MODEL, type FakeBedrock } from './fakes/fake-bedrock.js';

/**
 * Amazon Bedrock end to end: the real gateway signs every call with SigV4 for the fake Bedrock,
 * which checks each signature itself. Translated callers (OpenAI, the AI SDK, Gemini) reach
 * Converse; Anthropic callers on a Claude model (the SDK, Claude Code) are relayed through
 * InvokeModel; embeddings go through InvokeModel for Titan and Cohere. Credentials come from the
 * provider's fields (temporary ones, with a session token), the environment, and a profile file.
 */

/** The provider's own fields: temporary credentials, so every request must carry the session token. */
const FIELD_KEY = { accessKeyId: 'ASIAFIELDSKEY0000001', secretAccessKey: 'field-secret-access-key-0123456789abcdef', sessionToken: 'field-session-token-FwoGZXIvYXdzEBYaDEXAMPLE' };
/** The gateway's environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). */
const ENV_KEY = { accessKeyId: 'AKIAENVIRONMENTKEY01', secretAccessKey: 'env-secret-access-key-0123456789abcdefgh' };
/** A profile in a shared credentials file. */
const PROFILE_KEY = { accessKeyId: 'AKIAPROFILEKEY000001', secretAccessKey: 'profile-secret-access-key-0123456789abcd', sessionToken: 'profile-session-token-IQoJb3JpZ2luEXAMPLE' };
const METRICS_TOKEN = 'metrics-token-for-the-bedrock-test';
const SECRETS = [FIELD_KEY.secretAccessKey, FIELD_KEY.sessionToken, ENV_KEY.secretAccessKey, PROFILE_KEY.secretAccessKey, PROFILE_KEY.sessionToken];

let bedrock: FakeBedrock;
/** A second region, throttled, for the failover test. */
let throttled: FakeBedrock;
/** Discovery's: foundation models and inference profiles to list. */
let listing: FakeBedrock;
let sluice: RunningSluice;
let key: string;
/** Everything the gateway answered, for the secrets check at the end. */
const answers: string[] = [];

const WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

before(async () => {
  [bedrock, throttled, listing] = await Promise.all([
    startFakeBedrock({ keys: [FIELD_KEY, ENV_KEY] }),
    startFakeBedrock({ region: 'us-west-2', keys: [FIELD_KEY] }),
    startFakeBedrock({
      keys: [ENV_KEY],
      foundationModels: [
        { modelId: NOVA_MODEL, providerName: 'Amazon', modelName: 'Nova Lite', outputModalities: ['TEXT'], inferenceTypesSupported: ['ON_DEMAND'] },
        { modelId: TITAN_EMBED_MODEL, providerName: 'Amazon', modelName: 'Titan Text Embeddings V2', outputModalities: ['EMBEDDING'], inferenceTypesSupported: ['ON_DEMAND'] },
        { modelId: 'amazon.titan-image-generator-v2:0', outputModalities: ['IMAGE'], inferenceTypesSupported: ['ON_DEMAND'] },
        { modelId: 'anthropic.claude-3-opus-20240229-v1:0', outputModalities: ['TEXT'], inferenceTypesSupported: ['PROVISIONED'] },
      ],
      inferenceProfiles: [{ inferenceProfileId: CLAUDE_MODEL }, { inferenceProfileId: 'eu.amazon.nova-lite-v1:0' }, { inferenceProfileId: 'apac.meta.llama3-2-1b-instruct-v1:0' }],
      profilePage: 2,
    }),
  ]);
  throttled.behaviour = { fail: bedrockFailure('ThrottlingException', 429, 'Too many requests, please wait before trying again.') };
  sluice = await startSluice({
    env: { AWS_ACCESS_KEY_ID: ENV_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: ENV_KEY.secretAccessKey, SLUICE_LOG_LEVEL: 'info', SLUICE_METRICS_TOKEN: METRICS_TOKEN },
    config: `
providers:
  - id: bedrock
    kind: bedrock
    region: us-east-1
    base_url: ${bedrock.url}
    access_key_id: ${FIELD_KEY.accessKeyId}
    secret_access_key: ${FIELD_KEY.secretAccessKey}
    session_token: ${FIELD_KEY.sessionToken}
  - { id: bedrock-env, kind: bedrock, region: us-east-1, base_url: '${bedrock.url}' }
  - { id: bedrock-list, kind: bedrock, region: us-east-1, base_url: '${listing.url}', discover: { interval_ms: 600000, id_prefix: 'found/' } }
  - { id: bedrock-west, kind: bedrock, region: us-west-2, base_url: '${throttled.url}', access_key_id: ${FIELD_KEY.accessKeyId}, secret_access_key: ${FIELD_KEY.secretAccessKey}, session_token: ${FIELD_KEY.sessionToken} }
models:
  - { id: claude-bedrock, provider: bedrock, upstream_model: '${CLAUDE_MODEL}', endpoints: [chat], max_output_tokens: 8000, pricing: { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 } }
  - { id: nova, provider: bedrock-env, upstream_model: '${NOVA_MODEL}', endpoints: [chat, completions] }
  - { id: titan-embed, provider: bedrock, upstream_model: '${TITAN_EMBED_MODEL}', endpoints: [embeddings] }
  - { id: cohere-embed, provider: bedrock-env, upstream_model: '${COHERE_EMBED_MODEL}', endpoints: [embeddings] }
  - id: nova-failover
    endpoints: [chat]
    deployments:
      - { provider: bedrock-west, upstream_model: '${NOVA_MODEL}' }
      - { provider: bedrock, upstream_model: '${NOVA_MODEL}', priority: 1 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([bedrock.close(), throttled.close(), listing.close()]);
});

beforeEach(() => {
  bedrock.behaviour = {};
  bedrock.requests.length = 0;
});

const openai = () => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });

/** The last request the fake took, and that its signature was checked and passed (a refusal is recorded in `refusals`). */
function lastSigned(refusalsBefore: number) {
  assert.equal(bedrock.refusals.length, refusalsBefore, `no request was refused: ${bedrock.refusals.join(', ')}`);
  const sent = bedrock.requests.at(-1)!;
  assert.match(String(sent.headers.authorization), /^AWS4-HMAC-SHA256 Credential=\w+\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
  return sent;
}

describe('the fake Bedrock against AWS’s own clients', () => {
  // The runtime client speaks HTTP/2 by default (for its bidirectional streams); the fake is HTTP/1.1.
  const runtime = (secretAccessKey: string) =>
    new BedrockRuntimeClient({ region: 'us-east-1', endpoint: bedrock.url, requestHandler: new NodeHttpHandler(), maxAttempts: 1, credentials: { accessKeyId: ENV_KEY.accessKeyId, secretAccessKey } });
  // The SDK copies its own anthropic-version header into the body; Bedrock takes only its own version.
  const claude = (awsSecretKey: string) =>
    new AnthropicBedrock({ awsRegion: 'us-east-1', awsAccessKey: ENV_KEY.accessKeyId, awsSecretKey, baseURL: bedrock.url, maxRetries: 0, defaultHeaders: { 'anthropic-version': 'bedrock-2023-05-31' } });
  const messages = [{ role: 'user' as const, content: [{ text: 'hello sdk' }] }];

  test('@aws-sdk/client-bedrock-runtime: Converse and ConverseStream succeed; a wrong secret is refused', async () => {
    const whole = await runtime(ENV_KEY.secretAccessKey).send(new ConverseCommand({ modelId: CLAUDE_MODEL, messages }));
    assert.deepEqual(whole.output?.message?.content, [{ text: '[hello sdk] The quick brown fox jumps over the lazy dog.' }]);
    assert.equal(bedrock.requests.at(-1)!.path, `/model/${CLAUDE_MODEL.replace(':', '%3A')}/converse`, 'the SDK sends the id percent-encoded');
    const streamed = await runtime(ENV_KEY.secretAccessKey).send(new ConverseStreamCommand({ modelId: CLAUDE_MODEL, messages }));
    let text = '';
    for await (const event of streamed.stream!) text += event.contentBlockDelta?.delta?.text ?? '';
    assert.equal(text, '[hello sdk] The quick brown fox jumps over the lazy dog.');
    await assert.rejects(runtime('not-the-secret').send(new ConverseCommand({ modelId: CLAUDE_MODEL, messages })), (error: Error & { $metadata?: { httpStatusCode?: number } }) => {
      assert.equal(error.name, 'InvalidSignatureException');
      assert.equal(error.$metadata?.httpStatusCode, 403);
      return true;
    });
  });

  test('@anthropic-ai/bedrock-sdk: messages whole and streamed succeed (the id sent with a raw colon); a wrong secret is refused', async () => {
    const whole = await claude(ENV_KEY.secretAccessKey).messages.create({ model: CLAUDE_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hello sdk' }] });
    assert.equal((whole.content[0] as Anthropic.TextBlock).text, '[hello sdk] The quick brown fox jumps over the lazy dog.');
    assert.equal(bedrock.requests.at(-1)!.path, `/model/${CLAUDE_MODEL}/invoke`);
    const streamed = await claude(ENV_KEY.secretAccessKey).messages.stream({ model: CLAUDE_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hello sdk' }] }).finalMessage();
    assert.equal(streamed.usage.output_tokens, 11);
    await assert.rejects(claude('not-the-secret').messages.create({ model: CLAUDE_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }), (error: Error & { status?: number }) => {
      assert.equal(error.status, 403);
      assert.match(error.message, /signature we calculated does not match/);
      return true;
    });
  });
});

describe('translated through Converse', () => {
  test('the openai SDK: chat whole, signed with the session token, the model id percent-encoded in the path', async () => {
    const refusals = bedrock.refusals.length;
    const completion = await openai().chat.completions.create({ model: 'claude-bedrock', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello there' }], max_tokens: 50 });
    answers.push(JSON.stringify(completion));
    assert.equal(completion.choices[0]!.message.content, '[hello there] The quick brown fox jumps over the lazy dog.');
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
    assert.equal(completion.usage!.completion_tokens, 11);
    const sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${CLAUDE_MODEL.replace(':', '%3A')}/converse`);
    assert.equal(sent.headers['x-amz-security-token'], FIELD_KEY.sessionToken);
    assert.match(String(sent.headers.authorization), new RegExp(`Credential=${FIELD_KEY.accessKeyId}/`));
    assert.deepEqual(sent.body.system, [{ text: 'Be brief.' }]);
    assert.equal(sent.body.inferenceConfig.maxTokens, 50);
  });

  test('the openai SDK: a stream from the binary event stream, with usage', async () => {
    const refusals = bedrock.refusals.length;
    const stream = await openai().chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'stream please' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish ??= chunk.choices[0]?.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    answers.push(text);
    assert.equal(text, '[stream please] The quick brown fox jumps over the lazy dog.');
    assert.equal(finish, 'stop');
    assert.equal(usage?.completion_tokens, 11);
    const sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${NOVA_MODEL.replace(':', '%3A')}/converse-stream`);
    assert.match(String(sent.headers.authorization), new RegExp(`Credential=${ENV_KEY.accessKeyId}/`), 'the env provider signs with the environment’s key');
    assert.equal(sent.headers['x-amz-security-token'], undefined);
  });

  test('the openai SDK: Responses whole and streamed, and legacy completions, over Converse', async () => {
    const refusals = bedrock.refusals.length;
    const response = await openai().responses.create({ model: 'claude-bedrock', instructions: 'Be brief.', input: 'hello responses', max_output_tokens: 60 });
    assert.equal(response.output_text, '[hello responses] The quick brown fox jumps over the lazy dog.');
    assert.equal(response.usage?.output_tokens, 11);
    let sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${CLAUDE_MODEL.replace(':', '%3A')}/converse`);
    assert.deepEqual(sent.body.system, [{ text: 'Be brief.' }]);
    const events = await openai().responses.create({ model: 'claude-bedrock', input: 'stream responses', stream: true });
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of events) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    assert.equal(text, '[stream responses] The quick brown fox jumps over the lazy dog.');
    assert.equal(completed?.status, 'completed');
    sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${CLAUDE_MODEL.replace(':', '%3A')}/converse-stream`);
    const completion = await openai().completions.create({ model: 'nova', prompt: 'complete me', max_tokens: 30 });
    assert.equal(completion.choices[0]!.text, '[complete me] The quick brown fox jumps over the lazy dog.');
    assert.equal(lastSigned(refusals).path, `/model/${NOVA_MODEL.replace(':', '%3A')}/converse`);
    answers.push(JSON.stringify(response), text, JSON.stringify(completion));
  });

  test('the openai SDK: tools, whole and streamed, and the tool result sent back', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const asked: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const first = await openai().chat.completions.create({ model: 'claude-bedrock', messages: [asked], tools });
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    assert.equal(first.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.deepEqual(bedrock.requests.at(-1)!.body.toolConfig.tools[0].toolSpec.name, 'get_weather');
    const stream = await openai().chat.completions.create({
      model: 'claude-bedrock',
      messages: [asked, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Result: sunny');
    const sent = bedrock.requests.at(-1)!;
    assert.equal(sent.body.messages[1].content[0].toolUse.toolUseId, call.id);
    assert.equal(sent.body.messages[2].content[0].toolResult.toolUseId, call.id);
  });

  test('the AI SDK: tools over several steps, and a stream', async () => {
    const provider = createOpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });
    await weatherInTwoSteps(provider.chat('nova'));
    const streamed = streamText({ model: provider.chat('nova'), prompt: 'Tell me a story', maxRetries: 0 });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    assert.equal(text, '[Tell me a story] The quick brown fox jumps over the lazy dog.');
    assert.ok((await streamed.usage).outputTokens! > 0);
  });

  test('the Gemini dialect (@google/genai): generateContent and its stream', async () => {
    const client = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } });
    const whole = await client.models.generateContent({ model: 'nova', contents: 'hello gemini caller' });
    assert.equal(whole.text, '[hello gemini caller] The quick brown fox jumps over the lazy dog.');
    assert.equal(whole.usageMetadata?.candidatesTokenCount, 11);
    let text = '';
    for await (const chunk of await client.models.generateContentStream({ model: 'claude-bedrock', contents: 'stream gemini' })) text += chunk.text ?? '';
    assert.equal(text, '[stream gemini] The quick brown fox jumps over the lazy dog.');
    assert.match(bedrock.requests.at(-1)!.path, /\/converse-stream$/);
  });

  test('the Anthropic SDK: a PDF and a text document to Nova become Converse document blocks; a sixth, and one by URL, are refused by name', async () => {
    const refusals = bedrock.refusals.length;
    const pdf = PDF_BASE64;
    const message = await anthropic().messages.create({
      model: 'nova',
      max_tokens: 60,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf }, title: 'Q3 report: final (v2).pdf' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The grass is green.' } },
            { type: 'text', text: 'Summarise both documents.' },
          ],
        },
      ],
    });
    answers.push(JSON.stringify(message));
    assert.equal((message.content[0] as Anthropic.TextBlock).text, '[Summarise both documents.] The quick brown fox jumps over the lazy dog.');
    const sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${NOVA_MODEL.replace(':', '%3A')}/converse`);
    assert.deepEqual(sent.body.messages[0].content, [
      { document: { format: 'pdf', name: 'Q3 report final (v2)', source: { bytes: pdf } } },
      { document: { format: 'txt', name: 'document 2', source: { bytes: Buffer.from('The grass is green.').toString('base64') } } },
      { text: 'Summarise both documents.' },
    ]);

    const sentBefore = bedrock.requests.length;
    const doc = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Page.' } };
    const six = await postRaw('/v1/messages', { model: 'nova', max_tokens: 20, messages: [{ role: 'user', content: [doc, doc, doc, doc, doc, doc, { type: 'text', text: 'Compare.' }] }] }, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    answers.push(six.text);
    assert.equal(six.status, 400);
    assert.equal(JSON.parse(six.text).error.type, 'invalid_request_error');
    assert.match(JSON.parse(six.text).error.message, /^Model `nova` cannot take more than 5 documents in one request/);
    const byUrl = await postRaw('/v1/messages', { model: 'nova', max_tokens: 20, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }, { type: 'text', text: 'Read it.' }] }] }, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    answers.push(byUrl.text);
    assert.equal(byUrl.status, 400);
    assert.match(JSON.parse(byUrl.text).error.message, /^Model `nova` cannot take a document by URL/);
    assert.equal(bedrock.requests.length, sentBefore, 'nothing refused went to Bedrock');
  });

  test('a ValidationException is the caller’s 400 with AWS’s message', async () => {
    // Converse takes at most four stop sequences: AWS refuses more, and its refusal is the caller's.
    const error = await openai()
      .chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'hi' }], stop: ['a', 'b', 'c', 'd', 'e'] as never })
      .then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    assert.equal(bedrock.refusals.at(-1), 'ValidationException');
    assert.equal(error?.status, 400);
    assert.match(String(error?.message), /stopSequences/);
    bedrock.behaviour = { fail: bedrockFailure('ValidationException', 400, 'The model returned the following errors: Input is too long for requested model.') };
    const refused = await postRaw('/v1/chat/completions', { model: 'nova', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` });
    answers.push(refused.text);
    assert.equal(refused.status, 400);
    assert.equal(JSON.parse(refused.text).error.message, 'The model returned the following errors: Input is too long for requested model.');
  });

  test('an exception frame mid-stream ends the stream with an error', async () => {
    bedrock.behaviour = { errorAfterChunks: 3 };
    const stream = await openai().chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'go on' }], stream: true });
    await assert.rejects(
      (async () => {
        for await (const _chunk of stream);
      })(),
      (error: Error) => /is rate limiting requests mid-stream \(ThrottlingException\)/.test(error.message),
    );
  });
});

describe('Anthropic callers on Claude: relayed through InvokeModel', () => {
  test('messages whole and streamed: the body without model, Bedrock’s anthropic_version, the caller’s betas as anthropic_beta', async () => {
    const refusals = bedrock.refusals.length;
    const whole = await anthropic().messages.create({ model: 'claude-bedrock', max_tokens: 100, messages: [{ role: 'user', content: 'hello relay' }] }, { headers: { 'anthropic-beta': 'beta-one-2025-01-01,beta-two-2025-02-02' } });
    answers.push(JSON.stringify(whole));
    assert.equal((whole.content[0] as Anthropic.TextBlock).text, '[hello relay] The quick brown fox jumps over the lazy dog.');
    const sent = lastSigned(refusals);
    assert.equal(sent.path, `/model/${CLAUDE_MODEL.replace(':', '%3A')}/invoke`);
    assert.equal(sent.body.anthropic_version, 'bedrock-2023-05-31');
    assert.equal(sent.body.model, undefined);
    assert.deepEqual(sent.body.anthropic_beta, ['beta-one-2025-01-01', 'beta-two-2025-02-02']);
    assert.equal(sent.headers['anthropic-version'], undefined, 'the caller’s API version does not go to Bedrock');

    const streamed = await anthropic().messages.stream({ model: 'claude-bedrock', max_tokens: 100, messages: [{ role: 'user', content: 'stream relay' }] }).finalMessage();
    assert.equal((streamed.content[0] as Anthropic.TextBlock).text, '[stream relay] The quick brown fox jumps over the lazy dog.');
    assert.equal(streamed.usage.output_tokens, 11);
    assert.match(bedrock.requests.at(-1)!.path, /\/invoke-with-response-stream$/);
    assert.equal(bedrock.requests.at(-1)!.body.stream, undefined);
  });

  test('count_tokens on a Bedrock Claude model is Sluice’s own count: nothing goes to Bedrock', async () => {
    const counted = await anthropic().messages.countTokens({ model: 'claude-bedrock', messages: [{ role: 'user', content: 'count these words please' }] });
    assert.ok(counted.input_tokens > 0);
    assert.equal(bedrock.requests.length, 0);
  });

  test('tools with thinking over two turns: the signature goes back; cache tokens reach the ledger and the price', async () => {
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a weather assistant with a long and stable system prompt.', cache_control: { type: 'ephemeral' } }];
    const asked: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const params = { model: 'claude-bedrock', max_tokens: 4000, system, tools: [WEATHER_TOOL], thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
    const first = await anthropic().messages.create({ ...params, messages: [asked] });
    const thinking = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking')!;
    assert.ok(thinking.signature.length > 0);
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    // The fake refuses a thinking block whose signature it did not issue, and a tool turn without its thinking block.
    const second = await anthropic()
      .messages.stream({ ...params, messages: [asked, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }] })
      .finalMessage();
    assert.match(second.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), /Result: sunny/);
    assert.ok(second.usage.cache_read_input_tokens! > 0, 'the second call reads the cached system prompt');
    const sent = bedrock.requests.at(-1)!;
    assert.deepEqual(sent.body.system, system, 'cache_control reaches Bedrock');
    assert.equal(sent.body.messages[1].content[0].signature, thinking.signature);
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'messages' && r.model === 'claude-bedrock' && r.cached_input_tokens > 0));
    assert.equal(row.cached_input_tokens, second.usage.cache_read_input_tokens);
    assert.equal(row.prompt_tokens, second.usage.input_tokens + second.usage.cache_read_input_tokens! + second.usage.cache_creation_input_tokens!);
    const expected = ((row.prompt_tokens - row.cached_input_tokens - row.cache_write_tokens) * 3 + row.cached_input_tokens * 0.3 + row.cache_write_tokens * 3.75 + row.completion_tokens * 15) / 1e6;
    assert.ok(Math.abs(row.cost_usd - expected) < 1e-12, `cost ${row.cost_usd} = ${expected}`);
    const written = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'messages' && r.model === 'claude-bedrock' && r.cache_write_tokens > 0));
    assert.ok(written.cache_write_tokens > 0, 'the first call wrote the cache');
  });

  test('Converse cache points: cache read and write tokens from a translated caller reach the ledger', async () => {
    const system = [{ type: 'text' as const, text: 'A stable system prompt for the translated caching test.', cache_control: { type: 'ephemeral' as const } }];
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { data, response } = await anthropic().messages.create({ model: 'nova', max_tokens: 50, system, messages: [{ role: 'user', content: `question ${i}` }] }).withResponse();
      assert.ok(data.content.length > 0);
      ids.push(response.headers.get('x-request-id')!);
    }
    assert.deepEqual(bedrock.requests.at(-1)!.body.system.at(-1), { cachePoint: { type: 'default' } });
    // The ledger is written in batches: its rows are found by request id, whenever they land and in whatever order.
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((r) => ids.includes(r.request_id));
      return found.length === 2 ? ids.map((id) => found.find((r) => r.request_id === id)!) : undefined;
    }, 10_000, 'both ledger rows');
    assert.ok(rows[0]!.cache_write_tokens > 0, JSON.stringify(rows[0]));
    assert.ok(rows[1]!.cached_input_tokens > 0, JSON.stringify(rows[1]));
  });

  test('Claude Code through Sluice to a Bedrock Claude model: relayed, with its tools and betas', async () => {
    const result = await runClaudeCode(sluice.url, key, 'claude-bedrock', 'Say hello to the gateway.');
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const output = JSON.parse(result.stdout);
    assert.equal(output.is_error, false, result.stdout);
    assert.ok(typeof output.result === 'string' && output.result.length > 0);
    const calls = bedrock.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 1, 'the prompt reached Bedrock');
    const sent = calls.at(-1)!;
    assert.match(sent.path, /\/invoke-with-response-stream$/);
    assert.equal(sent.body.anthropic_version, 'bedrock-2023-05-31');
    assert.ok(sent.body.tools.length > 10, 'Claude Code’s own tools go upstream');
    assert.ok(Array.isArray(sent.body.anthropic_beta) && sent.body.anthropic_beta.some((beta: string) => beta.startsWith('claude-code-')), JSON.stringify(sent.body.anthropic_beta));
    const rows = await eventually(async () => {
      const found = (await sluice.ledger()).filter((row) => row.operation === 'messages' && row.model === 'claude-bedrock' && row.stream === 1);
      return found.length >= calls.length ? found : undefined;
    });
    assert.ok(rows.every((row) => row.status === 200 && row.completion_tokens > 0), JSON.stringify(rows));
  });
});

describe('embeddings through InvokeModel', () => {
  test('Titan: one text a call, dimensions and normalize, token usage', async () => {
    const response = await openai().embeddings.create({ model: 'titan-embed', input: ['first text', 'second text'], dimensions: 256, encoding_format: 'float' });
    assert.deepEqual(response.data.map((d) => d.embedding), [fakeVector('first text', 256), fakeVector('second text', 256)]);
    assert.equal(response.usage.prompt_tokens, 4);
    const calls = bedrock.requests.filter((r) => r.path.endsWith('/invoke'));
    assert.equal(calls.length, 2);
    assert.deepEqual(calls.map((c) => c.body), [{ inputText: 'first text', dimensions: 256, normalize: true }, { inputText: 'second text', dimensions: 256, normalize: true }]);
  });

  test('Cohere: the texts in one call, with input_type and float embeddings', async () => {
    const input = Array.from({ length: 100 }, (_, i) => `text number ${i}`);
    const response = await openai().embeddings.create({ model: 'cohere-embed', input, encoding_format: 'float' });
    assert.equal(response.data.length, 100);
    assert.deepEqual(response.data[99]!.embedding, fakeVector('text number 99', 1024));
    const calls = bedrock.requests.filter((r) => r.path.endsWith('/invoke'));
    assert.deepEqual(calls.map((c) => c.body.texts.length), [96, 4], 'at most 96 texts a call');
    assert.equal(calls[0]!.body.input_type, 'search_document');
    assert.deepEqual(calls[0]!.body.embedding_types, ['float']);
  });

  test('Cohere Embed v3 cannot take dimensions: the caller’s 400 names it, and nothing goes to Bedrock', async () => {
    await assert.rejects(openai().embeddings.create({ model: 'cohere-embed', input: 'sized', dimensions: 256 }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'dimensions');
      assert.match(error.message, /`dimensions`.*Cohere Embed v3/);
      return true;
    });
    assert.equal(bedrock.requests.length, 0);
  });
});

describe('routing and errors', () => {
  test('a throttled deployment (ThrottlingException) is retried on the second deployment', async () => {
    const { data, response } = await openai().chat.completions.create({ model: 'nova-failover', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    assert.equal(data.choices[0]!.message.content, '[hello] The quick brown fox jumps over the lazy dog.');
    assert.equal(response.headers.get('x-sluice-attempts'), '2');
    assert.ok(throttled.requests.length >= 1, 'the first deployment was tried');
    assert.match(String(throttled.requests.at(-1)!.headers.authorization), /\/us-west-2\/bedrock\/aws4_request/, 'signed for its own region');
  });

  test('a model timeout (408) and a service quota (400) are retried on the second deployment, by their AWS error type', async () => {
    try {
      for (const [type, status] of [['ModelTimeoutException', 408], ['ServiceQuotaExceededException', 400]] as const) {
        throttled.behaviour = { fail: bedrockFailure(type, status, `${type} from the first region.`) };
        const { data, response } = await openai().chat.completions.create({ model: 'nova-failover', messages: [{ role: 'user', content: type }] }).withResponse();
        assert.equal(data.choices[0]!.message.content, `[${type}] The quick brown fox jumps over the lazy dog.`);
        assert.equal(response.headers.get('x-sluice-attempts'), '2', type);
      }
    } finally {
      throttled.behaviour = { fail: bedrockFailure('ThrottlingException', 429, 'Too many requests, please wait before trying again.') };
    }
  });

  test('discovery: the foundation models on demand with text or embeddings, and every page of inference profiles', async () => {
    const client = openai();
    const found = await eventually(async () => {
      const ids = (await client.models.list()).data.map((m) => m.id).filter((id) => id.startsWith('found/'));
      return ids.length >= 5 ? ids.sort() : undefined;
    }, 8000, 'the discovered models');
    assert.deepEqual(found, ['found/amazon.nova-lite-v1:0', 'found/amazon.titan-embed-text-v2:0', 'found/apac.meta.llama3-2-1b-instruct-v1:0', 'found/eu.amazon.nova-lite-v1:0', `found/${CLAUDE_MODEL}`]);
    const paths = listing.requests.map((r) => r.path);
    assert.ok(paths.includes('/foundation-models?byInferenceType=ON_DEMAND'), paths.join(' '));
    assert.ok(paths.some((p) => p.startsWith('/inference-profiles?maxResults=1000&nextToken=o%2B2%2Fx%3D')), 'the second page asked with its token encoded');
    assert.deepEqual(listing.refusals, [], 'the control-plane calls were signed, query included');
  });
});

async function postRaw(path: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(`${sluice.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

describe('no secret leaves the gateway', () => {
  test('no secret key, session token or signature in the logs, the answers or the metrics', async () => {
    const signatures = [...bedrock.requests, ...throttled.requests, ...listing.requests].map((r) => /Signature=([0-9a-f]{64})/.exec(String(r.headers.authorization))?.[1]).filter((s): s is string => s !== undefined);
    const logs = sluice.stdout() + sluice.stderr();
    assert.ok(logs.length > 0, 'the gateway logged');
    const metrics = await (await fetch(`${sluice.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    assert.match(metrics, /provider="bedrock"/, 'the metrics name the provider');
    answers.push(metrics);
    for (const secret of [...SECRETS, ...signatures]) {
      assert.ok(!logs.includes(secret), `the logs hold ${secret.slice(0, 8)}…`);
      for (const answer of answers) assert.ok(!answer.includes(secret), `an answer holds ${secret.slice(0, 8)}…`);
    }
  });
});

/** Credentials from AWS_PROFILE in a shared credentials file, and none at all (the doctor names the settings). */
describe('credentials from a profile file, and none', () => {
  let dir: string;
  let profiled: RunningSluice;
  let fake: FakeBedrock;

  before(async () => {
    fake = await startFakeBedrock({ keys: [PROFILE_KEY], foundationModels: [{ modelId: NOVA_MODEL, outputModalities: ['TEXT'], inferenceTypesSupported: ['ON_DEMAND'] }], inferenceProfiles: [] });
    dir = tempDir('sluice-aws-');
    writeFileSync(join(dir, 'credentials'), `[default]\naws_access_key_id = AKIAWRONGDEFAULT0001\naws_secret_access_key = wrong\n\n[team]\naws_access_key_id = ${PROFILE_KEY.accessKeyId}\naws_secret_access_key = ${PROFILE_KEY.secretAccessKey}\naws_session_token = ${PROFILE_KEY.sessionToken}\n`);
    profiled = await startSluice({
      env: { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_PROFILE: 'team', SLUICE_LOG_LEVEL: 'info' },
      config: `
providers:
  - { id: bedrock, kind: bedrock, region: us-east-1, base_url: '${fake.url}' }
models:
  - { id: nova, provider: bedrock, upstream_model: '${NOVA_MODEL}', endpoints: [chat] }
`,
    });
  });

  after(async () => {
    assert.equal(await profiled.stop(), 0);
    await fake.close();
  });

  test('AWS_PROFILE’s keys and session token sign the calls', async () => {
    const own = (await createKey(profiled.dataDir, 'acme')).key;
    const completion = await new OpenAI({ apiKey: own, baseURL: `${profiled.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'from a profile' }] });
    assert.equal(completion.choices[0]!.message.content, '[from a profile] The quick brown fox jumps over the lazy dog.');
    assert.deepEqual(fake.refusals, []);
    assert.match(String(fake.requests.at(-1)!.headers.authorization), new RegExp(`Credential=${PROFILE_KEY.accessKeyId}/`));
    assert.equal(fake.requests.at(-1)!.headers['x-amz-security-token'], PROFILE_KEY.sessionToken);
    const logs = profiled.stdout() + profiled.stderr();
    for (const secret of [PROFILE_KEY.secretAccessKey, PROFILE_KEY.sessionToken]) assert.ok(!logs.includes(secret));
  });

  test('temporary credentials rotated in the profile file: refused once, then read again', async () => {
    const own = (await createKey(profiled.dataDir, 'rotation')).key;
    const client = new OpenAI({ apiKey: own, baseURL: `${profiled.url}/v1`, maxRetries: 0 });
    const rotated = { accessKeyId: 'ASIAROTATEDKEY000001', secretAccessKey: 'rotated-secret-access-key-0123456789abcd', sessionToken: 'rotated-session-token-IQoJEXAMPLE' };
    // AWS expires the old session; the credentials refresher writes the new one into the file.
    fake.keys.delete(PROFILE_KEY.accessKeyId);
    fake.keys.set(rotated.accessKeyId, rotated);
    writeFileSync(join(dir, 'credentials'), `[team]\naws_access_key_id = ${rotated.accessKeyId}\naws_secret_access_key = ${rotated.secretAccessKey}\naws_session_token = ${rotated.sessionToken}\n`);
    await assert.rejects(client.chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'old session' }] }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 502);
      assert.match(error.message, /refused the gateway's AWS credentials \(UnrecognizedClientException: The security token included in the request is invalid\.\)/);
      return true;
    });
    const completion = await client.chat.completions.create({ model: 'nova', messages: [{ role: 'user', content: 'new session' }] });
    assert.equal(completion.choices[0]!.message.content, '[new session] The quick brown fox jumps over the lazy dog.');
    assert.match(String(fake.requests.at(-1)!.headers.authorization), new RegExp(`Credential=${rotated.accessKeyId}/`));
    const logs = profiled.stdout() + profiled.stderr();
    for (const secret of [rotated.secretAccessKey, rotated.sessionToken, PROFILE_KEY.secretAccessKey, PROFILE_KEY.sessionToken]) assert.ok(!logs.includes(secret));
    // Back as it was, for the doctor's test.
    fake.keys.set(PROFILE_KEY.accessKeyId, PROFILE_KEY);
    writeFileSync(join(dir, 'credentials'), `[team]\naws_access_key_id = ${PROFILE_KEY.accessKeyId}\naws_secret_access_key = ${PROFILE_KEY.secretAccessKey}\naws_session_token = ${PROFILE_KEY.sessionToken}\n`);
  });

  test('a model’s AccessDeniedException keeps the credentials; a refused identity reads them again, and none found tells the caller nothing of the host', async () => {
    const own = (await createKey(profiled.dataDir, 'denied')).key;
    const client = new OpenAI({ apiKey: own, baseURL: `${profiled.url}/v1`, maxRetries: 0 });
    const other = { accessKeyId: 'AKIAOTHERPROFILEKEY1', secretAccessKey: 'other-secret-access-key-0123456789abcdef' };
    const file = join(dir, 'credentials');
    const held = new Map(fake.keys);
    const ask = (content: string) => client.chat.completions.create({ model: 'nova', messages: [{ role: 'user', content }] });
    // Each of the gateway's workers holds its own identity: several calls reach every one.
    const CALLS = 6;
    try {
      // Every worker finds its identity first.
      for (let i = 0; i < CALLS; i++) await ask('before');
      fake.keys.set(other.accessKeyId, other);
      writeFileSync(file, `[team]\naws_access_key_id = ${other.accessKeyId}\naws_secret_access_key = ${other.secretAccessKey}\n`);
      fake.behaviour = { fail: bedrockFailure('AccessDeniedException', 403, "You don't have access to the model with the specified model ID.") };
      for (let i = 0; i < CALLS; i++) await assert.rejects(ask('denied'), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 502 && /AccessDeniedException/.test(error.message));
      fake.behaviour = {};
      const sent = fake.requests.length;
      for (let i = 0; i < CALLS; i++) await ask('allowed again');
      const signedBy = fake.requests.slice(sent).map((r) => /Credential=(\w+)\//.exec(String(r.headers.authorization))?.[1]);
      assert.ok(!signedBy.includes(other.accessKeyId), `the file was read again after a model's AccessDenied: ${signedBy.join(', ')}`);

      // The identity refused (AWS knows its key no more): read again, and the file now has no such profile.
      writeFileSync(file, `[default]\naws_access_key_id = ${other.accessKeyId}\naws_secret_access_key = ${other.secretAccessKey}\n`);
      for (const id of held.keys()) fake.keys.delete(id);
      const answers: string[] = [];
      const none = await eventually(async () => {
        const answer = await fetch(`${profiled.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${own}` }, body: JSON.stringify({ model: 'nova', messages: [{ role: 'user', content: 'none' }] }) });
        const text = await answer.text();
        answers.push(text);
        assert.equal(answer.status, 502, text);
        return text.includes('no AWS credentials') ? text : undefined;
      }, 5000, 'the answer of a worker that found no credentials');
      assert.match(none, /The gateway has no AWS credentials for the upstream provider 'bedrock'\. This is a gateway configuration problem; see \/status\./);
      for (const answer of answers) for (const hostDetail of ["'team'", file, 'AWS_PROFILE', 'AWS_SHARED_CREDENTIALS_FILE', other.secretAccessKey]) assert.ok(!answer.includes(hostDetail), `an answer shows ${hostDetail}`);
      const logs = await eventually(async () => {
        const text = profiled.stdout() + profiled.stderr();
        return text.includes("AWS_PROFILE (now 'team')") ? text : undefined;
      }, 5000, 'the detail in the log');
      assert.ok(logs.includes(file), 'the log names the file looked in');
      for (const secret of [other.secretAccessKey, PROFILE_KEY.secretAccessKey, PROFILE_KEY.sessionToken]) assert.ok(!logs.includes(secret));
    } finally {
      fake.behaviour = {};
      fake.keys.clear();
      for (const [id, value] of held) fake.keys.set(id, value);
      writeFileSync(file, `[team]\naws_access_key_id = ${PROFILE_KEY.accessKeyId}\naws_secret_access_key = ${PROFILE_KEY.secretAccessKey}\naws_session_token = ${PROFILE_KEY.sessionToken}\n`);
    }
  });

  test('sluice doctor lists the models with the profile, and with no credentials names every setting', async () => {
    const config = join(dir, 'doctor.yaml');
    writeFileSync(config, `providers:\n  - { id: bedrock, kind: bedrock, region: us-east-1, base_url: '${fake.url}' }\nmodels:\n  - { id: nova, provider: bedrock, upstream_model: '${NOVA_MODEL}', endpoints: [chat] }\n`);
    const data = tempDir('sluice-doctor-');
    const ok = await cli(['doctor', '--config', config, '--data', data], { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_PROFILE: 'team' });
    assert.match(ok.stdout, /ok\s+provider bedrock: bedrock at .*1 model\(s\) listed/, ok.stdout + ok.stderr);
    const none = await cli(['doctor', '--config', config, '--data', data], { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SHARED_CREDENTIALS_FILE: join(dir, 'missing'), AWS_PROFILE: '' });
    assert.match(none.stdout, /FAIL\s+provider bedrock: .*no AWS credentials.*access_key_id.*AWS_ACCESS_KEY_ID.*AWS_PROFILE/, none.stdout + none.stderr);
    assert.ok(none.stdout.includes("AWS_PROFILE (now 'default')") && none.stdout.includes(join(dir, 'missing')), `the doctor shows the profile and the file looked in: ${none.stdout}`);
  });

  test('sluice doctor gives Bedrock’s own advice by AWS’s error type: model access denied, an expired session token', async () => {
    const config = join(dir, 'doctor.yaml');
    writeFileSync(config, `providers:\n  - { id: bedrock, kind: bedrock, region: us-east-1, base_url: '${fake.url}' }\nmodels:\n  - { id: nova, provider: bedrock, upstream_model: '${NOVA_MODEL}', endpoints: [chat] }\n`);
    const data = tempDir('sluice-doctor-');
    const env = { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_PROFILE: 'team' };
    try {
      fake.behaviour = { fail: bedrockFailure('AccessDeniedException', 403, "You don't have access to the model with the specified model ID.") };
      const denied = await cli(['doctor', '--config', config, '--data', data], env);
      assert.match(denied.stdout, /FAIL\s+provider bedrock: .*fix: model access denied: enable .* under Model access in the Bedrock console for region us-east-1/, denied.stdout + denied.stderr);
      fake.behaviour = { fail: bedrockFailure('ExpiredTokenException', 403, 'The security token included in the request is expired') };
      const expired = await cli(['doctor', '--config', config, '--data', data], env);
      assert.match(expired.stdout, /FAIL\s+provider bedrock: .*fix: the temporary credentials have expired: renew session_token/, expired.stdout + expired.stderr);
      for (const secret of [PROFILE_KEY.secretAccessKey, PROFILE_KEY.sessionToken]) assert.ok(!denied.stdout.includes(secret) && !expired.stdout.includes(secret));
    } finally {
      fake.behaviour = {};
    }
  });
});
