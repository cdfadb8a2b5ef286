import { limitEventStream, limitWholeBody, type JsonRpcId, type OversizedMessage } from './message-limit.js';

/** Statuses whose responses have no body (a Response cannot be made with one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

export class ForeignOriginError extends Error {
  override name = 'ForeignOriginError';
}

export interface BoundedFetchOptions {
  /** The configured server's URL: every request must stay on its origin. */
  readonly serverUrl: URL;
  /** The largest message accepted (read when each response starts). */
  readonly maxMessageBytes: () => number;
  /** A message past the cap was dropped: its request id (from its own bytes, or the POST it answers) when known. */
  readonly onOversized: (requestId: JsonRpcId | undefined) => void;
  /**
   * The event stream answering a POSTed request broke off (the server went away mid-answer). The
   * SDK only reports that to `onerror` and leaves the request waiting; this names it, so it can fail now.
   */
  readonly onBroken: (requestId: JsonRpcId, error: unknown) => void;
  readonly baseFetch?: typeof fetch;
}

/**
 * The fetch the SDK's HTTP transports use for one upstream: it refuses any URL off the configured
 * origin (an SSE `endpoint` event or a redirect cannot send Sluice elsewhere), never lets the fetch
 * follow a redirect by itself (the SDK follows same-origin ones through this fetch again), and
 * bounds every message of every response as it is read.
 */
export function boundedFetch(options: BoundedFetchOptions): typeof fetch {
  const base = options.baseFetch ?? fetch;
  const origin = options.serverUrl.origin;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin !== origin) throw new ForeignOriginError(`refused a request to ${url.origin}: not the configured server's origin`);
    const postedId = requestIdOf(init?.body);
    const response = await base(url, { ...init, redirect: 'manual' });
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return response;
    const limit = options.maxMessageBytes();
    const report = (message: OversizedMessage) => options.onOversized(message.requestId ?? postedId);
    const isEventStream = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
    const source = isEventStream && postedId !== undefined ? reportingBreaks(response.body, (error) => options.onBroken(postedId, error)) : response.body;
    const body = source.pipeThrough(isEventStream ? limitEventStream(limit, report) : limitWholeBody(limit, report));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The id of the JSON-RPC request a POST body holds (the SDK posts one message, as a JSON string). */
function requestIdOf(body: unknown): JsonRpcId | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    return typeof message.method === 'string' && (typeof message.id === 'number' || typeof message.id === 'string') ? message.id : undefined;
  } catch {
    return undefined;
  }
}

/** The same stream, calling `onError` when reading it fails (not when it is cancelled downstream). */
function reportingBreaks(body: ReadableStream<Uint8Array>, onError: (error: unknown) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        onError(error);
        controller.error(error);
        return;
      }
      if (chunk.done) controller.close();
      else controller.enqueue(chunk.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
