import type { SignatureV4 } from '@smithy/signature-v4';
import type { ProviderConfig } from '../../config/config-file.js';
import type { OutgoingRequest, UpstreamAuth } from '../upstream-client.js';
import { resolveAwsCredentials, type AwsCredentials } from './credentials.js';
import { Sha256 } from './sha256.js';

/** The SigV4 service name of both the runtime and the control plane. */
const SERVICE = 'bedrock';

/**
 * A provider's AWS identity, found at the first call and shared by its runtime and control-plane
 * signers. A failure (no credentials anywhere) is not kept: the next call looks again, as the
 * operator may have fixed the file meanwhile. Credentials AWS refused are forgotten the same way
 * (`forget`), so a profile file rotated with fresh temporary credentials is read again.
 */
export class AwsIdentity {
  private found: Promise<AwsCredentials> | undefined;
  /** Every secret key and session token found so far: one forgotten may still be in a late answer. */
  private readonly seen = new Set<string>();

  constructor(
    private readonly config: ProviderConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  get(): Promise<AwsCredentials> {
    this.found ??= resolveAwsCredentials(this.config, this.env).then(
      (credentials) => {
        this.seen.add(credentials.secretAccessKey);
        if (credentials.sessionToken !== undefined) this.seen.add(credentials.sessionToken);
        return credentials;
      },
      (error: unknown) => {
        this.found = undefined;
        throw error;
      },
    );
    return this.found;
  }

  /** After AWS refused the credentials: the next call looks for them again. */
  forget(): void {
    this.found = undefined;
  }

  /** The secret key and session token configured or found: never shown, even inside an upstream's message. */
  secrets(): readonly string[] {
    const configured = [this.config.secret_access_key, this.config.session_token].filter((value): value is string => value !== undefined);
    return [...configured, ...this.seen];
  }
}

/**
 * Signs every request to one host with AWS Signature Version 4, through the upstream client's
 * credential seam: the exact method, path (percent-encoded as sent), query, headers and body. One
 * signer per host for the provider's life, so smithy's signing key (derived per day) is reused.
 * `uriEscapePath` escapes the sent path once more for the canonical URI, as SigV4 wants for every
 * service but S3: an id sent as `…v1%3A0` is signed as `…v1%253A0`, as AWS computes it.
 */
export class RequestSigner implements UpstreamAuth {
  /** Made with the first request: the signing library is loaded only by a gateway that has a Bedrock provider in use. */
  private signer: Promise<SignatureV4> | undefined;
  private readonly protocol: string;
  private readonly hostname: string;
  private readonly port: number | undefined;
  /** The Host header undici sends: no port when it is the scheme's default. */
  private readonly host: string;

  constructor(
    private readonly identity: AwsIdentity,
    private readonly region: string,
    origin: string,
  ) {
    const url = new URL(origin);
    this.protocol = url.protocol;
    this.hostname = url.hostname;
    this.port = url.port === '' ? undefined : Number(url.port);
    this.host = url.host;
  }

  async headersFor(request: OutgoingRequest): Promise<Readonly<Record<string, string>>> {
    const mark = request.path.indexOf('?');
    this.signer ??= import('@smithy/signature-v4').then(
      // No x-amz-content-sha256 header: only S3 wants the payload's hash sent; SigV4 signs it all the same.
      ({ SignatureV4 }) => new SignatureV4({ service: SERVICE, region: this.region, credentials: () => this.identity.get(), sha256: Sha256, uriEscapePath: true, applyChecksum: false }),
    );
    const signed = await (await this.signer).sign({
      method: request.method,
      protocol: this.protocol,
      hostname: this.hostname,
      ...(this.port === undefined ? {} : { port: this.port }),
      path: mark < 0 ? request.path : request.path.slice(0, mark),
      query: mark < 0 ? {} : queryOf(request.path.slice(mark + 1)),
      headers: { ...request.headers, host: this.host },
      body: typeof request.body === 'string' || request.body === undefined ? request.body : Buffer.concat(request.body),
    });
    // What the signer added: authorization, x-amz-date, and x-amz-security-token with temporary credentials.
    const added: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers)) if (name !== 'host' && request.headers[name] === undefined) added[name] = value;
    return added;
  }

  secrets(): readonly string[] {
    return this.identity.secrets();
  }
}

/** A query string's parameters, decoded (smithy encodes them again, sorted, for the canonical query); a repeated name keeps every value. */
function queryOf(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(search)) {
    const present = query[key];
    query[key] = present === undefined ? value : Array.isArray(present) ? [...present, value] : [present, value];
  }
  return query;
}
