import { GatewayError } from '../../core/errors.js';
import { redact, upstreamTransportError } from '../../core/upstream-errors.js';
import type { IssuedToken } from './refreshing-token.js';

/** A token answer is small; past this it is not one, and the rest is not read. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** What of the issuer's own words goes into a message. */
const MAX_DESCRIPTION_CHARS = 300;

/**
 * A provider's own credential could not be had at all: no usable key or secret is configured, or
 * its issuer refused it, answered without a token or could not be reached (then of kind
 * upstream_unreachable or upstream_timeout, retryable as any unreachable upstream). Callers see it as any refused credential
 * (`upstream_auth_failed`); `sluice doctor` tells it apart, to name the credential settings.
 */
export class CredentialUnavailable extends GatewayError {}

/** Who asks for a token, and where: for the messages of failures (never a secret). */
export interface TokenEndpoint {
  readonly providerId: string;
  readonly url: string;
  /** The issuer as the operator knows it: "Microsoft Entra ID", "the token endpoint (token_uri) of the service account". */
  readonly issuer: string;
  /** The setting that names the endpoint, for an issuer that cannot be reached: `entra.authority_url`, `token_uri`. */
  readonly addressSetting: string;
  readonly timeoutMs: number;
}

/** An issuer's refusal, read from its OAuth 2.0 error body (RFC 6749 §5.2; Entra adds AADSTS `error_codes`). */
export interface TokenRefusal {
  readonly status: number;
  readonly error: string | undefined;
  /** The description's first line: Entra's AADSTS sentence, without the trace and correlation ids after it. */
  readonly description: string | undefined;
  readonly codes: readonly number[];
  readonly body: string;
}

/**
 * One OAuth 2.0 token request (a form POST, RFC 6749 §4.4 and RFC 7523) and its answer: the token
 * and its lifetime from `expires_in` (`defaultLifetimeS` when the issuer gives none). An issuer
 * that cannot be reached is retryable for routing, as any unreachable upstream; a 5xx or 429 is
 * retryable; any other refusal is turned into the caller's GatewayError by `refused` (the flow
 * knows which of its settings to name). `secrets` are redacted from anything the issuer said.
 */
export async function requestToken(
  endpoint: TokenEndpoint,
  form: URLSearchParams,
  defaultLifetimeS: number,
  secrets: () => readonly string[],
  refused: (refusal: TokenRefusal, said: string) => CredentialUnavailable,
): Promise<IssuedToken> {
  // undici is loaded with the first token request, as the upstream client loads it with the first call.
  const { request } = await import('undici');
  let status: number;
  let text: string;
  try {
    const answer = await request(endpoint.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal: AbortSignal.timeout(endpoint.timeoutMs),
    });
    status = answer.statusCode;
    text = await readCapped(answer.body);
  } catch (error) {
    // AbortSignal.timeout's error is no undici code: it is a timeout all the same.
    const failure = (error as Error | null)?.name === 'TimeoutError' ? new GatewayError('upstream_timeout', `The upstream provider '${endpoint.providerId}' did not answer in time.`, { upstreamFailure: 'timeout' }) : upstreamTransportError(endpoint.providerId, error);
    throw new CredentialUnavailable(failure.kind === 'upstream_error' ? 'upstream_unreachable' : failure.kind, `${failure.message.replace(/\.$/, '')} for a token: ${endpoint.issuer} at ${endpoint.url} (${endpoint.addressSetting}) did not answer.`, {
      upstreamFailure: failure.upstreamFailure ?? 'connect_error',
      cause: error,
    });
  }
  const body = parseObject(text);
  const token = body.access_token;
  const lifetime = typeof body.expires_in === 'number' ? body.expires_in : typeof body.expires_in === 'string' && /^\d{1,9}$/.test(body.expires_in) ? Number(body.expires_in) : defaultLifetimeS;
  if (status >= 200 && status < 300 && typeof token === 'string' && token !== '' && lifetime >= 0) return { token, lifetimeMs: lifetime * 1000 };
  // The first line (Entra's AADSTS sentence; its trace ids follow), and no more of it than a message needs.
  const description = typeof body.error_description === 'string' ? body.error_description.split(/\r?\n/, 1)[0]!.trim().slice(0, MAX_DESCRIPTION_CHARS) : undefined;
  const error = typeof body.error === 'string' ? body.error.slice(0, MAX_DESCRIPTION_CHARS) : undefined;
  const words = [error, description].filter((word) => word !== undefined && word !== '').join(': ');
  const said = redact(words === '' ? `HTTP ${status}` : `HTTP ${status}, ${words}`, secrets());
  const upstreamBody = redact(text, secrets()).slice(0, 1000);
  if (status >= 500 || status === 429) {
    throw new GatewayError('upstream_error', `${endpoint.issuer} of provider '${endpoint.providerId}' failed (${said}).`, { upstreamFailure: status, upstreamBody });
  }
  if (status >= 200 && status < 300) {
    throw new CredentialUnavailable('upstream_error', `${endpoint.issuer} of provider '${endpoint.providerId}' answered without an access token.`, { upstreamFailure: 502, upstreamBody });
  }
  const codes = Array.isArray(body.error_codes) ? body.error_codes.filter((code): code is number => typeof code === 'number') : [];
  throw refused({ status, error, description, codes, body: upstreamBody }, said);
}

async function readCapped(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) break; // leaving the loop cuts the body
  }
  return Buffer.concat(chunks, size).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
