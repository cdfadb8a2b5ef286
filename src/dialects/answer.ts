import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { toGatewayError, type GatewayError } from '../core/errors.js';
import type { Usage } from '../generation/model.js';
import type { Exchange } from '../generation/operation.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/** The upstream's usage, or Sluice's own count when it reported none (the meter then says so). */
export async function meterUsage<Request>(x: Exchange<Request>, reported: Usage | null, count: () => Promise<Usage>): Promise<Usage> {
  const usage = reported ?? (await count());
  x.meter.tokensCounted = reported === null;
  x.meter.usage = usage;
  return usage;
}

/** A whole answer, written at once; its first byte is the meter's. */
export function sendWhole<Request>(x: Exchange<Request>, body: string, headers: Readonly<Record<string, string>> = JSON_HEADERS): void {
  x.res.writeHead(200, headers).end(body);
  x.meter.firstByteAt = performance.now();
}

/** What the runner needs of a dialect's stream writer: the framing is the dialect's own. */
export interface StreamWriter {
  readonly hasStarted: boolean;
  /** Sends the stream's head, for an upstream that ended before producing anything. */
  openEmpty(): void;
  /** The caller's usage (where its dialect reports it at the end) and the end of the stream. */
  close(usage: Usage): Promise<void>;
  /** An error after the stream began, framed as the dialect's clients expect one. */
  fail(error: GatewayError): Promise<void>;
}

/** A response written piece by piece, waiting for the socket when the client reads slower than the upstream writes. */
export abstract class ChunkedWriter {
  private started = false;

  constructor(
    protected readonly res: ServerResponse,
    private readonly signal: AbortSignal,
    private readonly headers: Readonly<Record<string, string>> = SSE_HEADERS,
  ) {}

  get hasStarted(): boolean {
    return this.started;
  }

  /** Sends the status line and headers once; the body follows. */
  protected start(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, this.headers);
  }

  protected async write(data: string): Promise<void> {
    if (this.res.destroyed) return;
    if (!this.res.write(data)) await once(this.res, 'drain', { signal: this.signal });
  }

  protected endWith(data: string): void {
    if (!this.res.writableEnded) this.res.end(data);
  }
}

/**
 * Runs a stream to its end: `produce` writes the chunks and returns the upstream's usage (null when
 * it reported none, and Sluice counts); a failure after the first byte becomes the dialect's error
 * event, and what was delivered until then is still metered.
 */
export async function runStream<Request>(
  x: Exchange<Request>,
  writer: StreamWriter,
  produce: () => Promise<Usage | null>,
  delivered: () => Promise<Usage>,
): Promise<void> {
  try {
    let usage = await produce();
    if (usage === null) {
      usage = await delivered();
      x.meter.tokensCounted = true;
    }
    x.meter.usage = usage;
    if (!writer.hasStarted) {
      writer.openEmpty();
      x.meter.firstByteAt ??= performance.now();
    }
    await writer.close(usage);
  } catch (thrown) {
    // What was generated before a failure or a hang-up was produced, and delivered, all the same.
    x.meter.usage = await delivered();
    x.meter.tokensCounted = true;
    // Before the first byte the caller still gets a proper status; after it, an error event.
    if (!writer.hasStarted || x.signal.aborted) throw thrown;
    const error = toGatewayError(thrown);
    x.meter.failure = { status: error.status, kind: error.kind, upstreamFailure: error.upstreamFailure };
    await writer.fail(error).catch(() => undefined);
    x.res.end();
  }
}
