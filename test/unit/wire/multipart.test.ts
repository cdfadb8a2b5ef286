import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UploadForm } from '../../../src/generation/upload.js';
import { multipartBody } from '../../../src/wire/openai/multipart.js';

/** What a server reads of a body: undici's own multipart parser, as a real upstream would parse it. */
async function parsed(body: ReturnType<typeof multipartBody>): Promise<FormData> {
  return new Response(new Uint8Array(Buffer.concat(body.chunks)), { headers: { 'content-type': body.contentType } }).formData();
}

const first = Buffer.from('RIFF');
const second = Buffer.from('....WAVE and the rest of the audio');
const form: UploadForm = {
  parts: [
    { kind: 'field', name: 'model', value: 'whisper-public' },
    { kind: 'file', name: 'file', filename: 'talk.wav', contentType: 'audio/wav', chunks: [first, second], size: first.length + second.length },
    { kind: 'field', name: 'prompt', value: 'Ünïcode, "quotes"\r\nand a new line' },
    { kind: 'field', name: 'timestamp_granularities[]', value: 'word' },
  ],
};

test('the form written again: model replaced, every other part as it came and in order', async () => {
  const body = multipartBody(form, { model: 'whisper-upstream' });
  const read = await parsed(body);
  assert.deepEqual([...read.keys()], ['model', 'file', 'prompt', 'timestamp_granularities[]']);
  assert.equal(read.get('model'), 'whisper-upstream');
  assert.equal(read.get('prompt'), 'Ünïcode, "quotes"\r\nand a new line');
  assert.equal(read.get('timestamp_granularities[]'), 'word');
  const file = read.get('file') as File;
  assert.equal(file.name, 'talk.wav');
  assert.equal(file.type, 'audio/wav');
  assert.ok(Buffer.from(await file.arrayBuffer()).equals(Buffer.concat([first, second])));
});

test("the file's buffers are the caller's own, not copies; the length is the bytes' sum", () => {
  const body = multipartBody(form, { model: 'x' });
  assert.ok(body.chunks.includes(first) && body.chunks.includes(second), 'the very same buffers');
  assert.equal(body.length, body.chunks.reduce((sum, chunk) => sum + chunk.length, 0));
});

test('each attempt gets a fresh boundary and a whole body of its own', async () => {
  const one = multipartBody(form, { model: 'a-model' });
  const two = multipartBody(form, { model: 'another-model' });
  assert.notEqual(one.contentType, two.contentType);
  assert.equal((await parsed(one)).get('model'), 'a-model');
  assert.equal((await parsed(two)).get('model'), 'another-model');
  assert.match(one.contentType, /^multipart\/form-data; boundary=-{4}SluiceFormBoundary[A-Za-z0-9]{24}$/);
});

test('names with quotes and line ends cannot break the part headers: escaped as browsers do, read back as they were', async () => {
  const tricky: UploadForm = {
    parts: [
      { kind: 'field', name: 'a"b\r\nX-Injected: 1', value: 'v' },
      { kind: 'file', name: 'file', filename: 'x"\r\n.wav', contentType: 'audio/wav\r\nX: y', chunks: [first], size: first.length },
    ],
  };
  const body = multipartBody(tricky);
  const heads = Buffer.concat(body.chunks).toString('latin1');
  assert.ok(!heads.includes('\r\nX-Injected') && !heads.includes('\r\nX: y'), 'no header line of the caller\'s making');
  const read = await parsed(body);
  assert.deepEqual([...read.keys()], ['a"b\r\nX-Injected: 1', 'file']);
  assert.equal((read.get('file') as File).name, 'x"\r\n.wav');
});
