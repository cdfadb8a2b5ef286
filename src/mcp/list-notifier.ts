import type { McpAccess } from '../core/mcp-access.js';
import { notificationMessage } from './jsonrpc.js';
import type { UpstreamMcpServers } from './upstream/upstream-server.js';

/** One caller's GET stream: where its server-to-client notifications go. */
export interface ListenerStream {
  readonly session: string;
  /** `''` for `/mcp`, else the lower-cased server id. */
  readonly endpoint: string;
  readonly access: McpAccess;
  send(message: string): void;
  close(): void;
}

const METHODS = {
  tools: 'notifications/tools/list_changed',
  resources: 'notifications/resources/list_changed',
  prompts: 'notifications/prompts/list_changed',
} as const;

/**
 * The GET streams open in this process, told when an upstream server's tools, resources or prompts
 * change (or a server comes or goes with a reload): each stream whose endpoint and key reach that
 * server hears `notifications/{list}/list_changed`. Every worker keeps its own upstream
 * connections and reloads its own configuration, so each hears of changes itself.
 */
export class ListNotifier {
  private readonly streams = new Set<ListenerStream>();
  private readonly unsubscribe: () => void;

  constructor(servers: UpstreamMcpServers) {
    this.unsubscribe = servers.onListChanged((serverId, list) => this.changed(serverId, list));
  }

  add(stream: ListenerStream): () => void {
    this.streams.add(stream);
    return () => this.streams.delete(stream);
  }


  get size(): number {
    return this.streams.size;
  }

  close(): void {
    this.unsubscribe();
    for (const stream of this.streams) stream.close();
    this.streams.clear();
  }

  private changed(serverId: string, list: 'tools' | 'resources' | 'prompts'): void {
    const message = notificationMessage(METHODS[list]);
    const folded = serverId.toLowerCase();
    for (const stream of this.streams) {
      if (stream.endpoint !== '' && stream.endpoint !== folded) continue;
      const reaches = list === 'tools' ? stream.access.allowsServer(serverId) : stream.access.allowsWholeServer(serverId);
      if (reaches) stream.send(message);
    }
  }

  /** A session ended: its streams here close. */
  closeSession(session: string): void {
    for (const stream of this.streams) {
      if (stream.session === session) {
        stream.close();
        this.streams.delete(stream);
      }
    }
  }
}
