import type { IncomingHttpHeaders } from 'node:http';
import { Client, Pool, type Dispatcher } from 'undici';

/**
 * A keep-alive pool to one upstream whose connections send a request once more, on a new
 * connection, when the upstream cannot have read it. Servers close idle connections without
 * telling (uvicorn after 5 s, load balancers that forget a flow). undici looks for a close already
 * received before it writes on an idle connection, and moves waiting requests to a new connection
 * after a close; what reaches this pool is a reset, either while a request still waits for the
 * connection (undici then fails every waiting request, none of them written), or as the request is
 * written (the write is refused). Sending such a request again is safe even for a POST. Nothing
 * else is sent twice, as an HTTP client does for requests that are not idempotent: a connection
 * lost after the request was written may mean the upstream read it and acted on it (it may have
 * reset the connection then), and whether to try again, and where, is routing's decision, which
 * counts attempts. Nor is a request sent twice after its answer began, or after a timeout.
 */
export function createUpstreamPool(origin: string, options: Pool.Options): Pool {
  return new Pool(origin, { ...options, factory: (url, clientOptions) => new RetryingClient(url, clientOptions as Client.Options) });
}

/** A connection reset or broken under a request; not a connection that could not be made, which routing handles. */
const CONNECTION_LOST = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

class RetryingClient extends Client {
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return super.dispatch(options, new RetryOnceHandler(this, options, handler));
  }

  /** Sends a request again, without wrapping its handler a second time. */
  redispatch(options: Dispatcher.DispatchOptions, handler: RetryOnceHandler): void {
    super.dispatch(options, handler);
  }
}

/**
 * Passes every event on to the caller's handler, except the one error that is answered by sending
 * the request again.
 */
class RetryOnceHandler implements Dispatcher.DispatchHandler {
  /** undici calls onRequestStart just before it writes the request to a connection. */
  private written = false;
  private answerBegan = false;
  private retried = false;

  constructor(
    private readonly client: RetryingClient,
    private readonly options: Dispatcher.DispatchOptions,
    private readonly handler: Dispatcher.DispatchHandler,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.written = true;
    this.handler.onRequestStart?.(controller, context);
  }

  /** The first byte of the answer. */
  onResponseStarted(): void {
    this.answerBegan = true;
    this.handler.onResponseStarted?.();
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.handler.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController | null, error: Error): void {
    if (!this.retried && !this.answerBegan && this.unread(error)) {
      this.retried = true;
      this.written = false;
      // The dead socket is gone from this client, which opens a new one for the request. Sent from
      // a microtask, so that undici finishes tearing the old one down first. The request's body
      // is a string, so it can be sent again.
      queueMicrotask(() => this.client.redispatch(this.options, this));
      return;
    }
    this.handler.onResponseError?.(controller as Dispatcher.DispatchController, error);
  }

  /**
   * Whether the upstream cannot have read the request: the connection was lost before it was
   * written, or the kernel refused its write (the other side had reset the connection, or closed
   * it and answered the bytes after with a reset). A read that finds the connection lost after
   * the write says nothing of whether the request arrived.
   */
  private unread(error: Error): boolean {
    const { code, syscall } = error as NodeJS.ErrnoException;
    if (code === undefined || !CONNECTION_LOST.has(code)) return false;
    return !this.written || (syscall === 'write' && code !== 'UND_ERR_SOCKET');
  }
}
