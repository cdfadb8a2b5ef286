import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { audioSpeech, parseSpeechRequest } from '../../../src/dialects/openai/audio/speech.js';
import { audioTranscriptions, type TranscriptionRequest } from '../../../src/dialects/openai/audio/transcriptions.js';
import { imageEdits, parseImageEditForm } from '../../../src/dialects/openai/images/edits.js';
import type { AnswerContext, Operation, ParsedRequest } from '../../../src/generation/operation.js';
import type { Transferred } from '../../../src/generation/provider.js';
import { writeReply, type Written } from '../../../src/pipeline/write.js';
import { MemorySink } from '../support/memory-sink.js';

/**
 * What the upload and audio operations write for an upstream's bytes, and the usage the meter
 * stage then gets (units included), through the operation's own `answer` and the pipeline's write
 * stage, to an in-memory sink.
 */

function transferred(contentType: string, chunks: readonly (string | Buffer)[], failAfter?: number): Transferred {
  return {
    contentType,
    contentLength: undefined,
    body: (async function* () {
      for (const [i, chunk] of chunks.entries()) {
        if (i === failAfter) throw new GatewayError('upstream_error', 'the upstream went away');
        yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      }
    })(),
  };
}

async function written<Request extends ParsedRequest>(operation: Operation<Request>, request: Request, answer: Transferred): Promise<{ sink: MemorySink; written: Written }> {
  const sink = new MemorySink();
  const reply = operation.answer(request, { kind: 'transferred', transferred: answer }, { sink } as unknown as AnswerContext);
  return { sink, written: await writeReply(reply, sink, (generated) => operation.countUsage(request, generated)) };
}

const transcription: TranscriptionRequest = {
  model: 'whisper',
  stream: false,
  form: { parts: [] },
  file: { kind: 'file', name: 'file', filename: 'a.wav', contentType: 'audio/wav', chunks: [], size: 0 },
  responseFormat: 'text',
  audio: { container: 'wav', seconds: 12.5 },
};

test("a text transcript is written whole with the upstream's type; the file's own duration is billed", async () => {
  const { sink, written: w } = await written(audioTranscriptions, transcription, transferred('text/plain; charset=utf-8', ['Hello ', 'world.\n']));
  assert.equal(sink.status, 200);
  assert.equal(sink.header('content-type'), 'text/plain; charset=utf-8');
  assert.equal(sink.body, 'Hello world.\n');
  assert.equal(sink.writes, 1, 'at once');
  assert.deepEqual(w.usage?.units, { audioSeconds: 12.5 });
  assert.equal(w.counted, true, 'the upstream said nothing of usage');
});

test("a JSON transcript: the upstream's duration over the file's; its tokens, the file's seconds beside them", async () => {
  const verbose = await written(audioTranscriptions, { ...transcription, responseFormat: 'verbose_json' }, transferred('application/json', ['{"text":"hi","duration":', '12.47}']));
  assert.equal(verbose.sink.body, '{"text":"hi","duration":12.47}', 'as it came');
  assert.deepEqual(verbose.written.usage?.units, { audioSeconds: 12.47 });
  assert.equal(verbose.written.counted, false);
  const tokens = await written(audioTranscriptions, { ...transcription, responseFormat: 'json' }, transferred('application/json', ['{"text":"hi","usage":{"type":"tokens","input_tokens":20,"output_tokens":3}}']));
  assert.equal(tokens.written.usage?.input, 20);
  assert.deepEqual(tokens.written.usage?.units, { audioSeconds: 12.5 });
});

test('a failure while a whole answer is read is still a proper error status', async () => {
  const { sink, written: w } = await written(audioTranscriptions, transcription, transferred('text/plain', ['Hello', ' world'], 1));
  assert.equal(sink.status, undefined, 'nothing written');
  assert.equal(w.thrown?.kind, 'upstream_error');
});

