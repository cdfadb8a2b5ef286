/**
 * The Bedrock provider (src/providers/bedrock/) under the shared provider conformance suite, with
 * Bedrock's recorded answers (Converse, ConverseStream's binary frames, InvokeModel for Claude,
 * AWS's error bodies, the control plane's lists): sources in
 * test/unit/fixtures/providers/bedrock/README.md. Then, in process: SigV4 signatures checked by the
 * fake Bedrock's own verification, the credential sources in order, the event-stream framing, the
 * embedding bodies, and the ids and hosts the adapter derives.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { providerSchema, type ProviderConfig } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { EmbeddingRequest } from '../../../src/generation/embedding.js';
import type { UpstreamFailure } from '../../../src/core/upstream-errors.js';
import { awsErrorType, awsFailures, identityRefused } from '../../../src/providers/bedrock/aws-errors.js';
import { controlPlaneUrl, modelPath } from '../../../src/providers/bedrock/bedrock.js';
import { isAnthropicModel } from '../../../src/providers/bedrock/converse.js';
import { resolveAwsCredentials } from '../../../src/providers/bedrock/credentials.js';
import { cohereBody, cohereResult, embeddingFamily, takesDimensions, titanBody, titanResult } from '../../../src/providers/bedrock/embeddings.js';
import { eventStreamMessages, headerString } from '../../../src/providers/bedrock/event-stream.js';
import { AwsIdentity, RequestSigner } from '../../../src/providers/bedrock/request-signer.js';
import { AwsError, eventFrame, verifySignature, type AwsKey } from '../../fakes/fake-bedrock.js';
import type { RecordedRequest } from '../../fakes/fake-server.js';
import { conformanceSuite, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';

const ACCESS_KEY = 'ASIAQEXAMPLEKEY00001';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const SESSION_TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLEsessionTOKENvalue';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const HELLO = 'Hello! How can I help you today?';
const END_TURN = finish('stop', 'end_turn');
const TOOL_IDS = ['tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', 'tooluse_Ql8hWz3NS0y4bXcV1mTq2A'] as const;
const AUTHORIZATION = new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$`);
const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A Claude relay stream's events, read from the recorded frames independently of the adapter: each `chunk`'s bytes decoded. */
function chunkEvents(body: Buffer): unknown[] {
  const events: unknown[] = [];
  for (let at = 0; at < body.length; ) {
    const length = body.readUInt32BE(at);
    const message = codec.decode(body.subarray(at, at + length));
    at += length;
    if (message.headers[':event-type']?.value !== 'chunk') continue;
    const payload = JSON.parse(toUtf8(message.body)) as { bytes: string };
    events.push(JSON.parse(Buffer.from(payload.bytes, 'base64').toString('utf8')));
  }
  return events;
}

