import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { startSseMcpUpstream, startStreamableHttpMcpUpstream, startPagedMcpUpstream, STDIO_FAKE_PATH, type FakeMcpUpstream } from '../fakes/mcp-upstreams.js';
import { createKey, startSluice, type CreatedKey, type RunningSluice } from './sluice.js';

/**
 * The MCP gateway's tests' common ground: the fake upstream servers (Streamable HTTP, the older
 * SSE transport, one with 120 tools in small pages, and a stdio one), Sluice in front of them
 * from a real configuration file, and keys made with the real CLI.
 */
export interface McpWorld {
  readonly sluice: RunningSluice;
  readonly web: FakeMcpUpstream;
  readonly legacy: FakeMcpUpstream;
  readonly many: FakeMcpUpstream;
  /** The stdio server's secret environment value (it must never leave Sluice). */
  readonly stdioToken: string;
  key(allow: string, extra?: string[]): Promise<CreatedKey>;
  close(): Promise<void>;
}

export async function startMcpWorld(options: { readonly mcpSection?: string; readonly args?: string[]; readonly env?: NodeJS.ProcessEnv; readonly withMany?: boolean; readonly legacyPricePerCall?: number } = {}): Promise<McpWorld> {
  const [web, legacy, many] = await Promise.all([
    startStreamableHttpMcpUpstream({ token: `web-token-${randomUUID()}` }),
    startSseMcpUpstream({ token: `legacy-token-${randomUUID()}` }),
    startPagedMcpUpstream({ token: `many-token-${randomUUID()}`, manyTools: 120 }),
  ]);
  const stdioToken = `stdio-token-${randomUUID()}`;
  const config = `
mcp_servers:
  - id: web
    url: ${web.url}
    headers: { Authorization: "Bearer ${web.token}" }
  - id: legacy
    url: ${legacy.url}
    transport: sse
    headers: { Authorization: "Bearer ${legacy.token}" }
${options.legacyPricePerCall === undefined ? '' : `    price_per_call: ${options.legacyPricePerCall}\n`}${
  options.withMany === false
    ? ''
    : `  - id: many
    url: ${many.url}
    headers: { Authorization: "Bearer ${many.token}" }
`
}  - id: local
    command: ${process.execPath}
    args: [${JSON.stringify(STDIO_FAKE_PATH)}]
    env: { FAKE_STDIO_TOKEN: "${stdioToken}" }
${options.mcpSection ?? ''}
`;
  const sluice = await startSluice({ config, args: options.args ?? [], env: { SLUICE_LOG_LEVEL: 'info', ...options.env } });
  return {
    sluice,
    web,
    legacy,
    many,
    stdioToken,
    key: (allow, extra = []) => createKey(sluice.dataDir, `team-${randomUUID().slice(0, 8)}`, [...(allow === '' ? [] : ['--mcp', allow]), ...extra]),
    async close() {
      await sluice.stop();
      await Promise.all([web.close(), legacy.close(), many.close()]);
    },
  };
}

/** The official SDK's client on Sluice's `/mcp` (or `/mcp/{server}`) with a Sluice key. */
export async function connectClient(url: string, key: string, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'sluice-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(path, url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

/** Every tool, page by page. */
export async function allTools(client: Client): Promise<{ tools: Tool[]; pages: number }> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== undefined && pages < 50);
  return { tools, pages };
}

/** Raw JSON-RPC over HTTP, for what the SDK client would not send (old revisions, bad headers, probes). */
export async function rpc(url: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}, path = '/mcp'): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(new URL(path, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Opens a session at `version` by hand; returns its id. */
export async function initialize(url: string, key: string, version = '2025-11-25', path = '/mcp'): Promise<{ session: string; negotiated: string }> {
  const answer = await rpc(url, key, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, {}, path);
  if (answer.status !== 200) throw new Error(`initialize: ${answer.status} ${answer.text}`);
  return { session: answer.headers.get('mcp-session-id')!, negotiated: answer.json.result.protocolVersion };
}