test('streamed transcript events pass on as they come; usage from transcript.text.done', async () => {
  const events = ['data: {"type":"transcript.text.delta","delta":"Hi"}\n\n', 'data: {"type":"transcript.text.done","text":"Hi","usage":{"type":"tokens","input_tokens":7,"output_tokens":1}}\n\n'];
  const { sink, written: w } = await written(audioTranscriptions, { ...transcription, stream: true }, transferred('text/event-stream', events));
  assert.equal(sink.body, events.join(''));
  assert.equal(sink.writes, 2);
  assert.match(sink.header('content-type')!, /^text\/event-stream/);
  assert.equal(w.usage?.input, 7);
  assert.deepEqual(w.usage?.units, { audioSeconds: 12.5 });
});

test("speech: the audio's bytes pass on chunk by chunk; Sluice counts the input and its characters", async () => {
  const request = parseSpeechRequest({ model: 'tts', input: 'Grüße 😀', voice: 'alloy' });
  assert.equal(request.characters, 7, 'code points, as OpenAI counts characters');
  const audio = [Buffer.from([1, 2, 3]), Buffer.from([4, 5]), Buffer.from([6])];
  const { sink, written: w } = await written(audioSpeech, request, transferred('audio/mpeg', audio));
  assert.ok(sink.bytes.equals(Buffer.concat(audio)));
  assert.equal(sink.writes, 3, 'one write per chunk');
  assert.equal(sink.header('content-type'), 'audio/mpeg');
  assert.equal(w.counted, true);
  assert.ok(w.usage!.input > 0);
  assert.deepEqual(w.usage?.units, { characters: 7 });
});

test('speech cut short by the upstream: the answer is cut, not ended as if whole', async () => {
  const request = parseSpeechRequest({ model: 'tts', input: 'hello', voice: 'alloy' });
  const { sink, written: w } = await written(audioSpeech, request, transferred('audio/wav', [Buffer.from('RIFF'), Buffer.from('more')], 1));
  assert.equal(sink.cutShort, true);
  assert.equal(w.failure?.kind, 'upstream_error');
});

test('an image edit: the images counted, the public model where the answer names one', async () => {
  const request = parseImageEditForm({
    parts: [
      { kind: 'file', name: 'image', filename: 'a.png', contentType: 'image/png', chunks: [Buffer.from('png')], size: 3 },
      { kind: 'field', name: 'prompt', value: 'a hat' },
      { kind: 'field', name: 'model', value: 'editor' },
    ],
  });
  const { sink, written: w } = await written(imageEdits, request, transferred('application/json', ['{"model":"gpt-image-1-upstream","data":[{"b64_json":"AA"},{"b64_json":"AB"}],"usage":{"input_tokens":9,"output_tokens":544}}']));
  assert.equal(JSON.parse(sink.body).model, 'editor');
  assert.equal(w.usage?.input, 9);
  assert.deepEqual(w.usage?.units, { images: 2 });
});

test("a streamed image edit's events pass on; each completed image counted, with its tokens", async () => {
  const request = { ...parseImageEditForm({ parts: [{ kind: 'file', name: 'image[]', filename: 'a.png', contentType: 'image/png', chunks: [Buffer.from('png')], size: 3 }, { kind: 'field', name: 'prompt', value: 'a hat' }, { kind: 'field', name: 'model', value: 'editor' }, { kind: 'field', name: 'stream', value: 'true' }] }) };
  assert.equal(request.stream, true);
  const events = [
    'event: image_edit.partial_image\ndata: {"type":"image_edit.partial_image","b64_json":"AA","partial_image_index":0}\n\n',
    'event: image_edit.completed\ndata: {"type":"image_edit.completed","b64_json":"AB","usage":{"input_tokens":12,"output_tokens":272,"total_tokens":284}}\n\n',
  ];
  const { sink, written: w } = await written(imageEdits, request, transferred('text/event-stream; charset=utf-8', events));
  assert.equal(sink.body, events.join(''));
  assert.equal(w.usage?.input, 12);
  assert.deepEqual(w.usage?.units, { images: 1 });
});
