import { GatewayError } from './errors.js';

/**
 * How an upstream's failure looks to the caller. Shared by every adapter: each one only says how to
 * find a message in its provider's error body.
 */
export interface UpstreamFailure {
  readonly providerId: string;
  readonly status: number;
  readonly retryAfter: string | undefined;
  /** The upstream's own message, type and code, when its body had them. */
  readonly message: string | undefined;
  readonly type: string | undefined;
  readonly code: string | undefined;
  /** Secrets that must never reach the caller, even inside an upstream's message. */
  readonly secrets: readonly string[];
  /** The whole error body as the upstream sent it. */
  readonly body: string;
  /** The provider's base URL (masked: core/masked-url.ts) and the path Sluice asked it for, for a 404 that is the path's. */
  readonly baseUrl?: string;
  readonly path?: string;
  /** What a base URL of the provider's kind usually is, said with a path 404. */
  readonly usualBaseUrl?: string;
}

/** "Not Found", "404 page not found", "Not found: /v1/x", "Invalid URL (POST /v1/x)". */
const GENERIC_NOT_FOUND = /^(?:404\b[^a-z]*)?(?:page )?not found\b(?:$|[.:!])|^invalid url\b/i;

/**
 * Whether an upstream's 404 is for the path Sluice built rather than for something the request
 * named. A missing model (or stored item) is named in a JSON error: OpenAI's "The model `x` does
 * not exist" (`code: model_not_found`), vLLM's "The model `x` does not exist.", Ollama's "model 'x'
 * not found", Anthropic's "model: x", Google's "models/x is not found for API version v1beta". A
 * path no route takes gets nothing so specific: FastAPI's `{"detail":"Not Found"}`, Anthropic's
 * "Not Found", OpenAI's "Invalid URL (POST /v1/…)", or no JSON at all (Ollama's `404 page not
 * found` text, an HTML page, an empty body).
 */
export function isPathNotFound(failure: Pick<UpstreamFailure, 'status' | 'message' | 'code'>): boolean {
  if (failure.status !== 404 || /model/i.test(failure.code ?? '')) return false;
  return failure.message === undefined || GENERIC_NOT_FOUND.test(failure.message.trim());
}

/** How much of an upstream's error body the log keeps: enough for any provider's message, never a whole echoed prompt. */
const LOGGED_BODY_CHARS = 1_000;

/** The upstream's error body for the operator's log: secrets redacted, whitespace folded, truncated. */
export function loggableBody(body: string, secrets: readonly string[]): string {
  const folded = redact(body, secrets).replace(/\s+/g, ' ').trim();
  return folded.length > LOGGED_BODY_CHARS ? `${folded.slice(0, LOGGED_BODY_CHARS)}… (${folded.length} characters)` : folded;
}

export function upstreamHttpError(failure: UpstreamFailure): GatewayError {
  const { providerId, status } = failure;
  const upstreamBody = loggableBody(failure.body, failure.secrets);
  if (status === 401 || status === 403) {
    // The client's key was fine: it is Sluice's own credential for this provider that is wrong.
    return new GatewayError(
      'upstream_auth_failed',
      `The upstream provider '${providerId}' refused the gateway's credentials (HTTP ${status}). This is a gateway configuration problem; see /status.`,
      { upstreamFailure: status, upstreamBody },
    );
  }
  if (isPathNotFound(failure)) {
    // The operator's to fix, not the caller's: a 502 (which routing tries on another deployment, and the circuit counts).
    const where = failure.baseUrl === undefined ? '' : ` (base_url ${redact(failure.baseUrl, failure.secrets)}${failure.path === undefined ? '' : `, path ${redact(failure.path, failure.secrets)}`})`;
    return new GatewayError(
      'upstream_error',
      `The upstream provider '${providerId}' has no such path${where}: it answered 404 for the path the gateway built, so its base_url is probably wrong${failure.usualBaseUrl === undefined ? '' : ` (${failure.usualBaseUrl})`}. This is a gateway configuration problem; see /status.`,
      { upstreamFailure: 502, upstreamBody, logOnceAs: `upstream_path:${providerId}` },
    );
  }
  if (status === 429) {
    const retry = failure.retryAfter === undefined ? '' : ` Retry after ${failure.retryAfter} seconds.`;
    return new GatewayError('upstream_rate_limited', `The upstream provider '${providerId}' is rate limiting requests.${retry}`, {
      upstreamFailure: status,
      upstreamBody,
      ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
    });
  }
  if (status === 529 || status === 503) {
    return new GatewayError('upstream_overloaded', `The upstream provider '${providerId}' is overloaded; try again shortly.`, {
      upstreamFailure: status,
      upstreamBody,
      ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
    });
  }
  if (status >= 400 && status < 500) {
    const message = failure.message === undefined ? `The upstream provider '${providerId}' rejected the request (HTTP ${status}).` : redact(failure.message, failure.secrets);
    return new GatewayError('upstream_rejected_request', message, {
      status,
      upstreamFailure: status,
      upstreamBody,
      ...(failure.type === undefined ? {} : { type: redact(failure.type, failure.secrets) }),
      ...(failure.code === undefined ? {} : { code: redact(failure.code, failure.secrets) }),
    });
  }
  return new GatewayError('upstream_error', `The upstream provider '${providerId}' failed (HTTP ${status}); see /status.`, { upstreamFailure: status, upstreamBody });
}

/** Network-level failures of undici: refused, reset, timed out. */
export function upstreamTransportError(providerId: string, error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = (error as { code?: string } | null)?.code ?? '';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('upstream_timeout', `The upstream provider '${providerId}' did not answer in time.`, { cause: error, upstreamFailure: 'timeout' });
  }
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
    return new GatewayError('upstream_unreachable', `The upstream provider '${providerId}' could not be reached.`, { cause: error, upstreamFailure: 'connect_error' });
  }
  return new GatewayError('upstream_error', `The connection to the upstream provider '${providerId}' failed.`, { cause: error, upstreamFailure: 'connect_error' });
}

export function unreadableUpstream(providerId: string, what: string): GatewayError {
  // Counted as the gateway's own 502 would be: the upstream's answer was unusable.
  return new GatewayError('upstream_error', `The upstream provider '${providerId}' sent ${what}.`, { upstreamFailure: 502 });
}

export function redact(message: string, secrets: readonly string[]): string {
  let out = message;
  // Longest first: a secret that contains a shorter one must not be left half shown.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}
