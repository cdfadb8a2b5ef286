import cluster from 'node:cluster';

/**
 * Word to the other workers of this `sluice serve --workers N`: a message published by one worker
 * reaches every other one, relayed by the cluster primary (which understands nothing of it). A
 * single process has no siblings. Used for what must reach the worker holding some state a request
 * on another connection refers to: a cancellation of a call in flight, a session ended.
 */
export interface Siblings {
  publish(topic: string, data: unknown): void;
  /** Returns the unsubscribe. */
  subscribe(topic: string, handler: (data: unknown) => void): () => void;
}

const ENVELOPE = 'sluiceSiblings';
interface Envelope {
  readonly [ENVELOPE]: { readonly topic: string; readonly data: unknown };
}

export const NO_SIBLINGS: Siblings = { publish: () => undefined, subscribe: () => () => undefined };

/** In the cluster primary: passes each worker's messages on to every other worker. */
export function relayBetweenSiblings(): void {
  cluster.on('message', (from, message: Partial<Envelope>) => {
    if (message?.[ENVELOPE] === undefined) return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker !== undefined && worker.id !== from.id && worker.isConnected()) worker.send(message);
    }
  });
}

/** In a worker: its siblings through the primary; elsewhere none. */
export function siblingsOfThisProcess(): Siblings {
  if (!cluster.isWorker || process.send === undefined) return NO_SIBLINGS;
  const handlers = new Map<string, Set<(data: unknown) => void>>();
  process.on('message', (message: Partial<Envelope>) => {
    const envelope = message?.[ENVELOPE];
    if (envelope === undefined) return;
    for (const handler of handlers.get(envelope.topic) ?? []) handler(envelope.data);
  });
  return {
    publish(topic, data) {
      if (process.connected) process.send!({ [ENVELOPE]: { topic, data } } satisfies Envelope);
    },
    subscribe(topic, handler) {
      let set = handlers.get(topic);
      if (set === undefined) handlers.set(topic, (set = new Set()));
      set.add(handler);
      return () => set.delete(handler);
    },
  };
}
