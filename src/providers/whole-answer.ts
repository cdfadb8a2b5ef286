import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** A whole upstream answer: its status, the one header Sluice reads of it, and its body. */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  /** AWS's error type (`x-amzn-errortype`), when the answer names one. */
  readonly errorType: string | undefined;
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

/**
 * The headers Sluice reads of an answer (undici hands them over parsed): the declared length (NaN
 * if none), `retry-after`, else Azure's `retry-after-ms` in whole seconds, rounded up so that
 * nobody comes back early, and AWS's `x-amzn-errortype` (its error bodies hold only a message).
 */
export function readAnswerHeaders(headers: IncomingHttpHeaders): { contentLength: number; retryAfter: string | undefined; errorType: string | undefined } {
  const length = headers['content-length'];
  const retryAfter = first(headers['retry-after']) ?? retryAfterMs(first(headers['retry-after-ms']));
  return { contentLength: typeof length === 'string' ? Number(length) : NaN, retryAfter, errorType: first(headers['x-amzn-errortype']) };
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function retryAfterMs(value: string | undefined): string | undefined {
  return value !== undefined && /^\d{1,12}$/.test(value) ? String(Math.ceil(Number(value) / 1000)) : undefined;
}

/** undici's dispatch handler for one whole answer. */
class WholeAnswerHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private abortedWith: Error | undefined;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private errorType: string | undefined;
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
    this.controller?.abort(this.abortedWith);
  };

  /** Called again, with a new controller, when the upstream pool sends the request once more. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.abortedWith !== undefined) controller.abort(this.abortedWith);
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come
    this.statusCode = statusCode;
    const { contentLength, retryAfter, errorType } = readAnswerHeaders(headers);
    this.retryAfter = retryAfter;
    this.errorType = errorType;
    if (contentLength > this.options.limit) this.cut();
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > this.options.limit) this.cut();
    else this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.settled();
    const { chunks, size } = this;
    this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, errorType: this.errorType, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.settled();
    if (this.cutErrorAnswer) this.resolve({ statusCode: this.statusCode, retryAfter: this.retryAfter, errorType: this.errorType, body: Buffer.alloc(0) });
    else this.reject(error);
  }

  /** Stops reading a body over the limit; the connection is dropped rather than drained. */
  private cut(): void {
    const success = this.statusCode >= 200 && this.statusCode < 300;
    this.cutErrorAnswer = !success;
    this.controller?.abort(this.options.tooLarge());
  }

  private settled(): void {
    this.options.signal.removeEventListener('abort', this.onAbort);
  }
}
