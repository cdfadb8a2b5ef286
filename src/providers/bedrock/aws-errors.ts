import { GatewayError } from '../../core/errors.js';
import { ModelListingError } from '../model-listing.js';
import type { UpstreamClient } from '../upstream-client.js';
import { isObject } from '../../wire/json.js';

/**
 * What each in-stream exception of ConverseStream and InvokeModelWithResponseStream stands for, as
 * the HTTP status the same failure has before a stream begins (which routing reads): throttling and
 * an unavailable service are an overloaded upstream; the rest fail the stream.
 */
const STREAM_EXCEPTIONS: Readonly<Record<string, { readonly status: number; readonly overloaded: boolean }>> = {
  throttlingException: { status: 429, overloaded: true },
  serviceUnavailableException: { status: 503, overloaded: true },
  modelNotReadyException: { status: 429, overloaded: true },
  internalServerException: { status: 500, overloaded: false },
  modelStreamErrorException: { status: 500, overloaded: false },
  modelTimeoutException: { status: 504, overloaded: false },
  validationException: { status: 400, overloaded: false },
};

/** An exception frame (`:message-type` exception, its `:exception-type`, a `{"message"}` payload) as the GatewayError it is. */
export function streamException(client: UpstreamClient, exceptionType: string | undefined, payload: unknown): GatewayError {
  const known = STREAM_EXCEPTIONS[exceptionType ?? ''];
  const message = isObject(payload) && typeof payload.message === 'string' ? payload.message : undefined;
  const detail = `${exceptionType ?? 'an exception'}${message === undefined ? '' : `: ${message}`}`;
  return client.midStreamFailure(detail, known?.overloaded ? 'upstream_overloaded' : 'upstream_error', known?.status ?? 500);
}

/**
 * AWS's refusals of the gateway's own identity (AccessDeniedException for a model not enabled,
 * UnrecognizedClientException for an unknown key or session token, InvalidSignatureException for
 * a wrong secret, a clock off by more than five minutes or a region the key is not scoped to) all
 * come as 403: the error then says what to check, with AWS's own words (which carry no secret).
 */
export function withAuthAdvice(error: unknown, providerId: string, region: string | undefined): unknown {
  // Only AWS's own refusals (which carry its body); the gateway's "no credentials found" already names the settings.
  if (!(error instanceof GatewayError) || error.kind !== 'upstream_auth_failed' || error.upstreamBody === undefined) return error;
  const aws = awsMessage(error.upstreamBody);
  const advised = new GatewayError(
    'upstream_auth_failed',
    `The upstream provider '${providerId}' refused the gateway's AWS credentials (HTTP ${error.upstreamFailure}${aws === undefined ? '' : `: ${aws}`}). Check its region (${region ?? 'unset'}), its access key and secret (and session token, which expires), the gateway's clock, and that model access is granted to this identity in the Bedrock console for that region.`,
    { upstreamFailure: error.upstreamFailure, upstreamBody: error.upstreamBody, cause: error },
  );
  // A model listing's failure keeps the address of the page it asked for.
  return error instanceof ModelListingError ? new ModelListingError(advised, error.url) : advised;
}

/** AWS's `{"message": …}` (or `Message`) from an error body already redacted for the log (and cut there past 1,000 characters). */
function awsMessage(body: string | undefined): string | undefined {
  if (body === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (!isObject(parsed)) return undefined;
    const message = parsed.message ?? parsed.Message;
    // Its first line only: a signature mismatch goes on with the canonical request, whose signed headers may hold the session token.
    return typeof message === 'string' ? message.split('\n')[0]!.slice(0, 300) : undefined;
  } catch {
    return undefined;
  }
}
