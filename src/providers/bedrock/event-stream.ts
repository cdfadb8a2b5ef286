import type { EventStreamCodec, Message } from '@smithy/eventstream-codec';
import { unreadableUpstream } from '../../core/upstream-errors.js';

/** Loaded with the first stream: only a gateway with a Bedrock provider in use needs it. */
let codecOnce: Promise<EventStreamCodec> | undefined;

function codec(): Promise<EventStreamCodec> {
  codecOnce ??= Promise.all([import('@smithy/eventstream-codec'), import('@smithy/util-utf8')]).then(([{ EventStreamCodec }, { fromUtf8, toUtf8 }]) => new EventStreamCodec(toUtf8, fromUtf8));
  return codecOnce;
}

/** A frame's prelude (total and headers length, prelude CRC) and trailing message CRC: the least a frame can be. */
const PRELUDE_BYTES = 12;
const MIN_FRAME_BYTES = 16;

/**
 * The messages of AWS's binary event stream (`application/vnd.amazon.eventstream`), as they
 * arrive: each frame is held until its declared length came in, then decoded by smithy's codec,
 * which checks the prelude's and the message's CRC32. A bad CRC, a length smaller than a frame can
 * be or larger than `maxFrameBytes` (what a whole answer may be: max_response_bytes), or a body that
 * ends inside a frame is an unreadable upstream; leaving the loop cuts the body. The chunks of a
 * frame are joined once, when it is whole, so a frame split into many reads costs linear time.
 */
export async function* eventStreamMessages(body: AsyncIterable<Buffer>, providerId: string, maxFrameBytes: number): AsyncGenerator<Message> {
  const decoder = await codec();
  let chunks: Buffer[] = [];
  let buffered = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= PRELUDE_BYTES) {
      // The first chunk is at least 4 bytes long, or becomes so (once: the joined chunk is then all of them).
      if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks, buffered)];
      const length = chunks[0]!.readUInt32BE(0);
      if (length < MIN_FRAME_BYTES || length > maxFrameBytes) throw unreadableUpstream(providerId, `an event-stream frame of ${length} bytes (frames are ${MIN_FRAME_BYTES} bytes to the gateway's limit of ${maxFrameBytes}, max_response_bytes)`);
      if (buffered < length) break;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
      const rest = all.subarray(length);
      chunks = rest.length === 0 ? [] : [rest];
      buffered = rest.length;
      let message: Message;
      try {
        message = decoder.decode(all.subarray(0, length));
      } catch {
        throw unreadableUpstream(providerId, 'an event-stream frame that fails its checksum');
      }
      yield message;
    }
  }
  if (buffered > 0) throw unreadableUpstream(providerId, 'an event stream that ends inside a frame');
}

/** A string header's value, or undefined. */
export function headerString(message: Message, name: string): string | undefined {
  const header = message.headers[name];
  return header?.type === 'string' ? header.value : undefined;
}
