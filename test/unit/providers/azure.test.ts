/**
 * The Azure OpenAI adapter (src/providers/azure.ts) under the shared provider conformance suite,
 * with Azure's recorded answers (the v1 API, `api-key`); then what is Azure's own: the paths by
 * api_version, and the Entra ID token flow against a real token endpoint on 127.0.0.1. Sources of
 * every fixture: test/unit/fixtures/providers/azure/README.md.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { modelFromConfig } from '../../../src/catalogue/catalogue.js';
import { modelSchema, providerSchema } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import { generationRequest } from '../../../src/generation/model.js';
import { EntraAuth } from '../../../src/providers/auth/entra-token.js';
import { azurePath, servesResponses } from '../../../src/providers/azure.js';
import { createProvider } from '../../../src/providers/registry.js';
import type { UpstreamAuth } from '../../../src/providers/upstream-client.js';
import { json, startFakeServer, type FakeUpstream } from '../../fakes/fake-server.js';
import { conformanceSuite, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';

const CREATED = 1764072000;
const HELLO_TOKENS = ['Hello', '!', ' How', ' can', ' I', ' help', ' you', ' today', '?'];
const STOP = finish('stop', 'stop');
/** Azure's content filter refused the prompt: every choice finished as filtered, nothing produced or billed. */
const FILTERED = finish('content_filter', 'content_filter');
const FILTERED_REQUEST = generationRequest({ model: 'assistant', messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe something the filter refuses.' }] }], maxOutputTokens: 64 });

conformanceSuite({
  kind: 'azure',
  basePath: '',
  apiKey: 'azure-test-key-0123456789abcdef',
  credential: ['api-key', 'azure-test-key-0123456789abcdef'],
  upstreamModel: 'gpt4o-prod',

  generate: [
    {
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'chatcmpl-Azr7Ym5mTq0VwzJ2b1Rk8s4XcP3aN', created: CREATED, choices: [choice(0, [text('Hello! How can I help you today?')], STOP)], usage: usage(1212, 10, { cachedInput: 1152 }) },
    },
    {
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: 'chatcmpl-Azr7ZpQ2rT6uW9xY1aB4cD7eF0gHj',
        created: CREATED,
        choices: [
          choice(
            0,
            [toolCall('call_Q8mJ3vX2kP9sL1dR7tY4wZ0e', 'get_weather', '{"location":"Paris, France","unit":"celsius"}'), toolCall('call_H5nB8cV1xM4zA7sD0fG3jK6l', 'get_weather', '{"location":"Tokyo, Japan","unit":"celsius"}')],
            finish('tool_calls', 'tool_calls'),
          ),
        ],
        usage: usage(94, 52),
      },
    },
    {
      // Azure's 400 `content_filter` on the prompt: a refusal for a translated caller, not a failure.
      name: 'generate-prompt-filtered',
      request: FILTERED_REQUEST,
      choices: 2,
      expect: { id: 'filtered-req_generate-prompt-filtered', created: NOW, choices: [choice(0, [], FILTERED), choice(1, [], FILTERED)], usage: usage(0, 0) },
    },
  ],

  stream: [
    {
      // Opens with Azure's prompt-filter chunk (no choices, `id` and `model` ""): the stream's id is the next chunk's.
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('chatcmpl-Azr90gR9yS2tU5vW8xY1zA4bC7dEf', CREATED), ...parts.texts(HELLO_TOKENS), parts.finish(STOP), parts.usage(usage(1212, 10, { cachedInput: 1152 }))],
    },
    {
      name: 'stream-output-filtered',
      request: FILTERED_REQUEST,
      expect: [parts.start('chatcmpl-Azr91hS0zT3uV6wX9yZ2aB5cD8eFg', CREATED), ...parts.texts(['Here', ' is', ' how']), parts.finish(FILTERED), parts.usage(usage(24, 3))],
    },
    {
      name: 'stream-prompt-filtered',
      request: FILTERED_REQUEST,
      expect: [parts.start('filtered-req_stream-prompt-filtered', NOW), parts.finish(FILTERED), parts.usage(usage(0, 0))],
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => (body.choices[0].finish_reason = raw),
    cases: [
      ['stop', STOP],
      ['length', finish('length', 'length')],
      ['tool_calls', finish('tool_calls', 'tool_calls')],
      ['content_filter', FILTERED],
    ],
  },

  errors: [
    { name: 'error-400-unrecognized-argument', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, type: 'invalid_request_error', message: /Unrecognized request argument supplied: top_k/ } },
    { name: 'error-401-invalid-key', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401, message: /check api_key of provider 'azure-replay'/ } },
    { name: 'error-403-permission-denied', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403, message: /refused the gateway's credentials \(HTTP 403\): check api_key/ } },
    { name: 'error-404-deployment-not-found', situation: 'misconfigured', expect: { status: 502, upstreamFailure: 502, message: /no deployment named 'gpt4o-prod': check the upstream_model of model 'assistant'/ } },
    { name: 'error-404-resource-not-found', situation: 'misconfigured', expect: { status: 502, upstreamFailure: 502, message: /"Resource not found" for the v1 API \(no api_version\): check api_version and base_url/ } },
    { name: 'error-429-retry-after', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429, retryAfter: '10', message: /Retry after 10 seconds/ } },
    // Only `retry-after-ms`: read in whole seconds, rounded up.
    { name: 'error-429-retry-after-ms', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429, retryAfter: '2', message: /Retry after 2 seconds/ } },
    { name: 'error-500-internal', situation: 'server_error', expect: { status: 502, upstreamFailure: 500 } },
  ],

  relays: [
    ['openai.chat', {}, true],
    // Azure serves Responses on every deployment that serves chat (through the v1 API where the api_version has none).
    ['openai.responses', {}, true],
    // A model that serves chat takes legacy completions over chat (only instruct deployments serve /completions).
    ['openai.completions', {}, false],
    ['openai.rerank', {}, false],
    ['openai.moderations', {}, false],
    ['anthropic.messages', {}, false],
    ['gemini.generateContent', {}, false],
  ],
  relay: [
    {
      // Azure's own fields (`data_sources`, "On Your Data", on a provider that allows it) go upstream untouched; its answer comes back with its filter results.
      name: 'relay-chat',
      operation: 'openai.chat',
      stream: false,
      provider: { allow_data_sources: true },
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 16, data_sources: [{ type: 'azure_search', parameters: { endpoint: 'https://search.example.net', index_name: 'docs' } }] },
    },
    {
      name: 'relay-responses-stream',
      operation: 'openai.responses',
      stream: true,
      body: { model: 'assistant', input: 'Say hello.', stream: true },
    },
  ],

  listModels: [
    {
      // The data plane's deployments list: each deployment's `model` kept for pricing (and telling an embedding deployment); one still being created left out.
      name: 'models-deployments',
      pages: ['models-deployments'],
      paths: ['/openai/deployments?api-version=2022-12-01'],
      expect: [
        { id: 'gpt4o-prod', vendorModel: 'gpt-4o', ownedBy: 'organization-owner', created: 1746000000 },
        { id: 'search-vectors', vendorModel: 'text-embedding-3-small', ownedBy: 'organization-owner', created: 1746000100, endpoints: ['embeddings'] },
      ],
    },
    { name: 'models-refused', pages: ['error-401-invalid-key'], paths: ['/openai/deployments?api-version=2022-12-01'], error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 401 } },
  ],
});

