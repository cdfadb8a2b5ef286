import { EventStreamCodec } from '@smithy/eventstream-codec';
import type { Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { unreadableUpstream } from '../../core/upstream-errors.js';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A frame's prelude (total and headers length, prelude CRC) and trailing message CRC: the least a frame can be. */
const PRELUDE_BYTES = 12;
const MIN_FRAME_BYTES = 16;

/**
 * The messages of AWS's binary event stream (`application/vnd.amazon.eventstream`), as they
 * arrive: each frame is held whole until its declared length came in, then decoded by smithy's
 * codec, which checks the prelude's and the message's CRC32. A bad CRC, a length smaller than a
 * frame can be or larger than `maxFrameBytes` (what a whole answer may be: max_response_bytes), or
 * a body that ends inside a frame is an unreadable upstream; leaving the loop cuts the body.
 */
export async function* eventStreamMessages(body: AsyncIterable<Buffer>, providerId: string, maxFrameBytes: number): AsyncGenerator<Message> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of body) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= PRELUDE_BYTES) {
      const length = pending.readUInt32BE(0);
      if (length < MIN_FRAME_BYTES || length > maxFrameBytes) throw unreadableUpstream(providerId, `an event-stream frame of ${length} bytes (frames are ${MIN_FRAME_BYTES} bytes to the gateway's limit of ${maxFrameBytes}, max_response_bytes)`);
      if (pending.length < length) break;
      let message: Message;
      try {
        message = codec.decode(pending.subarray(0, length));
      } catch {
        throw unreadableUpstream(providerId, 'an event-stream frame that fails its checksum');
      }
      pending = pending.subarray(length);
      yield message;
    }
  }
  if (pending.length > 0) throw unreadableUpstream(providerId, 'an event stream that ends inside a frame');
}

/** A string header's value, or undefined. */
export function headerString(message: Message, name: string): string | undefined {
  const header = message.headers[name];
  return header?.type === 'string' ? header.value : undefined;
}
