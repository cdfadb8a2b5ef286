import type { StreamPart } from '../generation/model.js';
import type { WireOperation } from '../generation/provider.js';
import { GatewayError } from '../core/errors.js';

type Event = Readonly<Record<string, unknown>>;

/**
 * Whether a stream item carries the answer's first content: text, reasoning, a tool call or the
 * end. What comes before it (a role, a `message_start`, `response.created`) commits nothing, so
 * a stream is held until this item and an attempt that fails before it can still be retried.
 */
export function isContentPart(part: StreamPart): boolean {
  return part.type !== 'start' && part.type !== 'usage';
}

const RELAYED_CONTENT: Record<WireOperation, (event: Event) => boolean> = {
  'openai.chat': (event) => choicesHaveContent(event, (choice) => deltaHasContent(choice.delta)),
  'openai.completions': (event) => choicesHaveContent(event, (choice) => typeof choice.text === 'string' && choice.text !== ''),
  // `response.created`, `.in_progress` and an item's announcement come first; any delta, done or end is content.
  'openai.responses': (event) => {
    const type = typeof event.type === 'string' ? event.type : '';
    return type.endsWith('.delta') || type.endsWith('.done') || type === 'response.completed' || type === 'response.incomplete';
  },
  'anthropic.messages': (event) => event.type === 'content_block_delta' || event.type === 'message_delta' || event.type === 'message_stop',
  'gemini.generateContent': (event) =>
    Array.isArray(event.candidates) &&
    event.candidates.some((candidate: unknown) => {
      if (!isRecord(candidate)) return false;
      if (candidate.finishReason !== undefined) return true;
      const parts = isRecord(candidate.content) ? candidate.content.parts : undefined;
      return Array.isArray(parts) && parts.length > 0;
    }),
  'anthropic.count_tokens': () => true,
  'gemini.countTokens': () => true,
};

export function isRelayedContent(operation: WireOperation, event: Event): boolean {
  return RELAYED_CONTENT[operation](event);
}

/**
 * A relayed Responses stream passes the upstream's own failure events on as they came; held before
 * its first content, such a failure is thrown instead, so that routing can try again.
 */
export function relayedFailure(operation: WireOperation, event: Event, providerId: string): GatewayError | undefined {
  if (operation !== 'openai.responses' || (event.type !== 'response.failed' && event.type !== 'error')) return undefined;
  // Its own words stay out: only the adapters know the secrets to redact from them.
  return new GatewayError('upstream_error', `The upstream provider '${providerId}' failed before its answer began.`, { upstreamFailure: 500 });
}

function choicesHaveContent(event: Event, hasContent: (choice: Event) => boolean): boolean {
  if (!Array.isArray(event.choices)) return false;
  for (const choice of event.choices) {
    if (!isRecord(choice)) continue;
    if ((choice.finish_reason !== undefined && choice.finish_reason !== null) || hasContent(choice)) return true;
  }
  return false;
}

/** A chat delta with anything beyond its role: text, a refusal, reasoning, tool calls. */
function deltaHasContent(delta: unknown): boolean {
  if (!isRecord(delta)) return false;
  for (const key in delta) {
    if (key === 'role') continue;
    const value = delta[key];
    if (typeof value === 'string' ? value !== '' : Array.isArray(value) ? value.length > 0 : value !== null && value !== undefined) return true;
  }
  return false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
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
      if (index < held.length) return Promise.resolve({ done: false, value: held[index++]! });
      if (ended) return Promise.resolve({ done: true, value: undefined });
      return iterator.next();
    },
    return: (value?: unknown) => (iterator.return === undefined ? Promise.resolve({ done: true, value: value as T }) : iterator.return(value)),
  };
  return { [Symbol.asyncIterator]: () => rest };
}
