import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Every response tells its caller, in `Server-Timing` (which browsers' developer tools and most
 * HTTP tools show), Sluice's own time and the upstreams' until the headers went out: for a stream,
 * until its first content. Made by the HTTP server for each request, so no handler has to remember.
 */
export class TimedResponse extends ServerResponse {
  /** performance.now() when the request arrived. */
  readonly startedAt = performance.now();
  /** Time spent waiting on upstreams so far; routing adds each attempt's. */
  upstreamMs = 0;

  constructor(req: IncomingMessage) {
    super(req);
  }

  override writeHead(statusCode: number, statusMessage?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
    if (!this.headersSent) this.setHeader('server-timing', this.serverTiming());
    return typeof statusMessage === 'string' ? super.writeHead(statusCode, statusMessage, headers) : super.writeHead(statusCode, statusMessage);
  }

  private serverTiming(): string {
    const total = performance.now() - this.startedAt;
    const own = `sluice;dur=${(total - this.upstreamMs).toFixed(2)};desc="Sluice"`;
    return this.upstreamMs === 0 ? own : `${own}, upstream;dur=${this.upstreamMs.toFixed(2)};desc="Upstream"`;
  }
}
