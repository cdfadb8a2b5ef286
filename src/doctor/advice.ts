import type { ProviderConfig } from '../config/config-file.js';
import type { GatewayError } from '../core/errors.js';
import { CredentialUnavailable } from '../providers/auth/token-endpoint.js';

/**
 * The vendors' own error codes that say which setting is wrong, as their APIs name them (AWS's
 * `__type`/`x-amzn-errortype`, Google's `error.status`, Azure's `error.code`), plus
 * `token_unavailable`: an adapter's credential could not be had at all (CredentialUnavailable: no
 * usable key, or Entra ID, a Google token endpoint or the AWS credential chain gave none or could
 * not be reached).
 */
const KNOWN_CODES = [
  'token_unavailable',
  'UnrecognizedClientException',
  'InvalidClientTokenId',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
  'ExpiredTokenException',
  'ExpiredToken',
  'AccessDeniedException',
  'ResourceNotFoundException',
  'ValidationException',
  // The more specific first: a disabled API is answered PERMISSION_DENIED with SERVICE_DISABLED as its reason.
  'SERVICE_DISABLED',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'NOT_FOUND',
  'DeploymentNotFound',
] as const;
type KnownCode = (typeof KNOWN_CODES)[number];

/** The vendor's code for a failure: the adapter's `code`, else the first known code in the upstream's (redacted) body or the message. */
export function vendorCodeOf(failure: GatewayError): KnownCode | undefined {
  if (credentialUnavailable(failure)) return 'token_unavailable';
  // Bounded: an upstream body is already truncated, and the codes come early in it.
  const text = `${failure.code ?? ''} ${failure.upstreamBody ?? ''} ${failure.message}`.slice(0, 4096);
  return KNOWN_CODES.find((code) => new RegExp(`\\b${code}\\b`).test(text));
}

/** Whether the failure is, or wraps, a CredentialUnavailable: a model listing's error keeps the adapter's as its cause. */
function credentialUnavailable(failure: GatewayError): boolean {
  let error: unknown = failure;
  for (let depth = 0; depth < 4 && error instanceof Error; depth++, error = error.cause) if (error instanceof CredentialUnavailable) return true;
  return false;
}

/** A token endpoint that did not answer is its own address's fault, not the upstream's base_url. */
const unanswered = (failure: GatewayError): boolean => failure.kind === 'upstream_unreachable' || failure.kind === 'upstream_timeout';

