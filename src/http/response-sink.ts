import { once } from 'node:events';
import type { Socket } from 'node:net';
import type { TimedResponse } from './timed-response.js';

/**
 * The pipeline's sink over one HTTP response: the only place where a reply meets `node:http`. Its
 * signal aborts when the caller goes away before the response finished.
 */
export class ResponseSink {
  private readonly controller = new AbortController();

  constructor(private readonly res: TimedResponse) {
    res.once('close', this.onClose);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get ended(): boolean {
    return this.res.writableEnded;
  }

  setHeader(name: string, value: string): void {
    this.res.setHeader(name, value);
  }

  head(status: number, headers: Readonly<Record<string, string>>): void {
    this.res.writeHead(status, headers);
  }

  /**
   * A stream's writes go out together until the event loop's next turn (`setImmediate`): the events
   * a relay writes one by one from one upstream read reach the socket in one system call, not one
   * each (node:http uncorks after every write, before the next event's promise continues).
   */
  async write(chunk: string | Uint8Array): Promise<void> {
    if (this.res.destroyed) return;
    if (!this.corked) {
      const socket = this.res.socket;
      if (socket !== null) {
        socket.cork();
        this.corked = true;
        setImmediate(this.uncork, socket);
      }
    }
    if (!this.res.write(chunk)) await once(this.res, 'drain', { signal: this.controller.signal });
  }

  private corked = false;

  private readonly uncork = (socket: Socket): void => {
    this.corked = false;
    socket.uncork();
  };

  end(chunk?: string | Uint8Array): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (chunk === undefined) this.res.end();
    else this.res.end(chunk);
  }

  cut(): void {
    this.res.destroy();
  }

  /** Stops listening once the pipeline is done with the response. */
  release(): void {
    this.res.off('close', this.onClose);
  }

  private readonly onClose = (): void => {
    if (!this.res.writableFinished) this.controller.abort();
  };
}