conformanceSuite({
  kind: 'bedrock',
  basePath: '',
  apiKey: SECRET,
  credential: ['authorization', 'AWS4-HMAC-SHA256 …'],
  signed: {
    fields: { region: 'us-east-1', access_key_id: ACCESS_KEY, secret_access_key: SECRET, session_token: SESSION_TOKEN },
    check: (sent) => {
      const signedHeaders = AUTHORIZATION.exec(String(sent.headers.authorization))?.[1];
      assert.ok(signedHeaders !== undefined, `a SigV4 authorization: ${String(sent.headers.authorization)}`);
      assert.ok(['host', 'x-amz-date', 'x-amz-security-token'].every((name) => signedHeaders.split(';').includes(name)), `host, date and session token signed: ${signedHeaders}`);
      assert.equal(sent.headers['x-amz-security-token'], SESSION_TOKEN);
      assert.match(String(sent.headers['x-amz-date']), /^\d{8}T\d{6}Z$/);
    },
    mask: {
      authorization: (value) => value.replace(/\/\d{8}\//, '/<date>/').replace(/Signature=[0-9a-f]{64}$/, 'Signature=<signature>'),
      'x-amz-date': () => '<date>',
    },
  },
  streamPayloads: chunkEvents,
  upstreamModel: CLAUDE,

  generate: [
    {
      // inputTokens leaves the cached part out; Sluice's input counts it.
      name: 'generate-text',
      scenario: 'text',
      expect: { id: '', created: NOW, choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cachedInput: 1188 }) },
    },
    {
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: '',
        created: NOW,
        choices: [
          choice(
            0,
            [text("I'll check the weather in both cities."), ...[['Paris, France', 0], ['Tokyo, Japan', 1]].map(([location, i]) => toolCall(TOOL_IDS[i as 0 | 1], 'get_weather', JSON.stringify({ location, unit: 'celsius' })))],
            finish('tool_calls', 'tool_use'),
          ),
        ],
        usage: usage(412, 98),
      },
    },
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('', NOW), ...parts.texts(['Hello!', ' How can I help', ' you today?']), parts.finish(END_TURN), parts.usage(usage(1209, 12, { cachedInput: 1188 }))],
    },
    {
      name: 'stream-tools',
      scenario: 'tools',
      expect: [
        parts.start('', NOW),
        ...parts.texts(["I'll check the weather", ' in both cities.']),
        parts.toolStart(0, TOOL_IDS[0], 'get_weather'),
        ...parts.toolDeltas(0, ['{"location": "Paris', ', France", "unit": "celsius"}']),
        parts.toolEnd(0),
        parts.toolStart(1, TOOL_IDS[1], 'get_weather'),
        ...parts.toolDeltas(1, ['{"location": "Tokyo, Japan", ', '"unit": "celsius"}']),
        parts.toolEnd(1),
        parts.finish(finish('tool_calls', 'tool_use')),
        parts.usage(usage(412, 98)),
      ],
    },
    {
      // An exception frame after the stream began: throttling, the same 429 it is before a stream.
      name: 'stream-exception',
      scenario: 'text',
      expect: [parts.start('', NOW), ...parts.texts(['Hello!', ' How can I help'])],
      error: { kind: 'upstream_rate_limited', status: 429, upstreamFailure: 429, code: 'ThrottlingException', message: /rate limiting requests mid-stream \(ThrottlingException\)/ },
    },
    {
      // A frame whose message CRC does not hold is not read: the upstream is unreadable.
      name: 'stream-bad-checksum',
      scenario: 'text',
      expect: [parts.start('', NOW)],
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 502, message: /fails its checksum/ },
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => {
      body.stopReason = raw;
    },
    cases: [
      ['end_turn', END_TURN],
      ['stop_sequence', finish('stop', 'stop_sequence')],
      ['max_tokens', finish('length', 'max_tokens')],
      ['model_context_window_exceeded', finish('length', 'model_context_window_exceeded')],
      ['tool_use', finish('tool_calls', 'tool_use')],
      ['guardrail_intervened', finish('content_filter', 'guardrail_intervened')],
      ['content_filtered', finish('content_filter', 'content_filtered')],
      ['malformed_model_output', finish('error', 'malformed_model_output'), { why: 'the model gave up' }],
    ],
  },

  errors: [
    { name: 'error-400-validation', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, code: 'ValidationException', message: /^The model returned the following errors: Input is too long for requested model\.$/ } },
    { name: 'error-403-signature', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 403, code: 'InvalidSignatureException', message: /refused the gateway's AWS credentials \(InvalidSignatureException: The request signature we calculated does not match/ } },
    { name: 'error-403-access-denied', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403, code: 'AccessDeniedException', message: /AccessDeniedException: You don't have access to the model/ } },
    { name: 'error-404-not-found', situation: 'not_found', expect: { status: 404, upstreamFailure: 404, code: 'ResourceNotFoundException', message: /has no model 'us\.anthropic\.claude-sonnet-4-5-20250929-v1:0' in region us-east-1 \(ResourceNotFoundException: Could not resolve the foundation model.*upstream_model/ } },
    { name: 'error-429-throttling', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429, code: 'ThrottlingException' } },
    { name: 'error-500-internal', situation: 'server_error', expect: { status: 502, upstreamFailure: 500, code: 'InternalServerException' } },
    { name: 'error-503-unavailable', situation: 'overloaded', expect: { status: 503, upstreamFailure: 503, code: 'ServiceUnavailableException' } },
  ],

  relays: [
    ['anthropic.messages', {}, true],
    ['anthropic.messages', { upstream_model: 'anthropic.claude-3-5-haiku-20241022-v1:0' }, true],
    ['anthropic.messages', { upstream_model: `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${CLAUDE}` }, true],
    ['anthropic.messages', { upstream_model: 'amazon.nova-pro-v1:0' }, false],
    // An application profile's ARN names no model: Converse serves it.
    ['anthropic.messages', { upstream_model: 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6' }, false],
    ['anthropic.count_tokens', {}, false],
    ['openai.chat', {}, false],
    ['gemini.generateContent', {}, false],
  ],
  relay: [
    {
      // Bedrock's own anthropic_version in the body, never the caller's; the caller's betas as anthropic_beta; no model.
      name: 'relay-invoke',
      operation: 'anthropic.messages',
      stream: false,
      headers: { 'anthropic-version': '2026-10-21', 'anthropic-beta': 'interleaved-thinking-2025-05-14, context-1m-2025-08-07' },
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }] },
    },
    {
      name: 'relay-invoke-stream',
      operation: 'anthropic.messages',
      stream: true,
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }], stream: true, anthropic_version: '2023-06-01' },
    },
    {
      name: 'relay-invoke-stream-error',
      operation: 'anthropic.messages',
      stream: true,
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }], stream: true },
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 502, code: 'ModelStreamErrorException', message: /failed mid-stream \(ModelStreamErrorException: The model encountered an error/, afterEvents: 4 },
    },
  ],

  listModels: [
    {
      // Foundation models answering on demand with text (or Titan's and Cohere's embeddings); every profile, an application one by its ARN.
      name: 'models-paged',
      pages: ['foundation-models', 'inference-profiles-page-1', 'inference-profiles-page-2'],
      paths: ['/foundation-models?byInferenceType=ON_DEMAND', '/inference-profiles?maxResults=1000', '/inference-profiles?maxResults=1000&nextToken=eyJvZmZzZXQiOjJ9%2B%2F%3D'],
      expect: [
        { id: 'amazon.nova-pro-v1:0', displayName: 'Nova Pro', ownedBy: 'amazon' },
        { id: 'amazon.titan-embed-text-v2:0', displayName: 'Titan Text Embeddings V2', ownedBy: 'amazon', endpoints: ['embeddings'] },
        { id: 'mistral.mistral-large-2402-v1:0', displayName: 'Mistral Large (24.02)', ownedBy: 'mistral ai' },
        { id: CLAUDE, displayName: 'US Claude Sonnet 4.5', description: 'Routes requests to US Claude Sonnet 4.5 in several regions.' },
        { id: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', displayName: 'Global Claude Sonnet 4.5', description: 'Routes requests to Global Claude Sonnet 4.5 in several regions.' },
        { id: 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6', displayName: 'team-claude', description: 'Routes requests to team-claude in several regions.' },
      ],
    },
    { name: 'models-refused', pages: ['error-403-signature'], paths: ['/foundation-models?byInferenceType=ON_DEMAND'], error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 403, code: 'InvalidSignatureException' } },
  ],
});

