import type { Logger } from 'pino';
import type { Authenticator } from '../../auth/authenticator.js';
import { GatewayError } from '../../core/errors.js';
import { McpAccess } from '../../core/mcp-access.js';
import type { Principal } from '../../core/principal.js';
import { errorMessage, FORBIDDEN, INVALID_REQUEST, McpError, METHOD_NOT_FOUND, notificationMessage, PARSE_ERROR, parseMessage, resultMessage, TRANSPORT_ERROR, UNAUTHORIZED, type JsonRpcMessage, type JsonRpcRequest } from '../../mcp/jsonrpc.js';
import { allowsBatches, ASSUMED_PROTOCOL_VERSION, PROTOCOL_VERSIONS, type McpService } from '../../mcp/mcp-service.js';
import type { McpSession } from '../../mcp/session-token.js';
import type { CallContext } from '../../mcp/tool-call.js';
import { readJsonBody } from '../body.js';
import type { Handler, RequestContext } from '../handler.js';

/** The MCP endpoints: `/mcp`, every server the key may use as one; `/mcp/{server}`, one alone. */
export const MCP_PATH = '/mcp';
export const MCP_SERVER_PREFIX = '/mcp/';
export const MCP_METHODS = ['POST', 'GET', 'DELETE'] as const;

export interface McpRouteDeps {
  readonly authenticator: Authenticator;
  readonly mcp: McpService;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
}

/** How often the GET stream says it is alive (an SSE comment), so that proxies keep it open. */
const KEEPALIVE_MS = 15_000;

/** The most messages one batch may hold: one HTTP request must not fan out into unbounded upstream calls. */
const MAX_BATCH = 100;

/** Methods Sluice answers within a session: a request without one for any other method is told it does not exist. */
const KNOWN_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get']);

/**
 * The Streamable HTTP transport (every revision the SDK speaks, 2024-11-05 to 2025-11-25), over
 * signed, self-contained sessions (mcp/session-token.ts) so that any worker or replica takes any
 * request: POST carries the client's messages (answered as JSON, or as an SSE stream when a call
 * asks for progress), GET opens the stream of list-changed notifications, DELETE ends the
 * session. Every request is authenticated with a Sluice key, so a key disabled mid-session is
 * refused at its next request.
 */
export function mcpRoute(deps: McpRouteDeps): Handler {
  return async (ctx) => {
    const exchange = new Exchange(ctx);
    try {
      const principal = await authenticate(deps.authenticator, ctx);
      const access = McpAccess.of(principal.keyLimits, principal.accountLimits);
      const endpoint = endpointOf(deps.mcp, ctx.path, access);
      switch (ctx.req.method) {
        case 'POST':
          return await post(deps, exchange, principal, access, endpoint);
        case 'GET':
          return getStream(deps, exchange, principal, access, endpoint, () => authenticate(deps.authenticator, ctx));
        case 'DELETE':
          return end(deps, exchange, principal, endpoint);
        default:
          throw new Refusal(405, TRANSPORT_ERROR, `${ctx.req.method} is not allowed on ${ctx.path}: use POST, GET or DELETE.`, { allow: MCP_METHODS.join(', ') });
      }
    } catch (thrown) {
      exchange.refuse(thrown, deps.logger);
    }
  };
}

/** A refusal of the whole HTTP request: its status, and a JSON-RPC error body with `id: null`. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly id: string | number | null = null,
  ) {
    super(message);
  }
}

async function authenticate(authenticator: Authenticator, ctx: RequestContext): Promise<Principal> {
  const header = ctx.req.headers.authorization;
  const secret = typeof header === 'string' && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined;
  try {
    return await authenticator.authenticate(secret);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    if (error.status === 401) throw new Refusal(401, UNAUTHORIZED, error.kind === 'missing_api_key' ? 'Send a Sluice API key as `Authorization: Bearer <key>`.' : 'Incorrect API key provided.', { 'www-authenticate': 'Bearer realm="sluice"' });
    if (error.status === 403) throw new Refusal(403, FORBIDDEN, error.message);
    throw new Refusal(error.status, -32603, error.message);
  }
}

/** `''` for `/mcp`; the server's id, lower-cased, for `/mcp/{server}` (404 alike for a server that does not exist and one the key may not use). */
function endpointOf(mcp: McpService, path: string, access: McpAccess): string {
  if (path === MCP_PATH) return '';
  let id: string;
  try {
    id = decodeURIComponent(path.slice(MCP_SERVER_PREFIX.length));
  } catch {
    id = '';
  }
  const server = id === '' || id.includes('/') ? undefined : mcp.directory.server(id);
  if (server === undefined || !access.allowsServer(server.id)) throw new Refusal(404, TRANSPORT_ERROR, `There is no MCP server at ${path} for this key.`);
  return server.id.toLowerCase();
}

