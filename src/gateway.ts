import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Authenticator } from './auth/authenticator.js';
import { SecretHasher } from './auth/key-secret.js';
import { CatalogueAdmin } from './catalogue/catalogue-admin.js';
import { admitAll } from './generation/admission.js';
import { CredentialCipher } from './catalogue/credential-cipher.js';
import { LiveCatalogue } from './catalogue/live-catalogue.js';
import { emptyConfig, loadConfigFile } from './config/config-file.js';
import { LoginThrottle } from './console/login-throttle.js';
import { consoleRoutes } from './console/routes.js';
import { DEFAULT_SESSION_TTL_MS, Sessions } from './console/sessions.js';
import { createServer } from './http/server.js';
import { Conversations } from './dialects/openai/responses/conversation.js';
import { ProviderAdapters } from './providers/provider-adapters.js';
import { createProvider } from './providers/registry.js';
import { Prober } from './status/prober.js';
import { Router } from './routing/router.js';
import { StatusMonitor } from './status/status-monitor.js';
import { openSqliteStore } from './store/open-store.js';
import { UsageLedger } from './usage/ledger.js';
import { importOrphanedJournals, LedgerJournal } from './usage/ledger-journal.js';

export interface GatewayOptions {
  readonly dataDir: string;
  readonly configFile: string | undefined;
  readonly host: string;
  readonly port: number;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /** How long a console session lasts; default 12 hours. */
  readonly sessionTtlMs?: number;
}

export interface RunningGateway {
  readonly url: string;
  /** Graceful stop: no new requests, those in flight finish (up to `graceMs`), the ledger is written. */
  stop(graceMs: number): Promise<void>;
}

/** How long a stop gives the ledger after the requests have drained, however late that was. */
const LEDGER_MIN_STOP_MS = 2_000;

/** Builds every part from the options and starts listening; nothing is global. */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { logger } = options;
  const config = options.configFile === undefined ? emptyConfig() : loadConfigFile(options.configFile);
  const store = await openSqliteStore(options.dataDir);
  const hasher = SecretHasher.forDataDir(options.dataDir);
  const authenticator = new Authenticator(store.keys, hasher);
  await authenticator.start();
  const cipher = CredentialCipher.forDataDir(options.dataDir);
  // Configuration-file entries merged with the console's, reloaded when any process changes them.
  const adapters = new ProviderAdapters(createProvider, logger);
  const catalogue = new LiveCatalogue(config, store.catalogue, cipher, logger, (providers) => adapters.sync(providers));
  await catalogue.start();
  // Rows a killed or stopped process could not store come first; then this process's own journal.
  await importOrphanedJournals(options.dataDir, store, logger);
  const ledger = new UsageLedger(store, await LedgerJournal.open(options.dataDir, logger), () => authenticator.takeLastUsed(), logger);
  ledger.start();
  const router = new Router(adapters);
  const status = new StatusMonitor(store, catalogue, (model) => router.deploymentStatus(model));
  const prober = new Prober(store, catalogue, adapters, logger);
  prober.start();
  const conversations = new Conversations(store.responses, config.responses.retentionDays, logger);
  conversations.start();

  const gateway = createServer({
    logger,
    authenticator,
    catalogue: () => catalogue.current(),
    providers: adapters,
    admission: admitAll,
    router,
    ledger,
    conversations,
    maxBodyBytes: options.maxBodyBytes,
    pages: consoleRoutes({
      store,
      hasher,
      catalogue,
      catalogueAdmin: new CatalogueAdmin(store.catalogue, catalogue, cipher),
      status,
      sessions: new Sessions(store, options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS),
      throttle: new LoginThrottle(store),
      logger,
    }),
  });
  await new Promise<void>((resolve, reject) => {
    gateway.server.once('error', reject);
    // Node's default accept backlog (511) overflows when a burst of clients connects during a busy
    // moment, and a dropped SYN costs the client a one-second retransmit; the kernel caps this.
    gateway.server.listen({ port: options.port, host: options.host, backlog: 4096 }, () => {
      gateway.server.off('error', reject);
      resolve();
    });
  });
  const address = gateway.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, config: config.source, data: options.dataDir, models: catalogue.current().models.length }, 'sluice is listening');

  return {
    url,
    async stop(graceMs: number) {
      const deadline = Date.now() + graceMs;
      await gateway.drain(graceMs);
      prober.stop();
      conversations.stop();
      authenticator.stop();
      // The ledger keeps trying the store until the drain deadline, and a moment at least.
      await ledger.stop(Math.max(deadline, Date.now() + LEDGER_MIN_STOP_MS));
      await catalogue.close();
      await adapters.close();
      await store.close();
    },
  };
}
