import type { Logger } from 'pino';
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpAccess } from '../core/mcp-access.js';
import type { UpstreamLists, UpstreamMcpServer, UpstreamMcpServers } from './upstream/upstream-server.js';
import type { ArgumentChecks } from './arguments.js';
import { sortedByKey, type Keyed, type ListKind } from './cursor.js';
import { callerName, callerUri, NameMap, SERVER_SEPARATOR, upstreamUriOf } from './names.js';

/**
 * What a caller sees of the upstream servers: the servers of its endpoint (`/mcp`: every one,
 * `/mcp/{server}`: that one) that its key may use and that are up, each with its lists under the
 * caller's names. The renamed lists are made once per version of a server's lists (the upstream
 * layer gives a new object when they change) and per endpoint kind; the key's access filters them
 * on each request.
 */

/** `''` is `/mcp`; otherwise the id of the one server of `/mcp/{server}`. */
export type Endpoint = string;

export interface NamedTool {
  /** As the caller sees it: renamed, the rest as the upstream gave it. */
  readonly listed: Tool;
  readonly upstream: Tool;
}

export interface NamedPrompt {
  readonly listed: Prompt;
  readonly upstream: Prompt;
}

/** One server's lists under the caller's names. */
export interface NamedLists {
  readonly tools: readonly NamedTool[];
  readonly toolsByName: NameMap<NamedTool>;
  readonly prompts: readonly NamedPrompt[];
  readonly promptsByName: NameMap<NamedPrompt>;
  readonly resources: readonly Resource[];
  readonly resourceTemplates: readonly ResourceTemplate[];
  /** Compiled argument checks of these tools. */
  readonly checks: ArgumentChecks;
}

export interface ReachableServer {
  readonly server: UpstreamMcpServer;
  readonly named: NamedLists;
}

export type ToolLookup =
  | { readonly server: UpstreamMcpServer; readonly tool: NamedTool; readonly named: NamedLists }
  | { readonly denied: { readonly server: string; readonly tool: string } }
  | { readonly down: UpstreamMcpServer }
  | undefined;

/** How long a list waits for a server still making its first connection. */
const LIST_WAIT_MS = 5_000;
/** How often a server left out of the lists because it is down is logged (per server, per process). */
const DOWN_LOG_MS = 60_000;
/** Sorted listings kept (by list, endpoint and access): a few per key in use. */
const MAX_LISTINGS = 1000;

/** A sorted listing and the versions of the servers' lists it was made from. */
interface Listing {
  readonly from: readonly NamedLists[];
  readonly sorted: readonly Keyed<unknown>[];
}

export class McpDirectory {
  private readonly named = new WeakMap<UpstreamLists, { aggregated?: NamedLists; alone?: NamedLists; checks?: ArgumentChecks }>();
  private readonly listings = new Map<string, Listing>();
  private readonly downLogged = new Map<string, number>();

  constructor(
    private readonly servers: UpstreamMcpServers,
    private readonly logger: Logger,
    private readonly listWaitMs = LIST_WAIT_MS,
  ) {}

  /** The configured server of this id (ids compare without case, as the configuration's do), whether or not the key may use it. */
  server(id: string): UpstreamMcpServer | undefined {
    const exact = this.servers.get(id);
    if (exact !== undefined) return exact;
    const folded = id.toLowerCase();
    return this.servers.all().find((server) => server.id.toLowerCase() === folded);
  }

  /** The servers of the endpoint the key may use, in configuration order, with their lists; a server that is down is left out. */
  async reachable(access: McpAccess, endpoint: Endpoint, wholeServersOnly = false): Promise<ReachableServer[]> {
    if (access.none) return [];
    const allowed = (server: UpstreamMcpServer) => (wholeServersOnly ? access.allowsWholeServer(server.id) : access.allowsServer(server.id));
    const candidates = endpoint === '' ? this.servers.all().filter(allowed) : [this.server(endpoint)].filter((server): server is UpstreamMcpServer => server !== undefined && allowed(server));
    const named = await Promise.all(candidates.map((server) => this.namedLists(server, endpoint === '')));
    const reachable: ReachableServer[] = [];
    candidates.forEach((server, index) => {
      const lists = named[index];
      if (lists !== undefined) reachable.push({ server, named: lists });
    });
    return reachable;
  }

