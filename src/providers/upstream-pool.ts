import { Client, Pool, type Dispatcher } from 'undici';

/**
 * A keep-alive pool to one upstream whose connections send a request once more when it was
 * written onto a reused connection that the upstream had already reset. Servers close idle
 * connections without telling (uvicorn after 5 s, load balancers that forget a flow). undici
 * itself looks for a close already received before it writes on an idle connection; what is left
 * is a reset that lands between that look and the write, which the write then reports: a request
 * the kernel refused never reached the upstream, so sending it again is safe even for a POST.
 * Nothing else is sent twice, as an HTTP client does for requests that are not idempotent: a
 * connection lost after the request was written may mean the upstream read it and acted on it
 * (it may have reset it then), and whether to try again, and where, is routing's decision, which
 * counts attempts. Nor is a failure on a fresh connection, after the answer began, or a timeout.
 */
export function createUpstreamPool(origin: string, options: Pool.Options): Pool {
  return new Pool(origin, { ...options, factory: (url, clientOptions) => new RetryingClient(url, clientOptions as Client.Options) });
}

/**
 * What a request the kernel refused to send looks like: a write on a connection the other side
 * had reset (or closed, then answered the bytes after it with a reset). A read that finds the
 * connection lost says nothing of whether the request arrived.
 */
function neverSent(error: Error): boolean {
  const { code, syscall } = error as NodeJS.ErrnoException;
  return syscall === 'write' && (code === 'EPIPE' || code === 'ECONNRESET');
}

/** One connection of the pool; it knows whether its current socket has already carried an answer. */
class RetryingClient extends Client {
  answered = 0;

  constructor(url: URL, options: Client.Options) {
    super(url, options);
    this.on('connect', () => (this.answered = 0));
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return super.dispatch(options, new RetryOnceHandler(this, options, handler));
  }

  /** Sends a request again, without wrapping its handler a second time. */
  redispatch(options: Dispatcher.DispatchOptions, handler: RetryOnceHandler): void {
    super.dispatch(options, handler);
  }
}

/**
 * Passes every event on to the caller's handler (undici's request handler, which speaks the
 * callback-style interface), except the one error that is answered by sending the request again.
 */
class RetryOnceHandler implements Dispatcher.DispatchHandler {
  private reused = false;
  private answerBegan = false;
  private retried = false;

  constructor(
    private readonly client: RetryingClient,
    private readonly options: Dispatcher.DispatchOptions,
    private readonly handler: Dispatcher.DispatchHandler,
  ) {}

  /** Called as the request is written to a socket: the socket is reused if it has carried an answer. */
  onConnect(abort: (error?: Error) => void): void {
    this.reused = this.client.answered > 0;
    this.handler.onConnect?.(abort);
  }

  /** The first byte of the answer. */
  onResponseStarted(): void {
    this.answerBegan = true;
    this.handler.onResponseStarted?.();
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    return this.handler.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | null): void {
    this.client.answered++;
    this.handler.onComplete?.(trailers);
  }

  onError(error: Error): void {
    if (this.reused && !this.answerBegan && !this.retried && neverSent(error)) {
      this.retried = true;
      // The dead socket is gone from this client, which opens a new one for the request. Sent from
      // a microtask, so that undici finishes tearing the old one down first. The request's body
      // is a string, so it can be sent again.
      queueMicrotask(() => this.client.redispatch(this.options, this));
      return;
    }
    this.handler.onError?.(error);
  }
}
