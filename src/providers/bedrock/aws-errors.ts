import { GatewayError, type ErrorKind, type UpstreamFailureCondition } from '../../core/errors.js';
import { loggableBody, redact, type UpstreamFailure } from '../../core/upstream-errors.js';
import type { UpstreamClient, VendorFailure } from '../upstream-client.js';
import { isObject } from '../../wire/json.js';

/** What one AWS error type stands for: the caller's error kind, and how routing reads it (`retry_on`). */
interface AwsErrorMeaning {
  readonly kind: ErrorKind;
  readonly failure: UpstreamFailureCondition;
}

const RATE_LIMITED: AwsErrorMeaning = { kind: 'upstream_rate_limited', failure: 429 };
const AUTH: AwsErrorMeaning = { kind: 'upstream_auth_failed', failure: 403 };

/**
 * Bedrock's error types, one table for an answer refused before a stream (the type in
 * `x-amzn-errortype`) and an exception frame inside one (its `:exception-type`): AWS's status
 * alone misleads (a model's timeout is 408, its failure 424, a quota exceeded 400), so the type
 * decides. Throttling, a quota and a model still loading are worth trying again elsewhere.
 */
const AWS_ERRORS: Readonly<Record<string, AwsErrorMeaning>> = {
  ThrottlingException: RATE_LIMITED,
  ServiceQuotaExceededException: RATE_LIMITED,
  ModelNotReadyException: RATE_LIMITED,
  ServiceUnavailableException: { kind: 'upstream_overloaded', failure: 503 },
  InternalServerException: { kind: 'upstream_error', failure: 500 },
  ModelTimeoutException: { kind: 'upstream_timeout', failure: 'timeout' },
  ModelErrorException: { kind: 'upstream_error', failure: 502 },
  ModelStreamErrorException: { kind: 'upstream_error', failure: 502 },
  ValidationException: { kind: 'upstream_rejected_request', failure: 400 },
  ResourceNotFoundException: { kind: 'upstream_rejected_request', failure: 404 },
  AccessDeniedException: AUTH,
  UnrecognizedClientException: AUTH,
  InvalidSignatureException: AUTH,
  SignatureDoesNotMatch: AUTH,
  ExpiredTokenException: AUTH,
  ExpiredToken: AUTH,
};

/** The types that say the identity itself is wrong (not a model's permission): credentials read again may be right. */
const IDENTITY_REFUSED = new Set(['UnrecognizedClientException', 'InvalidSignatureException', 'SignatureDoesNotMatch', 'ExpiredTokenException', 'ExpiredToken']);

/** Whether AWS refused the identity itself, so that the credentials are worth reading again (a rotated profile file). */
export function identityRefused(error: unknown): boolean {
  return error instanceof GatewayError && error.kind === 'upstream_auth_failed' && IDENTITY_REFUSED.has(error.code ?? '');
}

/**
 * An AWS error type as its bare name: `x-amzn-errortype` may go on after a `:`
 * (`ValidationException:http://internal.amazon.com/…`), a body's `__type` may lead with a namespace
 * (`com.amazon.coral.service#UnrecognizedClientException`), an exception frame's is lower camel case
 * (`throttlingException`).
 */
export function awsErrorType(raw: string | undefined): string | undefined {
  const name = raw?.split(':')[0]?.split('#').pop()?.trim();
  return name === undefined || name === '' ? undefined : name[0]!.toUpperCase() + name.slice(1);
}

/** The error type of a body that carries one itself (`__type`), for answers without the header. */
function bodyErrorType(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) && typeof parsed.__type === 'string' ? parsed.__type : undefined;
  } catch {
    return undefined;
  }
}

/** The upstream client's reading of Bedrock's failures by their type, for a provider signing for `region`. */
export function awsFailures(region: string | undefined): VendorFailure {
  return (failure, errorType) => {
    const type = awsErrorType(errorType ?? bodyErrorType(failure.body));
    const meaning = type === undefined ? undefined : AWS_ERRORS[type];
    if (type === undefined || meaning === undefined) return undefined;
    return awsError(failure, type, meaning, region, 'before');
  };
}

/** An exception frame (`:message-type` exception, its `:exception-type`, a `{"message"}` payload) as the GatewayError it is. */
export function streamException(client: UpstreamClient, exceptionType: string | undefined, payload: unknown, region: string | undefined): GatewayError {
  const type = awsErrorType(exceptionType);
  const meaning = type === undefined ? undefined : AWS_ERRORS[type];
  const message = isObject(payload) && typeof payload.message === 'string' ? payload.message : undefined;
  if (type === undefined || meaning === undefined) return client.midStreamFailure(`${exceptionType ?? 'an exception'}${message === undefined ? '' : `: ${message}`}`);
  const status = typeof meaning.failure === 'number' ? meaning.failure : 504;
  const failure: UpstreamFailure = { providerId: client.providerId, status, retryAfter: undefined, message, type: undefined, code: undefined, secrets: client.secrets, body: JSON.stringify(payload) };
  return awsError(failure, type, meaning, region, 'mid-stream');
}

function awsError(failure: UpstreamFailure, type: string, meaning: AwsErrorMeaning, region: string | undefined, when: 'before' | 'mid-stream'): GatewayError {
  const { providerId, secrets } = failure;
  const upstreamBody = loggableBody(failure.body, secrets);
  // AWS's own words, first line only: a signature mismatch goes on with the canonical request, whose signed headers may hold the session token.
  const aws = failure.message === undefined ? undefined : redact(failure.message.split('\n')[0]!.slice(0, 300), secrets);
  const said = aws === undefined ? type : `${type}: ${aws}`;
  const during = when === 'mid-stream' ? ' mid-stream' : '';
  const options = { code: type, upstreamFailure: meaning.failure, upstreamBody };
  switch (meaning.kind) {
    case 'upstream_auth_failed':
      return new GatewayError(
        'upstream_auth_failed',
        `The upstream provider '${providerId}' refused the gateway's AWS credentials (${said}). This is a gateway configuration problem; see /status.`,
        options,
      );
    case 'upstream_rejected_request':
      if (meaning.failure === 404) {
        const model = /\/model\/([^/]+)\//.exec(failure.path ?? '')?.[1];
        const named = model === undefined ? '' : ` '${decodeURIComponent(model)}'`;
        return new GatewayError(
          'upstream_rejected_request',
          `The upstream provider '${providerId}' has no model${named} in region ${region ?? 'unset'} (${said}): check the upstream_model of the deployment, a model id or inference profile that region offers.`,
          { ...options, status: 404 },
        );
      }
      return new GatewayError('upstream_rejected_request', aws ?? `The upstream provider '${providerId}' rejected the request (${type}).`, { ...options, status: 400 });
    case 'upstream_rate_limited': {
      const retry = failure.retryAfter === undefined ? '' : ` Retry after ${failure.retryAfter} seconds.`;
      return new GatewayError('upstream_rate_limited', `The upstream provider '${providerId}' is rate limiting requests${during} (${type}).${retry}`, {
        ...options,
        ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
      });
    }
    case 'upstream_overloaded':
      return new GatewayError('upstream_overloaded', `The upstream provider '${providerId}' is overloaded${during} (${type}); try again shortly.`, options);
    case 'upstream_timeout':
      return new GatewayError('upstream_timeout', `The upstream provider '${providerId}' timed out${during} (${said}).`, options);
    default:
      return new GatewayError(meaning.kind, `The upstream provider '${providerId}' failed${during} (${said}); see /status.`, options);
  }
}