const config = (fields: Record<string, unknown> = {}): ProviderConfig => ({ ...providerSchema.parse({ id: 'bedrock-test', kind: 'bedrock', region: 'us-east-1', ...fields }), base_url: 'https://bedrock-runtime.us-east-1.amazonaws.com' });

/** A request as the fake receives it, from what the signer signed and the client would send. */
function received(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body: string | undefined): RecordedRequest {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { method, path, headers: { host: 'bedrock-runtime.us-east-1.amazonaws.com', ...lower }, body: body === undefined ? undefined : JSON.parse(body), ...(body === undefined ? {} : { rawBody: Buffer.from(body) }) };
}

describe('SigV4 signing, checked by the fake Bedrock’s own verification', () => {
  const key: AwsKey = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, sessionToken: SESSION_TOKEN };
  const keys = new Map([[key.accessKeyId, key]]);
  const signer = new RequestSigner(new AwsIdentity(config({ access_key_id: ACCESS_KEY, secret_access_key: SECRET, session_token: SESSION_TOKEN }), {}), 'us-east-1', 'https://bedrock-runtime.us-east-1.amazonaws.com');
  const sign = async (method: 'GET' | 'POST', path: string, body?: string) => {
    const headers = { 'content-type': 'application/json' };
    return received(method, path, { ...headers, ...(await signer.headersFor({ method, path, headers, body })) }, body);
  };

  test('an ARN in the path (`:` and `/` percent-encoded) and a query with `+`, `/` and `=` are signed as sent', async () => {
    const arn = `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${CLAUDE}`;
    const path = modelPath(arn, 'converse');
    assert.equal(path, `/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F${CLAUDE.replace(':', '%3A')}/converse`);
    await verifySignature(await sign('POST', path, '{"messages":[]}'), keys, 'us-east-1');
    await verifySignature(await sign('GET', `/inference-profiles?maxResults=1000&nextToken=${encodeURIComponent('a+b/c=')}`), keys, 'us-east-1');
  });

  test('a changed body, path or session token, another region or a wrong secret is refused', async () => {
    const signed = await sign('POST', modelPath(CLAUDE, 'converse'), '{"messages":[]}');
    const refusal = async (request: RecordedRequest, region = 'us-east-1') => {
      const error = await verifySignature(request, keys, region).then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof AwsError, 'refused');
      return error.type;
    };
    assert.equal(await refusal({ ...signed, rawBody: Buffer.from('{"messages":[1]}') }), 'InvalidSignatureException');
    assert.equal(await refusal({ ...signed, path: modelPath('amazon.nova-pro-v1:0', 'converse') }), 'InvalidSignatureException');
    assert.equal(await refusal({ ...signed, headers: { ...signed.headers, 'x-amz-security-token': 'another-token' } }), 'UnrecognizedClientException');
    assert.equal(await refusal(signed, 'us-west-2'), 'InvalidSignatureException');
    const tampered = String(signed.headers.authorization).replace(/.$/, (c) => (c === '0' ? '1' : '0'));
    assert.equal(await refusal({ ...signed, headers: { ...signed.headers, authorization: tampered } }), 'InvalidSignatureException');
    await verifySignature(signed, keys, 'us-east-1');
    const { 'x-amz-security-token': _token, ...withoutToken } = signed.headers;
    assert.equal(await refusal({ ...signed, headers: withoutToken }), 'UnrecognizedClientException');
    const wrong = new Map([[ACCESS_KEY, { ...key, secretAccessKey: 'not-the-secret' }]]);
    assert.equal(await verifySignature(signed, wrong, 'us-east-1').then(() => 'accepted', (e: AwsError) => e.type), 'InvalidSignatureException');
  });

  test('a signature more than five minutes old is expired, however well made', async () => {
    const old = new SignatureV4({ service: 'bedrock', region: 'us-east-1', credentials: key, sha256: Hash.bind(null, 'sha256'), uriEscapePath: true, applyChecksum: false });
    const path = modelPath(CLAUDE, 'converse');
    const body = '{"messages":[]}';
    const at = (ms: number) => old.sign({ method: 'POST', protocol: 'https:', hostname: 'bedrock-runtime.us-east-1.amazonaws.com', path, headers: { 'content-type': 'application/json', host: 'bedrock-runtime.us-east-1.amazonaws.com' }, body }, { signingDate: new Date(Date.now() - ms) });
    const request = async (ms: number) => received('POST', path, (await at(ms)).headers, body);
    await verifySignature(await request(4 * 60_000), keys, 'us-east-1');
    const error = await verifySignature(await request(6 * 60_000), keys, 'us-east-1').then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof AwsError && error.type === 'InvalidSignatureException' && /^Signature expired: \d{8}T\d{6}Z is now earlier than/.test(error.message), String(error));
  });
});

