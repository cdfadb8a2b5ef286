import type { GatewayError } from '../core/errors.js';
import type { StreamPart, Usage } from '../generation/model.js';
import type { AnswerSink, Rendered, StreamReply, WholeReply } from '../generation/operation.js';
import { TextsByChoice, type EventReading } from '../wire/relay-format.js';

/** The replies every dialect builds, over the frames its writers know; the write stage (src/pipeline) runs them. */

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

export const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/** What a dialect's stream writer does besides framing items: the framing is the dialect's own. */
export interface StreamWriter {
  readonly hasStarted: boolean;
  /** Sends the stream's head, for an upstream that ended before producing anything. */
  openEmpty(): void;
  /** The caller's usage (where its dialect reports it at the end) and the end of the stream. */
  close(usage: Usage): Promise<void>;
  /** An error after the stream began, framed as the dialect's clients expect one. */
  fail(error: GatewayError): Promise<void>;
}

/** A response written piece by piece to the sink, waiting for the caller when it reads slower than the upstream writes. */
export abstract class ChunkedWriter {
  private started = false;

  constructor(
    protected readonly sink: AnswerSink,
    private readonly headers: Readonly<Record<string, string>> = SSE_HEADERS,
  ) {}

  get hasStarted(): boolean {
    return this.started;
  }

  /** Sends the status line and headers once; the body follows. */
  protected start(): void {
    if (this.started) return;
    this.started = true;
    this.sink.head(200, this.headers);
  }

  protected write(data: string): Promise<void> {
    return this.sink.write(data);
  }

  protected endWith(data: string): void {
    this.sink.end(data);
  }
}

/** A whole answer. */
export function wholeReply(reported: Usage | null, generated: () => readonly string[], render: (usage: Usage, counted: boolean) => Rendered | Promise<Rendered>): WholeReply {
  return { kind: 'whole', reported, generated, render };
}

export function rendered(body: string, headers: Readonly<Record<string, string>> = JSON_HEADERS): Rendered {
  return { body, headers };
}

/**
 * A translated stream: opened at once (`open`), each part framed by the dialect (`write`), the
 * upstream's usage parts and the generated text kept for the meter.
 */
export function translatedStream(parts: AsyncIterable<StreamPart>, writer: StreamWriter, open: () => Promise<void> | void, write: (part: StreamPart) => Promise<void>): StreamReply<StreamPart> {
  const texts = new TextsByChoice();
  let reported: Usage | null = null;
  return {
    kind: 'stream',
    items: parts,
    get started() {
      return writer.hasStarted;
    },
    get reported() {
      return reported;
    },
    open,
    write(part) {
      if (part.type === 'usage') reported = part.usage;
      else if (part.type === 'text' || part.type === 'reasoning') texts.add(part.choice, part.text);
      else if (part.type === 'tool_call_delta') texts.add(part.choice, part.arguments);
      return write(part);
    },
    generated: () => texts.list(),
    openEmpty: () => writer.openEmpty(),
    close: (usage) => writer.close(usage),
    fail: (error) => writer.fail(error),
  };
}

type Json = Readonly<Record<string, unknown>>;

/** A relayed stream: each event read by its wire's reading and relayed by the dialect's writer. */
export function relayedStream(events: AsyncIterable<Json>, writer: StreamWriter, reading: EventReading, relay: (event: Json) => Promise<void>): StreamReply<Json> {
  return {
    kind: 'stream',
    items: events,
    get started() {
      return writer.hasStarted;
    },
    get reported() {
      return reading.reported;
    },
    get upstreamFailure() {
      return reading.failure;
    },
    write(event) {
      reading.see(event);
      return relay(event);
    },
    generated: () => reading.generated(),
    openEmpty: () => writer.openEmpty(),
    close: (usage) => writer.close(usage),
    fail: (error) => writer.fail(error),
  };
}
