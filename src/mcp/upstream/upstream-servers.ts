import type { Logger } from 'pino';
import type { McpServerConfig } from '../../config/config-file.js';
import { connectionStamp, DEFAULT_CONNECTION_OPTIONS, UpstreamConnection, type UpstreamConnectionOptions } from './upstream-connection.js';
import type { UpstreamMcpServer, UpstreamMcpServers } from './upstream-server.js';

type ListKind = 'tools' | 'resources' | 'prompts';
const LIST_KINDS: readonly ListKind[] = ['tools', 'resources', 'prompts'];

/**
 * Every upstream MCP server of this process, one connection each, kept in step with the
 * configuration (file and console): a new entry is connected, a changed one replaced by a fresh
 * connection, a removed one stopped (its HTTP session closed, its process terminated).
 */
export class UpstreamMcpServerRegistry implements UpstreamMcpServers {
  private readonly servers = new Map<string, { connection: UpstreamConnection; stamp: string; unsubscribe: () => void }>();
  private readonly listeners = new Set<(serverId: string, list: ListKind) => void>();
  private readonly options: UpstreamConnectionOptions;
  private closed = false;

  constructor(
    private readonly logger: Logger,
    options: Partial<UpstreamConnectionOptions> = {},
  ) {
    this.options = { ...DEFAULT_CONNECTION_OPTIONS, ...options };
  }

  sync(servers: readonly McpServerConfig[]): void {
    if (this.closed) return;
    const retired: UpstreamConnection[] = [];
    const wanted = new Set(servers.map((server) => server.id));
    for (const config of servers) {
      const stamp = connectionStamp(config);
      const existing = this.servers.get(config.id);
      if (existing?.stamp === stamp) {
        existing.connection.updateConfig(config);
        continue;
      }
      if (existing !== undefined) {
        existing.unsubscribe();
        retired.push(existing.connection);
      }
      const connection = new UpstreamConnection(config, this.logger, this.options);
      const unsubscribe = connection.onListChanged((list) => this.emit(config.id, list));
      this.servers.set(config.id, { connection, stamp, unsubscribe });
      this.logger.info({ mcpServer: config.id }, existing === undefined ? 'MCP server added' : 'MCP server changed; reconnecting');
      connection.start();
    }
    for (const [id, entry] of this.servers) {
      if (wanted.has(id)) continue;
      this.servers.delete(id);
      entry.unsubscribe();
      retired.push(entry.connection);
      this.logger.info({ mcpServer: id }, 'MCP server removed');
    }
    for (const connection of retired) {
      // Its lists leave the aggregate now; the replacement announces its own once it is ready.
      for (const list of LIST_KINDS) this.emit(connection.id, list);
      void connection.close().catch((error: unknown) => this.logger.warn({ mcpServer: connection.id, err: error }, 'MCP server did not stop cleanly'));
    }
  }

  get(id: string): UpstreamMcpServer | undefined {
    return this.servers.get(id)?.connection;
  }

  all(): readonly UpstreamMcpServer[] {
    return [...this.servers.values()].map((entry) => entry.connection);
  }

  onListChanged(listener: (serverId: string, list: ListKind) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.servers.values()];
    this.servers.clear();
    for (const entry of entries) entry.unsubscribe();
    await Promise.all(entries.map((entry) => entry.connection.close()));
  }

  private emit(serverId: string, list: ListKind): void {
    for (const listener of this.listeners) {
      try {
        listener(serverId, list);
      } catch (error) {
        this.logger.warn({ mcpServer: serverId, err: error }, 'MCP list-changed listener failed');
      }
    }
  }
}
