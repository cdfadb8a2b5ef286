import type { ErrorKind, GatewayError } from '../../core/errors.js';

/** OpenAI's `type` for each kind of error, where it is not `invalid_request_error`. */
const TYPE_BY_KIND: Partial<Record<ErrorKind, string>> = {
  key_disabled: 'permission_error',
  key_revoked: 'permission_error',
  key_expired: 'permission_error',
  model_not_permitted: 'permission_error',
  no_model_permission: 'permission_error',
  model_unpriced: 'permission_error',
  upstream_rate_limited: 'rate_limit_error',
  // OpenAI's own: `requests` or `tokens` for a rate limit (set per refusal), `insufficient_quota` for spend.
  rate_limited: 'requests',
  budget_exhausted: 'insufficient_quota',
};

/** OpenAI's `code`, where it differs from the kind's own name. */
const CODE_BY_KIND: Partial<Record<ErrorKind, string | null>> = {
  missing_api_key: 'invalid_api_key',
  conflicting_api_keys: 'invalid_api_key',
  upstream_rate_limited: 'rate_limit_exceeded',
  rate_limited: 'rate_limit_exceeded',
  budget_exhausted: 'insufficient_quota',
  invalid_request: null,
};

/** `{"error":{"message","type","param","code"}}`, all four keys always present. */
export function openAIErrorBody(error: GatewayError): string {
  return JSON.stringify({ error: openAIErrorObject(error) });
}

export function openAIErrorObject(error: GatewayError) {
  const type = error.type ?? TYPE_BY_KIND[error.kind] ?? (error.status >= 500 ? 'server_error' : 'invalid_request_error');
  const code = error.code ?? (error.kind in CODE_BY_KIND ? CODE_BY_KIND[error.kind]! : error.kind);
  return { message: error.message, type, param: error.param, code };
}
