// The MCP servers a gateway on this configuration and store would offer, for the commands that set MCP allow-lists.
import type { Store } from '../store/store.js';

/**
 * Says on standard error which servers of an MCP allow-list neither the configuration file nor the
 * console has: a warning, not a refusal, since a key may be readied before its server is added.
 */
export async function warnOfUnknownMcpServers(store: Pick<Store, 'mcpServers'>, configFile: string | undefined, entries: readonly string[], whose: string): Promise<void> {
  const { emptyConfig, loadConfigFile } = await import('../config/config-file.js');
  let fileIds: readonly string[];
  try {
    fileIds = (configFile === undefined ? emptyConfig() : loadConfigFile(configFile)).mcpServers.map((server) => server.id);
  } catch (error) {
    console.error(`Warning: the MCP servers of ${whose} were not checked: ${(error as Error).message}`);
    return;
  }
  // Ids compare without case, as the gateway compares them.
  const known = new Map<string, string>();
  for (const id of [...fileIds, ...(await store.mcpServers.list()).map((server) => server.id)]) if (!known.has(id.toLowerCase())) known.set(id.toLowerCase(), id);
  const servers = [...new Set(entries.map((entry) => entry.split('/', 1)[0]!))];
  const unknown = servers.filter((server) => !known.has(server.toLowerCase()));
  if (unknown.length === 0) return;
  const where = configFile === undefined ? 'no configuration file (./sluice.yaml absent; name one with --config) nor the console' : `neither ${configFile} nor the console`;
  const ids = [...known.values()];
  const has = ids.length === 0 ? 'no MCP server is configured' : `the MCP servers are ${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ', …' : ''}`;
  const one = unknown.length === 1;
  console.error(
    `Warning: the MCP allow-list of ${whose} names ${one ? 'a server' : 'servers'} that ${where} has: ${unknown.map((id) => `'${id}'`).join(', ')} (${has}). ` +
      `${one ? 'Its entries allow' : 'Their entries allow'} nothing until ${one ? 'a server of that id is' : 'servers of those ids are'} added.`,
  );
}
