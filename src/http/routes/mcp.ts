import type { Logger } from 'pino';
import type { Authenticator } from '../../auth/authenticator.js';
import { GatewayError } from '../../core/errors.js';
import { McpAccess } from '../../core/mcp-access.js';
import type { Principal } from '../../core/principal.js';
import { errorMessage, FORBIDDEN, INVALID_REQUEST, McpError, METHOD_NOT_FOUND, notificationMessage, PARSE_ERROR, parseMessage, RATE_LIMITED, resultMessage, TRANSPORT_ERROR, UNAUTHORIZED, type JsonRpcMessage, type JsonRpcRequest, type RequestId } from '../../mcp/jsonrpc.js';
import { allowsBatches, PROTOCOL_VERSIONS, type McpService } from '../../mcp/mcp-service.js';
import type { McpSession } from '../../mcp/session-token.js';
import type { CallContext } from '../../mcp/upstream-call.js';
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
  /** How often the GET stream says it is alive and re-checks the key (tests shorten it). */
  readonly keepAliveMs?: number;
}

/** How often the GET stream says it is alive (an SSE comment), so that proxies keep it open. */
const KEEPALIVE_MS = 15_000;

/** The most messages one batch may hold: one HTTP request must not fan out into unbounded upstream calls. */
const MAX_BATCH = 100;

/** GET streams one session may hold open on one worker: the SDK's client keeps one, a reconnecting one briefly two. */
export const MAX_STREAMS_PER_SESSION = 2;
/** GET streams one key may hold open on one worker, across its sessions: each is a socket and a re-authentication every keep-alive. */
export const MAX_STREAMS_PER_KEY = 32;

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
  const streams = new StreamCounts();
  const keepAliveMs = deps.keepAliveMs ?? keepAliveFromEnvironment() ?? KEEPALIVE_MS;
  return async (ctx) => {
    const exchange = new Exchange(ctx, deps.logger);
    try {
      const principal = await authenticate(deps.authenticator, ctx);
      const access = McpAccess.of(principal.keyLimits, principal.accountLimits);
      const endpoint = endpointOf(deps.mcp, normalisedPath(ctx.path), access);
      switch (ctx.req.method) {
        case 'POST':
          return await post(deps, exchange, principal, access, endpoint);
        case 'GET':
          return getStream(deps, exchange, { principal, access, endpoint, streams, keepAliveMs }, () => authenticate(deps.authenticator, ctx));
        case 'DELETE':
          return await end(deps, exchange, principal, endpoint);
        default:
          throw new Refusal(405, TRANSPORT_ERROR, `${ctx.req.method} is not allowed on ${ctx.path}: use POST, GET or DELETE.`, { allow: MCP_METHODS.join(', ') });
      }
    } catch (thrown) {
      exchange.refuse(thrown);
    }
  };
}

