import { performance } from 'node:perf_hooks';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpSettings } from '../config/config-file.js';
import { CLIENT_CLOSED_REQUEST, GatewayError } from '../core/errors.js';
import type { McpAccess } from '../core/mcp-access.js';
import type { Principal } from '../core/principal.js';
import type { Admitted } from '../generation/admission.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UsageLedger } from '../usage/ledger.js';
import type { LimitAdmission } from '../limits/limit-admission.js';
import type { Endpoint, McpDirectory } from './directory.js';
import { INVALID_PARAMS, invalidParams, McpError, METHOD_NOT_FOUND, RATE_LIMITED, REQUEST_CANCELLED, RESULT_TOO_LARGE, SerializedResult, UPSTREAM_TIMEOUT, UPSTREAM_UNAVAILABLE } from './jsonrpc.js';
import { callerUri } from './names.js';
import { UpstreamMcpError, type ProgressUpdate } from './upstream/upstream-server.js';

/** The ledger's operation for a tool call. */
export const TOOL_CALL_OPERATION = 'mcp.tools/call';
/** The most of an unknown tool's name the ledger keeps. */
const MAX_LEDGER_NAME = 128;

export interface ToolCallDeps {
  readonly directory: McpDirectory;
  readonly admission: Pick<LimitAdmission, 'admitCall'>;
  readonly ledger: Pick<UsageLedger, 'begin' | 'record' | 'nextEntryId'>;
  readonly telemetry: Telemetry;
  readonly settings: () => McpSettings;
}

/** Who calls, where, and how the call is bounded from the caller's side. */
export interface CallContext {
  readonly principal: Principal;
  readonly access: McpAccess;
  readonly endpoint: Endpoint;
  /** The HTTP request's id (the ledger's request id). */
  readonly requestId: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** performance.now() when the HTTP request arrived. */
  readonly startedAt: number;
  /** Aborts when the caller cancels the request or goes away. */
  readonly signal: AbortSignal;
  /** Where the upstream's progress goes, when the caller asked for it (a progress token) and the answer streams. */
  readonly progress?: ((update: ProgressUpdate) => void) | undefined;
}

/**
 * One `tools/call`, stage by stage: resolve the name (a tool the key may not use is the same
 * error as one that does not exist), check the arguments against the tool's schema, admit against
 * the key's and account's limits, invoke the upstream (bounded in time and size, cancelled with
 * the caller), then meter: one ledger row whatever happened, the metrics and the span.
 */
export async function callTool(deps: ToolCallDeps, ctx: CallContext, params: Record<string, unknown>): Promise<SerializedResult> {
  const observed = deps.telemetry.toolCall({ requestId: ctx.requestId, headers: ctx.headers, startedAt: ctx.startedAt });
  const name = params.name;
  const rawArgs = params.arguments;
  let server: string | null = null;
  let tool: string | null = null;
  let ledgerModel = typeof name === 'string' ? name.slice(0, MAX_LEDGER_NAME) : '';
  let entryId: string | undefined;
  let admitted: Admitted | undefined;
  let price: number | undefined;
  let charged = 0;
  let bytesIn: number | null = null;
  let bytesOut: number | null = null;
  let upstreamMs = 0;
  let status = 200;
  let errorKind: string | null = null;
  try {
    if (typeof name !== 'string' || name === '') throw invalidParams('`name` must be the name of a tool.', { field: 'name' });
    if (rawArgs !== undefined && (rawArgs === null || typeof rawArgs !== 'object' || Array.isArray(rawArgs))) throw invalidParams('`arguments` must be an object.', { field: 'arguments' });
    const args = (rawArgs ?? {}) as Record<string, unknown>;
    bytesIn = Buffer.byteLength(JSON.stringify(args), 'utf8');
    const found = await deps.directory.tool(ctx.access, ctx.endpoint, name);
    if (found === undefined) throw unknownTool(name, 404, 'unknown_tool');
    if ('down' in found) {
      server = found.down.id;
      throw new UpstreamMcpError('unavailable', `${server} is down`);
    }
    if ('denied' in found) {
      ledgerModel = `${found.denied.server}/${found.denied.tool}`;
      server = found.denied.server;
      throw unknownTool(name, 403, 'tool_not_permitted');
    }
    server = found.server.id;
    tool = found.tool.upstream.name;
    ledgerModel = `${server}/${tool}`;
    const fault = found.named.checks.check(found.tool.upstream, name, args);
    if (fault !== undefined) throw fault;
    price = found.server.config.price_per_call;
    admitted = await admit(deps, ctx.principal, price);
    entryId = deps.ledger.begin({ at: Date.now(), requestId: ctx.requestId, accountId: ctx.principal.accountId, keyId: ctx.principal.keyId, operation: TOOL_CALL_OPERATION, model: ledgerModel, providerId: server, stream: ctx.progress !== undefined });
    const { maxResultBytes, callTimeoutMs } = deps.settings();
    const invoked = performance.now();
    let result: CallToolResult;
    try {
      result = await found.server.callTool(tool, rawArgs === undefined ? undefined : args, { signal: ctx.signal, timeoutMs: callTimeoutMs, maxResultBytes, ...(ctx.progress === undefined ? {} : { onProgress: ctx.progress }) });
    } finally {
      upstreamMs = performance.now() - invoked;
    }
    charged = price ?? 0;
    if (ctx.endpoint === '') result = withCallerUris(server, result);
    const json = JSON.stringify(result);
    bytesOut = Buffer.byteLength(json, 'utf8');
    if (result.isError === true) errorKind = 'tool_error';
    return new SerializedResult(json);
  } catch (thrown) {
    const error = ctx.signal.aborted ? new McpError(REQUEST_CANCELLED, 'The request was cancelled.', CLIENT_CLOSED_REQUEST, 'client_closed') : toMcpError(thrown, server ?? '', deps.settings());
    status = error.status;
    errorKind = error.kind;
    throw error;
  } finally {
    admitted?.settle({ tokens: 0, costUsd: charged });
    deps.ledger.record({
      entryId: entryId ?? deps.ledger.nextEntryId(),
      at: Date.now(),
      requestId: ctx.requestId,
      accountId: ctx.principal.accountId,
      keyId: ctx.principal.keyId,
      operation: TOOL_CALL_OPERATION,
      model: ledgerModel,
      providerId: server,
      status,
      errorKind,
      stream: ctx.progress !== undefined,
      promptTokens: 0,
      completionTokens: 0,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      tokensCounted: false,
      latencyMs: performance.now() - ctx.startedAt,
      ttfbMs: null,
      costUsd: charged,
      unpriced: false,
      attempts: entryId === undefined ? 0 : 1,
      deployment: null,
      attemptLog: null,
      bytesIn,
      bytesOut,
    });
    // A denied tool is reported as unresolved, as an unknown one is: the metrics tell nothing the caller could not see.
    observed.end({ server: tool === null ? null : server, tool, status, errorKind, durationMs: performance.now() - ctx.startedAt, upstreamMs });
  }
}

