import cluster, { type Worker } from 'node:cluster';
import type { GatewayOptions, PortSharing } from './gateway.js';
import { checkDataDir, checkPortFree } from './start-checks.js';
import { collectStartUpGarbage } from './start-up-garbage.js';
import { UserError } from '../core/user-error.js';

/** A worker's exit code when it refused to start and has said why in one line: the primary adds nothing. */
const REFUSED_TO_START = 78;
/**
 * How long past the drain timeout a stop may take (the ledger's last write, closing the store) before
 * a process is ended anyway: a worker that has not exited by then is killed by the primary, and a
 * single process exits. Well past what a working stop needs, a write to a locked SQLite store
 * included (it waits up to 10 s for the lock, then the rows go to the journal); the ledger journal
 * keeps any row not yet stored for the next start.
 */
const STOP_GRACE_MS = 30_000;

/**
 * Output is best effort once nobody reads it: a write to a closed stdout or stderr pipe (EPIPE, then
 * the stream is destroyed) must neither end the process through an unhandled 'error' event, the
 * primary's included (its workers would go with it, undrained), nor stop it from shutting down.
 */
function tolerateClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
    });
  }
}

export interface ServeOptions extends Omit<GatewayOptions, 'logger'> {
  readonly portSharing: PortSharing;
  readonly drainTimeoutMs: number;
  /** Processes serving requests; 1 serves from this process, more use node:cluster. */
  readonly workers: number;
}

/**
 * `sluice serve`. With several workers the primary only supervises: it loads none of the gateway
 * (its memory stays that of a bare Node process), starts one worker, which checks the
 * configuration, migrates the store and creates the key pepper, then starts the others once that
 * one listens. Workers share the listening port (`--port-sharing`); what they share beyond it lives in the store (key
 * and catalogue caches follow its change counters; each worker writes its own ledger batches).
 * Each worker opens its own change feed (`--redis`: Redis pub/sub; a PostgreSQL store:
 * LISTEN/NOTIFY), so a change committed by any process (a worker, another replica, the CLI)
 * reaches every worker's caches by notification at once, and by polling the counters every 250 ms
 * whatever happens to the notifications.
 */
export async function serve(options: ServeOptions): Promise<void> {
  tolerateClosedOutput();
  if (cluster.isPrimary) {
    checkDataDir(options.dataDir);
    await checkPortFree(options.host, options.port);
  }
  if (options.workers > 1 && cluster.isPrimary) return supervise(options);
  return serveInProcess(options, options.workers <= 1);
}

/** Set by the primary for every worker after the first: the port the first bound (`--listen` may have asked for port 0). */
const WORKER_PORT = 'SLUICE_WORKER_PORT';

const LISTENING = 'sluice:listening';
/** A worker's word to the primary that it serves requests, at this URL. */
interface ListeningMessage {
  readonly [LISTENING]: string;
}

async function serveInProcess(options: ServeOptions, announce: boolean): Promise<void> {
  const [{ startGateway }, { createLogger, exitAfterLogFlush }] = await Promise.all([import('./gateway.js'), import('../core/log.js')]);
  // The gateway's modules are loaded and nothing is open yet: no connection, timer or caller waits on this pause.
  collectStartUpGarbage();
  const logger = createLogger();
  const boundPort = cluster.isWorker ? process.env[WORKER_PORT] : undefined;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway({ ...options, boundPort: boundPort === undefined ? undefined : Number(boundPort), logger });
  } catch (error) {
    if (!(error instanceof UserError) || !cluster.isWorker) throw error;
    // Every worker would say the same: the first says it once, and the primary stops.
    process.stderr.write(`sluice: ${error.message}\n`);
    exitAfterLogFlush(logger, REFUSED_TO_START);
    return;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => exitAfterLogFlush(logger, 1), options.drainTimeoutMs + STOP_GRACE_MS).unref();
    logger.info({ signal }, 'stopping: draining requests in flight');
    gateway.stop(options.drainTimeoutMs).then(
      () => {
        logger.info('stopped');
        exitAfterLogFlush(logger, 0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        exitAfterLogFlush(logger, 1);
      },
    );
  };
  // Before the announcement: whoever reads it may signal at once, and an unhandled SIGTERM would kill rather than drain.
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  if (announce) console.log(`sluice listening on ${gateway.url}`);
  // A worker with a socket of its own (reuseport) is not seen listening by node:cluster: it says so itself.
  if (cluster.isWorker) process.send!({ [LISTENING]: gateway.url } satisfies ListeningMessage);
  if (gateway.guidance !== null && (announce || cluster.worker?.id === 1)) console.log(gateway.guidance.join('\n'));
}

