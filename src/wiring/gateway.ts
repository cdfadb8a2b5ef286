import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { Authenticator } from '../auth/authenticator.js';
import { sharedSecretFromEnv } from '../core/data-dir-secret.js';
import { SecretHasher } from '../auth/key-secret.js';
import { CatalogueAdmin } from '../catalogue/catalogue-admin.js';
import { openChangeFeed } from '../changes/open-change-feed.js';
import { VERSION_POLL_MS } from '../changes/versioned-cache.js';
import { CredentialCipher } from '../catalogue/credential-cipher.js';
import { LiveCatalogue } from '../catalogue/live-catalogue.js';
import { Discovery } from '../discovery/discovery.js';
import { LimitAdmission } from '../limits/limit-admission.js';
import { openLimitCounter } from '../limits/open-counter.js';
import { ConfigReload } from '../config/config-reload.js';
import { DEFAULT_CONFIG_FILE } from '../core/settings.js';
import { LoginThrottle } from '../console/login-throttle.js';
import { consoleRoutes } from '../console/routes.js';
import { DEFAULT_SESSION_IDLE_MS, DEFAULT_SESSION_TTL_MS, Sessions } from '../console/sessions.js';
import { createServer, type GatewayServer } from '../http/server.js';
import { Conversations } from '../dialects/openai/responses/conversation.js';
import { ProviderAdapters } from '../providers/provider-adapters.js';
import { createProvider } from '../providers/registry.js';
import { Prober } from '../status/prober.js';
import { Router } from '../routing/router.js';
import { StatusMonitor } from '../status/status-monitor.js';
import { openStore, storeLocation } from '../store/open-store.js';
import { UsageLedger } from '../usage/ledger.js';
import { metricsRoute } from '../http/routes/metrics.js';
import { joinWorkerMetrics } from '../telemetry/cluster-metrics.js';
import { GatewayTelemetry } from '../telemetry/gateway-telemetry.js';
import { listenForScrapes, METRICS_CONTENT_TYPE } from '../telemetry/metrics-listener.js';
import { GatewayMetrics } from '../telemetry/metrics.js';
import { Tracing } from '../telemetry/tracing.js';
import { importOrphanedJournals, LedgerJournal } from '../usage/ledger-journal.js';
import { listenFailure } from './start-checks.js';
import { startGuidance } from './start-guidance.js';
import { warnOfUnpricedBudgets } from './unpriced-warning.js';
import { Pipeline } from '../pipeline/pipeline.js';
import { startMcpGateway } from './mcp.js';
import { McpServerAdmin } from '../mcp/mcp-server-admin.js';
import { McpServerList } from '../mcp/mcp-server-list.js';
import { UpstreamMcpServerRegistry } from '../mcp/upstream/upstream-servers.js';

export interface GatewayOptions {
  /** Local files: the ledger's journals, and the key pepper and credential key unless the environment gives them. */
  readonly dataDir: string;
  /** The PostgreSQL store's URL; undefined: the SQLite file in the data directory. */
  readonly databaseUrl: string | undefined;
  readonly configFile: string | undefined;
  readonly host: string;
  readonly port: number;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /** How long a console session lasts; default 12 hours. */
  readonly sessionTtlMs?: number;
  /** How long a console session lasts without activity; default 2 hours. */
  readonly sessionIdleMs?: number;
  /** `--redis`: limit counters shared by replicas and change notifications through pub/sub; without it, this machine's counters and polling (SQLite) or LISTEN/NOTIFY (PostgreSQL). */
  readonly redisUrl?: string | undefined;
  /** `--redis-prefix`: what every Redis key and channel of this deployment starts with (default `sluice:`). */
  readonly redisPrefix: string;
  /** `--metrics-token`: `/metrics` on the gateway's port, for a bearer of this token. */
  readonly metricsToken?: string | undefined;
  /** `--metrics-listen`: `/metrics` without a token on a port of its own (the cluster primary's, with several workers). */
  readonly metricsListen?: { readonly host: string; readonly port: number } | undefined;
  /** One JSON line per request on the log (default on). */
  readonly accessLog?: boolean;
  /** In a cluster worker: how the workers share the port (see PortSharing). */
  readonly portSharing?: PortSharing;
  /** In a cluster worker after the first: the port the first bound, for a socket of its own (`port` may be 0). */
  readonly boundPort?: number | undefined;
}