describe('AWS credentials, in the SDK’s order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-aws-'));
  const file = join(dir, 'credentials');
  writeFileSync(file, '[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = default-secret\n\n[team]\naws_access_key_id = AKIATEAM\naws_secret_access_key = team-secret\naws_session_token = team-token\n');
  const env = { AWS_ACCESS_KEY_ID: 'AKIAENV', AWS_SECRET_ACCESS_KEY: 'env-secret', AWS_SESSION_TOKEN: 'env-token', AWS_SHARED_CREDENTIALS_FILE: file, AWS_PROFILE: 'team' };

  test('the provider’s fields first, then the environment, then AWS_PROFILE in the shared file, then `default`', async () => {
    assert.deepEqual(await resolveAwsCredentials(config({ access_key_id: 'AKIAFIELD', secret_access_key: 'field-secret' }), env), { accessKeyId: 'AKIAFIELD', secretAccessKey: 'field-secret' });
    assert.deepEqual(await resolveAwsCredentials(config(), env), { accessKeyId: 'AKIAENV', secretAccessKey: 'env-secret', sessionToken: 'env-token' });
    const fromProfile = await resolveAwsCredentials(config(), { ...env, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' });
    assert.deepEqual(fromProfile, { accessKeyId: 'AKIATEAM', secretAccessKey: 'team-secret', sessionToken: 'team-token' });
    assert.equal((await resolveAwsCredentials(config(), { AWS_SHARED_CREDENTIALS_FILE: file })).accessKeyId, 'AKIADEFAULT');
  });

  test("a console provider signs only with its own keys: never the host's environment or profile", async () => {
    const own = await resolveAwsCredentials({ ...config({ access_key_id: 'AKIAFIELD', secret_access_key: 'field-secret' }), ownCredentialsOnly: true }, env);
    assert.equal(own.accessKeyId, 'AKIAFIELD');
    const error = await resolveAwsCredentials({ ...config(), ownCredentialsOnly: true }, env).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof GatewayError && error.kind === 'upstream_auth_failed' && /entered in the console/.test(error.upstreamBody ?? ''), String(error));
  });

  test('none anywhere: the caller is told only that the gateway has none; every setting, the profile and the file go to the log detail', async () => {
    const missing = join(dir, 'missing');
    const error = await resolveAwsCredentials(config(), { AWS_SHARED_CREDENTIALS_FILE: missing, AWS_PROFILE: 'nobody' }).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof GatewayError);
    assert.equal(error.kind, 'upstream_auth_failed');
    assert.equal(error.message, "The gateway has no AWS credentials for the upstream provider 'bedrock-test'. This is a gateway configuration problem; see /status.");
    for (const setting of ['access_key_id', 'secret_access_key', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', "AWS_PROFILE (now 'nobody')", 'AWS_SHARED_CREDENTIALS_FILE', missing]) {
      assert.ok(error.upstreamBody?.includes(setting), setting);
      assert.ok(!error.message.includes(setting), `the caller's message names ${setting}`);
    }
  });

  test('the identity is found once, forgotten when AWS refuses it, and every secret found is kept for redaction', async () => {
    const rotating = join(dir, 'rotating');
    writeFileSync(rotating, '[default]\naws_access_key_id = AKIAOLD\naws_secret_access_key = old-secret\naws_session_token = old-token\n');
    const identity = new AwsIdentity(config(), { AWS_SHARED_CREDENTIALS_FILE: rotating });
    assert.deepEqual(identity.secrets(), []);
    const first = await identity.get();
    assert.equal(await identity.get(), first, 'found once');
    writeFileSync(rotating, '[default]\naws_access_key_id = AKIANEW\naws_secret_access_key = new-secret\naws_session_token = new-token\n');
    assert.equal((await identity.get()).accessKeyId, 'AKIAOLD', 'kept while AWS takes it');
    identity.forget();
    assert.equal((await identity.get()).accessKeyId, 'AKIANEW', 'read again once refused');
    assert.deepEqual(identity.secrets(), ['old-secret', 'old-token', 'new-secret', 'new-token']);
  });
});