async function supervise(options: ServeOptions): Promise<void> {
  // Without Redis (and while it is unreachable) the workers share this process's limit counters.
  cluster.setupPrimary({ serialization: 'advanced' });
  (await import('../limits/cluster-counter.js')).serveLimitsToWorkers();
  // A cancellation or an ended MCP session reaches the worker that holds the call, whichever took the request.
  (await import('../mcp/siblings.js')).relayBetweenSiblings();
  // One scrape, one view of the whole machine: the primary adds up every worker's metrics.
  const { aggregateWorkers } = await import('../telemetry/cluster-metrics.js');
  const scrape = aggregateWorkers();
  if (options.metricsListen !== undefined) {
    const { listenForScrapes } = await import('../telemetry/metrics-listener.js');
    const { host, port } = options.metricsListen;
    try {
      await listenForScrapes(host, port, scrape, (error) => process.stderr.write(`sluice: a metrics scrape failed: ${error.message}\n`));
    } catch (error) {
      process.stderr.write(`sluice: cannot listen for metrics scrapes on ${host}:${port}: ${(error as Error).message}\n`);
      process.exit(1);
    }
  }
  let stopping = false;
  let announced = false;
  let failed = false;
  const listening = new Set<number>();
  const reloadOnceListening = new Set<number>();
  const liveWorkers = () => Object.keys(cluster.workers ?? {}).length;
  const say = (message: string) => process.stderr.write(`sluice: ${message}\n`);

  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    if (liveWorkers() === 0) process.exit(failed ? 1 : 0);
    // A worker that cannot act on the signal (its event loop held) is ended: the stop always ends.
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    }, options.drainTimeoutMs + STOP_GRACE_MS).unref();
  };
  let boundPort: number | undefined;
  const forkOnBoundPort = () => cluster.fork({ [WORKER_PORT]: String(boundPort) });
  cluster.on('message', (worker: Worker, message: Partial<ListeningMessage>) => {
    const url = message?.[LISTENING];
    if (url === undefined) return;
    listening.add(worker.id);
    if (reloadOnceListening.delete(worker.id)) worker.process.kill('SIGHUP');
    boundPort ??= Number(new URL(url).port);
    // The first worker has prepared the store: the others can start together.
    if (listening.size === 1 && !announced) for (let i = 1; i < options.workers; i++) forkOnBoundPort();
    if (!announced && listening.size === options.workers) {
      announced = true;
      console.log(`sluice listening on ${url} (${options.workers} workers)`);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    listening.delete(worker.id);
    reloadOnceListening.delete(worker.id);
    if (!stopping && announced) {
      say(`worker ${worker.id} exited (${signal ?? `code ${code}`}); starting another`);
      forkOnBoundPort();
      return;
    }
    // A worker ended by the stop's own SIGTERM before it could handle it (it was still starting) stopped cleanly.
    if (code !== 0 && !(stopping && signal === 'SIGTERM')) failed = true;
    if (!stopping) {
      if (code !== REFUSED_TO_START) say(`worker ${worker.id} failed to start (${signal ?? `code ${code}`})`);
      stopAll();
    }
    if (liveWorkers() === 0) process.exit(failed ? 1 : 0);
  });
  process.once('SIGTERM', stopAll);
  process.once('SIGINT', stopAll);
  // Each worker reloads the configuration file itself; a SIGHUP sent to the primary reaches them all.
  // One still starting gets it once it listens: before then it may not yet take the signal.
  process.on('SIGHUP', () => {
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker === undefined) continue;
      if (listening.has(worker.id)) worker.process.kill('SIGHUP');
      else reloadOnceListening.add(worker.id);
    }
  });
  // Before any worker: nothing waits on this process meanwhile (see start-up-garbage.ts).
  collectStartUpGarbage();
  cluster.fork();
}
