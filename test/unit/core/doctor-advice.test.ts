/**
 * What `sluice doctor` says to fix when a cloud provider's check fails (src/doctor/advice.ts): the
 * setting named for each failure the adapters report as GatewayErrors (a token not obtained, a
 * signature refused, model access denied, a wrong location or base_url), and never a secret.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseConfig, type ProviderConfig } from '../../../src/config/config-file.js';
import { GatewayError, type ErrorKind } from '../../../src/core/errors.js';
import { adviceFor, vendorCodeOf } from '../../../src/doctor/advice.js';
import { CredentialUnavailable } from '../../../src/providers/auth/token-endpoint.js';
import { ModelListingError } from '../../../src/providers/model-listing.js';

const SECRETS = ['az-api-key-value', 'entra-secret-value', 'AKIAUNITKEYID', 'aws-secret-value', 'aws-session-value', 'sa-private-key-value'];

const config = parseConfig(
  `
providers:
  - { id: az-key, kind: azure, base_url: 'https://res.openai.azure.com', api_key: az-api-key-value, api_version: 2024-10-21 }
  - id: az-entra
    kind: azure
    base_url: 'https://res.openai.azure.com'
    entra: { tenant_id: contoso, client_id: app, client_secret: entra-secret-value }
  - { id: br, kind: bedrock, region: eu-west-1, access_key_id: AKIAUNITKEYID, secret_access_key: aws-secret-value, session_token: aws-session-value }
  - { id: br-env, kind: bedrock, region: us-east-1 }
  - { id: vx, kind: vertex, project: my-project, location: europe-west4, credentials: '{"private_key": "sa-private-key-value"}' }
  - { id: vx-file, kind: vertex, project: my-project, location: global, credentials_file: /run/secrets/sa.json }
  - { id: oa, kind: openai, base_url: 'http://10.0.0.5:8000/v1', api_key: k }
`,
  'unit.yaml',
);
const provider = (id: string): ProviderConfig => config.providers.find((p) => p.id === id)!;

/** An adapter's failure as it would throw it: a kind, the upstream status, and optionally the vendor's code and (redacted) body. */
function failure(kind: ErrorKind, status: number | 'connect_error' | 'timeout', options: { code?: string; body?: string; message?: string } = {}): GatewayError {
  // `token_unavailable` stands for the adapters' CredentialUnavailable: no credential could be had at all.
  if (options.code === 'token_unavailable') return new CredentialUnavailable(kind, options.message ?? 'no credential', { upstreamFailure: status });
  return new GatewayError(kind, options.message ?? `The upstream provider failed (${String(status)}).`, { upstreamFailure: status, ...(options.code === undefined ? {} : { code: options.code }), ...(options.body === undefined ? {} : { upstreamBody: options.body }) });
}

function advise(id: string, error: GatewayError, model?: string): string {
  const advice = adviceFor(provider(id), error, model);
  for (const secret of SECRETS) assert.ok(!advice.includes(secret), `the advice for ${id} names a secret`);
  return advice;
}

describe('the vendor code of a failure', () => {
  test('the adapter’s code first, else the first known code in the upstream body or the message', () => {
    assert.equal(vendorCodeOf(failure('upstream_auth_failed', 403, { code: 'AccessDeniedException' })), 'AccessDeniedException');
    assert.equal(vendorCodeOf(failure('upstream_auth_failed', 403, { body: '{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}' })), 'UnrecognizedClientException');
    assert.equal(vendorCodeOf(failure('upstream_auth_failed', 403, { body: '{"error":{"code":403,"status":"PERMISSION_DENIED"}}' })), 'PERMISSION_DENIED');
    assert.equal(vendorCodeOf(failure('upstream_error', 500)), undefined);
  });
});

