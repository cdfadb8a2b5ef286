import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { toGatewayError, type GatewayError } from '../../errors.js';
import { newGenerationId } from '../../generation/fan-out.js';
import type { Usage } from '../../generation/model.js';
import type { Exchange } from '../../generation/operation.js';
import { openAIErrorObject } from './errors.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;
const DONE = 'data: [DONE]\n\n';

/**
 * OpenAI's data-only server-sent events, shared by the completion and chat streams: every chunk is
 * a whole object whose constant head (id, object, created, model) is serialised once per stream.
 */
export abstract class OpenAIStreamWriter {
  protected chunkPrefix = '';
  /** With include_usage, OpenAI puts `"usage": null` on every chunk but the usage chunk. */
  protected readonly chunkSuffix: string;
  private started = false;
  /** Set once a usage chunk went out (a relayed one included), so that no second one follows. */
  protected usageWritten = false;

  constructor(
    protected readonly res: ServerResponse,
    protected readonly publicModel: string,
    protected readonly includeUsage: boolean,
    private readonly signal: AbortSignal,
    private readonly object: string,
  ) {
    this.chunkSuffix = includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  }

  get hasStarted(): boolean {
    return this.started;
  }

  /** Sends the status line and headers; the body follows chunk by chunk. */
  open(id: string, created: number): void {
    this.chunkPrefix = `data: {"id":${JSON.stringify(id)},"object":"${this.object}","created":${created},"model":${JSON.stringify(this.publicModel)},"choices":[`;
    if (!this.started) {
      this.started = true;
      this.res.writeHead(200, SSE_HEADERS);
    }
  }

  /** The usage chunk (`choices: []`), only when the caller asked for it. */
  async usage(usage: Usage): Promise<void> {
    if (!this.includeUsage || this.usageWritten) return;
    this.usageWritten = true;
    await this.write(`${this.chunkPrefix}],"usage":${JSON.stringify(this.wireUsage(usage))}}\n\n`);
  }

  protected abstract wireUsage(usage: Usage): unknown;

  /** An error after the stream began: OpenAI's SDKs raise `data: {"error":…}` as an APIError. */
  async error(error: GatewayError): Promise<void> {
    await this.write(`data: ${JSON.stringify({ error: openAIErrorObject(error) })}\n\n`);
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end(DONE);
  }

  protected async writeChoice(choiceJson: string): Promise<void> {
    await this.write(this.chunkPrefix + choiceJson + ']' + this.chunkSuffix);
  }

  /** Waits for the socket to drain when the client reads slower than the upstream writes. */
  protected async write(data: string): Promise<void> {
    if (this.res.destroyed) return;
    if (!this.res.write(data)) await once(this.res, 'drain', { signal: this.signal });
  }
}

/**
 * Runs a stream to its end: `produce` writes the chunks and returns the upstream's usage (null when
 * it reported none, and Sluice counts); a failure after the first byte becomes an error event, and
 * what was delivered until then is still metered.
 */
export async function runStream<Request>(
  x: Exchange<Request>,
  writer: OpenAIStreamWriter,
  idPrefix: string,
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
      writer.open(newGenerationId(idPrefix), Math.floor(Date.now() / 1000));
      x.meter.firstByteAt ??= performance.now();
    }
    await writer.usage(usage);
    writer.end();
  } catch (thrown) {
    // What was generated before a failure or a hang-up was produced, and delivered, all the same.
    x.meter.usage = await delivered();
    x.meter.tokensCounted = true;
    // Before the first byte the caller still gets a proper status; after it, an error event.
    if (!writer.hasStarted || x.signal.aborted) throw thrown;
    const error = toGatewayError(thrown);
    x.meter.failure = { status: error.status, kind: error.kind };
    await writer.error(error).catch(() => undefined);
    x.res.end();
  }
}
