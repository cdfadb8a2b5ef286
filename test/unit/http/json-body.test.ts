import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { MAX_JSON_DEPTH, readJsonBody } from '../../../src/http/body.js';
import { GatewayError } from '../../../src/core/errors.js';

/** A request whose body is `text`, as node:http hands it over. */
function requestOf(text: string): IncomingMessage {
  const req = Readable.from([Buffer.from(text)]) as unknown as IncomingMessage;
  (req as { headers: Record<string, string> }).headers = { 'content-length': String(Buffer.byteLength(text)) };
  return req;
}

/** `levels` objects or arrays, one inside the next. */
function nested(levels: number, kind: 'object' | 'array'): string {
  return kind === 'object' ? '{"a":'.repeat(levels) + '1' + '}'.repeat(levels) : '['.repeat(levels) + ']'.repeat(levels);
}

async function refusal(text: string): Promise<GatewayError> {
  const error = await readJsonBody(requestOf(text), 1 << 20).then(() => undefined, (thrown: unknown) => thrown);
  assert.ok(error instanceof GatewayError, `refused: ${text.slice(0, 60)}`);
  return error;
}

test('a body nested to the limit is read; one level more is refused, naming the top-level field', async () => {
  // The body itself is the first level, so a field may hold MAX_JSON_DEPTH - 1 levels.
  for (const kind of ['object', 'array'] as const) {
    const fits = `{"model":"m","x":${nested(MAX_JSON_DEPTH - 1, kind)}}`;
    assert.deepEqual(await readJsonBody(requestOf(fits), 1 << 20), JSON.parse(fits));
    const error = await refusal(`{"model":"m","x":${nested(MAX_JSON_DEPTH, kind)}}`);
    assert.equal(error.kind, 'invalid_request');
    assert.equal(error.message, `The field \`x\` nests objects or arrays more than ${MAX_JSON_DEPTH} levels deep.`);
  }
});

test('deep inside arrays of objects, and of several fields too deep the last is named', async () => {
  const deep = nested(MAX_JSON_DEPTH, 'object');
  assert.match((await refusal(`{"messages":[{"role":"user"},{"content":[${deep}]}]}`)).message, /`messages`/);
  assert.match((await refusal(`{"a":${deep},"b":1,"c":${deep},"d":"x"}`)).message, /`c`/);
});
