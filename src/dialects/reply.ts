import type { GatewayError } from '../core/errors.js';
import type { BilledUnits, StreamPart, Usage } from '../generation/model.js';
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
export function wholeReply(
  reported: Usage | null,
  generated: () => readonly string[],
  render: (usage: Usage, counted: boolean) => Rendered | Promise<Rendered>,
  units?: BilledUnits,
): WholeReply {
  return units === undefined ? { kind: 'whole', reported, generated, render } : { kind: 'whole', reported, generated, render, units };
}

export function rendered(body: string, headers: Readonly<Record<string, string>> = JSON_HEADERS): Rendered {
  return { body, headers };
}

/** What a stream's items say of usage and generated text, read item by item (a relayed wire's reading is its vendor's: src/wire). */
interface Reading<Item> {
  see(item: Item): void;
  readonly reported: Usage | null;
  generated(): readonly string[];
  readonly failure?: GatewayError | undefined;
}

/** The generation model's parts: usage parts, and the text, reasoning and tool arguments generated for each choice. */
class PartsReading implements Reading<StreamPart> {
  private readonly texts = new TextsByChoice();
  reported: Usage | null = null;

  see(part: StreamPart): void {
    if (part.type === 'usage') this.reported = part.usage;
    else if (part.type === 'text' || part.type === 'reasoning') this.texts.add(part.choice, part.text);
    else if (part.type === 'tool_call_delta') this.texts.add(part.choice, part.arguments);
  }

  generated(): readonly string[] {
    return this.texts.list();
  }
}

/** A stream reply: each item read, then written in the dialect's frames by `write`. */
function streamReply<Item>(items: AsyncIterable<Item>, writer: StreamWriter, reading: Reading<Item>, write: (item: Item) => Promise<void>, open?: () => Promise<void> | void): StreamReply<Item> {
  return {
    kind: 'stream',
    items,
    get started() {
      return writer.hasStarted;
    },
    get reported() {
      return reading.reported;
    },
    get upstreamFailure() {
      return reading.failure;
    },
    ...(open === undefined ? {} : { open }),
    write(item) {
      reading.see(item);
      return write(item);
    },
    generated: () => reading.generated(),
    openEmpty: () => writer.openEmpty(),
    close: (usage) => writer.close(usage),
    fail: (error) => writer.fail(error),
  };
}

/** A translated stream: opened at once (`open`), each part framed by the dialect (`write`). */
export function translatedStream(parts: AsyncIterable<StreamPart>, writer: StreamWriter, open: () => Promise<void> | void, write: (part: StreamPart) => Promise<void>): StreamReply<StreamPart> {
  return streamReply(parts, writer, new PartsReading(), write, open);
}

/** A relayed stream: each event read by its wire's reading and relayed by the dialect's writer (which opens on the first). */
export function relayedStream(events: AsyncIterable<Readonly<Record<string, unknown>>>, writer: StreamWriter, reading: EventReading, relay: (event: Readonly<Record<string, unknown>>) => Promise<void>): StreamReply<Readonly<Record<string, unknown>>> {
  return streamReply(events, writer, reading, relay);
}
