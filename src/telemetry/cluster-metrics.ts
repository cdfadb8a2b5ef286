import cluster from 'node:cluster';
import type { AggregatorRegistry, Registry, RegistryContentType } from 'prom-client';

/** Asks for the whole machine's metrics in the Prometheus text format. */
export type Scrape = () => Promise<string>;

const REQUEST = 'sluice:metrics-request';
const REPLY = 'sluice:metrics-reply';
/** Longer than prom-client's own wait for the workers (5 s), so its error is the one reported. */
const REPLY_WAIT_MS = 10_000;

interface Reply {
  readonly type: typeof REPLY;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

/**
 * In the cluster primary: every worker's metrics added up (prom-client's aggregation: counters and
 * histograms summed, gauges by each metric's rule), for the primary's own listener and for any
 * worker whose `/metrics` was asked.
 */
export function aggregateWorkers(): Scrape {
  // prom-client loads at the first scrape: a primary that is never scraped only supervises.
  let aggregator: Promise<AggregatorRegistry<RegistryContentType>> | undefined;
  const scrape = async () => {
    aggregator ??= import('prom-client').then((promClient) => new promClient.AggregatorRegistry());
    try {
      return (await aggregator).clusterMetrics();
    } catch (error) {
      aggregator = undefined; // a failed load is tried again at the next scrape
      throw error;
    }
  };
  cluster.on('message', (worker, message: { type?: string; id: number }) => {
    if (message?.type !== REQUEST) return;
    scrape().then(
      (text) => worker.send({ type: REPLY, id: message.id, text } satisfies Reply),
      (error: Error) => worker.send({ type: REPLY, id: message.id, error: error.message } satisfies Reply),
    );
  });
  return scrape;
}

/**
 * In a worker: its registry joins the primary's aggregation, and a scrape asks the primary for the
 * whole machine's metrics rather than answering with this worker's share.
 */
export async function joinWorkerMetrics(registry: Registry): Promise<Scrape> {
  const { AggregatorRegistry } = await import('prom-client');
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one makes this worker answer the primary's requests for its registry.
  new AggregatorRegistry();
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  let next = 0;
  process.on('message', (message: Reply) => {
    if (message?.type !== REPLY) return;
    const pending = waiting.get(message.id);
    if (pending === undefined) return;
    waiting.delete(message.id);
    clearTimeout(pending.timer);
    if (message.text !== undefined) pending.resolve(message.text);
    else pending.reject(new Error(`the workers' metrics could not be gathered: ${message.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the cluster primary did not answer with the metrics'));
      }, REPLY_WAIT_MS);
      waiting.set(id, { resolve, reject, timer });
      process.send!({ type: REQUEST, id });
    });
}
