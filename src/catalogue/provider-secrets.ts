import { PROVIDER_KINDS, type ProviderConfig, type ProviderKind } from '../config/config-file.js';
import { readServiceAccountKey } from '../config/service-account-key.js';

/** The credential-bearing fields of a provider, sealed together in the store and never shown. */
export interface ProviderSecrets {
  api_key?: string;
  headers?: Record<string, string>;
  /** azure: `entra.client_secret`, kept apart from the rest of `entra` (which is no secret). */
  entra_client_secret?: string;
  /** bedrock: the access key id is sealed too, as the AWS SDKs treat it: it names whose keys these are. */
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
  /** vertex: the service-account key's JSON, private key included. */
  credentials?: string;
}
export type SecretField = keyof ProviderSecrets;

/** For each credential, the kinds of provider it belongs to (the form shows it for those only). */
export const SECRET_KINDS: Readonly<Record<SecretField, readonly ProviderKind[]>> = {
  api_key: ['openai', 'anthropic', 'gemini', 'azure'],
  headers: PROVIDER_KINDS,
  entra_client_secret: ['azure'],
  access_key_id: ['bedrock'],
  secret_access_key: ['bedrock'],
  session_token: ['bedrock'],
  credentials: ['vertex'],
};
export const SECRET_FIELDS = Object.keys(SECRET_KINDS) as SecretField[];

type EntryWithSecrets = Record<string, unknown> & { entra?: Record<string, unknown> };

/** A provider entry split into what the store keeps in plain (`config`) and what it seals (`secrets`). */
export function splitSecrets(entry: EntryWithSecrets): { config: Record<string, unknown>; secrets: ProviderSecrets } {
  const { api_key, headers, access_key_id, secret_access_key, session_token, credentials, entra, ...config } = entry;
  const secrets: ProviderSecrets = {};
  if (typeof api_key === 'string') secrets.api_key = api_key;
  if (headers !== undefined && headers !== null && Object.keys(headers).length > 0) secrets.headers = headers as Record<string, string>;
  if (typeof access_key_id === 'string') secrets.access_key_id = access_key_id;
  if (typeof secret_access_key === 'string') secrets.secret_access_key = secret_access_key;
  if (typeof session_token === 'string') secrets.session_token = session_token;
  if (typeof credentials === 'string') secrets.credentials = credentials;
  if (entra !== undefined) {
    const { client_secret, ...rest } = entra;
    if (typeof client_secret === 'string') secrets.entra_client_secret = client_secret;
    return { config: { ...config, entra: rest }, secrets };
  }
  return { config, secrets };
}

/** A stored entry with its unsealed credentials put back where the configuration file has them. */
export function joinSecrets(config: Readonly<Record<string, unknown>>, secrets: ProviderSecrets): Record<string, unknown> {
  const { entra_client_secret, ...flat } = secrets;
  const joined: Record<string, unknown> = { ...config, ...flat };
  if (entra_client_secret !== undefined || config.entra !== undefined) {
    joined.entra = { ...(config.entra as Record<string, unknown> | undefined), ...(entra_client_secret === undefined ? {} : { client_secret: entra_client_secret }) };
  }
  return joined;
}

/** Which credentials a provider holds, by field: what the console shows as "set". */
export function secretsSetIn(config: ProviderConfig): SecretField[] {
  const { secrets } = splitSecrets(config as unknown as EntryWithSecrets);
  return SECRET_FIELDS.filter((field) => secrets[field] !== undefined);
}

export const CREDENTIALS_FILE_REFUSED = "is for the configuration file only: paste the service-account key's JSON as credentials instead";

/**
 * What a console (stored) provider may not be, beyond the configuration file's own rules: a console
 * admin is not an administrator of the gateway's host, so a console provider never names a file on
 * it (`credentials_file`) and never falls back on the host's own credentials (its environment, an
 * AWS profile, GOOGLE_APPLICATION_CREDENTIALS): Bedrock and Vertex providers carry their own.
 * Field → message; empty when the entry is acceptable. Never quotes a credential.
 */
export function storedProviderProblems(provider: { readonly kind: ProviderKind } & Readonly<Record<string, unknown>>): Record<string, string> {
  const problems: Record<string, string> = {};
  if (provider.credentials_file !== undefined) problems.credentials_file = CREDENTIALS_FILE_REFUSED;
  if (provider.kind === 'bedrock') {
    const own = 'a console provider carries its own AWS credentials (the gateway host\'s environment and profiles serve configuration-file providers only)';
    if (provider.access_key_id === undefined) problems.access_key_id = `is required: ${own}`;
    if (provider.secret_access_key === undefined) problems.secret_access_key = `is required: ${own}`;
  }
  if (provider.kind === 'vertex') {
    if (provider.credentials === undefined) problems.credentials = "is required: paste a service-account key's JSON (a console provider never reads GOOGLE_APPLICATION_CREDENTIALS or a file on the gateway's host)";
    else {
      const problem = serviceAccountKeyProblem(String(provider.credentials));
      if (problem !== undefined) problems.credentials = problem;
    }
  }
  return problems;
}

/** What is wrong with a pasted service-account key, in words that never quote it; undefined when it reads as one. */
export function serviceAccountKeyProblem(text: string): string | undefined {
  const read = readServiceAccountKey(text);
  return 'problem' in read ? read.problem : undefined;
}
