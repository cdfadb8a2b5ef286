import type { ProviderConfig } from '../../config/config-file.js';
import { BearerTokenAuth } from './bearer-token-auth.js';
import type { IssuedToken } from './refreshing-token.js';
import { requestToken, CredentialUnavailable, type TokenEndpoint } from './token-endpoint.js';

/** The audience of Azure OpenAI's data plane (and every Azure AI service). */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** How long one token request may take: it is shared by every request of the provider, none of which has its own budget here. */
const TOKEN_TIMEOUT_MS = 10_000;
/** Entra's tokens live an hour or more; an answer without `expires_in` is taken as the shortest. */
const DEFAULT_LIFETIME_S = 3600;

type EntraSettings = NonNullable<ProviderConfig['entra']>;


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
export class EntraAuth extends BearerTokenAuth {
  private readonly endpoint: TokenEndpoint;

  constructor(
    private readonly providerId: string,
    private readonly entra: EntraSettings,
  ) {
    super();
    this.endpoint = {
      providerId,
      url: `${entra.authority_url.replace(/\/+$/, '')}/${encodeURIComponent(entra.tenant_id)}/oauth2/v2.0/token`,
      issuer: 'Microsoft Entra ID',
      addressSetting: 'entra.authority_url',
      timeoutMs: TOKEN_TIMEOUT_MS,
    };
  }

  protected credentialSecrets(): readonly string[] {
    return [this.entra.client_secret];
  }

  protected obtain(): Promise<IssuedToken> {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: this.entra.client_id, client_secret: this.entra.client_secret, scope: COGNITIVE_SERVICES_SCOPE });
    return requestToken(this.endpoint, form, DEFAULT_LIFETIME_S, () => this.secrets(), (refusal, said) => {
      const setting = settingOf(refusal.codes);
      return new CredentialUnavailable(
        'upstream_auth_failed',
        `Microsoft Entra ID refused the client credentials of provider '${this.providerId}' (${said}): check ${setting} of provider '${this.providerId}'. This is a gateway configuration problem; see /status.`,
        { upstreamFailure: 401, upstreamBody: refusal.body },
      );
    });
  }
}
