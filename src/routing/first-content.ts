import type { StreamPart } from '../generation/model.js';
import type { GatewayError } from '../core/errors.js';

/**
 * Whether a stream item carries the answer's first content: text, reasoning, a tool call or the
 * end. What comes before it (a role, a `message_start`, `response.created`) commits nothing, so
 * a stream is held until this item and an attempt that fails before it can still be retried.
 */
export function isContentPart(part: StreamPart): boolean {
  return part.type !== 'start' && part.type !== 'usage';
}

/**
 * Reads `source` until its first content (or its end), then gives back an iterable that replays
 * what was read and goes on with the rest; a failure item (`failureIn`) read before the content is thrown.
 */
export async function holdUntilContent<T>(
  source: AsyncIterable<T>,
  isContent: (item: T) => boolean,
  failureIn: (item: T) => GatewayError | undefined = () => undefined,
): Promise<AsyncIterable<T>> {
  const iterator = source[Symbol.asyncIterator]();
  const held: T[] = [];
  let ended = false;
  try {
    for (;;) {
      const step = await iterator.next();
      if (step.done === true) {
        ended = true;
        break;
      }
      const failure = failureIn(step.value);
      if (failure !== undefined) throw failure;
      held.push(step.value);
      if (isContent(step.value)) break;
    }
  } catch (error) {
    void iterator.return?.()?.catch(() => undefined);
    throw error;
  }
  return replay(held, iterator, ended);
}

function replay<T>(held: T[], iterator: AsyncIterator<T>, ended: boolean): AsyncIterable<T> {
  let index = 0;
  const rest: AsyncIterator<T> = {
    next: () => {
      if (index < held.length) {
        const value = held[index++]!;
        // Replayed: an open stream keeps none of what was held for it.
        if (index === held.length) held.length = index = 0;
        return Promise.resolve({ done: false, value });
      }
      if (ended) return Promise.resolve({ done: true, value: undefined });
      return iterator.next();
    },
    return: (value?: unknown) => (iterator.return === undefined ? Promise.resolve({ done: true, value: value as T }) : iterator.return(value)),
  };
  return { [Symbol.asyncIterator]: () => rest };
}
