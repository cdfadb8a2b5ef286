import { fieldErrors, type AdminResult } from '../catalogue/catalogue-admin.js';
import type { CredentialCipher } from '../catalogue/credential-cipher.js';
import { mcpHttpServerSchema } from '../config/config-file.js';
import type { McpServersRepository } from '../store/store.js';
import { mcpSealBinding, type McpServerList, type McpServerSecrets } from './mcp-server-list.js';

/** A stdio server's fields: a process on the gateway's host, which only the configuration file may declare. */
const STDIO_FIELDS = ['command', 'args', 'env', 'cwd'] as const;

export const STDIO_REFUSED =
  "a stdio MCP server (a command Sluice starts on the gateway's host) can be declared only in the configuration file, never through the console: a console admin is not an administrator of the host";

/** On update: undefined keeps the stored headers, null removes them, a record replaces them whole. */
export type HeaderChange = Readonly<Record<string, string>> | null | undefined;

/**
 * Changes to the console's MCP servers: HTTP servers only, validated with the configuration file's
 * own schema, their headers sealed. The configuration file's servers are read-only here, and an id
 * it has (in any case) is refused. Every write reloads this process's list at once; other processes
 * and replicas follow on the change feed.
 */
export class McpServerAdmin {
  constructor(
    private readonly repository: McpServersRepository,
    private readonly live: McpServerList,
    private readonly cipher: CredentialCipher,
  ) {}

  /**
   * @param raw the entry's plain fields as posted (id, url, transport, price_per_call, and anything else posted, to be refused by name)
   * @param isGateway whether a URL reaches this gateway itself (a server that would loop through `/mcp`)
   */
  async save(mode: 'create' | 'update', raw: Record<string, unknown>, headers: HeaderChange, isGateway: (url: URL) => boolean = () => false): Promise<AdminResult> {
    // Before anything else is judged, whatever else the request holds.
    const stdio = STDIO_FIELDS.find((field) => raw[field] !== undefined);
    if (stdio !== undefined) return refused(stdio, STDIO_REFUSED);
    await this.live.refresh(); // judge against the store as it is now, whichever process wrote last
    const id = typeof raw.id === 'string' ? raw.id : '';
    const folded = id.toLowerCase();
    const inFile = this.live.configServers().find((server) => server.id.toLowerCase() === folded);
    if (inFile !== undefined) {
      return refused('id', mode === 'create' ? `The configuration file already declares an MCP server '${inFile.id}'.` : `MCP server '${inFile.id}' comes from the configuration file; change it there.`);
    }
    const all = await this.repository.list();
    const stored = all.find((server) => server.id === id);
    if (mode === 'update' && stored === undefined) return refused('_', `There is no console MCP server '${id}'.`);
    const clash = all.find((server) => server.id.toLowerCase() === folded);
    if (mode === 'create' && clash !== undefined) return refused('id', `An MCP server '${clash.id}' already exists.`);

    let current: McpServerSecrets = {};
    if (stored?.secrets != null) {
      try {
        current = JSON.parse(this.cipher.open(stored.secrets, mcpSealBinding(id))) as McpServerSecrets;
      } catch {
        current = {}; // unreadable (credential key changed): the admin enters them again
      }
    }
    const merged = headers === undefined ? (current.headers ?? {}) : (headers ?? {});
    const parsed = mcpHttpServerSchema.safeParse({ ...raw, headers: merged });
    if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error) };
    // Kept headers go only where they went when they were entered: sent to an address changed
    // since, the token would reach whoever the console admin named now.
    const kept = headers === undefined && Object.keys(merged).length > 0;
    if (kept && stored !== undefined && originOf(stored.config.url) !== new URL(parsed.data.url).origin) {
      return refused('headers', 'the URL’s host changed: enter the headers again (or remove them), or they would be sent to the new address');
    }
    if (isGateway(new URL(parsed.data.url))) {
      return refused('url', 'points at this gateway itself: an MCP server must be another server (through this gateway it would call itself, without end)');
    }
    const { headers: toSeal, id: _id, ...config } = parsed.data;
    const sealed = Object.keys(toSeal).length === 0 ? null : this.cipher.seal(JSON.stringify({ headers: toSeal } satisfies McpServerSecrets), mcpSealBinding(id));
    const written = await this.repository.put({ id, config, secrets: sealed }, mode);
    if (!written) return refused('id', mode === 'create' ? `An MCP server '${id}' already exists.` : `There is no console MCP server '${id}'.`);
    await this.live.refresh();
    return { ok: true };
  }

  async delete(id: string): Promise<AdminResult> {
    await this.live.refresh();
    if (this.live.configServers().some((server) => server.id.toLowerCase() === id.toLowerCase())) return refused('_', `MCP server '${id}' comes from the configuration file; change it there.`);
    if (!(await this.repository.delete(id))) return refused('_', `There is no console MCP server '${id}'.`);
    await this.live.refresh();
    return { ok: true };
  }

  /** A console server's plain fields and its header names (never their values), to fill an edit form; undefined when there is none. */
  async stored(id: string): Promise<{ values: Record<string, unknown>; headerNames: readonly string[] } | undefined> {
    const stored = (await this.repository.list()).find((server) => server.id === id);
    if (stored === undefined) return undefined;
    const entry = this.live.entries().find((server) => server.id === id && server.origin === 'console');
    return { values: { ...stored.config, id: stored.id }, headerNames: entry?.headerNames ?? [] };
  }
}

function originOf(url: unknown): string | null {
  try {
    return typeof url === 'string' ? new URL(url).origin : null;
  } catch {
    return null;
  }
}

function refused(field: string, message: string): AdminResult {
  return { ok: false, errors: { [field]: message } };
}