describe('AWS error types: one table before and inside a stream', () => {
  const failures = awsFailures('us-east-1');
  const failure = (status: number, message: string, body = JSON.stringify({ message })): UpstreamFailure => ({
    providerId: 'bedrock-test', status, retryAfter: undefined, message, type: undefined, code: undefined, secrets: ['s3cr3t-value'], body, path: `/model/${encodeURIComponent(CLAUDE)}/converse`,
  });
  // [type as AWS sends it, its HTTP status, the caller's kind and status, what routing reads (retry_on), whether the identity is read again]
  const table: readonly (readonly [string, number, string, number, number | string, boolean])[] = [
    ['ThrottlingException', 429, 'upstream_rate_limited', 429, 429, false],
    ['ServiceQuotaExceededException', 400, 'upstream_rate_limited', 429, 429, false],
    ['ModelNotReadyException', 429, 'upstream_rate_limited', 429, 429, false],
    ['ServiceUnavailableException', 503, 'upstream_overloaded', 503, 503, false],
    ['InternalServerException', 500, 'upstream_error', 502, 500, false],
    ['ModelTimeoutException', 408, 'upstream_timeout', 504, 'timeout', false],
    ['ModelErrorException', 424, 'upstream_error', 502, 502, false],
    ['ModelStreamErrorException', 424, 'upstream_error', 502, 502, false],
    ['ValidationException', 400, 'upstream_rejected_request', 400, 400, false],
    ['ResourceNotFoundException', 404, 'upstream_rejected_request', 404, 404, false],
    ['AccessDeniedException', 403, 'upstream_auth_failed', 502, 403, false],
    ['UnrecognizedClientException', 403, 'upstream_auth_failed', 502, 403, true],
    ['InvalidSignatureException', 403, 'upstream_auth_failed', 502, 403, true],
    ['SignatureDoesNotMatch', 403, 'upstream_auth_failed', 502, 403, true],
    ['ExpiredTokenException', 403, 'upstream_auth_failed', 502, 403, true],
  ];
  for (const [type, status, kind, callerStatus, routing, forget] of table) {
    test(`${type} (HTTP ${status}) → ${kind} ${callerStatus}, routing reads ${routing}${forget ? ', credentials read again' : ''}`, () => {
      const error = failures(failure(status, 'It went wrong with s3cr3t-value.'), `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`);
      assert.ok(error instanceof GatewayError);
      assert.deepEqual({ kind: error.kind, status: error.status, upstreamFailure: error.upstreamFailure, code: error.code }, { kind, status: callerStatus, upstreamFailure: routing, code: type });
      assert.equal(identityRefused(error), forget);
      assert.ok(!error.message.includes('s3cr3t-value') && !error.upstreamBody!.includes('s3cr3t-value'), 'the secret redacted');
    });
  }

  test('the type from a body’s `__type` when no header names it; an unknown type or none is left to the status', () => {
    const body = JSON.stringify({ __type: 'com.amazon.coral.service#ExpiredTokenException', message: 'The security token included in the request is expired' });
    const error = failures(failure(403, 'The security token included in the request is expired', body), undefined);
    assert.ok(error instanceof GatewayError && error.code === 'ExpiredTokenException' && identityRefused(error), String(error));
    assert.equal(failures(failure(418, 'teapot'), 'TeapotException:x'), undefined);
    assert.equal(failures(failure(500, 'plain'), undefined), undefined);
  });

  test('error type names: the header’s namespace, a body’s prefix and a frame’s lower camel case dropped', () => {
    assert.equal(awsErrorType('ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/'), 'ValidationException');
    assert.equal(awsErrorType('com.amazon.coral.service#UnrecognizedClientException'), 'UnrecognizedClientException');
    assert.equal(awsErrorType('modelTimeoutException'), 'ModelTimeoutException');
    assert.equal(awsErrorType(''), undefined);
    assert.equal(awsErrorType(undefined), undefined);
  });
});

