/**
 * Google's wait in an error body (google.rpc.RetryInfo.retryDelay, a protobuf Duration), read as
 * the Retry-After it stands for: the Duration forms, what is not one, and a real header winning
 * over the body. The conformance suite (gemini.test.ts) covers the recorded 429 itself.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { modelFromConfig } from '../../../src/catalogue/catalogue.js';
import { modelSchema, providerSchema } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { ProviderAdapter } from '../../../src/generation/provider.js';
import { createProvider } from '../../../src/providers/registry.js';
import { retryDelayOf } from '../../../src/providers/upstream-client.js';
import { SCENARIOS } from './scenarios.js';
import { readRecordedResponse, startReplayUpstream, withJsonBody, type RecordedResponse, type ReplayUpstream } from './replay-upstream.js';

const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';
const bodyWith = (...details: unknown[]): string => JSON.stringify({ error: { code: 429, message: 'Resource exhausted.', status: 'RESOURCE_EXHAUSTED', details } });
const RESOURCE_EXHAUSTED = readRecordedResponse(join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers', 'gemini', 'responses', 'error-429-resource-exhausted.http'));

describe('retryDelayOf', () => {
  const cases: readonly (readonly [what: string, body: string, retryAfter: string | undefined])[] = [
    ['whole seconds', bodyWith({ '@type': RETRY_INFO, retryDelay: '17s' }), '17'],
    ['a fraction, rounded up: never earlier than asked', bodyWith({ '@type': RETRY_INFO, retryDelay: '0.5s' }), '1'],
    ['nine fractional digits', bodyWith({ '@type': RETRY_INFO, retryDelay: '2.000000001s' }), '3'],
    ['no wait', bodyWith({ '@type': RETRY_INFO, retryDelay: '0s' }), '0'],
    ["a Duration's largest seconds", bodyWith({ '@type': RETRY_INFO, retryDelay: '315576000000s' }), '315576000000'],
    ['RetryInfo among other details', bodyWith({ '@type': 'type.googleapis.com/google.rpc.Help', links: [] }, { '@type': RETRY_INFO, retryDelay: '30s' }), '30'],
    ['beyond a Duration', bodyWith({ '@type': RETRY_INFO, retryDelay: '1000000000000s' }), undefined],
    ['negative', bodyWith({ '@type': RETRY_INFO, retryDelay: '-5s' }), undefined],
    ['without its unit', bodyWith({ '@type': RETRY_INFO, retryDelay: '17' }), undefined],
    ['an exponent', bodyWith({ '@type': RETRY_INFO, retryDelay: '1e3s' }), undefined],
    ['not a string', bodyWith({ '@type': RETRY_INFO, retryDelay: { seconds: 17 } }), undefined],
    ['another detail with a retryDelay', bodyWith({ '@type': 'type.googleapis.com/google.rpc.QuotaFailure', retryDelay: '17s' }), undefined],
    ['no details', JSON.stringify({ error: { code: 429, message: RETRY_INFO } }), undefined],
    ['not JSON', `${RETRY_INFO} retryDelay 17s`, undefined],
  ];
  for (const [what, body, retryAfter] of cases) {
    test(`${what}: ${String(retryAfter)}`, () => assert.equal(retryDelayOf(body), retryAfter));
  }
});

describe("a Gemini 429's retryAfter", () => {
  let upstream: ReplayUpstream;
  let provider: ProviderAdapter;
  before(async () => {
    upstream = await startReplayUpstream();
    const base_url = `${upstream.url}/v1beta`;
    provider = createProvider({ ...providerSchema.parse({ id: 'gemini-replay', kind: 'gemini', base_url, api_key: 'AIzaSyTest0123456789abcdefghij' }), base_url });
  });
  after(async () => {
    await provider.close();
    await upstream.close();
  });

  const failureOf = async (response: RecordedResponse): Promise<GatewayError> => {
    upstream.serve(response);
    const model = modelFromConfig(modelSchema.parse({ id: 'assistant', provider: 'gemini-replay', upstream_model: 'gemini-2.5-flash', endpoints: ['chat'] }));
    const failure = await provider.generate({ request: SCENARIOS.text.request, model, requestId: 'req_retry', signal: new AbortController().signal, choices: 1 }).then(
      () => assert.fail('the 429 was not refused'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof GatewayError, String(failure));
    return failure;
  };
  const withDelay = (retryDelay: string): RecordedResponse =>
    withJsonBody(RESOURCE_EXHAUSTED, (body) => (body.error.details.find((d: { '@type': string }) => d['@type'] === RETRY_INFO).retryDelay = retryDelay));

  test('comes from the body, rounded up, and is said in the message', async () => {
    const failure = await failureOf(withDelay('0.5s'));
    assert.equal(failure.kind, 'upstream_rate_limited');
    assert.equal(failure.retryAfter, '1');
    assert.match(failure.message, /Retry after 1 seconds\./);
  });

  test('a Retry-After header wins over the body', async () => {
    const failure = await failureOf({ ...withDelay('17s'), headers: { ...RESOURCE_EXHAUSTED.headers, 'retry-after': '5' } });
    assert.equal(failure.retryAfter, '5');
  });
});
