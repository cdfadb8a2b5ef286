import type { Logger } from 'pino';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type GetPromptResult, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpSettings } from '../config/config-file.js';
import { decodeCursor, pageOf, type ListKind } from './cursor.js';
import { McpDirectory, type Endpoint, type ReachableServer } from './directory.js';
import { InFlightRequests } from './in-flight.js';
import { invalidParams, McpError, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, type JsonRpcRequest, type RequestId } from './jsonrpc.js';
import { ListNotifier, type ListenerStream } from './list-notifier.js';
import { callerUri } from './names.js';
import { EndedSessions, SessionTokens, type McpSession, type SessionCheck } from './session-token.js';
import type { Siblings } from './siblings.js';
import { callTool, toMcpError, type CallContext, type ToolCallDeps } from './tool-call.js';
import type { UpstreamMcpServers } from './upstream/upstream-server.js';

export interface McpServiceDeps extends Omit<ToolCallDeps, 'directory'> {
  readonly servers: UpstreamMcpServers;
  readonly logger: Logger;
  /** The key sessions are signed with, the same in every process of the deployment. */
  readonly sessionKey: Buffer;
  readonly siblings: Siblings;
  /** Sluice's version, in `serverInfo`. */
  readonly version: string;
}

const ENDED_TOPIC = 'mcp.session-ended';

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
  private readonly callDeps: ToolCallDeps;

  constructor(private readonly deps: McpServiceDeps, directory?: McpDirectory) {
    this.directory = directory ?? new McpDirectory(deps.servers, deps.logger);
    this.tokens = new SessionTokens(deps.sessionKey);
    this.inFlight = new InFlightRequests(deps.siblings);
    this.notifier = new ListNotifier(deps.servers);
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
    const offered = params.protocolVersion;
    if (typeof offered !== 'string') throw invalidParams('`protocolVersion` must be a string.', { field: 'protocolVersion' });
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

  /** DELETE: the session ends here and in the sibling workers; its requests are cancelled and its streams closed. */
  end(session: McpSession): void {
    this.endHere(session.id, session.issuedAt);
    this.deps.siblings.publish(ENDED_TOPIC, { id: session.id, issuedAt: session.issuedAt });
  }

  cancel(session: McpSession, id: RequestId): void {
    this.inFlight.cancel(session.id, id);
  }

  /** A request of the session begins; its signal aborts when the caller cancels it (from any connection or worker). */
  track(session: McpSession, id: RequestId): { readonly signal: AbortSignal; done(): void } {
    return this.inFlight.start(session.id, id);
  }

  listen(stream: ListenerStream): () => void {
    return this.notifier.add(stream);
  }

  /** One request of an established session (not `initialize`); throws McpError. */
  async handle(ctx: CallContext, request: JsonRpcRequest): Promise<unknown> {
    const { params } = request;
    try {
      switch (request.method) {
        case 'ping':
          return {};
        case 'tools/list':
          return this.list(ctx, 'tools', params, (reachable) => reachable.flatMap(({ server, named }) => named.tools.filter((tool) => ctx.access.allowsTool(server.id, tool.upstream.name)).map((tool) => tool.listed)));
        case 'prompts/list':
          return this.list(ctx, 'prompts', params, (reachable) => reachable.flatMap(({ named }) => named.prompts.map((prompt) => prompt.listed)), true);
        case 'resources/list':
          return this.list(ctx, 'resources', params, (reachable) => reachable.flatMap(({ named }) => named.resources), true);
        case 'resources/templates/list':
          return this.list(ctx, 'resourceTemplates', params, (reachable) => reachable.flatMap(({ named }) => named.resourceTemplates), true);
        case 'tools/call':
          return await callTool(this.callDeps, ctx, params);
        case 'resources/read':
          return await this.readResource(ctx, params);
        case 'prompts/get':
          return await this.getPrompt(ctx, params);
        default:
          // Not offered: completions, logging, subscriptions, tasks.
          throw new McpError(METHOD_NOT_FOUND, `Method not found: ${request.method.slice(0, 100)}`, 404, 'method_not_found');
      }
    } catch (error) {
      throw toMcpError(error, '', this.settings);
    }
  }

  close(): void {
    this.unsubscribe();
    this.inFlight.close();
    this.notifier.close();
  }

  private async list<T>(ctx: CallContext, kind: ListKind, params: Record<string, unknown>, entries: (reachable: ReachableServer[]) => T[], wholeServersOnly = false): Promise<Record<string, unknown>> {
    const offset = params.cursor === undefined ? 0 : decodeCursor(kind, params.cursor);
    if (offset === undefined) throw invalidParams('`cursor` is not a cursor this server gave for this list.', { field: 'cursor' });
    const all = entries(await this.directory.reachable(ctx.access, ctx.endpoint, wholeServersOnly));
    const { page, nextCursor } = pageOf(kind, all, offset, this.settings.pageSize);
    return { [kind]: page, ...(nextCursor === undefined ? {} : { nextCursor }) };
  }

  private async readResource(ctx: CallContext, params: Record<string, unknown>): Promise<ReadResourceResult> {
    const uri = params.uri;
    if (typeof uri !== 'string' || uri === '') throw invalidParams('`uri` must be a resource URI.', { field: 'uri' });
    const target = this.directory.resource(ctx.access, ctx.endpoint, uri);
    if (target === undefined) throw resourceNotFound(uri);
    const { maxResultBytes, callTimeoutMs } = this.settings;
    try {
      const result = await target.server.readResource(target.uri, { signal: ctx.signal, timeoutMs: callTimeoutMs, maxResultBytes });
      if (ctx.endpoint !== '') return result;
      return { ...result, contents: result.contents.map((content) => ({ ...content, uri: callerUri(target.server.id, content.uri) })) };
    } catch (error) {
      throw toMcpError(error, target.server.id, this.settings);
    }
  }

  private async getPrompt(ctx: CallContext, params: Record<string, unknown>): Promise<GetPromptResult> {
    const name = params.name;
    if (typeof name !== 'string' || name === '') throw invalidParams('`name` must be the name of a prompt.', { field: 'name' });
    const args = params.arguments;
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args) || Object.values(args).some((value) => typeof value !== 'string'))) {
      throw invalidParams("`arguments` must be an object of strings (a prompt's arguments are strings).", { field: 'arguments' });
    }
    const found = await this.directory.prompt(ctx.access, ctx.endpoint, name);
    if (found === undefined) throw invalidParams(`Unknown prompt: ${name.slice(0, 128)}`);
    const { maxResultBytes, callTimeoutMs } = this.settings;
    try {
      return await found.server.getPrompt(found.prompt.upstream.name, args as Record<string, string> | undefined, { signal: ctx.signal, timeoutMs: callTimeoutMs, maxResultBytes });
    } catch (error) {
      throw toMcpError(error, found.server.id, this.settings);
    }
  }

  private endHere(id: string, issuedAt: number): void {
    this.ended.add(id, issuedAt);
    this.inFlight.cancelSession(id);
    this.notifier.closeSession(id);
  }
}

function resourceNotFound(uri: string): McpError {
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri.slice(0, 256)}`, 404, 'resource_not_found', { uri: uri.slice(0, 256) });
}
