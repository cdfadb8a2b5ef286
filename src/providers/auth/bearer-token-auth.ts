import type { OutgoingRequest, UpstreamAuth } from '../upstream-client.js';
import { RefreshingToken, type IssuedToken } from './refreshing-token.js';

/**
 * Credentials that are a bearer token from an issuer (Entra ID, a Google service account): one
 * token per provider per process, held and renewed by a RefreshingToken. While a token is being
 * obtained, a request whose signal aborts (its caller gone, its deadline passed) stops waiting; the
 * token request goes on for the others.
 */
export abstract class BearerTokenAuth implements UpstreamAuth {
  private readonly token = new RefreshingToken(() => this.obtain());

  /** Asks the issuer for a token. */
  protected abstract obtain(): Promise<IssuedToken>;
  /** The configured secrets the flow uses (a client secret, a private key): never shown. */
  protected abstract credentialSecrets(): readonly string[];

  headersFor(_request: OutgoingRequest, signal: AbortSignal): Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>> {
    const token = this.token.current();
    return typeof token === 'string' ? bearer(token) : untilAborted(token, signal).then(bearer);
  }

  secrets(): readonly string[] {
    return [...this.credentialSecrets(), ...this.token.secrets()];
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