/** An internal setting for tests (not documented): the keep-alive interval in ms. */
function keepAliveFromEnvironment(): number | undefined {
  const value = Number(process.env.SLUICE_MCP_KEEPALIVE_MS);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** `/mcp/` is `/mcp` and `/mcp/web/` is `/mcp/web`: clients given a base URL with a trailing slash keep it. */
function normalisedPath(path: string): string {
  return path.length > MCP_PATH.length && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** A refusal of the whole HTTP request: its status, and a JSON-RPC error body with `id: null`. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly id: RequestId | null = null,
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
  if (server === undefined || !access.allowsServer(server.id)) throw new Refusal(404, TRANSPORT_ERROR, `There is no MCP server at ${path.slice(0, 200)} for this key.`);
  return server.id.toLowerCase();
}

/** The session a request names, or why it cannot go on: 400 without one, 404 for one that is unknown, ended, expired or another key's. */
function sessionOf(deps: McpRouteDeps, exchange: Exchange, principal: Principal, endpoint: string): McpSession {
  const header = exchange.ctx.req.headers['mcp-session-id'];
  if (typeof header !== 'string' || header === '') {
    // The older HTTP+SSE transport opens with a session-less GET and waits for an `endpoint` event that never comes here.
    if (exchange.ctx.req.method === 'GET') throw new Refusal(400, TRANSPORT_ERROR, 'Bad Request: Sluice serves MCP over the Streamable HTTP transport only, not the older HTTP+SSE transport: POST initialize to this URL, then GET with its Mcp-Session-Id for notifications.');
    throw new Refusal(400, TRANSPORT_ERROR, 'Bad Request: the Mcp-Session-Id header is required; send initialize first.');
  }
  const checked = deps.mcp.session(header, principal.keyId, endpoint);
  if (!checked.ok) throw new Refusal(404, TRANSPORT_ERROR, 'Session not found: it ended or expired; send initialize again.');
  return checked.session;
}

/**
 * The revision a request speaks: the session's, negotiated at initialize and carried in the signed
 * session. A request naming another (or one Sluice does not speak) is refused; one naming none is
 * taken to speak the session's (clients of 2024-11-05 send none).
 */
function checkProtocolVersion(exchange: Exchange, session: McpSession): string {
  const header = exchange.ctx.req.headers['mcp-protocol-version'];
  if (header === undefined) return session.protocolVersion;
  if (typeof header !== 'string' || !PROTOCOL_VERSIONS.includes(header)) {
    throw new Refusal(400, TRANSPORT_ERROR, `Bad Request: unsupported MCP-Protocol-Version ${String(header).slice(0, 40)} (supported: ${PROTOCOL_VERSIONS.join(', ')}).`);
  }
  if (header !== session.protocolVersion) throw new Refusal(400, TRANSPORT_ERROR, `Bad Request: MCP-Protocol-Version ${header} is not the revision this session negotiated (${session.protocolVersion}).`);
  return header;
}

/** What a POST must carry before its body is read: JSON (415 otherwise), to a client that accepts JSON or SSE (406 otherwise). */
function checkPostHeaders(exchange: Exchange): void {
  const { headers } = exchange.ctx.req;
  const type = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new Refusal(415, TRANSPORT_ERROR, 'Unsupported Media Type: MCP messages are posted as Content-Type: application/json.');
  const accept = headers.accept;
  if (accept !== undefined && accept.trim() !== '' && !/application\/json|text\/event-stream|application\/\*|text\/\*|\*\/\*/i.test(accept)) {
    throw new Refusal(406, TRANSPORT_ERROR, 'Not Acceptable: the answers are application/json or text/event-stream; send Accept: application/json, text/event-stream.');
  }
}

/** A request id as a key: a number and a string of the same digits are different ids. */
function idKey(id: RequestId): string {
  return `${typeof id}\u0000${id}`;
}

async function post(deps: McpRouteDeps, exchange: Exchange, principal: Principal, access: McpAccess, endpoint: string): Promise<void> {
  const { ctx } = exchange;
  checkPostHeaders(exchange);
  let body: unknown;
  exchange.bodyRead = true;
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
  const parsed = raw.map((value) => {
    const message = parseMessage(value);
    // A number past 2^53 was rounded when read: answering it would name another id.
    if (!(message instanceof McpError) && message.kind === 'request' && typeof message.id === 'number' && !Number.isSafeInteger(message.id) && Number.isInteger(message.id)) {
      return new McpError(INVALID_REQUEST, 'A numeric `id` must be an integer of at most 2^53 - 1 (send a larger one as a string).', 400, 'invalid_request');
    }
    return message;
  });
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
  checkProtocolVersion(exchange, session);
  // Whether batches are allowed is the session's revision's rule, not a header the client may change.
  if (batch && !allowsBatches(session.protocolVersion)) throw new Refusal(400, INVALID_REQUEST, `JSON-RPC batches are not part of MCP ${session.protocolVersion}; send one message per request.`);
  // Every request of a batch whose id another also has is refused, the first too: none of them runs, so no answer is ambiguous.
  const idCounts = new Map<string, number>();
  for (const message of messages) if (message.kind === 'request') idCounts.set(idKey(message.id), (idCounts.get(idKey(message.id)) ?? 0) + 1);
  const requests: JsonRpcRequest[] = [];
  const duplicates: JsonRpcRequest[] = [];
  for (const message of messages) {
    if (message.kind === 'request') {
      if (idCounts.get(idKey(message.id))! > 1) duplicates.push(message);
      else requests.push(message);
    } else if (message.kind === 'notification' && message.method === 'notifications/cancelled') {
      const id = message.params.requestId;
      if (typeof id === 'string' || typeof id === 'number') deps.mcp.cancel(session, id);
    }
    // notifications/initialized, progress, roots/list_changed, and any response to us: nothing to do.
  }
  // Invalid messages of a batch are answered in it, with `id: null`.
  const refusedInBatch = parsed.filter((message): message is McpError => message instanceof McpError);
  if (requests.length === 0 && duplicates.length === 0 && refusedInBatch.length === 0) {
    exchange.accepted();
    return;
  }
  const streams = exchange.acceptsStream() && (!exchange.acceptsJson() || requests.some(wantsProgress));
  const answers = new Answers(exchange, streams, batch);
  for (const refused of refusedInBatch) answers.add(errorMessage(null, refused));
  for (const duplicate of duplicates) answers.add(errorMessage(duplicate.id, duplicateId(duplicate.id, 'appears twice in this batch')));
  // The caller going away cancels what it asked and is still running, as a cancellation would.
  const running = new Map<string, RequestId>();
  const { res } = exchange.ctx;
  const onClose = () => {
    if (!res.writableFinished) for (const id of running.values()) deps.mcp.cancel(session, id);
  };
  res.once('close', onClose);
  try {
    await Promise.all(requests.map((request) => answer(deps, exchange, answers, { principal, access, endpoint, session, running }, request)));
  } finally {
    res.off('close', onClose);
  }
  answers.finish();
}

function duplicateId(id: RequestId, why: string): McpError {
  return new McpError(INVALID_REQUEST, `Invalid request: the id ${JSON.stringify(id).slice(0, 100)} ${why}; each request needs an id of its own until it is answered.`, 400, 'invalid_request');
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

function progressTokenOf(request: JsonRpcRequest): string | number | undefined {
  const meta = request.params._meta;
  if (request.method !== 'tools/call' || meta === null || typeof meta !== 'object') return undefined;
  const token = (meta as { progressToken?: unknown }).progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

function wantsProgress(request: JsonRpcRequest): boolean {
  return progressTokenOf(request) !== undefined;
}

interface Caller {
  readonly principal: Principal;
  readonly access: McpAccess;
  readonly endpoint: string;
  readonly session: McpSession;
  /** This POST's requests still running, by id key: what the caller leaving cancels. */
  readonly running: Map<string, RequestId>;
}

async function answer(deps: McpRouteDeps, exchange: Exchange, answers: Answers, caller: Caller, request: JsonRpcRequest): Promise<void> {
  const tracked = deps.mcp.track(caller.session, request.id);
  if (tracked === undefined) {
    answers.add(errorMessage(request.id, duplicateId(request.id, 'is already in flight in this session')));
    return;
  }
  const key = idKey(request.id);
  caller.running.set(key, request.id);
  const token = progressTokenOf(request);
  const progressKey = token === undefined ? undefined : idKey(token);
  const progress =
    answers.streams && token !== undefined
      ? (update: { progress: number; total?: number; message?: string }) => answers.progress(progressKey!, notificationMessage('notifications/progress', { progressToken: token, ...update }))
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
    const result = await deps.mcp.handle(ctx, request);
    answers.add(resultMessage(request.id, result), progressKey);
  } catch (error) {
    const refused = error instanceof McpError ? error : new McpError(-32603, 'The gateway failed to handle this request.', 500, 'internal_error');
    if (!(error instanceof McpError)) deps.logger.warn({ requestId: exchange.ctx.requestId, err: error }, 'an MCP request failed');
    answers.add(errorMessage(request.id, refused), progressKey);
  } finally {
    caller.running.delete(key);
    tracked.done();
  }
}

/**
 * The answers to one POST's requests: gathered and sent as one JSON body (an array for a batch),
 * or written to an SSE stream as they come (progress first, each response when ready).
 *
 * A reader slower than the upstream's progress must not make the gateway hold every update: while
 * the socket asks to drain, only the latest update of each progress token waits (a batch has at
 * most MAX_BATCH tokens), written when it drains. Responses are never dropped: each is bounded by
 * `mcp.max_result_bytes` and there are at most MAX_BATCH of them, so what one exchange holds is
 * bounded too.
 */
class Answers {
  private readonly gathered: string[] = [];
  /** The latest progress update of each token, waiting for the socket to drain (in first-waiting order). */
  private readonly waiting = new Map<string, string>();
  private drainAwaited = false;

  constructor(
    private readonly exchange: Exchange,
    readonly streams: boolean,
    private readonly batch: boolean,
  ) {
    if (streams) exchange.openStream();
  }

  /** A progress update: written now, or (the socket being full) kept as its token's latest. */
  progress(tokenKey: string, message: string): void {
    if (!this.streams) return;
    if (this.waiting.size > 0 || this.exchange.congested()) {
      this.waiting.set(tokenKey, message);
      this.awaitDrain();
      return;
    }
    this.exchange.event(message);
  }

  /** A response (never dropped); any progress of its token still waiting is now stale and goes. */
  add(message: string, tokenKey?: string): void {
    if (tokenKey !== undefined) this.waiting.delete(tokenKey);
    if (this.streams) this.exchange.event(message);
    else this.gathered.push(message);
  }

  /** Bytes of progress waiting for the socket (for tests and the bound above). */
  get waitingBytes(): number {
    let bytes = 0;
    for (const message of this.waiting.values()) bytes += message.length;
    return bytes;
  }

  finish(): void {
    if (this.streams) {
      // Every request has been answered, so no progress is left waiting.
      this.waiting.clear();
      this.exchange.endStream();
      return;
    }
    const body = this.batch ? `[${this.gathered.join(',')}]` : this.gathered[0]!;
    this.exchange.json(200, body);
  }

  private awaitDrain(): void {
    if (this.drainAwaited || !this.exchange.writable) return;
    this.drainAwaited = true;
    this.exchange.ctx.res.once('drain', () => {
      this.drainAwaited = false;
      this.flush();
    });
  }

  private flush(): void {
    for (const [tokenKey, message] of this.waiting) {
      if (this.exchange.congested()) break;
      this.waiting.delete(tokenKey);
      this.exchange.event(message);
    }
    if (this.waiting.size > 0) this.awaitDrain();
  }
}

/** GET streams open on this worker, by session and by key: what MAX_STREAMS_PER_SESSION and MAX_STREAMS_PER_KEY bound. */
class StreamCounts {
  private readonly bySession = new Map<string, number>();
  private readonly byKey = new Map<string, number>();

  /** The stream's release, or undefined when the session or the key has as many as it may. */
  open(session: string, keyId: string): (() => void) | undefined {
    const ofSession = this.bySession.get(session) ?? 0;
    const ofKey = this.byKey.get(keyId) ?? 0;
    if (ofSession >= MAX_STREAMS_PER_SESSION || ofKey >= MAX_STREAMS_PER_KEY) return undefined;
    this.bySession.set(session, ofSession + 1);
    this.byKey.set(keyId, ofKey + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.bySession, session);
      decrement(this.byKey, keyId);
    };
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}

interface StreamCaller {
  readonly principal: Principal;
  readonly access: McpAccess;
  readonly endpoint: string;
  readonly streams: StreamCounts;
  readonly keepAliveMs: number;
}

/** The GET stream, open until the client leaves, the session ends, or (checked at each keep-alive) the key is no longer good. */
function getStream(deps: McpRouteDeps, exchange: Exchange, caller: StreamCaller, stillAuthenticated: () => Promise<Principal>): void {
  const session = sessionOf(deps, exchange, caller.principal, caller.endpoint);
  checkProtocolVersion(exchange, session);
  if (!exchange.acceptsStream()) throw new Refusal(406, TRANSPORT_ERROR, 'Not Acceptable: the GET stream is text/event-stream; send Accept: text/event-stream.');
  const release = caller.streams.open(session.id, caller.principal.keyId);
  if (release === undefined) {
    throw new Refusal(429, RATE_LIMITED, `Too many GET streams: at most ${MAX_STREAMS_PER_SESSION} per session and ${MAX_STREAMS_PER_KEY} per key are kept open; close one first.`);
  }
  exchange.openStream();
  const { res } = exchange.ctx;
  let ended = false;
  let keepalive: NodeJS.Timeout | undefined;
  let stop: () => void = () => undefined;
  const waiting = new Set<string>();
  const flushWaiting = () => {
    const messages = [...waiting];
    waiting.clear();
    if (!ended) for (const message of messages) exchange.event(message);
  };
  // However the stream ends (client gone, DELETE, gateway closing, key refused), everything it holds goes at once, and nothing is written after.
  const finish = () => {
    if (ended) return;
    ended = true;
    clearInterval(keepalive);
    stop();
    release();
    exchange.endStream();
  };
  res.once('close', finish);
  // Comments keep proxies from closing a quiet stream; the first tells the client the stream is open.
  exchange.write(': open\n\n');
  stop = deps.mcp.listen({
    session: session.id,
    endpoint: caller.endpoint,
    access: caller.access,
    send: (message) => {
      if (ended) return;
      // A reader not reading is owed each list's notification once (the same message each time), not one per change.
      if (waiting.size > 0 || exchange.congested()) {
        waiting.add(message);
        if (waiting.size === 1) res.once('drain', flushWaiting);
        return;
      }
      exchange.event(message);
    },
    close: finish,
  });
  keepalive = setInterval(() => {
    stillAuthenticated().then(
      () => {
        // A reader that is not reading needs no keep-alive, and must not be given more to hold.
        if (!ended && !exchange.congested()) exchange.write(': keepalive\n\n');
      },
      () => finish(),
    );
  }, caller.keepAliveMs);
  keepalive.unref();
  if (res.destroyed) finish();
}

async function end(deps: McpRouteDeps, exchange: Exchange, principal: Principal, endpoint: string): Promise<void> {
  const session = sessionOf(deps, exchange, principal, endpoint);
  checkProtocolVersion(exchange, session);
  // Answered once every worker knows: the client's next request, wherever it lands, finds the session ended.
  await deps.mcp.end(session);
  exchange.ctx.res.writeHead(200).end();
}

/** One HTTP exchange: what the client accepts, and the ways of answering it; nothing is written once the response has ended. */
class Exchange {
  /** Whether the request's body was (or is being) read: a refusal before it closes the connection. */
  bodyRead = false;

  constructor(
    readonly ctx: RequestContext,
    private readonly logger: Logger,
  ) {
    // A write racing the socket's end (a reset, a client gone) must not become an uncaught 'error' that ends the worker.
    ctx.res.on('error', (error) => logger.debug({ requestId: ctx.requestId, err: error }, 'MCP response error'));
  }

  acceptsStream(): boolean {
    return /text\/event-stream|text\/\*|\*\/\*/i.test(this.ctx.req.headers.accept ?? '');
  }

  acceptsJson(): boolean {
    const accept = this.ctx.req.headers.accept;
    return accept === undefined || accept === '' || /application\/json|application\/\*|\*\/\*/i.test(accept);
  }

  get writable(): boolean {
    const { res } = this.ctx;
    return !res.writableEnded && !res.destroyed;
  }

  /** The socket holds more than it wants: the reader is slower than what is written. */
  congested(): boolean {
    return this.ctx.res.writableNeedDrain;
  }

  json(status: number, body: string, headers: Readonly<Record<string, string>> = {}): void {
    if (!this.writable || this.ctx.res.headersSent) return;
    this.ctx.res.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(body);
  }

  accepted(): void {
    if (this.writable) this.ctx.res.writeHead(202).end();
  }

  openStream(): void {
    this.ctx.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    this.ctx.res.flushHeaders();
  }

  write(chunk: string): void {
    if (this.writable) this.ctx.res.write(chunk);
  }

  event(message: string): void {
    this.write(`event: message\ndata: ${message}\n\n`);
  }

  endStream(): void {
    if (this.writable) this.ctx.res.end();
  }

  refuse(thrown: unknown): void {
    const { req, res } = this.ctx;
    const refusal = thrown instanceof Refusal ? thrown : new Refusal(500, -32603, 'The gateway failed to handle this request.');
    if (!(thrown instanceof Refusal)) this.logger.warn({ requestId: this.ctx.requestId, err: thrown }, 'an MCP request failed');
    if (res.headersSent) {
      this.endStream();
      return;
    }
    // Refused before its body was read (a bad key, a wrong content type): the connection closes after the answer rather than waiting, possibly for minutes, for a body nobody will read.
    const unread: Record<string, string> = this.bodyRead || req.complete ? {} : { connection: 'close' };
    this.json(refusal.status, errorMessage(refusal.id, new McpError(refusal.code, refusal.message, refusal.status, 'refused')), { ...refusal.headers, ...unread });
  }
}