/** An Azure base_url with Azure's paths on it (`…/openai`, `…/openai/v1`): Sluice adds them itself. */
export function azureBaseUrlWithPath(baseUrl: string): boolean {
  return /\/openai(?:\/v1)?\/*$/i.test(baseUrl);
}

const statusOf = (failure: GatewayError): number | undefined => (typeof failure.upstreamFailure === 'number' ? failure.upstreamFailure : undefined);

/**
 * What to fix when a check of `provider` failed with `failure`, naming the setting (never its
 * value): the configuration field of the entry, or what to change on the vendor's side.
 * `modelId`: the catalogue model a one-token call was made for, when it was one.
 */
export function adviceFor(provider: ProviderConfig, failure: GatewayError, modelId?: string): string {
  const p = `provider '${provider.id}'`;
  if (unanswered(failure) && !credentialUnavailable(failure)) return whereAdvice(provider, failure);
  switch (provider.kind) {
    case 'azure':
      return azureAdvice(provider, failure, p, modelId);
    case 'bedrock':
      return bedrockAdvice(provider, failure, p, modelId);
    case 'vertex':
      return vertexAdvice(provider, failure, p, modelId);
    default:
      if (failure.kind === 'upstream_auth_failed') return `check the api_key of ${p} (and its headers)`;
      return `check base_url ${provider.base_url} (its model list should be at ${provider.base_url.replace(/\/+$/, '')}/models)`;
  }
}

function whereAdvice(provider: ProviderConfig, failure: GatewayError): string {
  const stalled = failure.kind === 'upstream_timeout';
  switch (provider.kind) {
    case 'bedrock':
      return `check region (${provider.region}) and base_url ${provider.base_url}${stalled ? ': it did not answer in time' : ''}, and that this host can reach AWS`;
    case 'vertex':
      return `check location (${provider.location}) and base_url ${provider.base_url}${stalled ? ': it did not answer in time' : ''}, and that this host can reach Google`;
    case 'azure':
      return `check base_url ${provider.base_url} (the resource's endpoint, https://RESOURCE.openai.azure.com)${stalled ? ': it did not answer in time' : ''}`;
    default:
      return stalled ? `check that ${provider.base_url} answers (a firewall dropping packets looks like this)` : `check base_url ${provider.base_url}, and that the server runs and is reachable from here`;
  }
}

const forModel = (modelId: string | undefined): string => (modelId === undefined ? 'its models' : `model '${modelId}'`);

function azureAdvice(provider: ProviderConfig, failure: GatewayError, p: string, modelId: string | undefined): string {
  const code = vendorCodeOf(failure);
  const status = statusOf(failure);
  if (provider.entra !== undefined && code === 'token_unavailable') {
    if (unanswered(failure)) return `Microsoft Entra ID did not answer: check entra.authority_url (${provider.entra.authority_url}) of ${p}, and that this host can reach it`;
    return `the Entra ID token could not be obtained: check entra.tenant_id, entra.client_id and entra.client_secret of ${p} (the message above names the one Entra ID refused), and entra.authority_url (${provider.entra.authority_url})`;
  }
  if (azureBaseUrlWithPath(provider.base_url)) {
    return `base_url ${provider.base_url} of ${p} ends in Azure's API path: give the resource's endpoint alone (https://RESOURCE.openai.azure.com); Sluice adds /openai/… itself`;
  }
  if (failure.kind === 'upstream_auth_failed') {
    return provider.entra !== undefined
      ? `the resource refused the Entra ID token: give the app registration (entra.client_id) the Cognitive Services OpenAI User role on the resource, and check that base_url ${provider.base_url} is that resource`
      : `check the api_key of ${p} (one of the resource's two keys) and that base_url ${provider.base_url} is the resource it belongs to`;
  }
  if (code === 'DeploymentNotFound') return `check upstream_model of ${forModel(modelId)} (on Azure, the deployment's name) and base_url ${provider.base_url}`;
  if (/\bResource not found\b/.test(failure.upstreamBody ?? '')) {
    return `check api_version of ${p} (${provider.api_version ?? 'unset: the v1 API'}): a version the resource serves, such as 2024-10-21, or none for the v1 API; and base_url ${provider.base_url}`;
  }
  if (status === 404) return `check upstream_model of ${forModel(modelId)} (on Azure, the deployment's name) and base_url ${provider.base_url}`;
  if (status === 400 && /api-version/i.test(`${failure.message} ${failure.upstreamBody ?? ''}`)) {
    return `check api_version of ${p} (${provider.api_version ?? 'unset: the v1 API'}): a version the resource serves, such as 2024-10-21, or none for the v1 API`;
  }
  return `check base_url ${provider.base_url}, api_version and upstream_model of ${p}`;
}

function bedrockAdvice(provider: ProviderConfig, failure: GatewayError, p: string, modelId: string | undefined): string {
  const code = vendorCodeOf(failure);
  const keys = provider.ownCredentialsOnly === true || provider.access_key_id !== undefined ? 'access_key_id and secret_access_key' : 'the AWS credentials (access_key_id and secret_access_key, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE of the gateway)';
  switch (code) {
    case 'token_unavailable':
      // The detail (the profile looked for, the file's path) is the host's: shown here, never to callers.
      return `no AWS credentials could be read: set ${keys} of ${p}${failure.upstreamBody === undefined ? '' : ` (${failure.upstreamBody})`}`;
    case 'UnrecognizedClientException':
    case 'InvalidClientTokenId':
      return `AWS does not know the access key: check ${keys} of ${p}${provider.session_token === undefined ? '' : ', and its session_token'}`;
    case 'InvalidSignatureException':
    case 'SignatureDoesNotMatch':
      return /expired/i.test(`${failure.message} ${failure.upstreamBody ?? ''}`)
        ? `AWS refused the signature as stale: set this host's clock right (requests are signed with the time)`
        : `AWS refused the signature: check that secret_access_key goes with access_key_id of ${p}, and region (${provider.region}: requests are signed for it)`;
    case 'ExpiredTokenException':
    case 'ExpiredToken':
      return `the temporary credentials have expired: renew session_token (with its access_key_id and secret_access_key) of ${p}`;
    case 'AccessDeniedException':
      return `model access denied: enable ${forModel(modelId)} under Model access in the Bedrock console for region ${provider.region}, and allow bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream to the identity of access_key_id`;
    case 'ResourceNotFoundException':
      return `check upstream_model of ${forModel(modelId)} (a model id such as anthropic.claude-sonnet-4-5-20250929-v1:0, or an inference profile such as us.…) and that region ${provider.region} offers it`;
    case 'ValidationException':
      return `Bedrock refused the request for ${forModel(modelId)}: check its upstream_model (a model that needs an inference profile is called through one, us.…/eu.…) and region ${provider.region}`;
    default:
      if (failure.kind === 'upstream_auth_failed') return `check ${keys}, session_token and region (${provider.region}) of ${p}`;
      return `check region (${provider.region}), base_url ${provider.base_url} and upstream_model of ${forModel(modelId)}`;
  }
}

function vertexAdvice(provider: ProviderConfig, failure: GatewayError, p: string, modelId: string | undefined): string {
  const code = vendorCodeOf(failure);
  const status = statusOf(failure);
  const key = provider.credentials !== undefined ? 'credentials (the pasted service-account key)' : provider.credentials_file !== undefined ? `credentials_file (${provider.credentials_file})` : 'GOOGLE_APPLICATION_CREDENTIALS (no credentials or credentials_file is set)';
  if (code === 'token_unavailable') {
    if (unanswered(failure)) return `the service account's token endpoint did not answer: check the token_uri of the key in ${key} of ${p}, and that this host can reach it`;
    return `the service account's token could not be obtained: check ${key} of ${p}: the key's private_key and token_uri, and that the key is not disabled or deleted`;
  }
  if (code === 'SERVICE_DISABLED') return `enable the Vertex AI API (aiplatform.googleapis.com) in project ${provider.project}`;
  if (code === 'UNAUTHENTICATED' || status === 401) return `Google refused the service account's token: check ${key} of ${p}`;
  if (code === 'PERMISSION_DENIED' || status === 403 || failure.kind === 'upstream_auth_failed') {
    return `the service account may not use ${forModel(modelId)} in project ${provider.project}: grant it roles/aiplatform.user there, enable the Vertex AI API, and for a partner model (Claude) enable it in Model Garden`;
  }
  if (code === 'NOT_FOUND' || status === 404) {
    return `check upstream_model of ${forModel(modelId)} and location (${provider.location}): the model may not be served there (try global), and project (${provider.project})`;
  }
  return `check project (${provider.project}), location (${provider.location}), base_url ${provider.base_url} and upstream_model of ${forModel(modelId)}`;
}
