import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { readAnswerHeaders } from './whole-answer.js';

/** An upstream answer whose body is read as it arrives: a stream, or an error answer read whole. */
export interface StreamedAnswer {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  /** AWS's error type (`x-amzn-errortype`), when the answer names one. */
  readonly errorType: string | undefined;
  /** The declared length, NaN when none was declared. */
  readonly contentLength: number;
  /** The declared type of the body, when there was one. */
  readonly contentType: string | undefined;
  readonly body: AsyncIterable<Buffer>;
}

/**
 * Bytes read ahead of the consumer before the socket is paused: what a Readable would buffer by
 * default, so that a caller reading slowly slows the upstream down rather than filling memory.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/**
 * Sends one request and resolves with its answer once the headers are in; the body is then an
 * async iterable of its chunks, read straight from undici's dispatch callbacks. `pool.request`
 * would make a Readable, an async resource and a header object for each stream, and Sluice only ever
 * iterates the body once: a stream's start is cheaper this way. Leaving the iteration early (or the
 * signal's abort) cuts the request, and the connection with it.
 */
export function fetchStreamed(dispatcher: Dispatcher, request: Dispatcher.DispatchOptions, signal: AbortSignal): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    dispatcher.dispatch(request, new StreamedBody(signal, resolve, reject));
  });
}

/** undici's dispatch handler and the body's async iterator in one object: one allocation per stream. */
class StreamedBody implements Dispatcher.DispatchHandler, AsyncIterableIterator<Buffer> {
  private controller: Dispatcher.DispatchController | undefined;
  private abortedWith: Error | undefined;
  private paused = false;
  private headersIn = false;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private failure: unknown;
  private waiting: { resolve: (step: IteratorResult<Buffer>) => void; reject: (error: unknown) => void } | undefined;

  /** The promise's settlers, let go once the headers are in: an open stream keeps nothing of its start. */
  private answered: ((answer: StreamedAnswer) => void) | undefined;
  private refused: ((error: unknown) => void) | undefined;

  constructor(
    private readonly signal: AbortSignal,
    answered: (answer: StreamedAnswer) => void,
    refused: (error: unknown) => void,
  ) {
    this.answered = answered;
    this.refused = refused;
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => this.cut(this.signal.reason as Error);

  /** Called again, with a new controller, when the upstream pool sends the request once more. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.abortedWith !== undefined) controller.abort(this.abortedWith);
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come
    this.headersIn = true;
    const { contentLength, retryAfter, errorType } = readAnswerHeaders(headers);
    const contentType = headers['content-type'];
    const answered = this.answered;
    this.answered = this.refused = undefined;
    answered?.({ statusCode, retryAfter, errorType, contentLength, contentType: Array.isArray(contentType) ? contentType[0] : contentType, body: this });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.waiting = undefined;
      waiting.resolve({ value: chunk, done: false });
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.queuedBytes >= HIGH_WATER_BYTES && !this.paused) {
      this.paused = true;
      controller.pause();
    }
  }

  onResponseEnd(): void {
    this.finish();
    this.waiting?.resolve({ value: undefined, done: true });
    this.waiting = undefined;
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.finish();
    if (!this.headersIn) {
      this.refused?.(error);
      return;
    }
    this.failure = error;
    this.waiting?.reject(error);
    this.waiting = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Buffer> {
    return this;
  }

  next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.queue.shift();
    if (chunk !== undefined) {
      this.queuedBytes -= chunk.length;
      if (this.paused && this.queuedBytes < HIGH_WATER_BYTES) {
        this.paused = false;
        this.controller?.resume();
      }
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** The consumer stopped before the end: the rest is not wanted, and the connection cannot be reused. */
  return(): Promise<IteratorResult<Buffer>> {
    if (!this.ended) this.cut(new Error('the answer was left unread'));
    this.queue.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  private cut(reason: Error): void {
    this.abortedWith = reason;
    this.controller?.abort(reason);
  }

  private finish(): void {
    this.ended = true;
    this.signal.removeEventListener('abort', this.onAbort);
  }
}
