import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Authenticator } from './auth/authenticator.js';
import { SecretHasher } from './auth/key-secret.js';
import { Catalogue } from './catalogue/catalogue.js';
import { emptyConfig, loadConfigFile } from './config/config-file.js';
import { createServer } from './http/server.js';
import { createProviders } from './providers/registry.js';
import { openSqliteStore } from './store/open-store.js';
import { UsageLedger } from './usage/ledger.js';

export interface GatewayOptions {
  readonly dataDir: string;
  readonly configFile: string | undefined;
  readonly host: string;
  readonly port: number;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
}

export interface RunningGateway {
  readonly url: string;
  /** Graceful stop: no new requests, those in flight finish (up to `graceMs`), the ledger is written. */
  stop(graceMs: number): Promise<void>;
}

/** Builds every part from the options and starts listening; nothing is global. */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { logger } = options;
  const config = options.configFile === undefined ? emptyConfig() : loadConfigFile(options.configFile);
  const store = await openSqliteStore(options.dataDir);
  const authenticator = new Authenticator(store.keys, SecretHasher.forDataDir(options.dataDir));
  await authenticator.start();
  const catalogue = Catalogue.fromConfig(config);
  const providers = createProviders(config.providers);
  const ledger = new UsageLedger(store, () => authenticator.takeLastUsed(), logger);
  ledger.start();

  const gateway = createServer({
    logger,
    authenticator,
    catalogue: () => catalogue,
    providers,
    ledger,
    maxBodyBytes: options.maxBodyBytes,
  });
  await new Promise<void>((resolve, reject) => {
    gateway.server.once('error', reject);
    gateway.server.listen(options.port, options.host, () => {
      gateway.server.off('error', reject);
      resolve();
    });
  });
  const address = gateway.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, config: config.source, data: options.dataDir, models: catalogue.models.length }, 'sluice is listening');

  return {
    url,
    async stop(graceMs: number) {
      await gateway.drain(graceMs);
      authenticator.stop();
      await ledger.stop();
      await Promise.all([...providers.values()].map((provider) => provider.close()));
      await store.close();
    },
  };
}