  /** One server's lists under the caller's names; undefined (logged now and then) when it is down. */
  async namedLists(server: UpstreamMcpServer, aggregated: boolean): Promise<NamedLists | undefined> {
    let lists: UpstreamLists;
    try {
      lists = await server.lists(this.listWaitMs);
    } catch (error) {
      this.logDown(server, error);
      return undefined;
    }
    let entry = this.named.get(lists);
    if (entry === undefined) this.named.set(lists, (entry = {}));
    // The tools' schemas are the same under either naming: compiled once per version of the lists.
    // Ajv and RE2 (a WebAssembly module of ~16 MB) are loaded by the first upstream connection (upstream/client-side.ts): a gateway without MCP servers never holds them.
    if (entry.checks === undefined) {
      const { ArgumentChecks } = await import('./arguments.js');
      entry.checks ??= new ArgumentChecks(server.id, this.logger);
    }
    const checks = entry.checks;
    if (aggregated) return (entry.aggregated ??= this.rename(server.id, lists, true, checks));
    return (entry.alone ??= this.rename(server.id, lists, false, checks));
  }

  /**
   * One list as the key sees it on the endpoint, over every server it reaches that is up, sorted by
   * the caller's key of each entry (see cursor.ts). Kept while no server's lists change, so paging
   * through it costs a binary search a page rather than a rebuild.
   */
  async listing(access: McpAccess, endpoint: Endpoint, kind: ListKind): Promise<readonly Keyed<unknown>[]> {
    const wholeServersOnly = kind !== 'tools';
    const reachable = await this.reachable(access, endpoint, wholeServersOnly);
    const key = `${kind}\u0000${endpoint}\u0000${access.fingerprint}`;
    const kept = this.listings.get(key);
    if (kept !== undefined && kept.from.length === reachable.length && kept.from.every((named, index) => named === reachable[index]!.named)) {
      // Most recently used last: the first is the one to go.
      this.listings.delete(key);
      this.listings.set(key, kept);
      return kept.sorted;
    }
    const sorted = sortedByKey(entriesOf(kind, access, reachable));
    this.listings.delete(key);
    this.listings.set(key, { from: reachable.map((server) => server.named), sorted });
    if (this.listings.size > MAX_LISTINGS) this.listings.delete(this.listings.keys().next().value!);
    return sorted;
  }

  /**
   * A tool by the caller's name, when the key may call it. A tool that does not exist and one the
   * key may not use are alike `undefined` to the caller (`denied` is for the ledger alone); a tool
   * of a server the key may use that is down is `down` (the key knows of that server anyway).
   */
  async tool(access: McpAccess, endpoint: Endpoint, name: string): Promise<ToolLookup> {
    const target = this.splitName(endpoint, name);
    if (target === undefined || !access.allowsServer(target.server.id)) return undefined;
    const named = await this.namedLists(target.server, endpoint === '');
    if (named === undefined) return { down: target.server };
    const tool = named.toolsByName.get(name);
    if (tool === undefined) return undefined;
    if (!access.allowsTool(target.server.id, tool.upstream.name)) return { denied: { server: target.server.id, tool: tool.upstream.name } };
    return { server: target.server, tool, named };
  }

  /** A prompt by the caller's name: only on a server the key may use whole. */
  async prompt(access: McpAccess, endpoint: Endpoint, name: string): Promise<{ readonly server: UpstreamMcpServer; readonly prompt: NamedPrompt } | undefined> {
    const target = this.splitName(endpoint, name);
    if (target === undefined || !access.allowsWholeServer(target.server.id)) return undefined;
    const prompt = (await this.namedLists(target.server, endpoint === ''))?.promptsByName.get(name);
    return prompt === undefined ? undefined : { server: target.server, prompt };
  }

