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
  const values = [provider.api_key, ...Object.values(provider.headers ?? {}), provider.entra?.client_secret, provider.access_key_id, provider.secret_access_key, provider.session_token];
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

/** Every secret an MCP server entry holds (its header values, a stdio server's environment values), for redaction. */
export function mcpSecretValuesOf(server: McpServerConfig): string[] {
  const values = 'command' in server ? Object.values(server.env) : Object.values(server.headers);
  return [...new Set(values.filter((value) => value.length >= MIN_SECRET_LENGTH))];
}
