import assert from 'node:assert/strict';

/** How a dialect frames a streamed answer. */
export type Framing =
  /** OpenAI chat and legacy completions: `data: {…}\n\n` chunks, `data: [DONE]\n\n` at the end. */
  | 'openai-data'
  /** Anthropic and the Responses API: `event: <type>\ndata: {"type":"<type>",…}\n\n`. */
  | 'named-events'
  /** Gemini with `alt=sse`: `data: {…}\r\n\r\n`, no end marker. */
  | 'gemini-sse'
  /** Gemini without `alt=sse`: one JSON array written as it grows. */
  | 'gemini-array';

export interface Frame {
  readonly event: string | undefined;
  readonly data: unknown;
}

/**
 * Splits a stream into its frames and checks what every stream of that framing must hold,
 * whatever its content: each data line is one JSON value, named events repeat their name as
 * `type` (and the Responses API numbers them from 0), OpenAI's streams end with [DONE] (unless an
 * error ended them) and Gemini's have none.
 */
export function framesOf(body: string, framing: Framing, failed: boolean): Frame[] {
  if (framing === 'gemini-array') {
    const chunks = JSON.parse(body) as unknown;
    assert.ok(Array.isArray(chunks), 'a JSON array');
    return chunks.map((data) => ({ event: undefined, data }));
  }
  const separator = framing === 'gemini-sse' ? '\r\n\r\n' : '\n\n';
  const lineEnd = framing === 'gemini-sse' ? '\r\n' : '\n';
  assert.ok(body === '' || body.endsWith(separator), `the stream ends with a whole frame: ${JSON.stringify(body.slice(-40))}`);
  const raw = body === '' ? [] : body.slice(0, -separator.length).split(separator);
  const frames: Frame[] = [];
  raw.forEach((text, i) => {
    const lines = text.split(lineEnd);
    let event: string | undefined;
    if (framing === 'named-events') {
      const match = /^event: (\S+)$/.exec(lines.shift() ?? '');
      assert.ok(match !== null, `frame ${i} names its event: ${JSON.stringify(text)}`);
      event = match[1];
    }
    assert.equal(lines.length, 1, `frame ${i} is one data line: ${JSON.stringify(text)}`);
    assert.ok(lines[0]!.startsWith('data: '), `frame ${i}: ${JSON.stringify(text)}`);
    const payload = lines[0]!.slice('data: '.length);
    if (framing === 'openai-data' && payload === '[DONE]') {
      assert.equal(i, raw.length - 1, '[DONE] comes last');
      frames.push({ event, data: '[DONE]' });
      return;
    }
    const data = JSON.parse(payload) as Record<string, unknown>;
    if (event !== undefined) assert.equal(data.type, event, `frame ${i}: the data's type is the event's name`);
    frames.push({ event, data });
  });
  if (framing === 'openai-data') assert.equal(frames.at(-1)?.data === '[DONE]', !failed, failed ? 'no [DONE] after an error' : 'ends with [DONE]');
  // The Responses API numbers its events, and the openai SDK's stream helper relies on the order.
  if (framing === 'named-events' && frames.some((f) => (f.data as Record<string, unknown>).sequence_number !== undefined)) {
    assert.deepEqual(frames.map((f) => (f.data as Record<string, unknown>).sequence_number), frames.map((_, i) => i), 'sequence_number counts the events from 0');
  }
  return frames;
}
