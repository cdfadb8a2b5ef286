import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { GatewayError } from '../core/errors.js';
import type { Usage } from '../generation/model.js';
import type { AnswerSink, StreamReply } from '../generation/operation.js';
import type { Transferred } from '../generation/provider.js';
import { SSE_HEADERS } from './reply.js';

/**
 * Replies to an answer that came back as bytes (a transferred call): written whole once read, or
 * passed on to the caller chunk by chunk as the upstream sends them. Both are stream replies for
 * the write stage: the upstream's bytes arrive as a stream either way.
 */

/** What a whole answer becomes for the caller. */
export interface Collected {
  readonly body: string | Uint8Array;
  readonly contentType: string;
  /** The upstream's usage; null when it gave none (Sluice's own count then stands). */
  readonly reported: Usage | null;
}

/**
 * An answer read whole (its size capped by the provider), then `finish`ed and written at once with
 * its status: nothing reaches the caller before the upstream's last byte, so a failure while
 * reading is still a proper error status.
 */
export function collectedReply(answer: Transferred, sink: AnswerSink, finish: (bytes: Buffer, contentType: string) => Collected): StreamReply<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let collected: Collected | undefined;
  const result = () => (collected ??= finish(Buffer.concat(chunks, size), answer.contentType));
  let started = false;
  return {
    kind: 'stream',
    items: answer.body,
    get started() {
      return started;
    },
    get reported() {
      return result().reported;
    },
    write(chunk) {
      chunks.push(chunk);
      size += chunk.length;
      return Promise.resolve();
    },
    generated: () => [],
    // The head goes with the body, in close.
    openEmpty: () => undefined,
    close() {
      const { body, contentType } = result();
      started = true;
      sink.head(200, { 'content-type': contentType });
      sink.end(body);
      return Promise.resolve();
    },
    fail: () => Promise.resolve(),
  };
}

/** What a passed-on stream's bytes say of usage, seen chunk by chunk. */
export interface BytesReading {
  see(chunk: Uint8Array): void;
  readonly reported: Usage | null;
  readonly failure?: GatewayError | undefined;
}

/**
 * The upstream's bytes passed on as they arrive (audio, or server-sent events), each written once
 * the caller has taken the one before: a slow caller slows the upstream. The head goes with the
 * first chunk. A failure after it cuts the answer, for a byte stream has no error event to send.
 */
export function passedOnReply(answer: Transferred, sink: AnswerSink, reading: BytesReading, headers: Readonly<Record<string, string>>): StreamReply<Uint8Array> {
  let started = false;
  const open = () => {
    if (started) return;
    started = true;
    sink.head(200, headers);
  };
  return {
    kind: 'stream',
    items: answer.body,
    get started() {
      return started;
    },
    get reported() {
      return reading.reported;
    },
    get upstreamFailure() {
      return reading.failure;
    },
    write(chunk) {
      reading.see(chunk);
      open();
      return sink.write(chunk);
    },
    generated: () => [],
    openEmpty: open,
    close() {
      sink.end();
      return Promise.resolve();
    },
    fail() {
      sink.cut();
      return Promise.resolve();
    },
  };
}

/** The headers of a passed-on answer: the upstream's type; an event stream's as every Sluice stream sends them. */
export function passedOnHeaders(contentType: string): Readonly<Record<string, string>> {
  return contentType.startsWith('text/event-stream') ? SSE_HEADERS : { 'content-type': contentType, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
}

/** A reading of server-sent events in a passed-on stream: `onEvent` sees each event's parsed JSON (events that are not JSON are passed over). */
export function eventsReading(onEvent: (data: Readonly<Record<string, unknown>>, event: EventSourceMessage) => void): { see(chunk: Uint8Array): void } {
  const decoder = new TextDecoder();
  const parser = createParser({
    // Usage comes in small events; one larger than this (a long audio delta) is passed on unread.
    maxBufferSize: 16 * 1024 * 1024,
    onError: () => undefined,
    onEvent(event) {
      try {
        const data: unknown = JSON.parse(event.data);
        if (data !== null && typeof data === 'object' && !Array.isArray(data)) onEvent(data as Readonly<Record<string, unknown>>, event);
      } catch {
        // Not JSON ([DONE], a comment): nothing to read of it.
      }
    },
  });
  return { see: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })) };
}
