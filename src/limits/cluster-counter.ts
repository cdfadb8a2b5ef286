import cluster from 'node:cluster';
import type { Logger } from 'pino';
import type { LimitCounter } from './counter.js';
import { LocalCounter } from './local-counter.js';

/**
 * Without Redis, the workers of one `sluice serve` share limits through their primary: it keeps
 * the one LocalCounter and each worker asks it over the cluster's IPC channel (advanced
 * serialization, so numbers such as Infinity survive the trip).
 */
const CALL = 'sluiceLimitCall';
const REPLY = 'sluiceLimitReply';

type Operation = Exclude<keyof LimitCounter, 'close'>;
interface Call {
  /** `oneWay`: the worker waits for no answer; the primary answers only a failure. */
  readonly [CALL]: { readonly id: number; readonly op: Operation; readonly args: unknown[]; readonly oneWay?: true };
}
interface Reply {
  readonly [REPLY]: { readonly id: number; readonly result?: unknown; readonly error?: string };
}

/** In the primary: answers the workers' calls from one in-memory counter. */
export function serveLimitsToWorkers(): void {
  const counter = new LocalCounter();
  cluster.on('message', (worker, message: Partial<Call>) => {
    const call = message?.[CALL];
    if (call === undefined) return;
    const run = counter[call.op] as (...args: unknown[]) => Promise<unknown>;
    run.apply(counter, call.args).then(
      (result) => call.oneWay !== true && worker.isConnected() && worker.send({ [REPLY]: { id: call.id, result } } satisfies Reply),
      (error: unknown) => worker.isConnected() && worker.send({ [REPLY]: { id: call.id, error: String(error) } } satisfies Reply),
    );
  });
}

/**
 * In a worker: the primary's counter, one message each way per call, but for settles, which need
 * no answer (one channel keeps them in order before the worker's next call); a settle the primary
 * failed is logged when its failure comes back.
 */
export class ClusterCounter implements LimitCounter {
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private nextId = 0;
  private readonly onMessage = (message: Partial<Reply>) => {
    const reply = message?.[REPLY];
    if (reply === undefined) return;
    const waiter = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    const error = reply.error === undefined ? undefined : new Error(`the primary's limit counter failed: ${reply.error}`);
    if (waiter === undefined) {
      if (error !== undefined) this.logger.warn({ err: error }, 'settling a request against its limits failed');
    } else if (error !== undefined) waiter.reject(error);
    else waiter.resolve(reply.result);
  };

  constructor(private readonly logger: Pick<Logger, 'warn'>) {
    process.on('message', this.onMessage);
  }

  admit = (...args: Parameters<LimitCounter['admit']>) => this.call('admit', args) as ReturnType<LimitCounter['admit']>;
  settle = (...args: Parameters<LimitCounter['settle']>): Promise<void> =>
    new Promise((resolve, reject) => {
      process.send!({ [CALL]: { id: this.nextId++, op: 'settle', args, oneWay: true } } satisfies Call, undefined, undefined, (error: Error | null) => (error === null ? resolve() : reject(error)));
    });
  renew = (...args: Parameters<LimitCounter['renew']>) => this.call('renew', args) as ReturnType<LimitCounter['renew']>;
  seedSpend = (...args: Parameters<LimitCounter['seedSpend']>) => this.call('seedSpend', args) as ReturnType<LimitCounter['seedSpend']>;
  usage = (...args: Parameters<LimitCounter['usage']>) => this.call('usage', args) as ReturnType<LimitCounter['usage']>;

  async close(): Promise<void> {
    process.off('message', this.onMessage);
    for (const waiter of this.pending.values()) waiter.reject(new Error('the limit counter is closed'));
    this.pending.clear();
  }

  private call(op: Operation, args: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      process.send!({ [CALL]: { id, op, args } } satisfies Call, undefined, undefined, (error: Error | null) => {
        if (error === null) return;
        this.pending.delete(id);
        reject(error);
      });
    });
  }
}