describe('the event-stream framing', () => {
  const frames = Buffer.concat([eventFrame('messageStart', { role: 'assistant' }), eventFrame('messageStop', { stopReason: 'end_turn' })]);
  async function* bytes(chunks: readonly Buffer[]) {
    yield* chunks;
  }
  const read = async (chunks: readonly Buffer[], max = 1 << 20) => {
    const out: string[] = [];
    for await (const message of eventStreamMessages(bytes(chunks), 'bedrock-test', max)) out.push(`${headerString(message, ':event-type')} ${toUtf8(message.body)}`);
    return out;
  };

  test('frames split at every byte, or several in one chunk, read the same', async () => {
    const expected = ['messageStart {"role":"assistant"}', 'messageStop {"stopReason":"end_turn"}'];
    assert.deepEqual(await read([frames]), expected);
    assert.deepEqual(await read([...frames].map((byte) => Buffer.from([byte]))), expected);
  });

  test('a frame larger than the limit, or a body ending inside a frame, is an unreadable upstream', async () => {
    await assert.rejects(read([frames], 20), (error: GatewayError) => error.kind === 'upstream_error' && /max_response_bytes/.test(error.message));
    await assert.rejects(read([frames.subarray(0, frames.length - 3)]), /ends inside a frame/);
  });
});

