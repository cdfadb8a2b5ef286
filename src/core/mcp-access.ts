import type { Limits } from './key-limits.js';

/**
 * An MCP server id: the prefix of its tools' aggregated names (`github__create_issue`) and the last
 * segment of `/mcp/{id}`, so letters, digits, `-` and single `_` only (a `__` would make the
 * aggregated names ambiguous), at most 32 characters.
 */
export const MCP_SERVER_ID = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$/;
export const MCP_SERVER_ID_RULE = 'must be 1-32 letters, digits, - or _ (never two _ in a row), starting with a letter or digit';

/** One allow-list entry: a server id (all its tools), or `server/tool` (that tool alone; a tool name may itself hold `/`). */
export const MCP_ALLOW_ENTRY = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}(?:\/[^\s/][^\s]{0,127})?$/;
export const MCP_ALLOW_ENTRY_RULE = "must be an MCP server id or 'server/tool'";
/** Most entries one allow-list holds. */
export const MCP_ALLOW_LIST_MAX = 500;

/**
 * Allow-list entries as typed (a CLI flag, a console field), already split → the list, deduplicated;
 * or what is wrong with it, quoting at most a few bad entries, shortened.
 */
export function readMcpAllowList(entries: readonly string[]): readonly string[] | { readonly problem: string } {
  const unique = [...new Set(entries)];
  if (unique.length > MCP_ALLOW_LIST_MAX) return { problem: `at most ${MCP_ALLOW_LIST_MAX} entries` };
  const bad = unique.filter((entry) => !MCP_ALLOW_ENTRY.test(entry));
  if (bad.length === 0) return unique;
  const quoted = bad.slice(0, 3).map((entry) => `'${entry.length > 60 ? `${entry.slice(0, 60)}…` : entry}'`).join(', ');
  return { problem: `${quoted}${bad.length > 3 ? ` (and ${bad.length - 3} more)` : ''} ${MCP_ALLOW_ENTRY_RULE}; a server id ${MCP_SERVER_ID_RULE.replace(/^must be/, 'is')}` };
}

/**
 * What a key may reach through `/mcp`, from its own allow-list and its account's. Deny by default:
 * a key without a list reaches nothing, whatever its account's. An account's list is a ceiling over
 * every key of the account: a key reaches what both lists allow.
 */
export class McpAccess {
  static readonly NONE = new McpAccess(null, null);

  private constructor(
    private readonly key: AllowList | null,
    private readonly account: AllowList | null,
  ) {}

  static of(keyLimits: Limits | null, accountLimits: Limits | null): McpAccess {
    const key = keyLimits?.mcp;
    if (key === undefined || key.length === 0) return McpAccess.NONE;
    const account = accountLimits?.mcp;
    return new McpAccess(AllowList.parse(key), account === undefined ? null : AllowList.parse(account));
  }

  /** True when the key reaches nothing at all. */
  get none(): boolean {
    return this.key === null;
  }

  /** Whether the key may use the server at all (some or all of its tools, its resources and prompts). */
  allowsServer(serverId: string): boolean {
    if (this.key === null) return false;
    return this.key.touches(serverId) && (this.account === null || this.account.touches(serverId));
  }

  /** Whether the key may see and call this tool of the server. */
  allowsTool(serverId: string, tool: string): boolean {
    if (this.key === null) return false;
    return this.key.allowsTool(serverId, tool) && (this.account === null || this.account.allowsTool(serverId, tool));
  }

  /**
   * Whether the key may list and read the server's resources and prompts: only with the whole
   * server allowed (a list naming single tools grants those tools alone).
   */
  allowsWholeServer(serverId: string): boolean {
    if (this.key === null) return false;
    return this.key.whole(serverId) && (this.account === null || this.account.whole(serverId));
  }
}

/** One parsed allow-list: whole servers, and single tools by server. Server ids compare without case, as the configuration's do. */
class AllowList {
  private constructor(
    private readonly servers: ReadonlySet<string>,
    private readonly tools: ReadonlyMap<string, ReadonlySet<string>>,
  ) {}

  static parse(entries: readonly string[]): AllowList {
    const servers = new Set<string>();
    const tools = new Map<string, Set<string>>();
    for (const entry of entries) {
      const slash = entry.indexOf('/');
      if (slash === -1) {
        servers.add(entry.toLowerCase());
        continue;
      }
      const server = entry.slice(0, slash).toLowerCase();
      let named = tools.get(server);
      if (named === undefined) tools.set(server, (named = new Set()));
      named.add(entry.slice(slash + 1));
    }
    return new AllowList(servers, tools);
  }

  touches(serverId: string): boolean {
    const id = serverId.toLowerCase();
    return this.servers.has(id) || this.tools.has(id);
  }

  whole(serverId: string): boolean {
    return this.servers.has(serverId.toLowerCase());
  }

  allowsTool(serverId: string, tool: string): boolean {
    const id = serverId.toLowerCase();
    return this.servers.has(id) || this.tools.get(id)?.has(tool) === true;
  }
}