/**
 * How cluster workers share the listening port: `reuseport`, each worker its own socket with
 * SO_REUSEPORT and the kernel spreading connections over them; `handoff`, node:cluster's way, the
 * primary accepting every connection and passing it to a worker. Where the platform has no
 * SO_REUSEPORT, `reuseport` falls back to `handoff`.
 */
export type PortSharing = 'reuseport' | 'handoff';


export interface RunningGateway {
  readonly url: string;
  /** The next steps, when the gateway started without a model to serve (see start-guidance.ts). */
  readonly guidance: readonly string[] | null;
  /** Graceful stop: no new requests, those in flight finish (up to `graceMs`), the ledger is written. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Listens on the gateway's port. A worker asked for a socket of its own takes the port the first
 * worker bound; where the platform has no SO_REUSEPORT it asks node:cluster's primary for its
 * socket instead, under the port as given, as every worker then does.
 */
async function listen(server: NetServer, host: string, ports: { port: number; boundPort?: number | undefined }, sharing: PortSharing): Promise<void> {
  const port = sharing === 'reuseport' ? (ports.boundPort ?? ports.port) : ports.port;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default accept backlog (511) overflows when a burst of clients connects during a busy
      // moment, and a dropped SYN costs the client a one-second retransmit; the kernel caps this.
      const own = sharing === 'reuseport' ? { exclusive: true, reusePort: true } : {};
      server.listen({ port, host, backlog: 4096, ...own }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    if (sharing === 'reuseport' && (error as NodeJS.ErrnoException).code === 'ENOTSUP') return listen(server, host, ports, 'handoff');
    throw listenFailure(error, host, port);
  }
}

/** How long a stop gives the ledger after the requests have drained, however late that was. */
const LEDGER_MIN_STOP_MS = 2_000;

/** Builds every part from the options and starts listening; nothing is global. */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const gateway = createServer(options.logger);
  try {
    return await startOn(gateway, options);
  } catch (error) {
    // A start that failed after listening early leaves no port open behind it.
    gateway.server.close();
    throw error;
  }
}

