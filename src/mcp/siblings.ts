import cluster from 'node:cluster';

/**
 * Word to the other workers of this `sluice serve --workers N`: a message published by one worker
 * reaches every other one, relayed by the cluster primary (which understands nothing of it). A
 * single process has no siblings. Used for what must reach the worker holding some state a request
 * on another connection refers to: a cancellation of a call in flight, a session ended.
 */
export interface Siblings {
  publish(topic: string, data: unknown): void;
  /**
   * Publishes, and resolves once every sibling has run its handlers (or after `ACK_TIMEOUT_MS`, so a
   * worker that died never holds the publisher): for what the caller's next request, on whichever
   * worker, must already see (a session ended by DELETE).
   */
  publishAndWait(topic: string, data: unknown): Promise<void>;
  /** Returns the unsubscribe. */
  subscribe(topic: string, handler: (data: unknown) => void): () => void;
}

const ENVELOPE = 'sluiceSiblings';
/** A sibling's word that it ran the handlers of a waited-for message, and the primary's that all did. */
const ACK = 'sluiceSiblingsAck';
const ALL_ACKED = 'sluiceSiblingsAllAcked';
const ACK_TIMEOUT_MS = 1_000;

interface Envelope {
  /** `seq` (the publisher's) and `origin` (its worker id) when the publisher waits for the siblings. */
  readonly [ENVELOPE]: { readonly topic: string; readonly data: unknown; readonly seq?: number; readonly origin?: number };
}
interface Ack {
  readonly [ACK]: { readonly seq: number; readonly origin: number };
}
interface AllAcked {
  readonly [ALL_ACKED]: { readonly seq: number };
}

export const NO_SIBLINGS: Siblings = { publish: () => undefined, publishAndWait: async () => undefined, subscribe: () => () => undefined };

/** In the cluster primary: passes each worker's messages on to every other worker, and tells a waiting publisher when all of them ran it. */
export function relayBetweenSiblings(): void {
  const waiting = new Map<string, { remaining: Set<number>; timer: NodeJS.Timeout }>();
  const tell = (origin: number, seq: number) => {
    const key = `${origin}:${seq}`;
    const entry = waiting.get(key);
    if (entry !== undefined) clearTimeout(entry.timer);
    waiting.delete(key);
    const worker = cluster.workers?.[origin];
    if (worker?.isConnected()) worker.send({ [ALL_ACKED]: { seq } } satisfies AllAcked);
  };
  cluster.on('message', (from, message: Partial<Envelope & Ack>) => {
    const ack = message?.[ACK];
    if (ack !== undefined) {
      const entry = waiting.get(`${ack.origin}:${ack.seq}`);
      if (entry !== undefined && entry.remaining.delete(from.id) && entry.remaining.size === 0) tell(ack.origin, ack.seq);
      return;
    }
    const envelope = message?.[ENVELOPE];
    if (envelope === undefined) return;
    const waited = typeof envelope.seq === 'number';
    const forwarded = waited ? ({ [ENVELOPE]: { ...envelope, origin: from.id } } satisfies Envelope) : message;
    const remaining = new Set<number>();
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker !== undefined && worker.id !== from.id && worker.isConnected()) {
        worker.send(forwarded);
        remaining.add(worker.id);
      }
    }
    if (!waited) return;
    const seq = envelope.seq!;
    if (remaining.size === 0) return tell(from.id, seq);
    waiting.set(`${from.id}:${seq}`, { remaining, timer: setTimeout(() => tell(from.id, seq), ACK_TIMEOUT_MS) });
  });
}

/** In a worker: its siblings through the primary; elsewhere none. */
export function siblingsOfThisProcess(): Siblings {
  if (!cluster.isWorker || process.send === undefined) return NO_SIBLINGS;
  const handlers = new Map<string, Set<(data: unknown) => void>>();
  const acked = new Map<number, () => void>();
  let sequence = 0;
  process.on('message', (message: Partial<Envelope & AllAcked>) => {
    const done = message?.[ALL_ACKED];
    if (done !== undefined) return acked.get(done.seq)?.();
    const envelope = message?.[ENVELOPE];
    if (envelope === undefined) return;
    for (const handler of handlers.get(envelope.topic) ?? []) handler(envelope.data);
    if (envelope.seq !== undefined && envelope.origin !== undefined && process.connected) process.send!({ [ACK]: { seq: envelope.seq, origin: envelope.origin } } satisfies Ack);
  });
  return {
    publish(topic, data) {
      if (process.connected) process.send!({ [ENVELOPE]: { topic, data } } satisfies Envelope);
    },
    publishAndWait(topic, data) {
      if (!process.connected) return Promise.resolve();
      const seq = ++sequence;
      return new Promise<void>((resolve) => {
        // The primary answers within its own timeout; this one covers a primary that is gone.
        const timer = setTimeout(finish, ACK_TIMEOUT_MS * 2);
        function finish() {
          clearTimeout(timer);
          acked.delete(seq);
          resolve();
        }
        acked.set(seq, finish);
        process.send!({ [ENVELOPE]: { topic, data, seq } } satisfies Envelope);
      });
    },
    subscribe(topic, handler) {
      let set = handlers.get(topic);
      if (set === undefined) handlers.set(topic, (set = new Set()));
      set.add(handler);
      return () => set.delete(handler);
    },
  };
}
