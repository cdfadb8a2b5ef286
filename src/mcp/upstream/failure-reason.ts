import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { RefusedAddressError } from './address-policy.js';
import { ForeignOriginError } from './bounded-fetch.js';

/** Short words for the HTTP statuses an MCP server (or something that is not one) commonly answers. */
const HTTP_REASONS: Readonly<Record<number, string>> = {
  400: 'bad request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not found',
  405: 'method not allowed',
  406: 'not acceptable',
  408: 'request timeout',
  413: 'request too large',
  415: 'unsupported media type',
  429: 'too many requests',
  500: 'internal server error',
  502: 'bad gateway',
  503: 'service unavailable',
  504: 'gateway timeout',
};

/** Socket and resolver codes, in words. */
const NETWORK_REASONS: Readonly<Record<string, string>> = {
  // The address policy's lookup refused the name (wrapped by fetch as the socket's cause).
  ESLUICEREFUSEDADDRESS: 'refused: the address is not allowed for a console-added server',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for the answer',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the answer',
  UND_ERR_SOCKET: 'connection broken',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate does not name the host',
};

/**
 * Why an upstream failed, in Sluice's own fixed words: an HTTP status and its reason, a network
 * failure's name, or "not an MCP server". Never the upstream's response text: a console admin can
 * point a server at any address, and a state that quoted the answer would let them read whatever
 * an internal service answers. (The logs keep a redacted, capped excerpt.)
 */
export function failureReason(error: unknown): string {
  if (error instanceof RefusedAddressError) return 'refused: the address is not allowed for a console-added server';
  if (error instanceof ForeignOriginError) return 'refused: the server sent Sluice to another origin';
  const httpStatus = httpErrorCode(error);
  if (httpStatus === -1) return 'not an MCP server (unexpected content type)';
  if (httpStatus !== undefined && httpStatus > 0) return httpReason(httpStatus);
  const text = error instanceof Error ? error.message : '';
  const sseStatus = /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(text) ?? /Non-200 status code \((\d{3})\)/.exec(text);
  if (sseStatus !== null) return httpReason(Number(sseStatus[1]));
  if (error instanceof Error && error.name === 'UnauthorizedError') return httpReason(401);
  if (error instanceof McpError) {
    if (error.code === -32001) return 'timed out';
    if (error.code === -32000) return 'the connection closed';
    return `the server answered with a JSON-RPC error (code ${error.code})`;
  }
  const code = networkCode(error);
  if (code !== undefined && NETWORK_REASONS[code] !== undefined) return NETWORK_REASONS[code];
  if (code !== undefined && /^[A-Z_]{3,40}$/.test(code)) return `network error (${code})`;
  if (error instanceof TypeError && error.message === 'fetch failed') return 'connection failed';
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timed out';
  if (error instanceof Error && /^(the process exited|the connection closed|Not connected|Connection closed)/i.test(error.message)) return error.message.toLowerCase();
  return 'not an MCP server (its answer was not a valid MCP response)';
}

/** The Streamable HTTP transport's error's status (by its shape as well: a second copy of the SDK has another class). */
function httpErrorCode(error: unknown): number | undefined {
  if (!(error instanceof Error)) return undefined;
  if (!(error instanceof StreamableHTTPError) && error.constructor.name !== 'StreamableHTTPError') return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function httpReason(status: number): string {
  const words = HTTP_REASONS[status];
  return `HTTP ${status}${words === undefined ? '' : ` ${words}`}`;
}

/** The `code` of the error or of one of its causes (fetch wraps the socket's error). */
function networkCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}
