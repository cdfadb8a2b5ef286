import type { CallerDialect, WireRequest } from '../generation/operation.js';
import { GatewayError } from '../core/errors.js';

type IncomingHttpHeaders = WireRequest['headers'];

/** The key in `Authorization: Bearer <key>` (scheme case-insensitive), or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization;
  if (typeof value !== 'string') return undefined;
  if (value.length > 7 && value.charCodeAt(6) === 32 && value.slice(0, 6).toLowerCase() === 'bearer') {
    return value.slice(7).trim();
  }
  return undefined;
}

export interface ListingCaller {
  readonly dialect: CallerDialect;
  /** The one key presented, or undefined when none was. */
  readonly key: string | undefined;
  /** Two different keys were presented: refuse rather than guess which one is meant. */
  readonly conflicting: boolean;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Who is calling the model listing, and with which key. Precedence, first match wins:
 * 1. an `anthropic-version` (alias `alpha-version`) header: Anthropic, key in `x-api-key` or Bearer;
 * 2. an `x-goog-api-key` (alias `x-gamma-api-key`) header or a `key` query parameter: Gemini;
 * 3. otherwise OpenAI. `x-api-key` without a version header only carries the key.
 * Every carrier present must hold the same key.
 */
export function identifyListingCaller(headers: IncomingHttpHeaders, query: URLSearchParams, forceGemini = false): ListingCaller {
  const googleKey = header(headers, 'x-goog-api-key') ?? header(headers, 'x-gamma-api-key');
  const queryKey = query.get('key') ?? undefined;
  const presented = [
    bearerToken(headers),
    header(headers, 'x-api-key'),
    header(headers, 'x-goog-api-key'),
    header(headers, 'x-gamma-api-key'),
    queryKey === '' ? undefined : queryKey,
  ].filter((key): key is string => key !== undefined);
  const distinct = new Set(presented);
  const anthropic = header(headers, 'anthropic-version') !== undefined || header(headers, 'alpha-version') !== undefined;
  const dialect: CallerDialect = forceGemini
    ? 'gemini'
    : anthropic
      ? 'anthropic'
      : googleKey !== undefined || queryKey !== undefined
        ? 'gemini'
        : 'openai';
  return { dialect, key: presented[0], conflicting: distinct.size > 1 };
}

/**
 * The key of an Anthropic-dialect request: `x-api-key` (older SDKs, curl) or a bearer token (the
 * SDKs since API version 2026-10-21). Two different keys are refused rather than one guessed.
 */
export function anthropicKey(headers: IncomingHttpHeaders): string | undefined {
  const bearer = bearerToken(headers);
  const apiKey = header(headers, 'x-api-key');
  if (bearer !== undefined && apiKey !== undefined && bearer !== apiKey) {
    throw new GatewayError('conflicting_api_keys', 'The request carries two different API keys; send exactly one.');
  }
  return apiKey ?? bearer;
}
