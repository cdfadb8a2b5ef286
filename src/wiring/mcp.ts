import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type { SecretHasher } from '../auth/key-secret.js';
import type { GatewayConfig, McpServerConfig, McpSettings } from '../config/config-file.js';
import type { LimitAdmission } from '../limits/limit-admission.js';
import { McpService } from '../mcp/mcp-service.js';
import { siblingsOfThisProcess } from '../mcp/siblings.js';
import { UpstreamMcpServerRegistry } from '../mcp/upstream/upstream-servers.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UsageLedger } from '../usage/ledger.js';

/** The MCP gateway's parts in one process: the upstream servers, and the service the HTTP routes use. */
export interface McpGateway {
  readonly service: McpService;
  /** A reloaded configuration: its `mcp_servers` and `mcp:` settings from now on. */
  reconfigure(config: GatewayConfig): void;
  /** The servers registered in the console (HTTP only); the file's win over a console entry of the same id. */
  setConsoleServers(servers: readonly McpServerConfig[]): void;
  close(): Promise<void>;
}

export function startMcpGateway(deps: { readonly config: GatewayConfig; readonly logger: Logger; readonly hasher: SecretHasher; readonly admission: LimitAdmission; readonly ledger: UsageLedger; readonly telemetry: Telemetry }): McpGateway {
  const { logger } = deps;
  let settings: McpSettings = deps.config.mcp;
  let fromFile = deps.config.mcpServers;
  let fromConsole: readonly McpServerConfig[] = [];
  const servers = new UpstreamMcpServerRegistry(logger, { maxResultBytes: settings.maxResultBytes });
  const sync = () => {
    const ids = new Set(fromFile.map((server) => server.id.toLowerCase()));
    servers.sync([...fromFile, ...fromConsole.filter((server) => !ids.has(server.id.toLowerCase()))]);
  };
  sync();
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  const service = new McpService({
    servers,
    logger,
    sessionKey: deps.hasher.derive('mcp sessions'),
    siblings: siblingsOfThisProcess(),
    version,
    admission: deps.admission,
    ledger: deps.ledger,
    telemetry: deps.telemetry,
    settings: () => settings,
  });
  return {
    service,
    reconfigure(config) {
      settings = config.mcp;
      fromFile = config.mcpServers;
      sync();
    },
    setConsoleServers(list) {
      fromConsole = list;
      sync();
    },
    async close() {
      service.close();
      await servers.close();
    },
  };
}
