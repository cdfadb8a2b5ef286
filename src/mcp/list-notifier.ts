import type { McpAccess } from '../core/mcp-access.js';
import { notificationMessage } from './jsonrpc.js';
import { NO_SIBLINGS, type Siblings } from './siblings.js';
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

type ListKind = 'tools' | 'resources' | 'prompts';

const METHODS = {
  tools: 'notifications/tools/list_changed',
  resources: 'notifications/resources/list_changed',
  prompts: 'notifications/prompts/list_changed',
} as const;

/**
 * How long changes of one list are gathered into one notification. One event upstream is often
 * several here: a server changed by a reload leaves the lists as its old connection closes and
 * comes back as the new one is ready, milliseconds apart; a reload touching several servers
 * changes each. The notification goes at the end of the window, so the listing it prompts sees
 * the settled lists.
 */
export const LIST_CHANGED_WINDOW_MS = 200;

const STREAM_TOPIC = 'mcp.stream-opened';

/**
 * The GET streams open in this process, told when an upstream server's tools, resources or prompts
 * change (or a server comes or goes with a reload). A session hears each `notifications/{list}/list_changed`
 * once, on its most recent stream (the transport forbids sending one message on several streams):
 * a stream opened on another worker supersedes this worker's streams of the session. Every worker
 * keeps its own upstream connections and reloads its own configuration, so each hears of changes
 * itself, and only the worker holding the session's current stream tells it.
 */
export class ListNotifier {
  /** Session → its streams here, oldest first. */
  private readonly bySession = new Map<string, ListenerStream[]>();
  /** Streams of which the session has opened a newer one on another worker. */
  private readonly superseded = new WeakSet<ListenerStream>();
  /** `{session}\0{list}` → the notification waiting for its window to close. */
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private readonly unsubscribe: () => void;
  private readonly unsubscribeSiblings: () => void;

  constructor(
    servers: UpstreamMcpServers,
    private readonly siblings: Siblings = NO_SIBLINGS,
    private readonly windowMs = LIST_CHANGED_WINDOW_MS,
  ) {
    this.unsubscribe = servers.onListChanged((serverId, list) => this.changed(serverId, list));
    this.unsubscribeSiblings = siblings.subscribe(STREAM_TOPIC, (data) => {
      const session = (data as { session?: unknown } | null)?.session;
      if (typeof session === 'string') for (const stream of this.bySession.get(session) ?? []) this.superseded.add(stream);
    });
  }

  add(stream: ListenerStream): () => void {
    let streams = this.bySession.get(stream.session);
    if (streams === undefined) this.bySession.set(stream.session, (streams = []));
    streams.push(stream);
    this.siblings.publish(STREAM_TOPIC, { session: stream.session });
    return () => this.remove(stream);
  }

  /** Streams open here. */
  get size(): number {
    let size = 0;
    for (const streams of this.bySession.values()) size += streams.length;
    return size;
  }

  close(): void {
    this.unsubscribe();
    this.unsubscribeSiblings();
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    const streams = [...this.bySession.values()].flat();
    this.bySession.clear();
    for (const stream of streams) stream.close();
  }

  /** A session ended: its streams here close. */
  closeSession(session: string): void {
    const streams = this.bySession.get(session) ?? [];
    this.bySession.delete(session);
    for (const stream of streams) stream.close();
  }

  private remove(stream: ListenerStream): void {
    const streams = this.bySession.get(stream.session);
    if (streams === undefined) return;
    const index = streams.indexOf(stream);
    if (index !== -1) streams.splice(index, 1);
    if (streams.length === 0) this.bySession.delete(stream.session);
  }

  /** The session's most recent stream here, unless a newer one opened elsewhere. */
  private current(session: string): ListenerStream | undefined {
    const stream = this.bySession.get(session)?.at(-1);
    return stream === undefined || this.superseded.has(stream) ? undefined : stream;
  }

  private changed(serverId: string, list: ListKind): void {
    const folded = serverId.toLowerCase();
    for (const session of this.bySession.keys()) {
      const stream = this.current(session);
      if (stream === undefined || (stream.endpoint !== '' && stream.endpoint !== folded)) continue;
      const reaches = list === 'tools' ? stream.access.allowsServer(serverId) : stream.access.allowsWholeServer(serverId);
      if (reaches) this.schedule(session, list);
    }
  }

  private schedule(session: string, list: ListKind): void {
    const key = `${session}\u0000${list}`;
    if (this.pending.has(key)) return;
    const timer = setTimeout(() => {
      this.pending.delete(key);
      this.current(session)?.send(notificationMessage(METHODS[list]));
    }, this.windowMs);
    timer.unref?.();
    this.pending.set(key, timer);
  }
}