describe('Azure OpenAI', () => {
  test('an Entra token not obtained names the entra fields; a refused token names the role; a refused key names api_key', () => {
    assert.match(advise('az-entra', failure('upstream_auth_failed', 401, { code: 'token_unavailable' })), /entra\.tenant_id, entra\.client_id and entra\.client_secret of provider 'az-entra'.*entra\.authority_url \(https:\/\/login\.microsoftonline\.com\)/);
    assert.match(advise('az-entra', failure('upstream_auth_failed', 401)), /Cognitive Services OpenAI User role/);
    assert.match(advise('az-key', failure('upstream_auth_failed', 401)), /check the api_key of provider 'az-key'/);
  });

  test('a wrong tenant met by the model listing (its error wraps the adapter’s) is a token not obtained, not a missing role', () => {
    const refused = new CredentialUnavailable('upstream_auth_failed', "Microsoft Entra ID refused the client credentials of provider 'az-entra' (HTTP 400, invalid_request: AADSTS90002: Tenant 'nope' not found.): check entra.tenant_id of provider 'az-entra'.", { upstreamFailure: 401, upstreamBody: '{"error":"invalid_request","error_codes":[90002]}' });
    const listed = new ModelListingError(refused, 'https://res.openai.azure.com/openai/deployments?api-version=2022-12-01');
    assert.equal(vendorCodeOf(listed), 'token_unavailable');
    const advice = advise('az-entra', listed);
    assert.match(advice, /Entra ID token could not be obtained/);
    assert.doesNotMatch(advice, /Cognitive Services OpenAI User/);
  });

  test('a token endpoint that does not answer names entra.authority_url (or the key’s token_uri), not base_url', () => {
    const unreachable = () => new ModelListingError(new CredentialUnavailable('upstream_unreachable', 'could not be reached for a token', { upstreamFailure: 'connect_error' }), 'https://x');
    const azure = advise('az-entra', unreachable());
    assert.match(azure, /Microsoft Entra ID did not answer: check entra\.authority_url \(https:\/\/login\.microsoftonline\.com\)/);
    assert.doesNotMatch(azure, /base_url/);
    const vertex = advise('vx-file', unreachable());
    assert.match(vertex, /token endpoint did not answer: check the token_uri of the key in credentials_file/);
    assert.doesNotMatch(vertex, /base_url/);
    // The upstream itself unreachable still names base_url.
    assert.match(advise('az-entra', failure('upstream_unreachable', 'connect_error')), /check base_url/);
  });

  test('a base_url ending in /openai is named as such; "Resource not found" names api_version', () => {
    const withPath = parseConfig(`providers:\n  - { id: az-path, kind: azure, base_url: 'https://res.openai.azure.com/openai/', api_key: k }\n`, 'path.yaml').providers[0]!;
    assert.match(adviceFor(withPath, failure('upstream_error', 502, { body: '{"error":{"code":"404","message":"Resource not found"}}' })), /ends in Azure's API path: give the resource's endpoint alone/);
    assert.match(advise('az-key', failure('upstream_error', 502, { body: '{"error":{"code":"404","message":"Resource not found"}}' })), /check api_version of provider 'az-key' \(2024-10-21\)/);
  });

  test('a missing deployment names upstream_model; an unknown api-version names api_version; no answer names base_url', () => {
    assert.match(advise('az-key', failure('upstream_rejected_request', 404, { code: 'DeploymentNotFound' }), 'gpt-4o'), /upstream_model of model 'gpt-4o' \(on Azure, the deployment's name\)/);
    assert.match(advise('az-key', failure('upstream_rejected_request', 400, { message: 'Unsupported api-version 2019-01-01.' })), /check api_version of provider 'az-key' \(2024-10-21\)/);
    assert.match(advise('az-key', failure('upstream_unreachable', 'connect_error')), /check base_url https:\/\/res\.openai\.azure\.com \(the resource's endpoint/);
  });
});

describe('Amazon Bedrock', () => {
  test('each refusal of the credentials names the setting at fault', () => {
    assert.match(advise('br', failure('upstream_auth_failed', 403, { code: 'UnrecognizedClientException' })), /AWS does not know the access key: check access_key_id and secret_access_key of provider 'br', and its session_token/);
    assert.match(advise('br', failure('upstream_auth_failed', 403, { code: 'InvalidSignatureException', body: '{"message":"The request signature we calculated does not match the signature you provided."}' })), /secret_access_key goes with access_key_id .* region \(eu-west-1/);
    assert.match(advise('br', failure('upstream_auth_failed', 403, { code: 'InvalidSignatureException', body: '{"message":"Signature expired: 20261126T080000Z is now earlier than 20261126T080500Z"}' })), /clock/);
    assert.match(advise('br', failure('upstream_auth_failed', 403, { code: 'ExpiredTokenException' })), /renew session_token/);
    assert.match(advise('br', failure('upstream_auth_failed', 403)), /check access_key_id and secret_access_key, session_token and region \(eu-west-1\)/);
  });

  test('credentials from the environment are named as such when none are in the entry', () => {
    assert.match(advise('br-env', failure('upstream_auth_failed', 403, { code: 'token_unavailable', message: 'no AWS credentials found' })), /AWS_ACCESS_KEY_ID \/ AWS_SECRET_ACCESS_KEY or AWS_PROFILE/);
  });

  test('model access denied, an unknown model and a model that needs a profile name the model and region', () => {
    assert.match(advise('br', failure('upstream_auth_failed', 403, { code: 'AccessDeniedException' }), 'claude'), /model access denied: enable model 'claude' under Model access in the Bedrock console for region eu-west-1/);
    assert.match(advise('br', failure('upstream_rejected_request', 404, { code: 'ResourceNotFoundException' }), 'claude'), /check upstream_model of model 'claude'.*region eu-west-1 offers it/);
    assert.match(advise('br', failure('upstream_rejected_request', 400, { code: 'ValidationException' }), 'claude'), /inference profile/);
    assert.match(advise('br', failure('upstream_unreachable', 'connect_error')), /check region \(eu-west-1\) and base_url https:\/\/bedrock-runtime\.eu-west-1\.amazonaws\.com/);
  });
});

describe('Google Vertex AI', () => {
  test('a token not obtained names the key in use: pasted, a file, or GOOGLE_APPLICATION_CREDENTIALS', () => {
    assert.match(advise('vx', failure('upstream_auth_failed', 400, { code: 'token_unavailable', message: 'refused its service account (HTTP 400, invalid_grant: Invalid JWT Signature.)' })), /token could not be obtained: check credentials \(the pasted service-account key\) of provider 'vx'/);
    assert.match(advise('vx-file', failure('upstream_auth_failed', 401, { code: 'token_unavailable' })), /credentials_file \(\/run\/secrets\/sa\.json\)/);
    assert.match(advise('vx', failure('upstream_auth_failed', 401, { body: '{"error":{"code":401,"status":"UNAUTHENTICATED"}}' })), /Google refused the service account's token/);
  });

  test('permission, a disabled API and a model not served in the location each have their fix', () => {
    assert.match(advise('vx', failure('upstream_auth_failed', 403, { body: '{"error":{"code":403,"status":"PERMISSION_DENIED"}}' }), 'claude-on-vertex'), /roles\/aiplatform\.user .*Model Garden/);
    assert.match(advise('vx', failure('upstream_auth_failed', 403, { body: '{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"reason":"SERVICE_DISABLED"}]}}' })), /enable the Vertex AI API \(aiplatform\.googleapis\.com\) in project my-project/);
    assert.match(advise('vx', failure('upstream_rejected_request', 404, { body: '{"error":{"code":404,"status":"NOT_FOUND"}}' }), 'gemini-pro'), /check upstream_model of model 'gemini-pro' and location \(europe-west4\)/);
    assert.match(advise('vx', failure('upstream_timeout', 'timeout')), /check location \(europe-west4\) and base_url https:\/\/europe-west4-aiplatform\.googleapis\.com: it did not answer in time/);
  });
});

describe('the other kinds keep their advice', () => {
  test('a refused key names api_key; no answer names base_url', () => {
    assert.equal(advise('oa', failure('upstream_auth_failed', 401)), "check the api_key of provider 'oa' (and its headers)");
    assert.equal(advise('oa', failure('upstream_unreachable', 'connect_error')), 'check base_url http://10.0.0.5:8000/v1, and that the server runs and is reachable from here');
  });
});
