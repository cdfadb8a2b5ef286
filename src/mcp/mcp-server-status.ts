import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { isStdioServer, type McpTransport } from '../config/config-file.js';
import { mcpSecretValuesOf } from '../config/secret-values.js';
import { redact } from '../core/upstream-errors.js';
import type { McpServerEntry, McpServerList } from './mcp-server-list.js';
import type { UpstreamMcpServers, UpstreamState } from './upstream/upstream-server.js';

/** One server as the console and `/status` show it: where it comes from, how it is reached, how its connection stands, its tools. */
export interface McpServerView {
  readonly entry: McpServerEntry;
  readonly transport: McpTransport | 'stdio';
  /** Its connection in this process; null when the upstream layer has not taken it up yet (a moment after a change). */
  readonly state: UpstreamState | null;
  /** Its tools, when it is ready and asked for them; null otherwise. */
  readonly tools: readonly Pick<Tool, 'name' | 'description'>[] | null;
}

/** How long a page waits for a ready server's cached lists (they are in memory: this bounds a server being re-listed). */
const LISTS_WAIT_MS = 1000;

/**
 * Every server in force with its state (and, with `withTools`, its tools) from this process's
 * upstream connections. An error text is redacted once more with the server's own secrets, whatever
 * the upstream layer did, since a page shows it.
 */
export async function mcpServerViews(list: Pick<McpServerList, 'entries'>, upstreams: Pick<UpstreamMcpServers, 'get'>, withTools: boolean): Promise<McpServerView[]> {
  return Promise.all(
    list.entries().map(async (entry): Promise<McpServerView> => {
      const upstream = upstreams.get(entry.id);
      const raw = upstream?.state() ?? null;
      const state = raw === null || raw.error === null ? raw : { ...raw, error: redact(raw.error, mcpSecretValuesOf(entry.config)) };
      let tools: McpServerView['tools'] = null;
      if (withTools && upstream !== undefined && state?.state === 'ready') {
        tools = await upstream.lists(LISTS_WAIT_MS).then(
          (lists) => lists.tools.map((tool) => ({ name: tool.name, ...(tool.description === undefined ? {} : { description: tool.description }) })),
          () => null,
        );
      }
      return { entry, transport: isStdioServer(entry.config) ? 'stdio' : entry.config.transport, state, tools };
    }),
  );
}