describe('Azure paths', () => {
  test('with api_version: on the deployment, the name escaped', () => {
    assert.equal(azurePath('2024-10-21', '/chat/completions', 'gpt4o-prod'), '/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21');
    assert.equal(azurePath('2024-10-21', '/embeddings', 'my dep/1'), '/openai/deployments/my%20dep%2F1/embeddings?api-version=2024-10-21');
    assert.equal(azurePath('2025-04-01-preview', '/audio/transcriptions', 'whisper'), '/openai/deployments/whisper/audio/transcriptions?api-version=2025-04-01-preview');
  });

  test('Responses: not deployment-scoped; before 2025-03-01-preview through the v1 API', () => {
    assert.equal(azurePath('2025-03-01-preview', '/responses', 'gpt4o-prod'), '/openai/responses?api-version=2025-03-01-preview');
    assert.equal(azurePath('2025-04-01-preview', '/responses', 'gpt4o-prod'), '/openai/responses?api-version=2025-04-01-preview');
    assert.equal(azurePath('2024-10-21', '/responses', 'gpt4o-prod'), '/openai/v1/responses');
    assert.equal(azurePath('2025-01-01-preview', '/responses', 'gpt4o-prod'), '/openai/v1/responses');
    assert.deepEqual(['2024-12-01-preview', '2025-02-28', '2025-03-01-preview', '2025-06-01'].map(servesResponses), [false, false, true, true]);
  });

  test('without api_version: the v1 API', () => {
    assert.equal(azurePath(undefined, '/chat/completions', 'gpt4o-prod'), '/openai/v1/chat/completions');
    assert.equal(azurePath(undefined, '/responses', 'gpt4o-prod'), '/openai/v1/responses');
  });
});