async function admit(deps: ToolCallDeps, principal: Principal, price: number | undefined): Promise<Admitted> {
  try {
    return await deps.admission.admitCall(principal, { costUsd: price });
  } catch (error) {
    if (error instanceof GatewayError && (error.kind === 'rate_limited' || error.kind === 'budget_exhausted')) {
      throw new McpError(RATE_LIMITED, error.message, 429, error.kind, error.retryAfter === undefined ? undefined : { retryAfterSeconds: Number(error.retryAfter) });
    }
    throw error;
  }
}

/** The caller's error for a tool that does not exist or that the key may not use: one message for both. */
function unknownTool(name: string, status: number, kind: string): McpError {
  return new McpError(INVALID_PARAMS, `Unknown tool: ${name.length > MAX_LEDGER_NAME ? `${name.slice(0, MAX_LEDGER_NAME)}…` : name}`, status, kind);
}

/** An upstream's failure, or our own, as the caller's JSON-RPC error. */
export function toMcpError(thrown: unknown, server: string, settings: McpSettings): McpError {
  if (thrown instanceof McpError) return thrown;
  if (thrown instanceof UpstreamMcpError) {
    switch (thrown.kind) {
      case 'unavailable':
        return new McpError(UPSTREAM_UNAVAILABLE, `The MCP server ${server} is unavailable; try again shortly.`, 502, 'upstream_unavailable');
      case 'timeout':
        return new McpError(UPSTREAM_TIMEOUT, `The MCP server ${server} did not answer within ${settings.callTimeoutMs} ms (mcp.call_timeout_ms); the call was cancelled.`, 504, 'upstream_timeout');
      case 'too_large':
        return new McpError(RESULT_TOO_LARGE, `The MCP server ${server} answered with more than the ${settings.maxResultBytes} bytes this gateway passes on (mcp.max_result_bytes).`, 502, 'result_too_large');
      case 'cancelled':
        return new McpError(REQUEST_CANCELLED, 'The request was cancelled.', CLIENT_CLOSED_REQUEST, 'client_closed');
      case 'protocol': {
        // The upstream's own JSON-RPC error (its secrets redacted by the upstream layer): its code and words pass on.
        const code = thrown.code ?? -32603;
        const status = code === INVALID_PARAMS ? 400 : code === METHOD_NOT_FOUND ? 404 : 502;
        return new McpError(code, thrown.message, status, status === 502 ? 'upstream_error' : status === 400 ? 'invalid_params' : 'not_found', thrown.data);
      }
    }
  }
  if (thrown instanceof GatewayError) {
    return new McpError(-32603, thrown.message, thrown.status, thrown.kind);
  }
  return new McpError(-32603, 'The gateway failed to handle this request.', 500, 'internal_error');
}

/** On `/mcp`, resource URIs in a result are the caller's (`sluice-mcp://{server}/…`), so that a link can be read back through Sluice. */
function withCallerUris(server: string, result: CallToolResult): CallToolResult {
  if (!Array.isArray(result.content) || !result.content.some((block) => block.type === 'resource_link' || block.type === 'resource')) return result;
  return {
    ...result,
    content: result.content.map((block) => {
      if (block.type === 'resource_link') return { ...block, uri: callerUri(server, block.uri) };
      if (block.type === 'resource') return { ...block, resource: { ...block.resource, uri: callerUri(server, block.resource.uri) } };
      return block;
    }),
  };
}
