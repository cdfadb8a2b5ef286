import type { McpServerConfig, ProviderConfig } from './config-file.js';
import { privateKeySecrets } from './service-account-key.js';

/** Shorter values are not searched for: they would blank out ordinary words. */
const MIN_SECRET_LENGTH = 4;

/**
 * Every credential value a provider entry holds, for redaction wherever text about it is shown or
 * logged: the api_key and header values, `entra.client_secret`, the AWS keys and session token,
 * and a pasted service-account key, whole and by its private key (also line by line, as a PEM
 * fragment is what an error would quote).
 */
export function secretValuesOf(provider: Pick<ProviderConfig, 'api_key' | 'headers' | 'entra' | 'access_key_id' | 'secret_access_key' | 'session_token' | 'credentials'>): string[] {
  const values = [provider.api_key, ...headerSecrets(provider.headers ?? {}), provider.entra?.client_secret, provider.access_key_id, provider.secret_access_key, provider.session_token];
  if (provider.credentials !== undefined) values.push(provider.credentials, ...privateKeyParts(provider.credentials));
  return [...new Set(values.filter((value): value is string => value !== undefined && value.length >= MIN_SECRET_LENGTH))];
}

/** A pasted service-account key's private key, to redact even when the rest of the key is not valid; none when there is none. */
function privateKeyParts(credentials: string): string[] {
  let key: unknown;
  try {
    key = JSON.parse(credentials);
  } catch {
    return [];
  }
  const privateKey = (key as { private_key?: unknown } | null)?.private_key;
  return typeof privateKey === 'string' ? privateKeySecrets(privateKey) : [];
}

/** Every secret an MCP server entry holds (its header values and their credentials, a stdio server's environment values), for redaction. */
export function mcpSecretValuesOf(server: McpServerConfig): string[] {
  const values = 'command' in server ? Object.values(server.env) : headerSecrets(server.headers);
  return [...new Set(values.filter((value) => value.length >= MIN_SECRET_LENGTH))];
}

/** `Scheme credentials`: an auth scheme (`Bearer`, `Basic`, `Token`, `Bot`, any token-shaped word) and what follows it. */
const SCHEME_AND_CREDENTIAL = /^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,30}[ \t]+(\S[^]*)$/;

/**
 * Header values whole, and the credential of each `Scheme credentials` value alone: an upstream's
 * error quotes the bare token far more often than the header line (a Basic value's base64 blob is
 * its credential: the decoded user and password are not what anyone quotes).
 */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  const values: string[] = [];
  for (const value of Object.values(headers)) {
    values.push(value);
    const credential = SCHEME_AND_CREDENTIAL.exec(value)?.[1]?.trim();
    if (credential !== undefined) values.push(credential);
  }
  return values;
}
