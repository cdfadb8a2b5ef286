import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type { SecretHasher } from '../auth/key-secret.js';
import type { GatewayConfig, McpSettings } from '../config/config-file.js';
import type { LimitAdmission } from '../limits/limit-admission.js';
import { McpService } from '../mcp/mcp-service.js';
import { siblingsOfThisProcess } from '../mcp/siblings.js';
import type { UpstreamMcpServers } from '../mcp/upstream/upstream-server.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UsageLedger } from '../usage/ledger.js';

/** Sluice as an MCP server in one process, over the upstream servers the wiring keeps in step with the configuration (and the console). */
export interface McpGateway {
  readonly service: McpService;
  /** A reloaded configuration: its `mcp:` settings from now on (its servers are the registry's business). */
  reconfigure(config: GatewayConfig): void;
  close(): void;
}

export function startMcpGateway(deps: {
  readonly servers: UpstreamMcpServers;
  readonly config: GatewayConfig;
  readonly logger: Logger;
  readonly hasher: SecretHasher;
  readonly admission: LimitAdmission;
  readonly ledger: UsageLedger;
  readonly telemetry: Telemetry;
}): McpGateway {
  let settings: McpSettings = deps.config.mcp;
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  const service = new McpService({
    servers: deps.servers,
    logger: deps.logger,
    // Every worker and replica derives the same key from the shared pepper: any of them verifies any session.
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
    },
    close() {
      service.close();
    },
  };
}
