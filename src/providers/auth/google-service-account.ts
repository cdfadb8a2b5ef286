import { readFileSync } from 'node:fs';
import type { importPKCS8 } from 'jose';
import { privateKeySecrets, readServiceAccountKey } from '../../config/service-account-key.js';
import { GatewayError } from '../../core/errors.js';
import { BearerTokenAuth } from './bearer-token-auth.js';
import type { IssuedToken } from './refreshing-token.js';
import { requestToken, CredentialUnavailable } from './token-endpoint.js';

/** What Vertex AI's calls need: the whole of Google Cloud's API surface, as Google's own clients ask. */
const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Google refuses an assertion that claims to live longer than an hour. */
const ASSERTION_LIFETIME_S = 3600;
/** A token endpoint that has not answered in this long is treated as unreachable. */
const TOKEN_TIMEOUT_MS = 30_000;

/** Where a provider's service-account key comes from, named as the operator set it. */
export type KeySource =
  | { readonly setting: 'credentials'; readonly json: string }
  | { readonly setting: 'credentials_file' | 'GOOGLE_APPLICATION_CREDENTIALS'; readonly path: string };

type PrivateKey = Awaited<ReturnType<typeof importPKCS8>>;

interface SigningKey {
  readonly email: string;
  readonly keyId: string;
  readonly tokenUri: string;
  readonly key: PrivateKey;
}

/**
 * The key's source for a provider: its own setting, else GOOGLE_APPLICATION_CREDENTIALS; undefined
 * when there is none. A provider entered in the console has only its pasted key: a console admin
 * must not make the gateway use a file or the environment of its host.
 */
export function keySourceOf(
  config: { readonly credentials?: string | undefined; readonly credentials_file?: string | undefined; readonly ownCredentialsOnly?: true },
  env: NodeJS.ProcessEnv,
): KeySource | undefined {
  if (config.credentials !== undefined) return { setting: 'credentials', json: config.credentials };
  if (config.ownCredentialsOnly === true) return undefined;
  if (config.credentials_file !== undefined) return { setting: 'credentials_file', path: config.credentials_file };
  const fromEnv = env.GOOGLE_APPLICATION_CREDENTIALS;
  return fromEnv === undefined || fromEnv === '' ? undefined : { setting: 'GOOGLE_APPLICATION_CREDENTIALS', path: fromEnv };
}

/**
 * Bearer tokens for a Google service account, by the OAuth 2.0 JWT-bearer grant (RFC 7523) as
 * Google documents it: an RS256 assertion signed with the key's private key, exchanged at the key
 * file's own `token_uri` (google-auth-library posts to Google's fixed URL instead, which a private
 * cloud or a test cannot use). The key is read and imported once per provider; the token is
 * shared by all its requests and renewed by RefreshingToken relative to the lifetime Google gives.
 * A key that cannot be read fails each call with a message naming the setting, never its content.
 */
export class GoogleServiceAccountAuth extends BearerTokenAuth {
  private signingKey: Promise<SigningKey> | undefined;
  private privateKeySecrets: readonly string[] = [];

  constructor(
    private readonly providerId: string,
    private readonly source: KeySource | undefined,
  ) {
    super();
  }

  protected credentialSecrets(): readonly string[] {
    return this.privateKeySecrets;
  }

  /** `problem` names the setting only (callers see it); the file's path, the host's own, goes to the operator's log alone. */
  private keyProblem(problem: string): GatewayError {
    const path = this.source === undefined || this.source.setting === 'credentials' ? undefined : this.source.path;
    return new CredentialUnavailable('upstream_auth_failed', `The upstream provider '${this.providerId}' has no usable service-account key: ${problem}. This is a gateway configuration problem; see /status.`, {
      upstreamFailure: 401,
      ...(path === undefined ? {} : { upstreamBody: `the key is read from ${this.source!.setting} (${path})` }),
    });
  }

  /** A key that could not be loaded is tried again at the next call: the operator may have fixed the file meanwhile. */
  private key(): Promise<SigningKey> {
    this.signingKey ??= this.loadKey().catch((error: unknown) => {
      this.signingKey = undefined;
      throw error;
    });
    return this.signingKey;
  }

  private async loadKey(): Promise<SigningKey> {
    const source = this.source;
    if (source === undefined) throw this.keyProblem('set credentials or credentials_file, or GOOGLE_APPLICATION_CREDENTIALS in the environment');
    // Callers see these messages: the setting's name, never a path on the gateway's host (keyProblem logs that).
    const where = source.setting;
    let text: string;
    if (source.setting === 'credentials') text = source.json;
    else {
      try {
        text = readFileSync(source.path, 'utf8');
      } catch (error) {
        throw this.keyProblem(`${where} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
    const read = readServiceAccountKey(text);
    if ('problem' in read) throw this.keyProblem(`${where} ${read.problem}`);
    const fields = read.key;
    let key: PrivateKey;
    try {
      // jose is loaded with the first key: only a gateway with a Vertex provider in use needs it.
      const { importPKCS8 } = await import('jose');
      key = await importPKCS8(fields.private_key, 'RS256');
    } catch {
      throw this.keyProblem(`${where}: field 'private_key' is not an RSA private key in PKCS #8 PEM`);
    }
    this.privateKeySecrets = privateKeySecrets(fields.private_key);
    return { email: fields.client_email, keyId: fields.private_key_id, tokenUri: fields.token_uri, key };
  }

  /** One assertion signed and exchanged at the key's own token_uri. */
  protected async obtain(): Promise<IssuedToken> {
    const key = await this.key();
    const { SignJWT } = await import('jose');
    const assertion = await new SignJWT({ scope: CLOUD_PLATFORM_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.keyId })
      .setIssuer(key.email)
      .setSubject(key.email)
      .setAudience(key.tokenUri)
      .setIssuedAt()
      .setExpirationTime(`${ASSERTION_LIFETIME_S}s`)
      .sign(key.key);
    const endpoint = { providerId: this.providerId, url: key.tokenUri, issuer: "The service account's token endpoint", addressSetting: 'token_uri of the key', timeoutMs: TOKEN_TIMEOUT_MS };
    const form = new URLSearchParams({ grant_type: JWT_BEARER, assertion });
    return requestToken(endpoint, form, ASSERTION_LIFETIME_S, () => [assertion, ...this.secrets()], (refusal, said) =>
      new CredentialUnavailable(
        'upstream_auth_failed',
        `The token endpoint of provider '${this.providerId}' (${key.tokenUri}) refused its service account ${key.email} (${said}). Check the key in ${this.source!.setting}: that it is current (not deleted or disabled) and that the gateway's clock is right. This is a gateway configuration problem; see /status.`,
        { upstreamFailure: 401, upstreamBody: refusal.body },
      ),
    );
  }
}
