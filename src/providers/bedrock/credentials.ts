import type { ProviderConfig } from '../../config/config-file.js';
import { CredentialUnavailable } from '../auth/token-endpoint.js';

/** An AWS identity that signs requests: a long-term key pair, or temporary credentials with their session token. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/**
 * Three of the AWS SDK's sources, in its order: the provider's own fields; the environment's
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; then AWS_PROFILE (default
 * `default`) in the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default
 * ~/.aws/credentials). Not the SDK's whole chain: no SSO, no role to assume, no instance, ECS or
 * web-identity role. None found is a GatewayError that tells the caller only that the gateway has
 * no credentials; every setting looked at (with the profile's name and the file's path, the
 * host's configuration) is in its upstreamBody, which the log and `sluice doctor` show and callers
 * never see. A provider entered in the console has only its own fields: a console admin must not
 * make the gateway sign with its host's identity.
 */
export async function resolveAwsCredentials(config: ProviderConfig, env: NodeJS.ProcessEnv = process.env): Promise<AwsCredentials> {
  if (config.access_key_id !== undefined && config.secret_access_key !== undefined) {
    return withToken(config.access_key_id, config.secret_access_key, config.session_token);
  }
  if (config.ownCredentialsOnly === true) throw noCredentials(config, 'a provider entered in the console signs only with its own access_key_id and secret_access_key, and it has none');
  const fromEnv = { id: env.AWS_ACCESS_KEY_ID, secret: env.AWS_SECRET_ACCESS_KEY };
  if (fromEnv.id && fromEnv.secret) return withToken(fromEnv.id, fromEnv.secret, env.AWS_SESSION_TOKEN || undefined);
  // Loaded only when the fields and the environment gave nothing.
  const { getProfileName, loadSharedConfigFiles } = await import('@smithy/shared-ini-file-loader');
  const profile = getProfileName({ profile: env.AWS_PROFILE || undefined });
  const file = env.AWS_SHARED_CREDENTIALS_FILE || '~/.aws/credentials';
  let section: Record<string, string | undefined> | undefined;
  try {
    // A missing file reads as no profiles; only the credentials file's keys are used (not ~/.aws/config's SSO or role chains).
    const { credentialsFile } = await loadSharedConfigFiles({ filepath: env.AWS_SHARED_CREDENTIALS_FILE || undefined, ignoreCache: true });
    section = credentialsFile[profile];
  } catch {
    section = undefined;
  }
  if (section?.aws_access_key_id && section.aws_secret_access_key) {
    return withToken(section.aws_access_key_id, section.aws_secret_access_key, section.aws_session_token || undefined);
  }
  throw noCredentials(
    config,
    `set its access_key_id and secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials) in the gateway's environment, or AWS_PROFILE (now '${profile}') naming a profile with aws_access_key_id and aws_secret_access_key in the shared credentials file (${file}; AWS_SHARED_CREDENTIALS_FILE names another)`,
  );
}

/** The caller's message names no setting of the host; `detail` (what to set) goes to the log and the doctor. */
function noCredentials(config: ProviderConfig, detail: string): CredentialUnavailable {
  return new CredentialUnavailable('upstream_auth_failed', `The gateway has no AWS credentials for the upstream provider '${config.id}'. This is a gateway configuration problem; see /status.`, {
    upstreamFailure: 401,
    upstreamBody: `no AWS credentials: ${detail}`,
  });
}

function withToken(accessKeyId: string, secretAccessKey: string, sessionToken: string | undefined): AwsCredentials {
  return sessionToken === undefined ? { accessKeyId, secretAccessKey } : { accessKeyId, secretAccessKey, sessionToken };
}