  /** The server and upstream URI of a caller's resource URI, on a server the key may use whole. */
  resource(access: McpAccess, endpoint: Endpoint, uri: string): { readonly server: UpstreamMcpServer; readonly uri: string } | undefined {
    if (endpoint !== '') {
      const server = this.server(endpoint);
      return server === undefined || !access.allowsWholeServer(server.id) ? undefined : { server, uri };
    }
    const parts = upstreamUriOf(uri);
    if (parts === undefined) return undefined;
    const server = this.server(parts.serverId);
    return server === undefined || !access.allowsWholeServer(server.id) ? undefined : { server, uri: parts.uri };
  }

  /** Which server a caller's name belongs to: on `/mcp` the part before the first `__`, else the endpoint's. */
  private splitName(endpoint: Endpoint, name: string): { readonly server: UpstreamMcpServer } | undefined {
    if (endpoint !== '') {
      const server = this.server(endpoint);
      return server === undefined ? undefined : { server };
    }
    const separator = name.indexOf(SERVER_SEPARATOR);
    if (separator <= 0) return undefined;
    const server = this.server(name.slice(0, separator));
    // The prefix must be the server's id as configured: `GitHub__x` is not `github__x`.
    return server === undefined || server.id !== name.slice(0, separator) ? undefined : { server };
  }

  private rename(serverId: string, lists: UpstreamLists, aggregated: boolean, checks: ArgumentChecks): NamedLists {
    const prefix = aggregated ? serverId : null;
    const toolsByName = new NameMap<NamedTool>();
    const tools: NamedTool[] = [];
    for (const upstream of lists.tools) {
      const named: NamedTool = { listed: { ...upstream, name: callerName(prefix, upstream.name) }, upstream };
      if (toolsByName.add(named.listed.name, named)) tools.push(named);
      else this.logger.warn({ server: serverId, tool: upstream.name }, `MCP server ${serverId}: tool '${upstream.name}' comes out under the same name as another once made a valid tool name; it is left out`);
    }
    const promptsByName = new NameMap<NamedPrompt>();
    const prompts: NamedPrompt[] = [];
    for (const upstream of lists.prompts) {
      const named: NamedPrompt = { listed: { ...upstream, name: callerName(prefix, upstream.name) }, upstream };
      if (promptsByName.add(named.listed.name, named)) prompts.push(named);
    }
    const resources = aggregated ? lists.resources.map((resource) => ({ ...resource, uri: callerUri(serverId, resource.uri) })) : lists.resources;
    const resourceTemplates = aggregated ? lists.resourceTemplates.map((template) => ({ ...template, uriTemplate: callerUri(serverId, template.uriTemplate) })) : lists.resourceTemplates;
    return { tools, toolsByName, prompts, promptsByName, resources, resourceTemplates, checks };
  }

  private logDown(server: UpstreamMcpServer, error: unknown): void {
    const now = Date.now();
    const last = this.downLogged.get(server.id);
    if (last !== undefined && now - last < DOWN_LOG_MS) return;
    this.downLogged.set(server.id, now);
    const state = server.state();
    this.logger.warn({ server: server.id, state: state.state, since: new Date(state.since).toISOString(), err: error instanceof Error ? error.message : String(error) }, `MCP server ${server.id} is ${state.state}: left out of the lists (logged at most once a minute)`);
  }
}

/** A list's entries over the reachable servers, each under the key it is paged by. */
function* entriesOf(kind: ListKind, access: McpAccess, reachable: readonly ReachableServer[]): Generator<Keyed<unknown>> {
  for (const { server, named } of reachable) {
    switch (kind) {
      case 'tools':
        for (const tool of named.tools) if (access.allowsTool(server.id, tool.upstream.name)) yield { key: tool.listed.name, item: tool.listed };
        break;
      case 'prompts':
        for (const prompt of named.prompts) yield { key: prompt.listed.name, item: prompt.listed };
        break;
      case 'resources':
        for (const resource of named.resources) yield { key: resource.uri, item: resource };
        break;
      case 'resourceTemplates':
        for (const template of named.resourceTemplates) yield { key: template.uriTemplate, item: template };
        break;
    }
  }
}
