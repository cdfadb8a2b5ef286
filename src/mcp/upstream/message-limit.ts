/**
 * Bounding what an upstream MCP server sends, message by message, while it arrives: a message past
 * the cap is dropped (never held whole) and reported with the JSON-RPC id it answered, found in its
 * first or last bytes, so the call waiting for it fails at once instead of waiting for its timeout.
 */

export type JsonRpcId = string | number;

/** A message that passed the cap and was dropped. */
export interface OversizedMessage {
  /** The id of the request it answered, when its opening or closing bytes name one. */
  readonly requestId: JsonRpcId | undefined;
}

/** Room for the JSON-RPC and SSE envelope around a result: the cap is `max_result_bytes` plus this. */
export const ENVELOPE_BYTES = 64 * 1024;

const KEPT_BYTES = 512;
// A top-level id: first (`{"jsonrpc":"2.0","id":3,…`) or last (`…,"jsonrpc":"2.0","id":3}`), as JSON-RPC peers write them.
// A nested `"id"` cannot match at the end: it would be followed by at least two closing braces.
const ID = String.raw`(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")`;
const LEADING_ID = new RegExp(String.raw`^\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`);
const TRAILING_ID = new RegExp(String.raw`"id"\s*:\s*${ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`);

/** Keeps the first and last few hundred bytes of a message going by, to find its id once it is dropped. */
export class MessageEnds {
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);

  feed(bytes: Uint8Array): void {
    if (this.head.length < KEPT_BYTES) this.head = Buffer.concat([this.head, bytes.subarray(0, KEPT_BYTES - this.head.length)]);
    const joined = bytes.length >= KEPT_BYTES ? Buffer.from(bytes.subarray(bytes.length - KEPT_BYTES)) : Buffer.concat([this.tail, bytes]);
    this.tail = joined.length > KEPT_BYTES ? joined.subarray(joined.length - KEPT_BYTES) : joined;
  }

  /** The message's top-level id, if its ends show one. */
  requestId(): JsonRpcId | undefined {
    const head = this.head.toString('utf8');
    const start = head.indexOf('{');
    const leading = start === -1 ? null : LEADING_ID.exec(head.slice(start));
    const found = leading ?? TRAILING_ID.exec(this.tail.toString('utf8'));
    if (found === null) return undefined;
    try {
      return JSON.parse(found[1]!) as JsonRpcId;
    } catch {
      return undefined;
    }
  }

  reset(): void {
    this.head = Buffer.alloc(0);
    this.tail = Buffer.alloc(0);
  }
}

export class MessageTooLargeError extends Error {
  override name = 'MessageTooLargeError';
  constructor(readonly limit: number) {
    super(`the upstream's message exceeded ${limit} bytes`);
  }
}

/**
 * A whole body (one JSON answer): past `limit` bytes the stream errors, which cancels the body
 * underneath (the connection is dropped rather than drained).
 */
export function limitWholeBody(limit: number, onOversized: (message: OversizedMessage) => void): TransformStream<Uint8Array, Uint8Array> {
  let total = 0;
  const ends = new MessageEnds();
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.length;
      if (total > limit) {
        ends.feed(chunk);
        onOversized({ requestId: ends.requestId() });
        controller.error(new MessageTooLargeError(limit));
        return;
      }
      if (total - chunk.length < KEPT_BYTES) ends.feed(chunk);
      controller.enqueue(chunk);
    },
  });
}

/**
 * An event stream: each event (up to its blank line) may hold at most `limit` bytes. A larger one is
 * cut where it passed the cap, its remaining bytes are read and dropped, and a blank line ends it
 * for the parser downstream (which then fails to parse the truncated data and moves on); the stream
 * itself goes on, since other messages share it.
 */
export function limitEventStream(limit: number, onOversized: (message: OversizedMessage) => void): TransformStream<Uint8Array, Uint8Array> {
  let eventBytes = 0;
  let lineHasContent = false;
  let oversized = false;
  const ends = new MessageEnds();
  const endEvent = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (oversized) {
      controller.enqueue(new Uint8Array([0x0a, 0x0a]));
      onOversized({ requestId: ends.requestId() });
    }
    eventBytes = 0;
    oversized = false;
    ends.reset();
  };
  return new TransformStream({
    transform(chunk, controller) {
      let position = 0;
      while (position < chunk.length) {
        const newline = chunk.indexOf(0x0a, position);
        const end = newline === -1 ? chunk.length : newline + 1;
        const segment = chunk.subarray(position, end);
        const content = newline === -1 ? segment : segment.subarray(0, segment.length - 1);
        if (content.some((byte) => byte !== 0x0d)) lineHasContent = true;
        const endsEvent = newline !== -1 && !lineHasContent;
        if (newline !== -1) lineHasContent = false;
        ends.feed(segment);
        if (!oversized && eventBytes + segment.length > limit) oversized = true;
        if (!oversized) {
          eventBytes += segment.length;
          controller.enqueue(segment);
        }
        if (endsEvent) endEvent(controller);
        position = end;
      }
    },
    flush(controller) {
      if (oversized) endEvent(controller);
    },
  });
}

/**
 * Newline-delimited messages (a stdio server's stdout), each at most `limit` bytes: a longer line
 * is dropped as it arrives (only its ends kept, for its id), so a runaway process cannot make the
 * gateway hold more than one capped line.
 */
export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private oversized = false;
  private readonly ends = new MessageEnds();

  constructor(
    private readonly limit: number | (() => number),
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (message: OversizedMessage) => void,
  ) {}

  push(chunk: Buffer): void {
    let position = 0;
    while (position < chunk.length) {
      const newline = chunk.indexOf(0x0a, position);
      const piece = chunk.subarray(position, newline === -1 ? chunk.length : newline);
      this.take(piece);
      if (newline === -1) return;
      this.endLine();
      position = newline + 1;
    }
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    const limit = typeof this.limit === 'number' ? this.limit : this.limit();
    if (this.oversized) {
      this.ends.feed(piece);
      return;
    }
    if (this.pendingBytes + piece.length > limit) {
      this.oversized = true;
      for (const kept of this.pending) this.ends.feed(kept);
      this.ends.feed(piece);
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // A copy: the chunk's buffer may be reused by the stream underneath.
    this.pending.push(Buffer.from(piece));
    this.pendingBytes += piece.length;
  }

  private endLine(): void {
    if (this.oversized) {
      this.oversized = false;
      const requestId = this.ends.requestId();
      this.ends.reset();
      this.onOversized({ requestId });
      return;
    }
    const line = Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '');
    this.pending = [];
    this.pendingBytes = 0;
    if (line.trim() !== '') this.onLine(line);
  }
}
