import type { Dispatcher } from 'undici';

/** A whole upstream answer: its status, the one header Sluice reads of it, and its body. */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  /** Empty when an error answer was cut for its size: its status still says what went wrong. */
  readonly body: Buffer;
}

export interface WholeAnswerOptions {
  readonly signal: AbortSignal;
  /** The most bytes a body may have (max_response_bytes). */
  readonly limit: number;
  /** The error a 2xx body over the limit fails with. */
  readonly tooLarge: () => Error;
}

/**
 * Sends one request and collects its whole answer straight from undici's dispatch callbacks.
 * `pool.request` would make a Readable body, an async resource and a header object for every call,
 * only for Sluice to read the body at once: whole answers are most of a gateway's traffic, so they
 * take this shorter way (streams take fetchStreamed's).
 */
export function fetchWhole(dispatcher: Dispatcher, request: Dispatcher.DispatchOptions, options: WholeAnswerOptions): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(options.signal.reason);
      return;
    }
    dispatcher.dispatch(request, new WholeAnswerHandler(options, resolve, reject));
  });
}

const CONTENT_LENGTH = 'content-length';
const RETRY_AFTER = 'retry-after';

/** The two headers Sluice reads of an answer, from undici's raw name/value list: the declared length (NaN if none) and `retry-after`. */
export function readAnswerHeaders(rawHeaders: readonly (Buffer | string)[] | null): { contentLength: number; retryAfter: string | undefined } {
  let contentLength = NaN;
  let retryAfter: string | undefined;
  for (let i = 0; rawHeaders !== null && i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    // Only two names are read; comparing lengths first skips the others cheaply.
    if (name.length === CONTENT_LENGTH.length && name.toString().toLowerCase() === CONTENT_LENGTH) contentLength = Number(rawHeaders[i + 1]!.toString());
    else if (name.length === RETRY_AFTER.length && name.toString().toLowerCase() === RETRY_AFTER) retryAfter = rawHeaders[i + 1]!.toString();
  }
  return { contentLength, retryAfter };
}

/** undici's callback-style handler for one whole answer (the interface the upstream pool's retrying client speaks). */
class WholeAnswerHandler implements Dispatcher.DispatchHandler {
  private abort: ((reason?: Error) => void) | undefined;
  private abortedWith: Error | undefined;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** An error answer cut for its size resolves without its body. */
  private cutErrorAnswer = false;

  constructor(
    private readonly options: WholeAnswerOptions,
    private readonly resolve: (answer: WholeAnswer) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    options.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    this.abortedWith = this.options.signal.reason as Error;
    this.abort?.(this.abortedWith);
  };

  onConnect(abort: (reason?: Error) => void): void {
    if (this.abortedWith !== undefined) abort(this.abortedWith);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null): boolean {
    if (statusCode < 200) return true; // 1xx: the answer is still to come
    this.statusCode = statusCode;
    const { contentLength, retryAfter } = readAnswerHeaders(rawHeaders);
    this.retryAfter = retryAfter;
    if (contentLength > this.options.limit) return this.cut();
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.options.limit) return this.cut();
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.settled();
    const { chunks, size } = this;
    this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
  }

  onError(error: Error): void {
    this.settled();
    if (this.cutErrorAnswer) this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, body: Buffer.alloc(0) });
    else this.reject(error);
  }

  /** Stops reading a body over the limit; the connection is dropped rather than drained. */
  private cut(): false {
    const success = this.statusCode >= 200 && this.statusCode < 300;
    this.cutErrorAnswer = !success;
    this.abort?.(this.options.tooLarge());
    return false;
  }

  private settled(): void {
    this.options.signal.removeEventListener('abort', this.onAbort);
  }
}
