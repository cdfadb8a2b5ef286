import { JSONRPCNotificationSchema, JSONRPCRequestSchema, JSONRPCResponseSchema, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';

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

/**
 * Every error code Sluice answers with, in one table. JSON-RPC's own and MCP's keep their numbers;
 * Sluice's own sit where neither JSON-RPC, MCP nor the SDK's ErrorCode (-32000 connection closed,
 * -32001 request timeout, -32042 URL elicitation required) put one, so a client never takes one of
 * ours for one of theirs.
 */
export const ERROR_CODES = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** MCP: a resource that does not exist (or that the key may not read: the same answer). */
  RESOURCE_NOT_FOUND: -32002,
  /** The upstream server could not be reached before the call was sent: it did not run. */
  UPSTREAM_UNAVAILABLE: -32010,
  /** The upstream did not answer within mcp.call_timeout_ms (it was sent a cancellation). */
  UPSTREAM_TIMEOUT: -32011,
  /** The upstream's answer was larger than mcp.max_result_bytes. */
  RESULT_TOO_LARGE: -32012,
  /** The upstream went away after the call was sent: it may have run. */
  UPSTREAM_INTERRUPTED: -32013,
  /** A key's or account's limit refused the call. */
  RATE_LIMITED: -32029,
  /** The transport's refusals: a session missing or unknown, a method or header the transport does not take. */
  TRANSPORT_ERROR: -32030,
  /** A missing or unknown key (HTTP 401). */
  UNAUTHORIZED: -32031,
  /** A disabled key (HTTP 403). */
  FORBIDDEN: -32033,
  /** A request the caller cancelled (LSP's code; MCP names none, and the caller has stopped listening for it anyway). */
  REQUEST_CANCELLED: -32800,
} as const;

export const {
  PARSE_ERROR,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  INVALID_PARAMS,
  INTERNAL_ERROR,
  RESOURCE_NOT_FOUND,
  UPSTREAM_UNAVAILABLE,
  UPSTREAM_TIMEOUT,
  RESULT_TOO_LARGE,
  UPSTREAM_INTERRUPTED,
  RATE_LIMITED,
  TRANSPORT_ERROR,
  UNAUTHORIZED,
  FORBIDDEN,
  REQUEST_CANCELLED,
} = ERROR_CODES;

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

/** One message, or the reason it is none (answered with `id: null`): the SDK's JSON-RPC schemas, and Sluice's bound on an id's length. */
export function parseMessage(value: unknown): JsonRpcMessage | McpError {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return invalidRequest('Each message must be a JSON-RPC 2.0 object.');
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== '2.0') return invalidRequest("The message must have `jsonrpc: '2.0'`.");
  if (!('method' in message)) {
    // A response or error from the client (to a server request Sluice never sends): accepted and dropped.
    if (JSONRPCResponseSchema.safeParse(value).success) return { kind: 'response' };
    return invalidRequest('The message has no `method`.');
  }
  const isRequest = 'id' in message && message.id !== undefined;
  const parsed = (isRequest ? JSONRPCRequestSchema : JSONRPCNotificationSchema).safeParse(value);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path[0];
    if (field === 'params') return new McpError(INVALID_PARAMS, '`params` must be an object.', 400, 'invalid_params');
    if (field === 'id') return invalidRequest('`id` must be a string or an integer of at most 2^53 - 1 (send a larger one as a string).');
    return invalidRequest('The message has no `method`.');
  }
  const params = (parsed.data.params ?? {}) as Record<string, unknown>;
  if (!isRequest) return { kind: 'notification', method: parsed.data.method, params };
  const { id } = parsed.data as JSONRPCRequest;
  if (typeof id === 'string' && id.length > MAX_ID_LENGTH) return invalidRequest(`\`id\` must be at most ${MAX_ID_LENGTH} characters.`);
  return { kind: 'request', id, method: parsed.data.method, params };
}

function invalidRequest(message: string): McpError {
  return new McpError(INVALID_REQUEST, message, 400, 'invalid_request');
}

/**
 * A request's params, parsed with the SDK's schema for its method (`CallToolRequestParamsSchema`,
 * …) into a typed value; the first fault is invalid params naming the field.
 */
export function parseParams<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } } }, params: Record<string, unknown>): T {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = (issue?.path ?? []).map(String).join('.');
  throw invalidParams(field === '' ? 'The params are not valid for this method.' : `\`${field}\` is not valid: ${issue!.message.slice(0, 200)}.`, field === '' ? undefined : { field });
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
