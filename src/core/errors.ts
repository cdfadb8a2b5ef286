/**
 * The one catalogue of errors Sluice can answer with. Every failure anywhere in the request path
 * becomes a GatewayError of one of these kinds; each dialect (OpenAI, Anthropic, Gemini) renders
 * the kind into its own status and body in one place, so handlers never pick status codes.
 */
export const ERROR_KINDS = {
  // 4xx: the caller's fault.
  missing_api_key: { status: 401 },
  invalid_api_key: { status: 401 },
  conflicting_api_keys: { status: 401 },
  key_disabled: { status: 403 },
  key_revoked: { status: 403 },
  key_expired: { status: 403 },
  model_not_permitted: { status: 403 },
  no_model_permission: { status: 403 },
  /** A key or account with a spend budget asked for a model with no price for what the request is billed in. */
  model_unpriced: { status: 403 },
  route_not_found: { status: 404 },
  model_not_found: { status: 404 },
  /** A stored object (a Responses-API response or item) the caller's account does not have. */
  resource_not_found: { status: 404 },
  method_not_allowed: { status: 405 },
  invalid_json: { status: 400 },
  invalid_request: { status: 400 },
  unsupported_endpoint: { status: 400 },
  unsupported_parameter: { status: 400 },
  payload_too_large: { status: 413 },
  unsupported_media_type: { status: 415 },
  /** A key's or account's rate limit (requests, tokens or requests in flight). */
  rate_limited: { status: 429 },
  /** A key's or account's spend budget for the period is used up. */
  budget_exhausted: { status: 429 },
  // Failures of an upstream provider, seen from the caller (routing reads `upstreamFailure` to decide on another attempt).
  upstream_rejected_request: { status: 400 }, // status replaced by the upstream's own 4xx
  upstream_auth_failed: { status: 502 },
  upstream_rate_limited: { status: 429 },
  upstream_overloaded: { status: 503 },
  upstream_error: { status: 502 },
  upstream_unreachable: { status: 502 },
  upstream_timeout: { status: 504 },
  // Our own faults.
  store_failure: { status: 500 },
  internal_error: { status: 500 },
  /** A request before start-up finished (the store still opening or migrating): only the probes answer. */
  starting: { status: 503 },
  shutting_down: { status: 503 },
} as const satisfies Record<string, { status: number }>;

export type ErrorKind = keyof typeof ERROR_KINDS;

export interface GatewayErrorOptions {
  /** The request parameter at fault, for validation errors. */
  param?: string | null;
  /** Overrides the kind's status (an upstream 4xx passed through keeps its own). */
  status?: number;
  /** Seconds, forwarded as `Retry-After`. */
  retryAfter?: string;
  /** Further response headers (a limited key's `x-ratelimit-*`). */
  headers?: Readonly<Record<string, string>>;
  /** A more specific `type`/`code` than the dialect's default for the kind (an upstream's own, a validation code). */
  type?: string;
  code?: string;
  cause?: unknown;
  /** How an upstream failed, in the terms of a routing policy's `retry_on`: its HTTP status, or a connection that failed or timed out. */
  upstreamFailure?: UpstreamFailureCondition;
  /** The upstream's own error body (its secrets redacted, truncated), for the operator's log; never sent to the caller. */
  upstreamBody?: string;
  /**
   * Logged once per interval for each value, not per request: a configuration fault that every
   * request repeats until an operator fixes it (`upstream_path:<provider>`).
   */
  logOnceAs?: string;
}

export type UpstreamFailureCondition = number | 'connect_error' | 'timeout';

export class GatewayError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly param: string | null;
  readonly retryAfter: string | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  readonly type: string | undefined;
  readonly code: string | undefined;
  /** Set only on an upstream's failure: what routing may retry on. */
  readonly upstreamFailure: UpstreamFailureCondition | undefined;
  readonly upstreamBody: string | undefined;
  readonly logOnceAs: string | undefined;

  constructor(kind: ErrorKind, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.kind = kind;
    this.status = options.status ?? ERROR_KINDS[kind].status;
    this.param = options.param ?? null;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers;
    this.type = options.type;
    this.code = options.code;
    this.upstreamFailure = options.upstreamFailure;
    this.upstreamBody = options.upstreamBody;
    this.logOnceAs = options.logOnceAs;
  }
}

/** Anything thrown that is not a GatewayError is our own fault: never show its message. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError('internal_error', 'The gateway failed to handle this request.', { cause: error });
}

/** Recorded when the client went away before the answer was complete (nginx's convention). */
export const CLIENT_CLOSED_REQUEST = 499;