async function startOn(gateway: GatewayServer, options: GatewayOptions): Promise<RunningGateway> {
  const { logger } = options;
  // Every worker would log the same warnings: the first one does.
  const firstWorker = !cluster.isWorker || cluster.worker?.id === 1;
  // Without a named file, ./sluice.yaml is watched for: `sluice init` then needs no restart.
  const configReload = new ConfigReload(options.configFile ?? resolve(DEFAULT_CONFIG_FILE), options.configFile === undefined, async (next) => {
    await catalogue.replaceConfig(next);
    await mcpServers.replaceConfig(next);
    mcpUpstreams.updateSettings(next.mcp);
    admission.reconfigure(next.limits);
    if (firstWorker) await warnOfUnpricedBudgets(store, catalogue.current(), logger);
    conversations.setRetentionDays(next.responses.retentionDays);
    maxUploadBytes = next.maxUploadBytes;
    mcp.reconfigure(next);
  }, logger);
  configReload.catchSignals();
  const config = configReload.load();
  let maxUploadBytes = config.maxUploadBytes;
  // The secrets first: a mistake in their settings stops start-up before the store is touched.
  const hasher = SecretHasher.forDataDir(options.dataDir);
  const cipher = CredentialCipher.forDataDir(options.dataDir);
  const location = storeLocation(options);
  // The first process listens before the store opens, so that the probes answer while it migrates
  // (a long migration is alive, not ready). A worker after the first listens once it is ready: the
  // kernel must not hand it callers' connections to refuse while its siblings serve them.
  const sharing = cluster.isWorker ? (options.portSharing ?? 'reuseport') : 'handoff';
  const listenEarly = options.boundPort === undefined;
  gateway.starting('opening and migrating the store');
  if (listenEarly) await listen(gateway.server, options.host, options, sharing);
  // Every committed change to keys or the catalogue is published, whichever part of this process
  // made it; on PostgreSQL's own feed (no Redis), the store's transaction has notified already.
  // The store opens first: one that cannot be opened stops start-up before any connection is made.
  const viaRedis = options.redisUrl !== undefined && options.redisUrl !== '';
  const store = await openStore(location, { logger, ...(location.kind === 'postgres' && !viaRedis ? {} : { onChange: (topic) => changes.publish(topic) }) });
  // Connects in the background: an unreachable Redis is logged and retried, and polling covers
  // meanwhile. Without Redis, a PostgreSQL store's own LISTEN/NOTIFY tells of changes.
  const changes = await openChangeFeed({ redisUrl: options.redisUrl, redisPrefix: options.redisPrefix, postgresUrl: location.kind === 'postgres' ? location.url : undefined, logger });
  if (store.dialect === 'postgres') {
    for (const [name, file] of [['SLUICE_KEY_PEPPER', 'key-pepper'], ['SLUICE_CREDENTIAL_KEY', 'credential-key']] as const) {
      // Each replica would otherwise make its own, and refuse the keys (or credentials) the others stored.
      if (!sharedSecretFromEnv(name, process.env)) logger.warn({ file: `${options.dataDir}/${file}` }, `${name} and ${name}_FILE are not set: every replica on this database needs the same ${file}`);
    }
  }
  gateway.starting('loading keys and the catalogue');
  const authenticator = new Authenticator(store.keys, hasher, logger, store.location);
  await authenticator.start(changes);
  // Configuration-file entries merged with the console's, reloaded when any process changes them.
  const adapters = new ProviderAdapters(createProvider, logger);
  const catalogue = new LiveCatalogue(config, store.catalogue, cipher, logger, (providers) => adapters.sync(providers));
  await catalogue.start(changes);
  // MCP servers: the file's merged with the console's, reloaded with the file and on the change feed; the upstream connections follow the list.
  const mcpServers = new McpServerList(config, store.mcpServers, () => store.mcpServers.version(), cipher, logger);
  await mcpServers.start(changes);
  const mcpUpstreams = new UpstreamMcpServerRegistry(logger, { maxResultBytes: config.mcp.maxResultBytes });
  mcpServers.subscribe((servers) => mcpUpstreams.sync(servers));
  // Discovering providers' model lists, kept in the store for every process to read.
  const discovery = new Discovery(store.catalogue, catalogue, adapters, logger);
  discovery.start();
  gateway.starting('storing the rows of earlier ledger journals');
  // Rows a killed or stopped process could not store come first; then this process's own journal.
  await importOrphanedJournals(options.dataDir, store.usage, logger);
  const ledger = new UsageLedger(store.usage, store.keys, await LedgerJournal.open(options.dataDir, logger), () => authenticator.takeLastUsed(), logger);
  ledger.start();
  const router = new Router(adapters);
  gateway.starting('opening the limit counters and tracing');
  const limits = await openLimitCounter({ redisUrl: options.redisUrl, redisPrefix: options.redisPrefix, logger });
  const admission = new LimitAdmission(limits.counter, store.usage, logger, config.limits);
  admission.start();
  let notificationsDownSince: number | null = null;
  const notificationsDown = () => {
    if (changes.healthy) return (notificationsDownSince = null);
    notificationsDownSince ??= Date.now();
    return { component: 'notifications', since: notificationsDownSince, message: `Change notifications (${changes.name}) are not arriving: changes reach this process by polling the store, within ${VERSION_POLL_MS} ms.` };
  };
  const status = new StatusMonitor(
    store.usage,
    store.status,
    catalogue,
    (model) => router.deploymentStatus(model),
    () => [limits.degradation(), notificationsDown()].filter((d) => d !== null),
  );
  const metrics = new GatewayMetrics({
    inFlight: () => gateway.inFlight(),
    ledger: () => ({ buffered: ledger.buffered, written: ledger.written.rows, writeFailures: ledger.written.failures }),
    keyCache: () => authenticator.cache,
    catalogueCache: () => catalogue.cache,
    limitRefusals: function* () {
      for (const [counted, count] of admission.refusals) {
        const [scope, reason] = counted.split(' ') as [string, string];
        yield [scope, reason, count] as const;
      }
    },
    deployments: function* () {
      for (const model of catalogue.current().models) {
        for (const d of router.deploymentStatus(model)) yield { model: model.id, deployment: `${d.provider}/${d.upstream_model}`, state: d.state };
      }
    },
    connections: function* () {
      for (const provider of adapters.all()) {
        const use = provider.connections();
        if (use !== null) yield { provider: provider.id, use };
      }
    },
    degraded: function* () {
      if (viaRedis) yield { component: 'redis', degraded: limits.degradation() !== null };
      if (changes.name !== 'none') yield { component: 'notifications', degraded: !changes.healthy };
    },
  });
  // In a worker, a scrape anywhere sees the whole machine: the primary adds up every worker's.
  const scrape = cluster.isWorker ? await joinWorkerMetrics(metrics.registry) : () => metrics.registry.metrics();
  const tracing = await Tracing.fromEnv(process.env, logger);
  const telemetry = new GatewayTelemetry(metrics, tracing, options.accessLog === false ? null : logger, logger);
  const prober = new Prober(store.status, catalogue, adapters, logger);
  prober.start();
  // The MCP gateway over the upstream connections (one per server in this process).
  const mcp = startMcpGateway({ servers: mcpUpstreams, config, logger, hasher, admission, ledger, telemetry });
  const conversations = new Conversations(store.responses, config.responses.retentionDays, logger);
  conversations.start();
  configReload.start();

  const consolePages = consoleRoutes({
    store,
    hasher,
    catalogue,
    catalogueAdmin: new CatalogueAdmin(store.catalogue, catalogue, cipher),
    providers: adapters,
    status,
    limits: admission,
    sessions: new Sessions(store.sessions, store.accounts, options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS, options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS),
    throttle: new LoginThrottle(store.loginThrottle),
    logger,
    mcp: { servers: mcpServers, admin: new McpServerAdmin(store.mcpServers, mcpServers, cipher), upstreams: mcpUpstreams },
  });
  gateway.open({
    logger,
    telemetry,
    storeCheck: () => store.ping(),
    authenticator,
    catalogue: () => catalogue.current(),
    pipeline: new Pipeline({ authenticator, catalogue: () => catalogue.current(), admission, router, ledger, telemetry, providers: adapters }),
    conversations,
    maxBodyBytes: options.maxBodyBytes,
    maxUploadBytes: () => maxUploadBytes,
    mcp: mcp.service,
    pages: {
      exact: options.metricsToken === undefined ? consolePages.exact : [...consolePages.exact, ['GET /metrics', metricsRoute(options.metricsToken, scrape, METRICS_CONTENT_TYPE)]],
      prefixes: consolePages.prefixes,
    },
  });
  if (!listenEarly) await listen(gateway.server, options.host, options, sharing);
  let scrapes: Server | undefined;
  if (options.metricsListen !== undefined && !cluster.isWorker) scrapes = await listenForScrapes(options.metricsListen.host, options.metricsListen.port, scrape, (error) => logger.warn({ err: error }, 'a metrics scrape failed'));
  const address = gateway.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, config: config.source, data: options.dataDir, store: store.location, models: catalogue.current().models.length, changes: changes.name }, 'sluice is listening');
  let guidance: string[] | null = null;
  if (catalogue.current().models.length === 0) {
    const storeFlags = [options.dataDir === resolve('data') ? '' : `--data ${options.dataDir}`, location.kind === 'postgres' ? "--database '<the same URL>'" : ''].filter((f) => f !== '').join(' ');
    const hasAdmin = (await store.accounts.list()).some((account) => account.isAdmin);
    const { lines, summary } = startGuidance({ url, configPath: configReload.path, configFound: configReload.found, hasAdmin, storeFlags, mcpServerIds: mcpServers.servers().map((server) => server.id) });
    guidance = lines;
    if (firstWorker) logger.warn({ config: configReload.path, console: `${url}/app/catalogue`, adminExists: hasAdmin }, summary);
  }

  if (firstWorker) await warnOfUnpricedBudgets(store, catalogue.current(), logger);

  return {
    url,
    guidance,
    async stop(graceMs: number) {
      const deadline = Date.now() + graceMs;
      configReload.stop();
      await gateway.drain(graceMs);
      scrapes?.close();
      prober.stop();
      await discovery.stop();
      conversations.stop();
      authenticator.stop();
      admission.stop();
      // The ledger keeps trying the store until the drain deadline, and a moment at least.
      await ledger.stop(Math.max(deadline, Date.now() + LEDGER_MIN_STOP_MS));
      await catalogue.close();
      mcp.close();
      await mcpServers.close();
      await mcpUpstreams.close();
      await limits.counter.close();
      await changes.close();
      await adapters.close();
      await tracing?.close().catch((error: unknown) => logger.warn({ err: error }, 'the last spans could not be exported'));
      await store.close();
    },
  };
}
