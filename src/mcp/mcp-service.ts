import type { Logger } from 'pino';
import { InitializeRequestParamsSchema, LATEST_PROTOCOL_VERSION, PaginatedRequestParamsSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { McpSettings } from '../config/config-file.js';
import { decodeCursor, pageAfter, type ListKind } from './cursor.js';
import { McpDirectory, type Endpoint } from './directory.js';
import { InFlightRequests } from './in-flight.js';
import { invalidParams, McpError, METHOD_NOT_FOUND, parseParams, type JsonRpcRequest, type RequestId } from './jsonrpc.js';
import { ListNotifier, type ListenerStream } from './list-notifier.js';
import { EndedSessions, SessionTokens, type McpSession, type SessionCheck } from './session-token.js';
import type { Siblings } from './siblings.js';
import { runUpstreamCall, toMcpError, type CallContext, type UpstreamCallDeps } from './upstream-call.js';
import { CALL_TOOL, GET_PROMPT, READ_RESOURCE } from './upstream-methods.js';
import type { UpstreamMcpServers } from './upstream/upstream-server.js';

export interface McpServiceDeps extends Omit<UpstreamCallDeps, 'directory'> {
  readonly servers: UpstreamMcpServers;
  readonly logger: Logger;
  /** The key sessions are signed with, the same in every process of the deployment. */
  readonly sessionKey: Buffer;
  readonly siblings: Siblings;
  /** Sluice's version, in `serverInfo`. */
  readonly version: string;
}

const ENDED_TOPIC = 'mcp.session-ended';
const OFFERED_VERSION = InitializeRequestParamsSchema.pick({ protocolVersion: true });

/** Every revision the SDK speaks, newest first; a client offering another is offered the newest. */
export const PROTOCOL_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** What a request without `MCP-Protocol-Version` is taken to speak (as the transport's specification says). */
export const ASSUMED_PROTOCOL_VERSION = '2025-03-26';
/** Revisions that still allow JSON-RPC batches (removed in 2025-06-18). */
const BATCHING_VERSIONS = new Set(['2024-10-07', '2024-11-05', '2025-03-26']);

export function allowsBatches(version: string): boolean {
  return BATCHING_VERSIONS.has(version);
}

/**
 * Sluice as one MCP server, apart from HTTP: sessions, the methods, the in-flight requests and the
 * list-changed streams. The HTTP route (http/routes/mcp.ts) authenticates, reads and writes.
 */
export class McpService {
  readonly directory: McpDirectory;
  private readonly tokens: SessionTokens;
  private readonly ended = new EndedSessions();
  private readonly inFlight: InFlightRequests;
  private readonly notifier: ListNotifier;
  private readonly unsubscribe: () => void;
  private readonly callDeps: UpstreamCallDeps;

  constructor(private readonly deps: McpServiceDeps, directory?: McpDirectory) {
    this.directory = directory ?? new McpDirectory(deps.servers, deps.logger);
    this.tokens = new SessionTokens(deps.sessionKey);
    this.inFlight = new InFlightRequests(deps.siblings);
    this.notifier = new ListNotifier(deps.servers, deps.siblings);
    this.callDeps = { ...deps, directory: this.directory };
    this.unsubscribe = deps.siblings.subscribe(ENDED_TOPIC, (data) => {
      const word = data as Partial<{ id: string; issuedAt: number }>;
      if (typeof word?.id === 'string' && typeof word.issuedAt === 'number') this.endHere(word.id, word.issuedAt);
    });
  }

  get settings(): McpSettings {
    return this.deps.settings();
  }

  /** A new session for the key on this endpoint, at the revision negotiated from the client's offer. */
  initialize(keyId: string, endpoint: Endpoint, params: Record<string, unknown>): { readonly token: string; readonly result: Record<string, unknown> } {
    // Only the revision matters here: a client that leaves out `clientInfo` or `capabilities` (both required) is still served.
    const offered = parseParams(OFFERED_VERSION, params).protocolVersion;
    const version = PROTOCOL_VERSIONS.includes(offered) ? offered : LATEST_PROTOCOL_VERSION;
    const { token } = this.tokens.issue(keyId, endpoint, version);
    const listChanged = { listChanged: true };
    return {
      token,
      result: {
        protocolVersion: version,
        capabilities: { tools: listChanged, resources: listChanged, prompts: listChanged },
        serverInfo: { name: endpoint === '' ? 'sluice' : `sluice/${endpoint}`, version: this.deps.version },
      },
    };
  }

  session(token: string, keyId: string, endpoint: Endpoint): SessionCheck | { readonly ok: false; readonly reason: 'ended' } {
    const checked = this.tokens.check(token, keyId, endpoint);
    if (checked.ok && this.ended.has(checked.session.id)) return { ok: false, reason: 'ended' };
    return checked;
  }

  /** DELETE: the session ends here and in the sibling workers (all of them, before this resolves); its requests are cancelled and its streams closed. */
  async end(session: McpSession): Promise<void> {
    this.endHere(session.id, session.issuedAt);
    await this.deps.siblings.publishAndWait(ENDED_TOPIC, { id: session.id, issuedAt: session.issuedAt });
  }

  cancel(session: McpSession, id: RequestId): void {
    this.inFlight.cancel(session.id, id);
  }

  /** A request of the session begins; its signal aborts when the caller cancels it (from any connection or worker). Undefined when the id is already in flight here. */
  track(session: McpSession, id: RequestId): { readonly signal: AbortSignal; done(): void } | undefined {
    return this.inFlight.start(session.id, id);
  }

  listen(stream: ListenerStream): () => void {
    return this.notifier.add(stream);
  }

  /** One request of an established session (not `initialize`); throws McpError, every failure mapped once, here or by the call runner. */
  async handle(ctx: CallContext, request: JsonRpcRequest): Promise<unknown> {
    const { params } = request;
    try {
      switch (request.method) {
        case 'ping':
          return {};
        case 'tools/list':
          return await this.list(ctx, 'tools', params);
        case 'prompts/list':
          return await this.list(ctx, 'prompts', params);
        case 'resources/list':
          return await this.list(ctx, 'resources', params);
        case 'resources/templates/list':
          return await this.list(ctx, 'resourceTemplates', params);
        // Every method that reaches an upstream runs through the same stages: admitted, metered, one ledger row each.
        case 'tools/call':
          return await runUpstreamCall(this.callDeps, ctx, CALL_TOOL, params);
        case 'resources/read':
          return await runUpstreamCall(this.callDeps, ctx, READ_RESOURCE, params);
        case 'prompts/get':
          return await runUpstreamCall(this.callDeps, ctx, GET_PROMPT, params);
        default:
          // Not offered: completions, logging, subscriptions, tasks.
          throw new McpError(METHOD_NOT_FOUND, `Method not found: ${request.method.slice(0, 100)}`, 404, 'method_not_found');
      }
    } catch (error) {
      if (error instanceof McpError) throw error;
      throw toMcpError(error, '', this.settings);
    }
  }

  close(): void {
    this.unsubscribe();
    this.inFlight.close();
    this.notifier.close();
  }

  private async list(ctx: CallContext, kind: ListKind, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { cursor } = parseParams(PaginatedRequestParamsSchema, params);
    const after = cursor === undefined ? undefined : decodeCursor(kind, cursor);
    if (cursor !== undefined && after === undefined) throw invalidParams('`cursor` is not a cursor this server gave for this list.', { field: 'cursor' });
    const sorted = await this.directory.listing(ctx.access, ctx.endpoint, kind);
    const { page, nextCursor } = pageAfter(kind, sorted, after, this.settings.pageSize);
    return { [kind]: page, ...(nextCursor === undefined ? {} : { nextCursor }) };
  }

  private endHere(id: string, issuedAt: number): void {
    this.ended.add(id, issuedAt);
    this.inFlight.cancelSession(id);
    this.notifier.closeSession(id);
  }
}