/** The session a request names, or why it cannot go on: 400 without one, 404 for one that is unknown, ended, expired or another key's. */
function sessionOf(deps: McpRouteDeps, exchange: Exchange, principal: Principal, endpoint: string): McpSession {
  const header = exchange.ctx.req.headers['mcp-session-id'];
  if (typeof header !== 'string' || header === '') throw new Refusal(400, TRANSPORT_ERROR, 'Bad Request: the Mcp-Session-Id header is required; send initialize first.');
  const checked = deps.mcp.session(header, principal.keyId, endpoint);
  if (!checked.ok) throw new Refusal(404, TRANSPORT_ERROR, 'Session not found: it ended or expired; send initialize again.');
  return checked.session;
}

/** The revision a request speaks: its `MCP-Protocol-Version`, or 2025-03-26 without one. */
function protocolVersionOf(exchange: Exchange): string {
  const header = exchange.ctx.req.headers['mcp-protocol-version'];
  if (header === undefined) return ASSUMED_PROTOCOL_VERSION;
  if (typeof header !== 'string' || !PROTOCOL_VERSIONS.includes(header)) {
    throw new Refusal(400, TRANSPORT_ERROR, `Bad Request: unsupported MCP-Protocol-Version ${String(header).slice(0, 40)} (supported: ${PROTOCOL_VERSIONS.join(', ')}).`);
  }
  return header;
}

async function post(deps: McpRouteDeps, exchange: Exchange, principal: Principal, access: McpAccess, endpoint: string): Promise<void> {
  const { ctx } = exchange;
  let body: unknown;
  try {
    body = await readJsonBody(ctx.req, deps.maxBodyBytes);
  } catch (error) {
    if (error instanceof GatewayError && error.kind === 'payload_too_large') throw new Refusal(413, INVALID_REQUEST, error.message);
    if (error instanceof GatewayError) throw new Refusal(400, error.kind === 'invalid_json' ? PARSE_ERROR : INVALID_REQUEST, error.message);
    throw error;
  }
  const batch = Array.isArray(body);
  const raw: unknown[] = batch ? (body as unknown[]) : [body];
  if (raw.length === 0) throw new Refusal(400, INVALID_REQUEST, 'An empty batch holds no message.');
  if (raw.length > MAX_BATCH) throw new Refusal(400, INVALID_REQUEST, `A batch holds at most ${MAX_BATCH} messages.`);
  const parsed = raw.map(parseMessage);
  const invalid = parsed.find((message): message is McpError => message instanceof McpError);
  if (invalid !== undefined && !batch) throw new Refusal(400, invalid.code, invalid.message);
  const messages = parsed.filter((message): message is JsonRpcMessage => !(message instanceof McpError));
  const initialize = messages.find((message): message is JsonRpcRequest => message.kind === 'request' && message.method === 'initialize');
  if (initialize !== undefined) {
    if (batch) throw new Refusal(400, INVALID_REQUEST, 'initialize must be sent alone, not in a batch.');
    try {
      const { token, result } = deps.mcp.initialize(principal.keyId, endpoint, initialize.params);
      exchange.json(200, resultMessage(initialize.id, result), { 'mcp-session-id': token });
    } catch (error) {
      if (!(error instanceof McpError)) throw error;
      exchange.json(400, errorMessage(initialize.id, error));
    }
    return;
  }
  const session = headerSession(deps, exchange, principal, endpoint, messages);
  const version = protocolVersionOf(exchange);
  if (batch && !allowsBatches(version)) throw new Refusal(400, INVALID_REQUEST, `JSON-RPC batches are not part of MCP ${version}; send one message per request.`);
  const requests: JsonRpcRequest[] = [];
  for (const message of messages) {
    if (message.kind === 'request') requests.push(message);
    else if (message.kind === 'notification' && message.method === 'notifications/cancelled') {
      const id = message.params.requestId;
      if (typeof id === 'string' || typeof id === 'number') deps.mcp.cancel(session, id);
    }
    // notifications/initialized, progress, roots/list_changed, and any response to us: nothing to do.
  }
  // Invalid messages of a batch are answered in it, with `id: null`.
  const refusedInBatch = parsed.filter((message): message is McpError => message instanceof McpError);
  if (requests.length === 0 && refusedInBatch.length === 0) {
    exchange.accepted();
    return;
  }
  const streams = exchange.acceptsStream() && (!exchange.acceptsJson() || requests.some(wantsProgress));
  const answers = new Answers(exchange, streams, batch);
  for (const refused of refusedInBatch) answers.add(errorMessage(null, refused));
  // The caller going away cancels what it asked, as a cancellation would.
  const { res } = exchange.ctx;
  const onClose = () => {
    if (!res.writableFinished) for (const request of requests) deps.mcp.cancel(session, request.id);
  };
  res.once('close', onClose);
  try {
    await Promise.all(requests.map((request) => answer(deps, exchange, answers, { principal, access, endpoint, session }, request)));
  } finally {
    res.off('close', onClose);
  }
  answers.finish();
}

