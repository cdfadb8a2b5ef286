import type { CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../config/config-file.js';

/** Where an upstream MCP server stands, for `/status`, the console and the lists (a server that is not `ready` is left out of them). */
export interface UpstreamState {
  readonly state: 'connecting' | 'ready' | 'down';
  /** When it entered that state (Unix ms). */
  readonly since: number;
  /** Why it is down or was last reconnected, its secrets redacted; null when there was no failure. */
  readonly error: string | null;
  /** The protocol revision negotiated with it, once ready. */
  readonly protocolVersion: string | null;
  /** How many times a stdio server was restarted, or an HTTP server's session re-initialised. */
  readonly restarts: number;
}

/** The upstream's lists, each fetched whole (every page) and renewed when the server says it changed. */
export interface UpstreamLists {
  readonly tools: readonly Tool[];
  readonly resources: readonly Resource[];
  readonly resourceTemplates: readonly ResourceTemplate[];
  readonly prompts: readonly Prompt[];
}

export interface ProgressUpdate {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** How one call to an upstream is bounded, and where its progress goes. */
export interface CallOptions {
  /** The caller's cancellation: aborting sends the upstream `notifications/cancelled`. */
  readonly signal: AbortSignal;
  /** `mcp.call_timeout_ms`: past it the call fails with `timeout` and the upstream is sent a cancellation. */
  readonly timeoutMs: number;
  /** `mcp.max_result_bytes`: an answer larger than this fails with `too_large` (counted as it arrives, never held whole first). */
  readonly maxResultBytes: number;
  /** Progress the upstream reports for this call (asked for with a progress token only when given). */
  readonly onProgress?: (update: ProgressUpdate) => void;
  /**
   * Called once the request is known to have left for the upstream (it may have run, and is charged): before the
   * call's answer or failure is returned, unless the failure is one of connecting (refused, no such host), which
   * means it never left.
   */
  readonly onSent?: () => void;
}

/**
 * Why a call to an upstream failed:
 * - `unavailable`: the server could not be reached, or is down (restarting, session lost and not re-made);
 * - `timeout`: no answer within `call_timeout_ms` (the upstream was sent a cancellation);
 * - `too_large`: the answer exceeded `max_result_bytes`;
 * - `cancelled`: the caller's signal aborted;
 * - `protocol`: the upstream answered with a JSON-RPC error (`code` and `message` are its own, secrets redacted).
 */
export type UpstreamFailureKind = 'unavailable' | 'timeout' | 'too_large' | 'cancelled' | 'protocol';

export class UpstreamMcpError extends Error {
  override name = 'UpstreamMcpError';
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    /** The upstream's JSON-RPC error code, for `protocol`. */
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * One upstream MCP server as the gateway uses it: its state, its cached lists, and the three calls
 * that reach it. Never given a caller's credentials: it sends the configured headers alone.
 */
export interface UpstreamMcpServer {
  readonly id: string;
  readonly config: McpServerConfig;
  state(): UpstreamState;
  /** The cached lists; waits for the first connection (up to `timeoutMs`); throws `UpstreamMcpError` when the server is down. */
  lists(timeoutMs: number): Promise<UpstreamLists>;
  callTool(name: string, args: Record<string, unknown> | undefined, options: CallOptions): Promise<CallToolResult>;
  readResource(uri: string, options: CallOptions): Promise<ReadResourceResult>;
  getPrompt(name: string, args: Record<string, string> | undefined, options: CallOptions): Promise<GetPromptResult>;
  /** Called after its tools, resources or prompts changed (the cached lists are renewed before); returns the unsubscribe. */
  onListChanged(listener: (list: 'tools' | 'resources' | 'prompts') => void): () => void;
}

/** Every upstream MCP server of this process, kept in step with the configuration file and the console. */
export interface UpstreamMcpServers {
  /** Starts, restarts (a changed entry) and stops servers to match `servers`. */
  sync(servers: readonly McpServerConfig[]): void;
  get(id: string): UpstreamMcpServer | undefined;
  all(): readonly UpstreamMcpServer[];
  /** Any server's lists changed (or a server came or went): for the `list_changed` notifications to callers. */
  onListChanged(listener: (serverId: string, list: 'tools' | 'resources' | 'prompts') => void): () => void;
  close(): Promise<void>;
}
