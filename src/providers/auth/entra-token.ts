import { z } from 'zod';
import type { ProviderConfig } from '../../config/config-file.js';
import { GatewayError } from '../../core/errors.js';
import { redact, upstreamTransportError } from '../../core/upstream-errors.js';
import type { OutgoingRequest, UpstreamAuth } from '../upstream-client.js';
import { RefreshingToken, type IssuedToken } from './refreshing-token.js';

/** The audience of Azure OpenAI's data plane (and every Azure AI service). */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** How long one token request may take: it is shared by every request of the provider, none of which has its own budget here. */
const TOKEN_TIMEOUT_MS = 10_000;

export type EntraSettings = NonNullable<ProviderConfig['entra']>;

/** What the v2.0 token endpoint answers to a client-credentials grant (`expires_in` is a number; older endpoints sent a string). */
const tokenAnswer = z.object({
  access_token: z.string().min(1),
  expires_in: z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)]),
  token_type: z.string().optional(),
});

/** Entra's error body: an OAuth2 `error`, and AADSTS codes in `error_codes` and at the head of `error_description`. */
const tokenError = z.object({
  error: z.string().optional(),
  error_description: z.string().optional(),
  error_codes: z.array(z.number()).optional(),
});

/** The token endpoint's failure: it names the `entra` setting to fix itself, so an adapter passes it on as it is. */
export class EntraTokenError extends GatewayError {}

/** The setting an AADSTS code points at, so the operator knows what to fix. */
function settingOf(codes: readonly number[]): string {
  for (const code of codes) {
    switch (code) {
      case 7000215: // invalid client secret
      case 7000222: // the secret expired
      case 7000216: // client_secret missing
        return 'entra.client_secret';
      case 700016: // no such application in the tenant
      case 700023:
        return 'entra.client_id';
      case 90002: // no such tenant
      case 900023: // not a tenant id or domain
      case 90013:
        return 'entra.tenant_id';
      default:
        break;
    }
  }
  return 'entra (tenant_id, client_id, client_secret)';
}

/**
 * Microsoft Entra ID's client-credentials grant, `POST {authority_url}/{tenant_id}/oauth2/v2.0/token`,
 * written over undici rather than MSAL: MSAL refuses an http authority (a private cloud, a test's
 * fake), looks up instance metadata on the internet, and renews 300 s early whatever a token's
 * lifetime. Its tokens are held in a RefreshingToken: one request per token lifetime per process.
 */
export class EntraAuth implements UpstreamAuth {
  private readonly token: RefreshingToken;
  private readonly tokenUrl: string;

  constructor(
    private readonly providerId: string,
    private readonly entra: EntraSettings,
  ) {
    this.tokenUrl = `${entra.authority_url.replace(/\/+$/, '')}/${encodeURIComponent(entra.tenant_id)}/oauth2/v2.0/token`;
    this.token = new RefreshingToken(() => this.obtain());
  }

  /** While a token is being obtained, a request whose signal aborts (its caller gone, its deadline passed) stops waiting; the token request goes on for the others. */
  headersFor(_request: OutgoingRequest, signal: AbortSignal): Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>> {
    const token = this.token.current();
    return typeof token === 'string' ? bearer(token) : untilAborted(token, signal).then(bearer);
  }

  secrets(): readonly string[] {
    return [this.entra.client_secret, ...this.token.secrets()];
  }

  private async obtain(): Promise<IssuedToken> {
    // undici is loaded with the first token request, as the upstream client loads it with the first call.
    const { request } = await import('undici');
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: this.entra.client_id, client_secret: this.entra.client_secret, scope: COGNITIVE_SERVICES_SCOPE });
    let statusCode: number;
    let text: string;
    try {
      const answer = await request(this.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
      });
      statusCode = answer.statusCode;
      text = await answer.body.text();
    } catch (error) {
      const failure = upstreamTransportError(this.providerId, error);
      // Retryable for routing as any unreachable upstream; the message says it was the token endpoint.
      throw new GatewayError(failure.kind === 'upstream_error' ? 'upstream_unreachable' : failure.kind, `${failure.message.replace(/\.$/, '')}: its Microsoft Entra ID token endpoint (entra.authority_url) did not answer.`, {
        upstreamFailure: failure.upstreamFailure ?? 'connect_error',
        cause: error,
      });
    }
    if (statusCode >= 200 && statusCode < 300) {
      const parsed = tokenAnswer.safeParse(safeJson(text));
      if (!parsed.success) throw new GatewayError('upstream_error', `The Microsoft Entra ID token endpoint of provider '${this.providerId}' answered without an access token.`, { upstreamFailure: 502 });
      return { token: parsed.data.access_token, lifetimeMs: parsed.data.expires_in * 1000 };
    }
    throw this.refusal(statusCode, text);
  }

  /** An answered failure: a 4xx is the configuration's (named), a 5xx the issuer's (retryable). */
  private refusal(statusCode: number, text: string): GatewayError {
    const parsed = tokenError.safeParse(safeJson(text));
    const body = parsed.success ? parsed.data : {};
    // The description's first line holds the AADSTS code and its sentence; the trace and correlation ids follow.
    const said = body.error_description?.split(/\r?\n/)[0]?.trim() ?? body.error;
    const detail = said === undefined || said === '' ? '' : ` (${redact(said, this.secrets())})`;
    const upstreamBody = redact(text, this.secrets()).slice(0, 1000);
    if (statusCode >= 400 && statusCode < 500) {
      const setting = settingOf(body.error_codes ?? []);
      return new EntraTokenError(
        'upstream_auth_failed',
        `Microsoft Entra ID refused the client credentials of provider '${this.providerId}' (HTTP ${statusCode})${detail}: check ${setting} of provider '${this.providerId}'. This is a gateway configuration problem; see /status.`,
        { upstreamFailure: 401, upstreamBody },
      );
    }
    return new GatewayError('upstream_error', `The Microsoft Entra ID token endpoint of provider '${this.providerId}' failed (HTTP ${statusCode})${detail}.`, { upstreamFailure: statusCode >= 500 ? statusCode : 502, upstreamBody });
  }
}

function bearer(token: string): Readonly<Record<string, string>> {
  return { authorization: `Bearer ${token}` };
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