/** The session of a request other than initialize; a session-less request for a method Sluice does not know (a newer revision's probe) is told so. */
function headerSession(deps: McpRouteDeps, exchange: Exchange, principal: Principal, endpoint: string, messages: readonly JsonRpcMessage[]): McpSession {
  const header = exchange.ctx.req.headers['mcp-session-id'];
  if (header === undefined && messages.length === 1) {
    const only = messages[0]!;
    // The OpenAI Agents SDK probes with `server/discover` before initialize: method-not-found makes it fall back.
    if (only.kind === 'request' && !KNOWN_METHODS.has(only.method)) {
      throw new Refusal(404, METHOD_NOT_FOUND, `Method not found: ${only.method.slice(0, 100)}`, {}, only.id);
    }
  }
  return sessionOf(deps, exchange, principal, endpoint);
}

function wantsProgress(request: JsonRpcRequest): boolean {
  const meta = request.params._meta;
  return request.method === 'tools/call' && meta !== null && typeof meta === 'object' && (meta as { progressToken?: unknown }).progressToken !== undefined;
}

interface Caller {
  readonly principal: Principal;
  readonly access: McpAccess;
  readonly endpoint: string;
  readonly session: McpSession;
}

async function answer(deps: McpRouteDeps, exchange: Exchange, answers: Answers, caller: Caller, request: JsonRpcRequest): Promise<void> {
  const tracked = deps.mcp.track(caller.session, request.id);
  const token = (request.params._meta as { progressToken?: unknown } | undefined)?.progressToken;
  const progress =
    answers.streams && (typeof token === 'string' || typeof token === 'number')
      ? (update: { progress: number; total?: number; message?: string }) => answers.add(notificationMessage('notifications/progress', { progressToken: token, ...update }))
      : undefined;
  const ctx: CallContext = {
    principal: caller.principal,
    access: caller.access,
    endpoint: caller.endpoint,
    requestId: exchange.ctx.requestId,
    headers: exchange.ctx.req.headers,
    startedAt: exchange.ctx.startedAt,
    signal: tracked.signal,
    progress,
  };
  try {
    answers.add(resultMessage(request.id, await deps.mcp.handle(ctx, request)));
  } catch (error) {
    const refused = error instanceof McpError ? error : new McpError(-32603, 'The gateway failed to handle this request.', 500, 'internal_error');
    if (!(error instanceof McpError)) deps.logger.warn({ requestId: exchange.ctx.requestId, err: error }, 'an MCP request failed');
    answers.add(errorMessage(request.id, refused));
  } finally {
    tracked.done();
  }
}

