import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode,
  GetPromptResultSchema,
  ListPromptsResultSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesResultSchema,
  ListToolsResultSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ReadResourceResultSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type GetPromptResult,
  type JSONRPCMessage,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { isStdioServer, type McpServerConfig } from '../../config/config-file.js';
import { mcpSecretValuesOf } from '../../config/secret-values.js';
import { redact } from '../../core/upstream-errors.js';
import { Backoff, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { ENVELOPE_BYTES, type JsonRpcId } from './message-limit.js';
import { StdioProcessTransport } from './stdio-transport.js';
import { UpstreamMcpError, type CallOptions, type UpstreamLists, type UpstreamMcpServer, type UpstreamState } from './upstream-server.js';

type ClientSide = typeof import('./client-side.js');
/** Loaded by the first connection (see client-side.ts); set before any session exists. */
let clientSide: ClientSide | undefined;

/** The client side, for what acts on a session: a session is opened only once connect() has loaded it. */
function loaded(): ClientSide {
  if (clientSide === undefined) throw new Error('the MCP client side was used before a connection loaded it');
  return clientSide;
}

/** Whether `error` is the Streamable HTTP transport's: none can exist before the client side is loaded. */
function isStreamableHttpError(error: unknown): error is InstanceType<ClientSide['StreamableHTTPError']> {
  return clientSide !== undefined && error instanceof clientSide.StreamableHTTPError;
}

export interface UpstreamConnectionOptions {
  /** `mcp.max_result_bytes`: one message may hold this plus the envelope (a call's own `maxResultBytes` then holds its result to the exact limit). */
  readonly maxResultBytes: number;
  /** How long connecting (initialize, then every list) may take. */
  readonly connectTimeoutMs: number;
  readonly backoff: BackoffOptions;
  /** How long a stopped stdio server gets between SIGTERM and SIGKILL. */
  readonly killGraceMs: number;
  /** Entries kept per list, at most, and pages followed per list. */
  readonly maxListEntries: number;
  readonly maxListPages: number;
  /** The JSON bytes one server's lists may hold together (measured as pages arrive); past it they are cut. */
  readonly maxListBytes: number;
  /** A longer description (of a tool, resource, template or prompt) is cut to this many characters. */
  readonly maxDescriptionChars: number;
  /** A tool whose `inputSchema` is larger (as JSON) is left out: its arguments could not be checked at a bounded cost. */
  readonly maxInputSchemaBytes: number;
  readonly clientInfo: { readonly name: string; readonly version: string };
}

export const DEFAULT_CONNECTION_OPTIONS: UpstreamConnectionOptions = {
  maxResultBytes: 4 * 1024 * 1024,
  connectTimeoutMs: 30_000,
  backoff: DEFAULT_BACKOFF,
  killGraceMs: 5_000,
  maxListEntries: 10_000,
  maxListPages: 200,
  maxListBytes: 8 * 1024 * 1024,
  maxDescriptionChars: 8 * 1024,
  maxInputSchemaBytes: 64 * 1024,
  clientInfo: { name: 'sluice', version: '1.0.0' },
};

type ListKind = 'tools' | 'resources' | 'prompts';
const LIST_KINDS: readonly ListKind[] = ['tools', 'resources', 'prompts'];
const EMPTY_LISTS: UpstreamLists = { tools: [], resources: [], resourceTemplates: [], prompts: [] };

/** Marks the error Sluice itself puts in place of an answer it dropped for its size (compared by identity: no upstream can send it). */
const TOO_LARGE = Object.freeze({ sluice: 'too_large' });
/** Marks the error Sluice puts in place of an answer whose stream broke off. */
const BROKEN = Object.freeze({ sluice: 'broken' });

interface Session {
  readonly client: Client;
  readonly transport: Transport;
  /** The protocol revision the client negotiated on it. */
  protocolVersion: string | null;
  /** Initialised and listed: from then on its closing is a failure to recover from. */
  established: boolean;
  closed: boolean;
  /** What its transport last reported (a stdio exit, a broken stream): the cause when the SDK says only "Connection closed". */
  lastError?: Error;
  /** A liveness check is under way. */
  checking?: boolean;
  /** The lists being fetched again after a `list_changed` on this session (another one meanwhile: `again`). */
  readonly refreshing: Map<ListKind, { again: boolean }>;
}

/**
 * One upstream MCP server: one SDK `Client` (one session) at a time, reconnected with back-off
 * when it fails, re-initialised once when the upstream loses the session; its lists cached.
 * The client declares no capabilities (no sampling, roots or elicitation: the upstream's requests
 * for them are the protocol's method-not-found) and has no auth provider (no OAuth discovery).
 */
export class UpstreamConnection implements UpstreamMcpServer {
  readonly id: string;
  private current: Session | undefined;
  private connecting: Promise<void> | undefined;
  private cached: UpstreamLists = EMPTY_LISTS;
  private status: UpstreamState = { state: 'connecting', since: Date.now(), error: null, protocolVersion: null, restarts: 0 };
  private readonly listeners = new Set<(list: ListKind) => void>();
  private readonly secrets: string[];
  private readonly backoff: Backoff;
  private readonly logger: Logger;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private messageLimit: number;
  /** What the lists hold, in JSON bytes, per list (their sum is held to `maxListBytes`). */
  private listBytes: Record<keyof UpstreamLists, number> = { tools: 0, resources: 0, resourceTemplates: 0, prompts: 0 };
  /** Why the lists are incomplete (cut for their size), for the state; null when they are whole. */
  private listsCut: string | null = null;
  /** When it first went down in the failures going on now (retries pass through `connecting`); cleared once ready. */
  private downSince: number | undefined;
  /** Its lists are out of the aggregate (it has not been ready yet, or it went down since): the next connection announces them all. */
  private withdrawn = true;
  /** A stdio server's last stderr line, told with its exit (it often says why). */
  private lastStderrLine: string | undefined;

  constructor(
    private entry: McpServerConfig,
    logger: Logger,
    private readonly options: UpstreamConnectionOptions = DEFAULT_CONNECTION_OPTIONS,
    now: () => number = Date.now,
  ) {
    this.id = entry.id;
    this.secrets = mcpSecretValuesOf(entry);
    this.backoff = new Backoff(options.backoff, now);
    this.logger = logger.child({ mcpServer: entry.id });
    this.messageLimit = options.maxResultBytes + ENVELOPE_BYTES;
  }

  get config(): McpServerConfig {
    return this.entry;
  }

  /** Takes an entry that differs only in what the connection does not use (its price): no reconnection. */
  updateConfig(entry: McpServerConfig): void {
    if (entry.id !== this.id || connectionStamp(entry) !== connectionStamp(this.entry)) throw new Error('updateConfig: the connection itself changed');
    this.entry = entry;
  }

  /** `mcp.max_result_bytes` changed (a reloaded file): the cap on each message from now on. */
  setMaxResultBytes(maxResultBytes: number): void {
    this.messageLimit = maxResultBytes + ENVELOPE_BYTES;
  }

  /** Connects (in the background). */
  start(): void {
    this.connecting = this.connect();
  }

  state(): UpstreamState {
    return this.status;
  }

  async lists(timeoutMs: number): Promise<UpstreamLists> {
    await this.settled(timeoutMs, undefined);
    if (this.status.state !== 'ready') throw this.unavailable();
    return this.cached;
  }

  callTool(name: string, args: Record<string, unknown> | undefined, options: CallOptions): Promise<CallToolResult> {
    return this.call('tools/call', { name, ...(args !== undefined ? { arguments: args } : {}) }, CallToolResultSchema, options) as Promise<CallToolResult>;
  }

  readResource(uri: string, options: CallOptions): Promise<ReadResourceResult> {
    return this.call('resources/read', { uri }, ReadResourceResultSchema, options) as Promise<ReadResourceResult>;
  }

  getPrompt(name: string, args: Record<string, string> | undefined, options: CallOptions): Promise<GetPromptResult> {
    return this.call('prompts/get', { name, ...(args !== undefined ? { arguments: args } : {}) }, GetPromptResultSchema, options) as Promise<GetPromptResult>;
  }

  onListChanged(listener: (list: ListKind) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops it for good: an HTTP session is closed with DELETE, a stdio process is sent SIGTERM, then SIGKILL. */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const session = this.current;
    this.current = undefined;
    this.setState('down', 'the server was stopped (removed, changed, or the gateway is shutting down)');
    if (session !== undefined) await this.closeSession(session, true);
  }

  // ---- connecting ---------------------------------------------------------------------------

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.setState('connecting', this.status.error);
    if (clientSide === undefined) {
      try {
        clientSide = await import('./client-side.js');
      } catch (error) {
        // Say, files replaced under a running gateway: the server stays down and is tried again later.
        this.setState('down', 'the gateway could not load its MCP client');
        const delayMs = this.backoff.failed();
        this.logger.error({ err: error instanceof Error ? error.message : String(error), retryInMs: delayMs }, 'cannot load the MCP client; trying again after a back-off');
        this.retryAfter(delayMs);
        return;
      }
      if (this.stopped) return;
    }
    const session = this.open();
    this.current = session;
    try {
      await session.client.connect(session.transport, { timeout: this.options.connectTimeoutMs });
      const lists = await this.fetchLists(session);
      if (this.current !== session || this.stopped) return;
      const changed = LIST_KINDS.filter((kind) => this.withdrawn || !sameLists(this.cached, lists, kind));
      this.cached = lists;
      this.withdrawn = false;
      session.established = true;
      this.backoff.up();
      // The error stays: once ready again, it says why it was last reconnected.
      this.setState('ready', this.listsCut ?? this.status.error, session.protocolVersion);
      this.logger.info({ protocolVersion: session.protocolVersion, tools: lists.tools.length, resources: lists.resources.length, prompts: lists.prompts.length }, 'MCP server connected');
      for (const kind of changed) this.emit(kind);
    } catch (error) {
      const closed = error instanceof McpError && error.code === ErrorCode.ConnectionClosed;
      this.lost(session, closed && session.lastError !== undefined ? session.lastError : error);
    }
  }

  /** A new client and transport (not yet connected). */
  private open(): Session {
    const { Client, boundedFetch, SSEClientTransport, StreamableHTTPClientTransport } = loaded();
    const client = new Client({ ...this.options.clientInfo }, { capabilities: {} });
    let transport: Transport;
    let session: Session;
    const onOversized = (requestId: JsonRpcId | undefined) => this.dropOversized(transport, requestId);
    const config = this.config;
    if (isStdioServer(config)) {
      transport = new StdioProcessTransport(config, {
        maxMessageBytes: () => this.messageLimit,
        onOversized: ({ requestId }) => onOversized(requestId),
        onStderrLine: (line) => {
          this.lastStderrLine = line;
          this.logger.info({ stderr: this.redact(line) }, 'MCP server stderr');
        },
        killGraceMs: this.options.killGraceMs,
      });
    } else {
      const url = new URL(config.url);
      const fetch = boundedFetch({
        serverUrl: url,
        maxMessageBytes: () => this.messageLimit,
        onOversized,
        onBroken: (requestId, error) => this.dropBroken(session, requestId, error),
        checkAddresses: config.fromConsole === true,
      });
      // Only the configured headers: nothing of any caller's ever reaches the upstream.
      const requestInit: RequestInit = { headers: { ...config.headers } };
      transport =
        config.transport === 'sse'
          ? new SSEClientTransport(url, { requestInit, fetch })
          : new StreamableHTTPClientTransport(url, { requestInit, fetch, reconnectionOptions: { initialReconnectionDelay: 1_000, maxReconnectionDelay: 30_000, reconnectionDelayGrowFactor: 2, maxRetries: 2 } });
    }
    session = { client, transport, protocolVersion: null, established: false, closed: false, refreshing: new Map() };
    // The client tells the transport the negotiated revision; it is kept for the state.
    const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (version: string) => {
      session.protocolVersion = version;
      setProtocolVersion?.(version);
    };
    client.onerror = (error) => {
      session.lastError = error;
      this.logger.debug({ err: this.redact(String(error)).slice(0, 500) }, 'MCP server connection error');
      // A stream that broke (the standalone GET stream, the SSE transport's event source): is the server still there?
      if (session.established && /SSE stream disconnected|Failed to reconnect SSE stream|Maximum reconnection attempts|SSE error/.test(String(error))) this.checkAlive(session);
    };
    client.onclose = () => {
      session.closed = true;
      // Before it is established, connect() reports the failure itself, with its real cause.
      if (this.current === session && session.established) this.lost(session, new Error(isStdioServer(config) ? 'the process exited' : 'the connection closed'));
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refresh(session, 'tools'));
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.refresh(session, 'resources'));
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.refresh(session, 'prompts'));
    return session;
  }

  /** The session failed (or could not be made): down, and another attempt after the back-off. */
  private lost(session: Session, error: unknown): void {
    if (this.current !== session || this.stopped) {
      void this.closeSession(session, false);
      return;
    }
    this.current = undefined;
    void this.closeSession(session, false);
    const wasReady = this.status.state === 'ready';
    // The state (console, doctor, /status, callers) gets fixed words; the log a redacted, capped excerpt of what was said.
    let message = loaded().failureReason(error);
    // A stdio server is the configuration file's alone: its stderr is the host administrator's own process talking.
    if (isStdioServer(this.config) && this.lastStderrLine !== undefined) message += ` (its last stderr line: ${this.redact(this.lastStderrLine.slice(0, 300))})`;
    this.lastStderrLine = undefined;
    this.setState('down', message);
    const delayMs = this.backoff.failed();
    this.logger.warn({ err: message, detail: this.describe(error).slice(0, 500), retryInMs: delayMs, restarts: this.status.restarts }, isStdioServer(this.config) ? 'MCP server process is down; restarting it after a back-off' : 'MCP server is down; reconnecting after a back-off');
    if (wasReady) {
      this.withdrawn = true;
      for (const kind of LIST_KINDS) this.emit(kind);
    }
    this.retryAfter(delayMs);
  }

  private retryAfter(delayMs: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.status = { ...this.status, restarts: this.status.restarts + 1 };
      this.connecting = this.connect();
    }, delayMs);
    this.retryTimer.unref();
  }

  /** The upstream no longer knows the session: a new one at once (no back-off: the server is there). */
  private renewSession(stale: Session): Promise<void> {
    if (this.current === stale) {
      this.current = undefined;
      void this.closeSession(stale, false);
      this.status = { ...this.status, restarts: this.status.restarts + 1 };
      this.logger.info('MCP server lost the session; initialising a new one');
      this.status = { ...this.status, error: 'the server lost the session (HTTP 404); a new one was initialised' };
      this.connecting = this.connect();
    }
    return this.connecting ?? Promise.resolve();
  }

  private async closeSession(session: Session, terminate: boolean): Promise<void> {
    try {
      if (terminate && session.transport instanceof loaded().StreamableHTTPClientTransport && !session.closed) {
        await withTimeout(session.transport.terminateSession(), 2_000).catch(() => undefined);
      }
      await session.client.close();
    } catch (error) {
      this.logger.debug({ err: this.redact(String(error)) }, 'MCP server session did not close cleanly');
    }
  }

  // ---- lists ----------------------------------------------------------------------------------

  private async fetchLists(session: Session): Promise<UpstreamLists> {
    const capabilities = session.client.getServerCapabilities() ?? {};
    this.listBytes = { tools: 0, resources: 0, resourceTemplates: 0, prompts: 0 };
    this.listsCut = null;
    const [tools, resources, resourceTemplates, prompts] = await Promise.all([
      capabilities.tools ? this.fetchAll<Tool>(session, 'tools/list', 'tools', ListToolsResultSchema) : [],
      capabilities.resources ? this.fetchAll<Resource>(session, 'resources/list', 'resources', ListResourcesResultSchema) : [],
      capabilities.resources ? this.fetchAll<ResourceTemplate>(session, 'resources/templates/list', 'resourceTemplates', ListResourceTemplatesResultSchema) : [],
      capabilities.prompts ? this.fetchAll<Prompt>(session, 'prompts/list', 'prompts', ListPromptsResultSchema) : [],
    ]);
    return { tools, resources, resourceTemplates, prompts };
  }

  /**
   * Every page of one list, up to the entry and page caps (a cursor seen twice ends it too), and
   * the byte cap all of this server's lists share: entries are measured as each page arrives, a
   * description is cut to `maxDescriptionChars`, a tool with an oversized `inputSchema` left out,
   * and once the lists together pass `maxListBytes` the rest is left out (the state says so).
   */
  private async fetchAll<T>(session: Session, method: string, key: keyof UpstreamLists, schema: Parameters<Client['request']>[1]): Promise<T[]> {
    const items: T[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    this.listBytes[key] = 0;
    for (let pages = 0; pages < this.options.maxListPages; pages++) {
      let result: Record<string, unknown>;
      try {
        result = (await session.client.request({ method, params: cursor === undefined ? {} : { cursor } } as never, schema, { timeout: this.options.connectTimeoutMs })) as Record<string, unknown>;
      } catch (error) {
        // A server may announce a capability and still not serve one of its lists (templates, often).
        if (error instanceof McpError && error.code === ErrorCode.MethodNotFound && pages === 0) return [];
        throw error;
      }
      const page = (result[key] as T[] | undefined) ?? [];
      for (const raw of page.slice(0, this.options.maxListEntries - items.length)) {
        const entry = this.bounded(raw as T & { name?: unknown; description?: unknown; inputSchema?: unknown }, key);
        if (entry === undefined) continue;
        const bytes = Buffer.byteLength(JSON.stringify(entry));
        const total = this.listBytes.tools + this.listBytes.resources + this.listBytes.resourceTemplates + this.listBytes.prompts;
        if (total + bytes > this.options.maxListBytes) {
          this.listsCut = `its lists are larger than ${this.options.maxListBytes} bytes: only the first ${items.length} ${key === 'resourceTemplates' ? 'resource templates' : key} (and what came before) are offered`;
          this.logger.warn({ list: method, kept: items.length, maxBytes: this.options.maxListBytes }, 'MCP server lists are larger than the byte cap; the rest is left out');
          return items;
        }
        this.listBytes[key] += bytes;
        items.push(entry);
      }
      if (items.length >= this.options.maxListEntries) {
        this.logger.warn({ list: method, kept: items.length }, 'MCP server list is longer than the cap; the rest is left out');
        return items;
      }
      const next = result.nextCursor;
      if (typeof next !== 'string' || next === '') return items;
      if (seen.has(next)) {
        this.logger.warn({ list: method }, 'MCP server repeated a list cursor; the list ends there');
        return items;
      }
      seen.add(next);
      cursor = next;
    }
    this.logger.warn({ list: method, pages: this.options.maxListPages }, 'MCP server list has more pages than the cap; the rest is left out');
    return items;
  }

  /** An entry within the per-entry caps: its description cut, a tool with an oversized schema left out (logged). */
  private bounded<T extends { name?: unknown; description?: unknown; inputSchema?: unknown }>(entry: T, key: keyof UpstreamLists): T | undefined {
    if (key === 'tools' && entry.inputSchema !== undefined && Buffer.byteLength(JSON.stringify(entry.inputSchema)) > this.options.maxInputSchemaBytes) {
      this.logger.warn({ tool: typeof entry.name === 'string' ? entry.name.slice(0, 100) : null, maxBytes: this.options.maxInputSchemaBytes }, 'MCP server tool has an inputSchema larger than the cap; the tool is left out');
      return undefined;
    }
    const max = this.options.maxDescriptionChars;
    if (typeof entry.description === 'string' && entry.description.length > max) return { ...entry, description: `${entry.description.slice(0, max)}…` };
    return entry;
  }

  /** `notifications/<kind>/list_changed`: fetch that list again (once more if it changes meanwhile), then tell the listeners. */
  private async refresh(session: Session, kind: ListKind): Promise<void> {
    // Kept on the session: a session replaced meanwhile has its own, so a list_changed on the new one is never lost to the old one's loop.
    const running = session.refreshing.get(kind);
    if (running !== undefined) {
      running.again = true;
      return;
    }
    const state = { again: true };
    session.refreshing.set(kind, state);
    try {
      while (state.again && this.current === session && !this.stopped) {
        state.again = false;
        const update: Partial<{ -readonly [K in keyof UpstreamLists]: UpstreamLists[K] }> = {};
        if (kind === 'tools') update.tools = await this.fetchAll<Tool>(session, 'tools/list', 'tools', ListToolsResultSchema);
        if (kind === 'prompts') update.prompts = await this.fetchAll<Prompt>(session, 'prompts/list', 'prompts', ListPromptsResultSchema);
        if (kind === 'resources') {
          update.resources = await this.fetchAll<Resource>(session, 'resources/list', 'resources', ListResourcesResultSchema);
          update.resourceTemplates = await this.fetchAll<ResourceTemplate>(session, 'resources/templates/list', 'resourceTemplates', ListResourceTemplatesResultSchema);
        }
        if (this.current !== session) return;
        this.cached = { ...this.cached, ...update };
        if (this.listsCut !== null && this.status.state === 'ready') this.status = { ...this.status, error: this.listsCut };
        this.emit(kind);
      }
    } catch (error) {
      this.logger.warn({ list: kind, err: this.describe(error) }, 'MCP server list could not be renewed');
    } finally {
      session.refreshing.delete(kind);
    }
  }

  private emit(kind: ListKind): void {
    for (const listener of this.listeners) {
      try {
        listener(kind);
      } catch (error) {
        this.logger.warn({ err: error }, 'MCP list-changed listener failed');
      }
    }
  }

  // ---- calls ----------------------------------------------------------------------------------

  private async call(method: string, params: Record<string, unknown>, schema: Parameters<Client['request']>[1], options: CallOptions): Promise<unknown> {
    const deadline = Date.now() + options.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      if (options.signal.aborted) throw new UpstreamMcpError('cancelled', 'The call was cancelled.');
      await this.settled(deadline - Date.now(), options.signal);
      if (options.signal.aborted) throw new UpstreamMcpError('cancelled', 'The call was cancelled.');
      const session = this.current;
      if (this.status.state !== 'ready' || session === undefined) throw this.unavailable();
      try {
        // The stream was capped with room for the envelope; the caller's write stage holds the result to the exact limit as it serialises it once.
        return await this.request(session, method, params, schema, options, deadline);
      } catch (error) {
        // A 404 on the session means the request was not run: a new session, and the request once more.
        if (attempt === 0 && isSessionLost(error)) {
          await this.renewSession(session);
          continue;
        }
        throw this.classify(error, session);
      }
    }
  }

  private async request(session: Session, method: string, params: Record<string, unknown>, schema: Parameters<Client['request']>[1], options: CallOptions, deadline: number): Promise<unknown> {
    const remaining = Math.max(0, deadline - Date.now());
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort('the gateway timed the call out (mcp.call_timeout_ms)'), remaining);
    const onProgress = options.onProgress;
    try {
      const answer = await session.client.request({ method, params } as never, schema, {
        // Aborting either sends the upstream `notifications/cancelled` (the SDK does, for both).
        signal: AbortSignal.any([options.signal, timeout.signal]),
        // The SDK's own timer is only a backstop behind ours (its default, 60 s, must never be the one that fires).
        timeout: remaining + 60_000,
        resetTimeoutOnProgress: false,
        ...(onProgress !== undefined ? { onprogress: ({ progress, total, message }) => onProgress({ progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) }) } : {}),
      });
      options.onSent?.();
      return answer;
    } catch (error) {
      if (!neverLeft(error)) options.onSent?.();
      if (error instanceof McpError && error.data === TOO_LARGE) throw this.tooLarge(options);
      if (options.signal.aborted) throw new UpstreamMcpError('cancelled', 'The call was cancelled.');
      if (timeout.signal.aborted) throw new UpstreamMcpError('timeout', `The MCP server '${this.id}' did not answer within ${options.timeoutMs} ms.`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The answer to `requestId` broke off: that call fails now, and the server is checked (a dead one is reconnected). */
  private dropBroken(session: Session, requestId: JsonRpcId, error: unknown): void {
    if (session.closed || this.current !== session) return;
    this.logger.debug({ err: this.describe(error).slice(0, 500) }, 'MCP server answer broke off');
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id: requestId, error: { code: ErrorCode.ConnectionClosed, message: loaded().failureReason(error), data: BROKEN } };
    session.transport.onmessage?.(answer);
    this.checkAlive(session);
  }

  /** A ping: a server that cannot be reached or does not answer is down (and reconnected after the back-off). */
  private checkAlive(session: Session): void {
    if (session.checking === true || session.closed || this.current !== session) return;
    session.checking = true;
    session.client
      .ping({ timeout: 5_000 })
      .catch((pingError: unknown) => {
        if (isSessionLost(pingError)) void this.renewSession(session);
        else if (isConnectionFailure(pingError) || (pingError instanceof McpError && pingError.code === ErrorCode.RequestTimeout)) this.lost(session, pingError);
      })
      .finally(() => (session.checking = false));
  }

  /** Puts an error answer in place of a message dropped for its size, so the call waiting for it fails now. */
  private dropOversized(transport: Transport | undefined, requestId: JsonRpcId | undefined): void {
    if (requestId === undefined) {
      this.logger.warn({ maxBytes: this.messageLimit }, 'MCP server sent a message larger than the cap; it was dropped (no request id found in it)');
      return;
    }
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id: requestId, error: { code: ErrorCode.InternalError, message: 'answer too large', data: TOO_LARGE } };
    transport?.onmessage?.(answer);
  }

  private classify(error: unknown, session: Session): UpstreamMcpError {
    if (error instanceof UpstreamMcpError) return error;
    if (error instanceof McpError) {
      if (error.data === BROKEN) return this.unavailable(`The connection to the MCP server '${this.id}' broke off during the call: ${error.message.replace(/^MCP error -?\d+: /, '')}`);
      if (error.code === ErrorCode.ConnectionClosed && (session.closed || this.current !== session)) return this.unavailable(`The connection to the MCP server '${this.id}' closed during the call.`);
      return new UpstreamMcpError('protocol', this.redact(error.message.replace(/^MCP error -?\d+: /, '')), error.code, redactData(error.data, this.secrets));
    }
    if (error instanceof Error && error.name === 'ZodError') {
      return new UpstreamMcpError('protocol', `The MCP server '${this.id}' sent an answer that is not a valid result.`, ErrorCode.InternalError);
    }
    if (error instanceof loaded().ForeignOriginError) this.logger.warn({ err: error.message }, 'MCP server tried to send Sluice to another origin');
    if (isConnectionFailure(error)) this.lost(session, error);
    else this.logger.debug({ err: this.describe(error).slice(0, 500) }, 'MCP server call failed');
    return this.unavailable(`The MCP server '${this.id}' could not be reached: ${loaded().failureReason(error)}`);
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Waits while a connection attempt is under way (up to `ms`, or until `signal` aborts). */
  private async settled(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.status.state !== 'connecting' || this.connecting === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    await Promise.race([
      this.connecting,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms)))),
      new Promise<void>((resolve) => {
        onAbort = () => resolve();
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }

  private tooLarge(options: CallOptions): UpstreamMcpError {
    return new UpstreamMcpError('too_large', `The answer of the MCP server '${this.id}' exceeded max_result_bytes (${options.maxResultBytes} bytes).`);
  }

  private unavailable(message?: string): UpstreamMcpError {
    return new UpstreamMcpError('unavailable', message ?? `The MCP server '${this.id}' is ${this.status.state === 'connecting' ? 'still connecting' : 'down'}${this.status.error !== null ? `: ${this.status.error}` : ''}.`);
  }

  private setState(state: UpstreamState['state'], error: string | null, protocolVersion: string | null = null): void {
    let since = this.status.state === state ? this.status.since : Date.now();
    // Down, connecting again, down again: still down since it first went down.
    if (state === 'down') since = this.downSince ??= since;
    if (state === 'ready') this.downSince = undefined;
    this.status = { state, since, error, protocolVersion, restarts: this.status.restarts };
  }

  private describe(error: unknown): string {
    if (isStreamableHttpError(error)) return this.redact(`HTTP ${error.code}: ${error.message}`);
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return this.redact(`${error instanceof Error ? error.message : String(error)}${cause}`);
  }

  private redact(text: string): string {
    return redact(text, this.secrets);
  }
}