describe('embedding bodies', () => {
  const request = (fields: Partial<EmbeddingRequest> = {}): EmbeddingRequest => ({ input: { kind: 'text', texts: ['a', 'b'] }, extensions: {}, ...fields });

  test('Titan v2 takes dimensions and normalize; v1 the text alone; its token count is the usage', () => {
    assert.deepEqual(titanBody('amazon.titan-embed-text-v2:0', 'a', request({ dimensions: 512 })), { inputText: 'a', dimensions: 512, normalize: true });
    assert.deepEqual(titanBody('amazon.titan-embed-text-v1', 'a', request({ dimensions: 512 })), { inputText: 'a' });
    assert.deepEqual(titanResult({ embedding: [0.5, -0.25], inputTextTokenCount: 3 }), { embeddings: [{ kind: 'float', values: [0.5, -0.25] }], usage: usage(3, 0) });
    assert.equal(titanResult({ embeddings: [] }), 'a Titan answer without an embedding');
  });

  test('Cohere: input_type from the caller’s own field, else its task type, else search_document; v4’s output_dimension', () => {
    assert.equal(cohereBody('cohere.embed-english-v3', ['a'], request()).input_type, 'search_document');
    assert.equal(cohereBody('cohere.embed-english-v3', ['a'], request({ taskType: 'RETRIEVAL_QUERY' })).input_type, 'search_query');
    assert.equal(cohereBody('cohere.embed-english-v3', ['a'], request({ extensions: { input_type: 'clustering' } })).input_type, 'clustering');
    assert.deepEqual(cohereBody('cohere.embed-v4:0', ['a'], request({ dimensions: 256 })), { texts: ['a'], input_type: 'search_document', embedding_types: ['float'], output_dimension: 256 });
    assert.deepEqual(cohereResult({ embeddings: { float: [[1], [2]] } }, 2), { embeddings: [{ kind: 'float', values: [1] }, { kind: 'float', values: [2] }], usage: null });
    assert.equal(cohereResult({ embeddings: [[1]] }, 2), 'a Cohere answer without 2 embedding(s)');
  });

  test('which models take dimensions: Titan v2 and Cohere Embed v4, by id, profile or ARN; not Titan v1 or Cohere Embed v3', () => {
    for (const id of ['amazon.titan-embed-text-v2:0', 'us-gov.amazon.titan-embed-text-v2:0', 'cohere.embed-v4:0', 'global.cohere.embed-v4:0', 'arn:aws:bedrock:us-east-1::foundation-model/cohere.embed-v4:0']) assert.equal(takesDimensions(id), true, id);
    for (const id of ['amazon.titan-embed-text-v1', 'amazon.titan-embed-text-v1:2:8k', 'cohere.embed-english-v3', 'us.cohere.embed-multilingual-v3', 'amazon.nova-pro-v1:0']) assert.equal(takesDimensions(id), false, id);
  });

  test('which models embed', () => {
    assert.equal(embeddingFamily('amazon.titan-embed-text-v2:0'), 'titan');
    assert.equal(embeddingFamily('us.cohere.embed-v4:0'), 'cohere');
    assert.equal(embeddingFamily('amazon.nova-pro-v1:0'), undefined);
  });
});

describe('ids and hosts', () => {
  test('the control plane beside the runtime: bedrock-runtime.… becomes bedrock.…, any other base URL serves both', () => {
    assert.equal(controlPlaneUrl('https://bedrock-runtime.eu-west-3.amazonaws.com'), 'https://bedrock.eu-west-3.amazonaws.com');
    assert.equal(controlPlaneUrl('https://bedrock-runtime-fips.us-east-1.amazonaws.com'), 'https://bedrock-fips.us-east-1.amazonaws.com');
    assert.equal(controlPlaneUrl('https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com'), 'https://bedrock-fips.us-gov-west-1.amazonaws.com');
    assert.equal(controlPlaneUrl('https://vpce-0a1b.bedrock-runtime.us-east-1.vpce.amazonaws.com'), 'https://vpce-0a1b.bedrock-runtime.us-east-1.vpce.amazonaws.com');
    assert.equal(controlPlaneUrl('http://127.0.0.1:4000/proxy/'), 'http://127.0.0.1:4000/proxy');
  });

  test('Claude by id, profile or ARN', () => {
    for (const id of [CLAUDE, 'anthropic.claude-3-5-haiku-20241022-v1:0', 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0', 'apac.anthropic.claude-sonnet-4-5-20250929-v1:0', `arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0`]) {
      assert.ok(isAnthropicModel(id), id);
    }
    assert.ok(!isAnthropicModel('amazon.nova-pro-v1:0'));
  });
});