describe('Entra ID client credentials', () => {
  const SECRET = 'entra~Secret.Value_0123456789';
  let issuer: FakeUpstream;
  let issued = 0;

  before(async () => {
    issuer = await startFakeServer('', (request, res) => {
      if (request.path !== '/contoso/oauth2/v2.0/token' || request.method !== 'POST') return json(res, 404, { error: 'not_found' });
      issued++;
      return json(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: `token-${issued}` });
    });
  });
  after(() => issuer.close());

  const auth = (secret = SECRET, tenant = 'contoso', authority = issuer.url): UpstreamAuth => new EntraAuth('azure-east', { tenant_id: tenant, client_id: 'app-1', client_secret: secret, authority_url: authority });
  const request = { method: 'POST' as const, path: '/openai/v1/chat/completions', headers: {}, body: '{}' };
  const signal = new AbortController().signal;

  test('one token request, then the token held: a bearer header, the secret and token redacted', async () => {
    const before = issued;
    const entra = auth();
    const first = await entra.headersFor(request, signal);
    assert.equal(first.authorization, `Bearer token-${before + 1}`);
    // Held: answered synchronously, no second request.
    assert.deepEqual(entra.headersFor(request, signal), first);
    assert.equal(issued, before + 1);
    assert.deepEqual([...entra.secrets()].sort(), [SECRET, `token-${before + 1}`].sort());
    const sent = issuer.requests.at(-1)!;
    assert.equal(sent.headers['content-type'], 'application/x-www-form-urlencoded');
  });

  test('a refused secret: upstream_auth_failed naming entra.client_secret, the AADSTS code kept, the secret never', async () => {
    const refusing = await startFakeServer('', (_request, res) =>
      json(res, 401, {
        error: 'invalid_client',
        // As if Entra echoed the secret (it does not): what it says is redacted before anyone sees it.
        error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app 'app-1'. Secret sent: ${SECRET}\r\nTrace ID: 0d1c5f7e\r\nCorrelation ID: 7a2c1b3d`,
        error_codes: [7000215],
      }),
    );
    try {
      const failure = await Promise.resolve(auth(SECRET, 'contoso', refusing.url).headersFor(request, signal)).then(
        () => assert.fail('expected a refusal'),
        (error: unknown) => error,
      );
      assert.ok(failure instanceof GatewayError);
      assert.equal(failure.kind, 'upstream_auth_failed');
      assert.equal(failure.upstreamFailure, 401);
      assert.match(failure.message, /AADSTS7000215: Invalid client secret provided/);
      assert.match(failure.message, /check entra\.client_secret of provider 'azure-east'/);
      assert.ok(!failure.message.includes(SECRET) && !(failure.upstreamBody ?? '').includes(SECRET));
      assert.ok(!failure.message.includes('Trace ID'));
    } finally {
      await refusing.close();
    }
  });

  test('an unknown tenant names entra.tenant_id; an issuer failing with 5xx is retryable', async () => {
    const answers = [
      [400, { error: 'invalid_request', error_description: "AADSTS90002: Tenant 'nope' not found.", error_codes: [90002] }],
      [503, { error: 'temporarily_unavailable', error_description: 'AADSTS90033: A transient error has occurred.', error_codes: [90033] }],
    ] as const;
    let next = 0;
    const flaky = await startFakeServer('', (_request, res) => {
      const [status, body] = answers[next++]!;
      json(res, status, body);
    });
    try {
      const tenant = await Promise.resolve(auth(SECRET, 'nope', flaky.url).headersFor(request, signal)).catch((error: unknown) => error);
      assert.ok(tenant instanceof GatewayError && tenant.kind === 'upstream_auth_failed');
      assert.match(tenant.message, /check entra\.tenant_id/);
      const down = await Promise.resolve(auth(SECRET, 'contoso', flaky.url).headersFor(request, signal)).catch((error: unknown) => error);
      assert.ok(down instanceof GatewayError && down.kind === 'upstream_error', String(down));
      assert.equal(down.upstreamFailure, 503);
    } finally {
      await flaky.close();
    }
  });

  test('an unreachable token endpoint: upstream_unreachable (retryable for routing), naming entra.authority_url', async () => {
    const closed = await startFakeServer('', (_request, res) => json(res, 200, {}));
    const url = closed.url;
    await closed.close();
    const failure = await Promise.resolve(auth(SECRET, 'contoso', url).headersFor(request, signal)).catch((error: unknown) => error);
    assert.ok(failure instanceof GatewayError, String(failure));
    assert.equal(failure.kind, 'upstream_unreachable');
    assert.equal(failure.upstreamFailure, 'connect_error');
    assert.match(failure.message, /entra\.authority_url/);
  });

  test('a request whose signal aborts stops waiting for the token; the token still comes for the next', async () => {
    const slow = await startFakeServer('', (_request, res) => json(res, 200, { token_type: 'Bearer', expires_in: 3599, access_token: 'slow-token' }));
    slow.behaviour = { headerDelayMs: 300 };
    try {
      const entra = auth(SECRET, 'contoso', slow.url);
      const gone = new AbortController();
      const waiting = Promise.resolve(entra.headersFor(request, gone.signal));
      gone.abort(new Error('the caller left'));
      await assert.rejects(waiting, /the caller left/);
      const next = await entra.headersFor(request, signal);
      assert.equal(next.authorization, 'Bearer slow-token');
      assert.equal(slow.requests.length, 1, 'one token request served both');
    } finally {
      await slow.close();
    }
  });

  test('a 200 without an access token is an unreadable upstream', async () => {
    const empty = await startFakeServer('', (_request, res) => json(res, 200, { token_type: 'Bearer' }));
    try {
      const failure = await Promise.resolve(auth(SECRET, 'contoso', empty.url).headersFor(request, signal)).catch((error: unknown) => error);
      assert.ok(failure instanceof GatewayError && failure.kind === 'upstream_error' && failure.upstreamFailure === 502, String(failure));
    } finally {
      await empty.close();
    }
  });
});

describe('what the Azure adapter refuses or reads as broken', () => {
  const KEY = 'azure-unit-key-0123456789';
  let upstream: FakeUpstream;
  /** What the fake answers a chat call: Azure's prompt-filter chunk and then [DONE], nothing else. */
  const FILTER_ONLY = `data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] })}\n\ndata: [DONE]\n\n`;

  before(async () => {
    upstream = await startFakeServer('', (request, res) => {
      if (request.method === 'GET') {
        return json(res, 200, {
          object: 'list',
          data: [
            { id: 'legacy', model: 'gpt-35-turbo-instruct', status: 'succeeded', object: 'deployment' },
            { id: 'my-instruct-dep', model: 'some-future-model', status: 'succeeded', object: 'deployment' },
            { id: 'chat', model: 'gpt-4o', status: 'succeeded', object: 'deployment' },
          ],
        });
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(FILTER_ONLY);
    });
  });
  after(() => upstream.close());

  const adapter = (more: Record<string, unknown> = {}) => createProvider({ ...providerSchema.parse({ id: 'az-unit', kind: 'azure', base_url: upstream.url, api_key: KEY, ...more }), base_url: upstream.url });
  const model = modelFromConfig(modelSchema.parse({ id: 'assistant', provider: 'az-unit', upstream_model: 'chat' }));
  const call = (extensions: Record<string, unknown> = {}) => ({
    request: { ...generationRequest({ model: 'assistant', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] }), extensions },
    model: model.deployments[0]!.model,
    requestId: 'req-unit',
    signal: new AbortController().signal,
    choices: 1,
  });
  const relayCall = (body: Record<string, unknown>, stream = false) => ({ operation: 'openai.chat' as const, body, stream, model: model.deployments[0]!.model, requestId: 'req-unit', signal: new AbortController().signal });
  const refusesDataSources = (field: string) => (error: unknown) => error instanceof GatewayError && error.kind === 'unsupported_parameter' && error.status === 400 && error.param === field && error.message.includes(field);

  test('data_sources (On Your Data) is the caller’s 400 naming it, relayed or translated, and nothing goes upstream', async () => {
    const provider = adapter();
    const before = upstream.requests.length;
    try {
      const source = [{ type: 'azure_search', parameters: { endpoint: 'https://search.example.net', index_name: 'hr-records' } }];
      await assert.rejects(provider.relay(relayCall({ model: 'assistant', messages: [{ role: 'user', content: 'x' }], data_sources: source })), refusesDataSources('data_sources'));
      await assert.rejects(provider.relay(relayCall({ model: 'assistant', messages: [{ role: 'user', content: 'x' }], dataSources: source })), refusesDataSources('dataSources'));
      await assert.rejects(provider.generate(call({ data_sources: source })), refusesDataSources('data_sources'));
      await assert.rejects(provider.stream(call({ data_sources: source })), refusesDataSources('data_sources'));
      assert.equal(upstream.requests.length, before, 'nothing reached the resource');
    } finally {
      await provider.close();
    }
  });

  test('a stream of only the prompt-filter chunk and [DONE] is an unreadable upstream, translated or relayed', async () => {
    const provider = adapter();
    const unreadable = (error: unknown) => error instanceof GatewayError && error.kind === 'upstream_error' && error.upstreamFailure === 502 && /without a finish reason/.test(error.message);
    try {
      const parts = await provider.stream(call());
      await assert.rejects(async () => {
        for await (const _ of parts);
      }, unreadable);
      const relayed = await provider.relay(relayCall({ model: 'assistant', messages: [{ role: 'user', content: 'x' }], stream: true }, true));
      assert.ok(relayed.stream);
      await assert.rejects(async () => {
        for await (const _ of relayed.events);
      }, unreadable);
    } finally {
      await provider.close();
    }
  });

  test('a discovered instruct deployment serves legacy completions only (relayed); others as before', async () => {
    const provider = adapter();
    try {
      const listed = await provider.listModels(AbortSignal.timeout(5000));
      const endpoints = Object.fromEntries(listed.map((m) => [m.id, m.endpoints]));
      assert.deepEqual(endpoints.legacy, ['completions']);
      assert.deepEqual(endpoints['my-instruct-dep'], ['completions']);
      assert.equal(endpoints.chat, undefined);
      const instruct = modelFromConfig(modelSchema.parse({ id: 'legacy', provider: 'az-unit', endpoints: endpoints.legacy })).deployments[0]!.model;
      assert.equal(provider.relays('openai.completions', instruct), true);
    } finally {
      await provider.close();
    }
  });
});