/** The upstream answered 404 to the session: the Streamable HTTP transport's error, or the SSE transport's POST. */
function isSessionLost(error: unknown): boolean {
  if (isStreamableHttpError(error)) return error.code === 404;
  return error instanceof Error && /^Error POSTing to endpoint \(HTTP 404\)/.test(error.message);
}

/** The server is not there (refused, reset, gone): the session is dead, not just this call. */
/** Codes of a failure to connect at all: the request never left, so it cannot have run. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a call's failure was one of connecting (its cause chain names one of CONNECT_FAILURES). */
function neverLeft(error: unknown): boolean {
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (CONNECT_FAILURES.has((cause as NodeJS.ErrnoException).code ?? '')) return true;
  }
  return false;
}

function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (isStreamableHttpError(error)) return false;
  return error.name === 'TypeError' || /ECONNREFUSED|ECONNRESET|EPIPE|fetch failed|Not connected|socket/i.test(`${error.message} ${error.cause instanceof Error ? error.cause.message : ''}`);
}

function redactData(data: unknown, secrets: readonly string[]): unknown {
  if (data === undefined || secrets.length === 0) return data;
  try {
    return JSON.parse(redact(JSON.stringify(data), secrets.map((secret) => JSON.stringify(secret).slice(1, -1))));
  } catch {
    return undefined;
  }
}

function sameLists(before: UpstreamLists, after: UpstreamLists, kind: ListKind): boolean {
  if (kind === 'resources') return JSON.stringify([before.resources, before.resourceTemplates]) === JSON.stringify([after.resources, after.resourceTemplates]);
  return JSON.stringify(before[kind]) === JSON.stringify(after[kind]);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]).finally(() => clearTimeout(timer));
}

/** What a connection is made from (its price is not): a change here means a new connection. */
export function connectionStamp(config: McpServerConfig): string {
  // Where it comes from is part of it: a console server's connections are held to the address policy.
  const { price_per_call: _price, ...connection } = config;
  return JSON.stringify(connection, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
}
