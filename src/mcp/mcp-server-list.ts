import type { Logger } from 'pino';
import type { ChangeFeed } from '../changes/change-feed.js';
import { VersionedCache } from '../changes/versioned-cache.js';
import type { CredentialCipher } from '../catalogue/credential-cipher.js';
import { isStdioServer, mcpHttpServerSchema, type GatewayConfig, type McpHttpServerConfig, type McpServerConfig } from '../config/config-file.js';
import type { McpServersRepository, StoredMcpServer } from '../store/store.js';

/** An MCP server as the console and `/status` see it. `config` holds its headers or environment: never render their values. */
export interface McpServerEntry {
  readonly id: string;
  readonly origin: 'config' | 'console';
  readonly config: McpServerConfig;
  /** The names of the headers it sends (an HTTP server's; never their values). */
  readonly headerNames: readonly string[];
}

/** A console server's headers, sealed together in `console_mcp_servers.secrets`. */
export interface McpServerSecrets {
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What a console server's sealed headers are bound to: not its bare id, so that a provider's
 * sealed credentials (bound to the provider's id, which may be the same word) never open as a
 * server's, nor the reverse.
 */
export const mcpSealBinding = (id: string): string => `mcp-server:${id}`;

/**
 * The upstream MCP servers in force: the configuration file's `mcp_servers` (fixed until the file is
 * reloaded) merged with those registered in the console (`console_mcp_servers`, which change). A
 * console write bumps the catalogue's change counter, so every process and replica reloads the list
 * on the change feed's notice, or within the poll interval when one is lost (VersionedCache). The
 * file's entries win any clash of ids (compared without case, as the gateway compares them); a
 * stored entry that is not a valid HTTP server (a row the console could not have written) is left
 * out with a warning: only the configuration file declares stdio servers.
 */
export class McpServerList {
  private readonly state: VersionedCache<readonly McpServerEntry[]>;
  private readonly listeners = new Set<(servers: readonly McpServerConfig[]) => void>();
  /** The list last told to the listeners, as JSON: the catalogue's counter moves for models too, and an unchanged list is not told again. */
  private told: string;
  /** Console entries left out, as logged: each is told once while it lasts (the list reloads whenever the catalogue changes). */
  private leftOutLogged = new Set<string>();

  constructor(
    private config: Pick<GatewayConfig, 'mcpServers'>,
    private readonly repository: Pick<McpServersRepository, 'list'>,
    /** The store's catalogue change counter, which every console MCP server write bumps. */
    version: () => Promise<number>,
    private readonly cipher: CredentialCipher,
    private readonly logger: Logger,
  ) {
    this.told = JSON.stringify(config.mcpServers);
    this.state = new VersionedCache<readonly McpServerEntry[]>(config.mcpServers.map((server) => entryOf(server, 'config')), {
      topic: 'catalogue',
      version,
      load: () => this.load(),
      replaced: (entries) => this.tell(entries),
      failed: (error) => logger.warn({ err: error }, 'MCP server list reload failed; the list as it was serves on (reported at most every 30 s)'),
    });
  }

  /** Loads the store's entries (a failure is thrown), then follows the change feed and polls. */
  start(changes?: Pick<ChangeFeed, 'subscribe'>): Promise<void> {
    return this.state.start(changes);
  }

  /** Every server in force, the file's first: what `UpstreamMcpServers.sync` takes. */
  servers(): readonly McpServerConfig[] {
    return this.state.value.map((entry) => entry.config);
  }

  entries(): readonly McpServerEntry[] {
    return this.state.value;
  }

  /** The configuration file's servers alone (read-only in the console). */
  configServers(): readonly McpServerConfig[] {
    return this.config.mcpServers;
  }

  /** Called with the whole list now and after every change to it; returns the unsubscribe. */
  subscribe(listener: (servers: readonly McpServerConfig[]) => void): () => void {
    this.listeners.add(listener);
    listener(this.servers());
    return () => this.listeners.delete(listener);
  }

  /** Reloads when the stored version moved; a write in this process calls it at once. */
  refresh(): Promise<void> {
    return this.state.refresh();
  }

  /** A reloaded configuration file: the list is made again from it and the store's entries. */
  replaceConfig(config: Pick<GatewayConfig, 'mcpServers'>): Promise<void> {
    return this.state.reload(() => {
      this.config = config;
    });
  }

  async close(): Promise<void> {
    await this.state.stop();
    this.listeners.clear();
  }

  private async load(): Promise<readonly McpServerEntry[]> {
    const fileIds = new Set(this.config.mcpServers.map((server) => server.id.toLowerCase()));
    const fromConsole: McpServerEntry[] = [];
    const leftOut = new Map<string, string>();
    for (const stored of await this.repository.list()) {
      if (fileIds.has(stored.id.toLowerCase())) {
        leftOut.set(stored.id, 'console MCP server has the id of a configuration-file server; the file’s is used');
        continue;
      }
      const read = readStoredMcpServer(stored, this.cipher);
      // Never the values: the id says which entry to re-enter.
      if ('problem' in read) leftOut.set(stored.id, `console MCP server ${read.problem}; left out`);
      else fromConsole.push(entryOf(read.config, 'console'));
    }
    const logged = new Set<string>();
    for (const [id, message] of leftOut) {
      const key = `${id}\u0000${message}`;
      if (!this.leftOutLogged.has(key)) this.logger.warn({ mcpServer: id }, message);
      logged.add(key);
    }
    this.leftOutLogged = logged;
    return [...this.config.mcpServers.map((server) => entryOf(server, 'config')), ...fromConsole];
  }

  private tell(entries: readonly McpServerEntry[]): void {
    const servers = entries.map((entry) => entry.config);
    const stamp = JSON.stringify(servers);
    if (stamp === this.told) return;
    this.told = stamp;
    for (const listener of this.listeners) {
      try {
        listener(servers);
      } catch (error) {
        this.logger.warn({ err: error }, 'an MCP server list listener failed');
      }
    }
  }
}

/** A console server as a configuration entry, its headers unsealed; or what is wrong with it (never a value). */
export function readStoredMcpServer(stored: StoredMcpServer, cipher: CredentialCipher): { config: McpHttpServerConfig & { readonly fromConsole: true } } | { problem: string } {
  let secrets: McpServerSecrets = {};
  if (stored.secrets !== null) {
    try {
      secrets = JSON.parse(cipher.open(stored.secrets, mcpSealBinding(stored.id))) as McpServerSecrets;
    } catch {
      return { problem: 'headers cannot be decrypted (credential key changed?)' };
    }
  }
  // The HTTP schema alone, strict: a row naming a command (copied in, or written by hand) is refused here as the console refuses it.
  const parsed = mcpHttpServerSchema.safeParse({ ...stored.config, id: stored.id, headers: secrets.headers ?? {} });
  if (!parsed.success) return { problem: 'entry no longer valid (only HTTP servers can come from the console)' };
  return { config: { ...parsed.data, fromConsole: true } };
}

function entryOf(config: McpServerConfig, origin: McpServerEntry['origin']): McpServerEntry {
  const fromConsole: McpServerConfig = origin === 'console' ? { ...config, fromConsole: true } : config;
  return { id: config.id, origin, config: fromConsole, headerNames: isStdioServer(config) ? [] : Object.keys(config.headers) };
}
