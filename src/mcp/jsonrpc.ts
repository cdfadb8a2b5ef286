/**
 * JSON-RPC 2.0 as MCP uses it: the messages a client posts, parsed at the edge into typed values,
 * and the errors Sluice answers with.
 */
export type RequestId = string | number;

export interface JsonRpcRequest {
  readonly kind: 'request';
  readonly id: RequestId;
  readonly method: string;
  readonly params: Record<string, unknown>;
}

export interface JsonRpcNotification {
  readonly kind: 'notification';
  readonly method: string;
  readonly params: Record<string, unknown>;
}

/** A response or error from the client (to a server request Sluice never sends): accepted and dropped. */
export interface JsonRpcClientResponse {
  readonly kind: 'response';
}

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcClientResponse;

/** JSON-RPC's codes, and MCP's. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** MCP: a resource that does not exist (or that the key may not read: the same answer). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * Sluice's own, in the server-error range: the transport's refusals (a session missing or unknown,
 * a bad key), a refused call (a limit), and a call the upstream server could not complete.
 */
export const TRANSPORT_ERROR = -32000;
export const UNAUTHORIZED = -32001;
export const FORBIDDEN = -32003;
export const UPSTREAM_UNAVAILABLE = -32010;
export const UPSTREAM_TIMEOUT = -32011;
export const RESULT_TOO_LARGE = -32012;
export const RATE_LIMITED = -32029;
/** A request the caller cancelled (LSP's code; MCP names none, and the caller has stopped listening for it anyway). */
export const REQUEST_CANCELLED = -32800;

/**
 * An error answered to one JSON-RPC request, with what the ledger and metrics record of it: an
 * HTTP-like status and a kind.
 */
export class McpError extends Error {
  override name = 'McpError';
  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly kind: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const MAX_ID_LENGTH = 256;

function isId(value: unknown): value is RequestId {
  return (typeof value === 'string' && value.length <= MAX_ID_LENGTH) || (typeof value === 'number' && Number.isFinite(value));
}

/** One message, or the reason it is none (answered with `id: null`). */
export function parseMessage(value: unknown): JsonRpcMessage | McpError {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return new McpError(INVALID_REQUEST, 'Each message must be a JSON-RPC 2.0 object.', 400, 'invalid_request');
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== '2.0') return new McpError(INVALID_REQUEST, "The message must have `jsonrpc: '2.0'`.", 400, 'invalid_request');
  if (typeof message.method !== 'string') {
    if ('result' in message || 'error' in message) return { kind: 'response' };
    return new McpError(INVALID_REQUEST, 'The message has no `method`.', 400, 'invalid_request');
  }
  const params = message.params;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) return new McpError(INVALID_PARAMS, '`params` must be an object.', 400, 'invalid_params');
  const named = (params ?? {}) as Record<string, unknown>;
  if (!('id' in message) || message.id === undefined) return { kind: 'notification', method: message.method, params: named };
  if (!isId(message.id)) return new McpError(INVALID_REQUEST, '`id` must be a string or a number.', 400, 'invalid_request');
  return { kind: 'request', id: message.id, method: message.method, params: named };
}

/** A result already written as JSON (a tool's, measured for the ledger as it was written): not written again. */
export class SerializedResult {
  constructor(readonly json: string) {}
}

export function resultMessage(id: RequestId, result: unknown): string {
  if (result instanceof SerializedResult) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.json}}`;
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

export function errorMessage(id: RequestId | null, error: McpError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } });
}

export function notificationMessage(method: string, params?: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });
}

export function invalidParams(message: string, data?: unknown): McpError {
  return new McpError(INVALID_PARAMS, message, 400, 'invalid_params', data);
}
