import { performance } from 'node:perf_hooks';
import { toGatewayError, type GatewayError } from '../core/errors.js';
import type { Usage } from '../generation/model.js';
import type { AnswerSink, Reply, StreamReply, WholeReply } from '../generation/operation.js';

/** What the write stage saw, for the meter stage and for the attempt that answered. */
export interface Written {
  /** The upstream's usage, else Sluice's count of what was delivered; null when the write failed before it knew. */
  readonly usage: Usage | null;
  /** True when Sluice counted the tokens because the upstream reported none. */
  readonly counted: boolean;
  /** performance.now() when the first byte went to the caller. */
  readonly firstByteAt: number | null;
  /** A failure after the answer began, sent to the caller as the dialect's error event. */
  readonly failure: GatewayError | undefined;
  /** A failure before the first byte (the caller gets a proper status), or the caller's leaving. */
  readonly thrown: GatewayError | undefined;
}

type Count = (generated: readonly string[]) => Promise<Usage>;

/**
 * The write stage, the same for every dialect: the upstream's usage or, when it reported none,
 * Sluice's count of what was generated; a whole reply at once; a stream item by item to its end,
 * where a failure after the first byte becomes the dialect's error event and what was delivered
 * until then is still metered.
 */
export function writeReply(reply: Reply, sink: AnswerSink, count: Count): Promise<Written> {
  return reply.kind === 'whole' ? writeWhole(reply, sink, count) : writeStream<unknown>(reply as StreamReply<unknown>, sink, count);
}

async function writeWhole(reply: WholeReply, sink: AnswerSink, count: Count): Promise<Written> {
  try {
    const counted = reply.reported === null;
    const standing = reply.reported ?? (await count(reply.generated()));
    const usage = reply.units === undefined ? standing : { ...standing, units: reply.units };
    const rendered = await reply.render(usage, counted);
    // With its length known, the answer goes out whole rather than in chunked framing.
    sink.head(200, { ...rendered.headers, 'content-length': String(Buffer.byteLength(rendered.body)) });
    sink.end(rendered.body);
    return { usage, counted, firstByteAt: performance.now(), failure: undefined, thrown: undefined };
  } catch (thrown) {
    return { usage: null, counted: false, firstByteAt: null, failure: undefined, thrown: toGatewayError(thrown) };
  }
}

async function writeStream<Item>(reply: StreamReply<Item>, sink: AnswerSink, count: Count): Promise<Written> {
  let firstByteAt: number | null = null;
  try {
    await reply.open?.();
    if (reply.started) firstByteAt = performance.now();
    for await (const item of reply.items) {
      await reply.write(item);
      if (firstByteAt === null && reply.started) firstByteAt = performance.now();
    }
    const reported = reply.reported;
    const usage = reported ?? (await count(reply.generated()));
    if (!reply.started) {
      reply.openEmpty();
      firstByteAt ??= performance.now();
    }
    await reply.close(usage);
    return { usage, counted: reported === null, firstByteAt, failure: reply.upstreamFailure, thrown: undefined };
  } catch (thrown) {
    // What was generated before a failure or a hang-up was produced, and delivered, all the same.
    const usage = await count(reply.generated());
    const error = toGatewayError(thrown);
    // Before the first byte the caller still gets a proper status; after it, an error event.
    if (!reply.started || sink.signal.aborted) return { usage, counted: true, firstByteAt, failure: undefined, thrown: error };
    await reply.fail(error).catch(() => undefined);
    sink.end();
    return { usage, counted: true, firstByteAt, failure: error, thrown: undefined };
  }
}