/**
 * The answers to one POST's requests: gathered and sent as one JSON body (an array for a batch),
 * or written to an SSE stream as they come (progress first, each response when ready).
 */
class Answers {
  private readonly gathered: string[] = [];

  constructor(
    private readonly exchange: Exchange,
    readonly streams: boolean,
    private readonly batch: boolean,
  ) {
    if (streams) exchange.openStream();
  }

  add(message: string): void {
    if (this.streams) this.exchange.event(message);
    else this.gathered.push(message);
  }

  finish(): void {
    if (this.streams) {
      this.exchange.endStream();
      return;
    }
    const body = this.batch ? `[${this.gathered.join(',')}]` : this.gathered[0]!;
    this.exchange.json(200, body);
  }
}

/** The GET stream, open until the client leaves, the session ends, or (checked at each keep-alive) the key is no longer good. */
function getStream(deps: McpRouteDeps, exchange: Exchange, principal: Principal, access: McpAccess, endpoint: string, stillAuthenticated: () => Promise<Principal>): void {
  const session = sessionOf(deps, exchange, principal, endpoint);
  protocolVersionOf(exchange);
  if (!exchange.acceptsStream()) throw new Refusal(406, TRANSPORT_ERROR, 'Not Acceptable: the GET stream is text/event-stream; send Accept: text/event-stream.');
  exchange.openStream();
  const { res } = exchange.ctx;
  // Comments keep proxies from closing a quiet stream; the first tells the client the stream is open.
  res.write(': open\n\n');
  const keepalive = setInterval(() => {
    stillAuthenticated().then(
      () => res.write(': keepalive\n\n'),
      () => res.end(),
    );
  }, KEEPALIVE_MS);
  keepalive.unref();
  const stop = deps.mcp.listen({
    session: session.id,
    endpoint,
    access,
    send: (message) => exchange.event(message),
    close: () => res.end(),
  });
  res.once('close', () => {
    clearInterval(keepalive);
    stop();
  });
}

function end(deps: McpRouteDeps, exchange: Exchange, principal: Principal, endpoint: string): void {
  const session = sessionOf(deps, exchange, principal, endpoint);
  deps.mcp.end(session);
  exchange.ctx.res.writeHead(200).end();
}

/** One HTTP exchange: what the client accepts, and the ways of answering it. */
class Exchange {
  constructor(readonly ctx: RequestContext) {}

  acceptsStream(): boolean {
    return /text\/event-stream|\*\/\*/i.test(this.ctx.req.headers.accept ?? '');
  }

  acceptsJson(): boolean {
    const accept = this.ctx.req.headers.accept;
    return accept === undefined || accept === '' || /application\/json|application\/\*|\*\/\*/i.test(accept);
  }

  json(status: number, body: string, headers: Readonly<Record<string, string>> = {}): void {
    this.ctx.res.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(body);
  }

  accepted(): void {
    this.ctx.res.writeHead(202).end();
  }

  openStream(): void {
    this.ctx.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    this.ctx.res.flushHeaders();
  }

  event(message: string): void {
    if (!this.ctx.res.writableEnded) this.ctx.res.write(`event: message\ndata: ${message}\n\n`);
  }

  endStream(): void {
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
  }

  refuse(thrown: unknown, logger: Logger): void {
    const { res } = this.ctx;
    const refusal = thrown instanceof Refusal ? thrown : new Refusal(500, -32603, 'The gateway failed to handle this request.');
    if (!(thrown instanceof Refusal)) logger.warn({ requestId: this.ctx.requestId, err: thrown }, 'an MCP request failed');
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    this.json(refusal.status, errorMessage(refusal.id, new McpError(refusal.code, refusal.message, refusal.status, 'refused')), refusal.headers);
  }
}
