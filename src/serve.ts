import cluster, { type Worker } from 'node:cluster';
import { SecretHasher } from './auth/key-secret.js';
import { loadConfigFile } from './config/config-file.js';
import { startGateway, type GatewayOptions } from './gateway.js';
import { createLogger } from './log.js';
import { openSqliteStore } from './store/open-store.js';

export interface ServeOptions extends Omit<GatewayOptions, 'logger'> {
  readonly drainTimeoutMs: number;
  /** Processes serving requests; 1 serves from this process, more use node:cluster. */
  readonly workers: number;
}

/**
 * `sluice serve`. With several workers the primary prepares what must happen once (configuration
 * check, migrations, the key pepper), forks the workers, which share the listening port, and
 * relays SIGTERM to them. State the workers share lives in the store: key and catalogue caches
 * poll its change counters, and each worker writes its own ledger batches.
 */
export async function serve(options: ServeOptions): Promise<void> {
  if (options.workers <= 1) return serveInProcess(options, true);
  if (cluster.isPrimary) return servePrimary(options);
  return serveInProcess(options, false);
}

async function serveInProcess(options: ServeOptions, announce: boolean): Promise<void> {
  const logger = createLogger();
  const gateway = await startGateway({ ...options, logger });
  if (announce) console.log(`sluice listening on ${gateway.url}`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: draining requests in flight');
    gateway.stop(options.drainTimeoutMs).then(
      () => {
        logger.info('stopped');
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

async function servePrimary(options: ServeOptions): Promise<void> {
  const logger = createLogger();
  // Fail before forking, once, with the configuration's own message.
  if (options.configFile !== undefined) loadConfigFile(options.configFile);
  const store = await openSqliteStore(options.dataDir);
  await store.close();
  SecretHasher.forDataDir(options.dataDir);

  let stopping = false;
  let announced = false;
  let failed = false;
  const listening = new Set<number>();
  const liveWorkers = () => Object.keys(cluster.workers ?? {}).length;

  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    if (liveWorkers() === 0) process.exit(failed ? 1 : 0);
  };
  cluster.on('listening', (worker: Worker, address) => {
    listening.add(worker.id);
    if (!announced && listening.size === options.workers) {
      announced = true;
      const host = address.addressType === 6 ? `[${address.address}]` : address.address;
      console.log(`sluice listening on http://${host}:${address.port} (${options.workers} workers)`);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    listening.delete(worker.id);
    if (!stopping && announced) {
      logger.error({ worker: worker.id, code, signal }, 'a worker died; starting another');
      cluster.fork();
      return;
    }
    if (code !== 0) failed = true;
    if (!stopping) {
      logger.error({ worker: worker.id, code, signal }, 'a worker failed to start');
      stopAll();
    }
    if (liveWorkers() === 0) process.exit(failed ? 1 : 0);
  });
  process.once('SIGTERM', stopAll);
  process.once('SIGINT', stopAll);
  for (let i = 0; i < options.workers; i++) cluster.fork();
}
