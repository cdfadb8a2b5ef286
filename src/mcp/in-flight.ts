import type { RequestId } from './jsonrpc.js';
import type { Siblings } from './siblings.js';

const CANCEL_TOPIC = 'mcp.cancel';

interface CancelWord {
  readonly session: string;
  readonly id: RequestId;
}

/**
 * The requests of every session that are running in this process, so that a
 * `notifications/cancelled` (or DELETE of the session) can abort them whichever connection, and
 * whichever worker, it arrives on: one not running here is passed to the sibling workers.
 */
export class InFlightRequests {
  private readonly running = new Map<string, AbortController>();
  private readonly unsubscribe: () => void;

  constructor(private readonly siblings: Siblings) {
    this.unsubscribe = siblings.subscribe(CANCEL_TOPIC, (data) => {
      const word = data as Partial<CancelWord>;
      if (typeof word?.session === 'string' && (typeof word.id === 'string' || typeof word.id === 'number')) this.abortHere(word.session, word.id);
    });
  }

  /** A request begins: its signal aborts on cancellation; `done` when it ends, however. */
  start(session: string, id: RequestId): { readonly signal: AbortSignal; done(): void } {
    const key = keyOf(session, id);
    const controller = new AbortController();
    this.running.set(key, controller);
    return {
      signal: controller.signal,
      done: () => {
        if (this.running.get(key) === controller) this.running.delete(key);
      },
    };
  }

  /** The caller cancelled one of its requests: aborted here, or word sent to the siblings that may be running it. */
  cancel(session: string, id: RequestId): void {
    if (!this.abortHere(session, id)) this.siblings.publish(CANCEL_TOPIC, { session, id } satisfies CancelWord);
  }

  /** A session ended: every request of it running here aborts. */
  cancelSession(session: string): void {
    const prefix = `${session}\u0000`;
    for (const [key, controller] of this.running) if (key.startsWith(prefix)) controller.abort(new Error('the session ended'));
  }

  get size(): number {
    return this.running.size;
  }

  close(): void {
    this.unsubscribe();
  }

  private abortHere(session: string, id: RequestId): boolean {
    const controller = this.running.get(keyOf(session, id));
    if (controller === undefined) return false;
    controller.abort(new Error('cancelled by the caller'));
    return true;
  }
}

function keyOf(session: string, id: RequestId): string {
  // A number and a string of the same digits are different JSON-RPC ids.
  return `${session}\u0000${typeof id}\u0000${id}`;
}
