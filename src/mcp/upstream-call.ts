import { performance } from 'node:perf_hooks';
import type { McpSettings } from '../config/config-file.js';
import { mcpSecretValuesOf } from '../config/secret-values.js';
import { CLIENT_CLOSED_REQUEST, GatewayError } from '../core/errors.js';
import type { McpAccess } from '../core/mcp-access.js';
import type { Principal } from '../core/principal.js';
import { printableName } from '../core/tool-calls.js';
import type { Admitted } from '../generation/admission.js';
import type { LimitAdmission } from '../limits/limit-admission.js';
import type { McpCallMethod, Telemetry } from '../telemetry/telemetry.js';
import { NO_TOKENS, type UsageLedger } from '../usage/ledger.js';
import type { Endpoint, McpDirectory } from './directory.js';
import { ERROR_CODES, McpError, SerializedResult } from './jsonrpc.js';
import { UpstreamMcpError, type CallOptions, type ProgressUpdate, type UpstreamMcpServer } from './upstream/upstream-server.js';

/** The most of a name the caller sent that the ledger keeps when the name resolves to nothing. */
export const MAX_LEDGER_NAME = 128;

export interface UpstreamCallDeps {
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

/** What a method's resolve stage found: the server, what the ledger and metrics call the target, and how to call it. */
export interface Resolved<Result> {
  readonly server: UpstreamMcpServer;
  /** The ledger's `model` (sanitised by the runner). */
  readonly ledgerModel: string;
  /** The metrics' and span's tool name (printable, bounded), or null for a method without one. */
  readonly label: string | null;
  /** What the call is charged (`price_per_call`, for tool calls), or undefined: free, and not held to a budget. */
  readonly price: number | undefined;
  /** Checks run once the call is admitted (a tool's arguments): a fault refuses the call before it is sent. */
  check?(): McpError | undefined;
  invoke(options: CallOptions): Promise<Result>;
  /** The result as the caller sees it (its URIs the caller's); the runner serialises it once. */
  toCaller(result: Result): unknown;
}

/** The resolve stage's refusal: the caller's error, and what the ledger names the target. */
export class Unresolved extends Error {
  constructor(
    readonly error: McpError | UpstreamMcpError,
    readonly ledgerModel: string,
    readonly server: string | null,
  ) {
    super(error.message);
  }
}

/** One method that reaches an upstream server: its params, its target, its ledger operation. */
export interface UpstreamMethod<Params, Result> {
  readonly method: McpCallMethod;
  readonly operation: string;
  /** Parses the request's params (throws McpError naming the field). */
  parse(params: Record<string, unknown>): Params;
  /** The name the caller sent, for the ledger until it resolves. */
  nameOf(params: Params): string;
  /** The bytes the call sends upstream. */
  bytesIn(params: Params): number;
  /** Throws Unresolved (or McpError) when there is no such target for this key. */
  resolve(directory: McpDirectory, ctx: CallContext, params: Params): Promise<Resolved<Result>>;
}

/**
 * Every call that reaches an upstream server, stage by stage: parse the params, resolve the target
 * (a tool the key may not use is the same error as one that does not exist), admit against the
 * key's and account's limits (so a refused call costs nothing, and rpm and concurrency count every
 * call), check (a tool's arguments), invoke the upstream (bounded in time and size, cancelled with
 * the caller), write (serialised once, held to max_result_bytes exactly, the server's secrets
 * redacted), then meter: one ledger row whatever happened, the metrics and the span.
 *
 * Charging: `price_per_call` is charged once the call is known to have left for the upstream (it
 * may have run and cost the server's owner; CallOptions.onSent): on success, an isError result, a
 * timeout, a result too large, a cancellation after sending, an upstream error answer or the
 * upstream going away mid-call. A call refused before it was sent (unknown, denied, limited, bad
 * params or arguments, the server down, its connection refused) is not charged.
 */
export async function runUpstreamCall<Params, Result>(deps: UpstreamCallDeps, ctx: CallContext, method: UpstreamMethod<Params, Result>, rawParams: Record<string, unknown>): Promise<SerializedResult> {
  const observed = deps.telemetry.toolCall({ requestId: ctx.requestId, headers: ctx.headers, startedAt: ctx.startedAt, method: method.method });
  const settings = deps.settings();
  let server: UpstreamMcpServer | undefined;
  let serverId: string | null = null;
  let label: string | null = null;
  let ledgerModel = '';
  let entryId: string | undefined;
  let admitted: Admitted | undefined;
  let sent = false;
  let charged = 0;
  let bytesIn: number | null = null;
  let bytesOut: number | null = null;
  let upstreamMs = 0;
  let status = 200;
  let errorKind: string | null = null;
  try {
    const params = method.parse(rawParams);
    ledgerModel = printableName(method.nameOf(params), MAX_LEDGER_NAME);
    bytesIn = method.bytesIn(params);
    const resolved = await resolve(deps, ctx, method, params, (unresolved) => {
      ledgerModel = printableName(unresolved.ledgerModel, MAX_LEDGER_NAME * 2);
      serverId = unresolved.server;
    });
    server = resolved.server;
    serverId = server.id;
    label = resolved.label;
    ledgerModel = printableName(resolved.ledgerModel, MAX_LEDGER_NAME * 2);
    const price = resolved.price;
    admitted = await admit(deps, ctx.principal, price);
    const fault = resolved.check?.();
    if (fault !== undefined) throw fault;
    entryId = deps.ledger.begin({ at: Date.now(), requestId: ctx.requestId, accountId: ctx.principal.accountId, keyId: ctx.principal.keyId, operation: method.operation, model: ledgerModel, providerId: serverId, stream: ctx.progress !== undefined });
    const invoked = performance.now();
    let result: Result;
    try {
      result = await resolved.invoke({
        signal: withPlainReason(ctx.signal),
        timeoutMs: settings.callTimeoutMs,
        maxResultBytes: settings.maxResultBytes,
        ...(ctx.progress === undefined ? {} : { onProgress: ctx.progress }),
        onSent: () => {
          sent = true;
          charged = price ?? 0;
        },
      });
    } finally {
      upstreamMs = performance.now() - invoked;
    }
    // The write stage: one serialisation, measured exactly, the server's secrets taken out.
    const json = redactSecrets(JSON.stringify(resolved.toCaller(result)), server);
    bytesOut = Buffer.byteLength(json, 'utf8');
    if (bytesOut > settings.maxResultBytes) throw new UpstreamMcpError('too_large', 'the result is larger than max_result_bytes');
    if ((result as { isError?: unknown }).isError === true) errorKind = 'tool_error';
    return new SerializedResult(json);
  } catch (thrown) {
    const error = ctx.signal.aborted ? new McpError(ERROR_CODES.REQUEST_CANCELLED, 'The request was cancelled.', CLIENT_CLOSED_REQUEST, 'client_closed') : toMcpError(thrown, serverId ?? '', settings, sent, server);
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
      operation: method.operation,
      model: ledgerModel,
      providerId: serverId,
      status,
      errorKind,
      stream: ctx.progress !== undefined,
      ...NO_TOKENS,
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
    // A denied target is reported as unresolved, as an unknown one is: the metrics tell nothing the caller could not see.
    observed.end({ server: server === undefined ? null : serverId, tool: label, status, errorKind, durationMs: performance.now() - ctx.startedAt, upstreamMs });
  }
}

async function resolve<Params, Result>(deps: UpstreamCallDeps, ctx: CallContext, method: UpstreamMethod<Params, Result>, params: Params, onUnresolved: (unresolved: Unresolved) => void): Promise<Resolved<Result>> {
  try {
    return await method.resolve(deps.directory, ctx, params);
  } catch (error) {
    if (!(error instanceof Unresolved)) throw error;
    onUnresolved(error);
    throw error.error;
  }
}

async function admit(deps: UpstreamCallDeps, principal: Principal, price: number | undefined): Promise<Admitted> {
  try {
    return await deps.admission.admitCall(principal, { costUsd: price });
  } catch (error) {
    if (error instanceof GatewayError && (error.kind === 'rate_limited' || error.kind === 'budget_exhausted')) {
      throw new McpError(ERROR_CODES.RATE_LIMITED, error.message, 429, error.kind, error.retryAfter === undefined ? undefined : { retryAfterSeconds: Number(error.retryAfter) });
    }
    throw error;
  }
}

/** The caller's signal, aborting with a plain reason: the SDK sends the reason upstream as text (an Error would read `Error: …`). */
function withPlainReason(signal: AbortSignal): AbortSignal {
  const plain = new AbortController();
  if (signal.aborted) plain.abort('cancelled by the caller');
  else signal.addEventListener('abort', () => plain.abort('cancelled by the caller'), { once: true });
  return plain.signal;
}

const secretsByConfig = new WeakMap<object, readonly string[]>();

/** The server's secrets as they appear inside a JSON string, longest first (a secret holding a shorter one is not left half shown). */
function jsonSecretsOf(server: UpstreamMcpServer): readonly string[] {
  let secrets = secretsByConfig.get(server.config);
  if (secrets === undefined) {
    secrets = mcpSecretValuesOf(server.config)
      .map((secret) => JSON.stringify(secret).slice(1, -1))
      .sort((a, b) => b.length - a.length);
    secretsByConfig.set(server.config, secrets);
  }
  return secrets;
}

/** A hostile or careless upstream echoing its own credentials: they never reach the caller. One scan per secret; a copy only when one occurs. */
export function redactSecrets(text: string, server: UpstreamMcpServer | undefined): string {
  if (server === undefined) return text;
  let out = text;
  for (const secret of jsonSecretsOf(server)) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  return out;
}

/** The SDK's client prefixes an error's message with `MCP error <code>: `, and an upstream built on the SDK does too: once or twice. */
const SDK_PREFIX = /^(?:MCP error -?\d+: )+/;

/** An upstream's failure, or our own, as the caller's JSON-RPC error: the one mapping, at the runner's edge. */
export function toMcpError(thrown: unknown, serverId: string, settings: McpSettings, sent = false, server?: UpstreamMcpServer): McpError {
  if (thrown instanceof McpError) return thrown;
  if (thrown instanceof UpstreamMcpError) {
    switch (thrown.kind) {
      case 'unavailable':
        if (sent) return new McpError(ERROR_CODES.UPSTREAM_INTERRUPTED, `The connection to the MCP server ${serverId} was lost after the call was sent: it may have run. Check before calling it again.`, 502, 'upstream_interrupted');
        return new McpError(ERROR_CODES.UPSTREAM_UNAVAILABLE, `The MCP server ${serverId} is unavailable; the call was not sent. Try again shortly.`, 502, 'upstream_unavailable');
      case 'timeout':
        return new McpError(ERROR_CODES.UPSTREAM_TIMEOUT, `The MCP server ${serverId} did not answer within ${settings.callTimeoutMs} ms (mcp.call_timeout_ms); the call was cancelled.`, 504, 'upstream_timeout');
      case 'too_large':
        return new McpError(ERROR_CODES.RESULT_TOO_LARGE, `The MCP server ${serverId} answered with more than the ${settings.maxResultBytes} bytes this gateway passes on (mcp.max_result_bytes).`, 502, 'result_too_large');
      case 'cancelled':
        return new McpError(ERROR_CODES.REQUEST_CANCELLED, 'The request was cancelled.', CLIENT_CLOSED_REQUEST, 'client_closed');
      case 'protocol': {
        // The upstream's own JSON-RPC error: its code and words pass on, without the SDK's prefixes or the server's secrets.
        const code = thrown.code ?? ERROR_CODES.INTERNAL_ERROR;
        const status = code === ERROR_CODES.INVALID_PARAMS ? 400 : code === ERROR_CODES.METHOD_NOT_FOUND || code === ERROR_CODES.RESOURCE_NOT_FOUND ? 404 : 502;
        const message = JSON.parse(redactSecrets(JSON.stringify(thrown.message.replace(SDK_PREFIX, '')), server)) as string;
        const data = thrown.data === undefined ? undefined : JSON.parse(redactSecrets(JSON.stringify(thrown.data) ?? 'null', server));
        return new McpError(code, message, status, status === 502 ? 'upstream_error' : status === 400 ? 'invalid_params' : 'not_found', data);
      }
    }
  }
  if (thrown instanceof GatewayError) return new McpError(ERROR_CODES.INTERNAL_ERROR, thrown.message, thrown.status, thrown.kind);
  return new McpError(ERROR_CODES.INTERNAL_ERROR, 'The gateway failed to handle this request.', 500, 'internal_error');
}
