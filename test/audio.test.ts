// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { EDITED_PNG, speechAudio, TRANSCRIPT, TRANSLATION, wavSeconds } from './fakes/fake-openai-media.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import type { RecordedRequest } from './fakes/fake-server.js';
import { pcmWav } from './fakes/wav.js';
import { cli, createKey, eventually, startSluice, tempDir, type LedgerRow, type RunningSluice } from './support/sluice.js';

/**
 * OpenAI's upload and binary operations through the real gateway with the real `openai` SDK:
 * image edits, transcriptions and translations (multipart uploads of a real WAV), speech (audio
 * streamed back). Two OpenAI-compatible fakes `a` and `b` (a model on both, `a` first, for
 * retries) and an Anthropic one (which has no such API). Each ledger row's cost is asserted in the
 * unit its model is sold in: per_audio_minute (the upstream's duration where it gave one, else the
 * WAV's own), per_mchar (the input's characters), per_image beside token prices.
 */

const UPSTREAM_MODELS = ['whisper-up', 'gpt-4o-transcribe-up', 'tts-up', 'image-up', 'whisper-retry', 'tts-retry', 'image-retry'];

let a: FakeUpstream;
let b: FakeUpstream;
let anthropic: FakeUpstream;
let sluice: RunningSluice;
let key: string;
let openai: OpenAI;
let config: string;

/** A PCM WAV as a recorder writes one: RIFF header, fmt chunk, data chunk of 16-bit mono samples (a 440 Hz tone). */
function wav(seconds: number, rate = 16_000): Buffer {
  return pcmWav(Math.round(seconds * rate), rate, (i) => Math.sin((2 * Math.PI * 440 * i) / rate) * 8000);
}

const WAV = wav(1.5);
/** The WAV's real length: its data chunk's 16-bit mono samples over the rate. */
const WAV_SECONDS = WAV.readUInt32LE(40) / 2 / 16_000;

// The models' prices in their units: USD per minute of audio, per million characters, per image (beside tokens).
const PER_AUDIO_MINUTE = 0.006;
const PER_MCHAR = 15;
const PER_IMAGE = 0.04;
const IMAGE_IN = 5;
const IMAGE_OUT = 40;

/** Asserts a ledger row's cost to within float rounding. */
function assertCost(row: LedgerRow, expected: number, what: string): void {
  assert.ok(Math.abs(row.cost_usd - expected) < 1e-12, `${what}: ${row.cost_usd}, expected ${expected}`);
}

/** The form an upstream received, parsed by undici's own multipart parser. */
async function formOf(request: RecordedRequest): Promise<FormData> {
  return new Response(new Uint8Array(request.rawBody!), { headers: { 'content-type': String(request.headers['content-type']) } }).formData();
}

function posted(fake: FakeUpstream, path: string): RecordedRequest[] {
  return fake.requests.filter((request) => request.method === 'POST' && request.path === path);
}

async function rowFor(requestId: string): Promise<LedgerRow> {
  return eventually(async () => (await sluice.ledger()).find((row) => row.request_id === requestId), 5000, `the ledger row of ${requestId}`);
}

/** VmRSS of a process in bytes (Linux). */
function residentBytes(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line![1]) * 1024;
}

before(async () => {
  [a, b, anthropic] = await Promise.all([
    startFakeOpenAI({ apiKey: 'a-credential', models: UPSTREAM_MODELS }),
    startFakeOpenAI({ apiKey: 'b-credential', models: UPSTREAM_MODELS }),
    startFakeAnthropic({ apiKey: 'anthropic-credential' }),
  ]);
  config = `
routing:
  backoff_ms: { initial: 10, max: 50 }
providers:
  - { id: a, kind: openai, base_url: '${a.url}', api_key: a-credential }
  - { id: b, kind: openai, base_url: '${b.url}', api_key: b-credential }
  - { id: anthropic, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential }
models:
  - { id: whisper, provider: a, upstream_model: whisper-up, endpoints: [transcriptions], pricing: { per_audio_minute: ${PER_AUDIO_MINUTE} } }
  - { id: transcribe-tokens, provider: a, upstream_model: gpt-4o-transcribe-up, endpoints: [transcriptions] }
  - { id: tts, provider: a, upstream_model: tts-up, endpoints: [speech], pricing: { per_mchar: ${PER_MCHAR} } }
  - { id: image-editor, provider: a, upstream_model: image-up, endpoints: [images], pricing: { input_per_mtok: ${IMAGE_IN}, output_per_mtok: ${IMAGE_OUT}, per_image: ${PER_IMAGE} } }
  - { id: claude-ears, provider: anthropic, upstream_model: claude-x, endpoints: [transcriptions] }
  - { id: chat-only, provider: a, upstream_model: whisper-up, endpoints: [chat] }
  - id: whisper-pair
    endpoints: [transcriptions]
    deployments:
      - { provider: a, upstream_model: whisper-retry }
      - { provider: b, upstream_model: whisper-retry, priority: 1 }
  - id: tts-pair
    endpoints: [speech]
    deployments:
      - { provider: a, upstream_model: tts-retry }
      - { provider: b, upstream_model: tts-retry, priority: 1 }
  - id: image-pair
    endpoints: [images]
    deployments:
      - { provider: a, upstream_model: image-retry }
      - { provider: b, upstream_model: image-retry, priority: 1 }
`;
  sluice = await startSluice({ args: ['--workers', '1'], config });
  key = (await createKey(sluice.dataDir, 'acme')).key;
  openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  await sluice?.stop();
  await Promise.all([a?.close(), b?.close(), anthropic?.close()]);
});

function reset(): void {
  for (const fake of [a, b, anthropic]) {
    fake.behaviour = {};
    fake.requests.length = 0;
    fake.aborted.length = 0;
  }
}

describe('transcriptions', () => {
  test('a real WAV through the SDK: json by default; the upstream gets the form with its model, the file byte for byte', async () => {
    reset();
    const { data, response } = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'hello.wav', { type: 'audio/wav' }), model: 'whisper', language: 'en' }).withResponse();
    assert.equal(data.text, TRANSCRIPT);
    const [request] = posted(a, '/v1/audio/transcriptions');
    assert.ok(request, 'the upstream was called');
    assert.equal(request.headers.authorization, 'Bearer a-credential', "the provider's credential, not the caller's key");
    const form = await formOf(request);
    assert.equal(form.get('model'), 'whisper-up');
    assert.equal(form.get('language'), 'en', 'a field Sluice does not check goes upstream as it came');
    const file = form.get('file') as File;
    assert.equal(file.name, 'hello.wav');
    assert.equal(file.type, 'audio/wav');
    assert.ok(Buffer.from(await file.arrayBuffer()).equals(WAV), 'the file arrives byte for byte');
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.operation, 'audio.transcriptions');
    assert.equal(row.model, 'whisper');
    assert.equal(row.status, 200);
    assert.equal(row.deployment, 'a/whisper-up');
    assertCost(row, (2 / 60) * PER_AUDIO_MINUTE, "json: the upstream's usage of type duration (whole seconds, 2 for 1.5 s of audio), per minute");
  });

  test('each response_format: verbose_json with its duration, text, srt and vtt as text', async () => {
    reset();
    const file = () => toFile(WAV, 'hello.wav', { type: 'audio/wav' });
    const { data: verbose, response: verboseResponse } = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper', response_format: 'verbose_json' }).withResponse();
    assert.equal(verbose.text, TRANSCRIPT);
    assert.equal(verbose.duration, 1.5);
    assertCost(await rowFor(verboseResponse.headers.get('x-request-id')!), (verbose.duration / 60) * PER_AUDIO_MINUTE, "verbose_json: the upstream's duration, before its usage's whole seconds");
    const { data: text, response: textResponse } = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper', response_format: 'text' }).withResponse();
    assert.equal(text, `${TRANSCRIPT}\n`);
    assertCost(await rowFor(textResponse.headers.get('x-request-id')!), (WAV_SECONDS / 60) * PER_AUDIO_MINUTE, "text: no duration from the upstream, the WAV's own from its header");
    const srt = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper', response_format: 'srt' });
    assert.equal(srt, `1\n00:00:00,000 --> 00:00:01,500\n${TRANSCRIPT}\n\n`);
    const response = await openai.audio.transcriptions.create({ file: await file(), model: 'whisper', response_format: 'vtt' }).asResponse();
    assert.match(response.headers.get('content-type')!, /^text\/plain/, "the upstream's content type");
    assert.equal(await response.text(), `WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n${TRANSCRIPT}\n\n`);
    const formats = await Promise.all(posted(a, '/v1/audio/transcriptions').map(async (request) => (await formOf(request)).get('response_format')));
    assert.deepEqual(formats, ['verbose_json', 'text', 'srt', 'vtt']);
  });

  test('token usage reaches the ledger row; stream: true passes the transcript events on as they come', async () => {
    reset();
    const { response } = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'hello.wav'), model: 'transcribe-tokens' }).withResponse();
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.prompt_tokens, 15, "the upstream's input_tokens (10 a second)");
    assert.equal(row.completion_tokens, TRANSCRIPT.split(' ').length);
    assert.equal(row.tokens_counted, 0);

    const stream = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'hello.wav'), model: 'transcribe-tokens', stream: true });
    const deltas: string[] = [];
    let done: { text: string } | undefined;
    for await (const event of stream) {
      if (event.type === 'transcript.text.delta') deltas.push(event.delta);
      else if (event.type === 'transcript.text.done') done = event;
    }
    assert.equal(deltas.join(''), TRANSCRIPT);
    assert.equal(done?.text, TRANSCRIPT);
    const rows = await eventually(async () => {
      const all = (await sluice.ledger()).filter((r) => r.operation === 'audio.transcriptions' && r.stream === 1);
      return all.length === 1 ? all : undefined;
    });
    assert.equal(rows[0]!.prompt_tokens, 15, 'usage read from transcript.text.done');
    assert.equal((await formOf(posted(a, '/v1/audio/transcriptions')[1]!)).get('stream'), 'true');
  });

  test('translations: the same upload, answered in English', async () => {
    reset();
    const { data, response } = await openai.audio.translations.create({ file: await toFile(WAV, 'hallo.wav'), model: 'whisper' }).withResponse();
    assert.equal(data.text, TRANSLATION);
    assert.equal(posted(a, '/v1/audio/translations').length, 1);
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.operation, 'audio.translations');
    assert.equal(row.status, 200);
    assertCost(row, (2 / 60) * PER_AUDIO_MINUTE, "the upstream's usage of type duration, per minute");
  });

  test('a file that is not audio (a PNG, text) is a 400 naming file; nothing reaches the upstream', async () => {
    reset();
    for (const [bytes, name] of [[EDITED_PNG, 'picture.wav'], [Buffer.from('just some words, not a recording'), 'notes.txt']] as const) {
      const error = await openai.audio.transcriptions.create({ file: await toFile(bytes, name, { type: 'audio/wav' }), model: 'whisper' }).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.BadRequestError, `${name}: ${String(error)}`);
      assert.equal(error.param, 'file');
      assert.match(error.message, /not audio/);
    }
    const translation = await openai.audio.translations.create({ file: await toFile(EDITED_PNG, 'picture.png'), model: 'whisper' }).catch((e: unknown) => e);
    assert.ok(translation instanceof OpenAI.BadRequestError);
    assert.equal(translation.param, 'file');
    assert.equal(a.requests.length, 0);
  });

  test('fields checked with 400s naming them: file missing, model missing, response_format, stream, temperature', async () => {
    reset();
    const send = async (fields: Record<string, string>, file: Buffer | null) => {
      const form = new FormData();
      if (file !== null) form.append('file', new Blob([new Uint8Array(file)], { type: 'audio/wav' }), 'a.wav');
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      const response = await fetch(`${sluice.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      return { status: response.status, requestId: response.headers.get('x-request-id')!, body: (await response.json()) as { error: { message: string; param: string | null; type: string } } };
    };
    const cases: [Record<string, string>, Buffer | null, string][] = [
      [{ model: 'whisper' }, null, 'file'],
      [{}, WAV, 'model'],
      [{ model: 'whisper', response_format: 'mp3' }, WAV, 'response_format'],
      [{ model: 'whisper', stream: 'maybe' }, WAV, 'stream'],
      [{ model: 'whisper', temperature: '3' }, WAV, 'temperature'],
      [{ model: 'whisper', file: 'not a file' }, null, 'file'],
    ];
    let lastId = '';
    for (const [fields, file, param] of cases) {
      const { status, body, requestId } = await send(fields, file);
      assert.equal(status, 400, JSON.stringify(fields));
      assert.equal(body.error.param, param, body.error.message);
      assert.equal(body.error.type, 'invalid_request_error');
      lastId = requestId;
    }
    assert.equal(a.requests.length, 0);
    // A form refused before it parsed still names its model in the ledger (read from the form's `model` field).
    const row = await rowFor(lastId);
    assert.deepEqual([row.operation, row.model, row.status, row.error_kind], ['audio.transcriptions', 'whisper', 400, 'invalid_request']);
  });

  test('the model: unknown 404, another operation 400, an Anthropic model 400 naming the model and the operation', async () => {
    reset();
    const file = () => toFile(WAV, 'a.wav');
    const unknown = await openai.audio.transcriptions.create({ file: await file(), model: 'nope' }).catch((e: unknown) => e);
    assert.ok(unknown instanceof OpenAI.NotFoundError);
    const chat = await openai.audio.transcriptions.create({ file: await file(), model: 'chat-only' }).catch((e: unknown) => e);
    assert.ok(chat instanceof OpenAI.BadRequestError);
    assert.match(chat.message, /chat-only.*\/v1\/audio\/transcriptions/);
    const claude = await openai.audio.transcriptions.create({ file: await file(), model: 'claude-ears' }).catch((e: unknown) => e);
    assert.ok(claude instanceof OpenAI.BadRequestError, String(claude));
    assert.match(claude.message, /claude-ears.*\/v1\/audio\/transcriptions/);
    assert.equal(claude.param, 'model');
    assert.equal(a.requests.length + anthropic.requests.length, 0);
  });

  test("an upstream's refusal is passed on as for JSON calls", async () => {
    reset();
    a.behaviour = { fail: { status: 400, body: JSON.stringify({ error: { message: 'Audio file is too short.', type: 'invalid_request_error', param: 'file', code: 'audio_too_short' } }) } };
    const error = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'a.wav'), model: 'whisper' }).catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { message: string }).message, 'Audio file is too short.');
    assert.equal(error.code, 'audio_too_short');
  });
});

describe('speech', () => {
  test('audio.speech.create streamed to a file: the bytes are the upstream audio', async () => {
    reset();
    const input = 'Hello from the gateway, streamed as it is spoken.';
    const response = await openai.audio.speech.create({ model: 'tts', input, voice: 'alloy', response_format: 'wav' });
    assert.equal(response.headers.get('content-type'), 'audio/wav');
    const file = join(tempDir(), 'speech.wav');
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), createWriteStream(file));
    assert.ok(readFileSync(file).equals(speechAudio(input)), 'byte for byte');
    const [request] = posted(a, '/v1/audio/speech');
    assert.deepEqual(request!.body, { model: 'tts-up', input, voice: 'alloy', response_format: 'wav' });
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.operation, 'audio.speech');
    assert.equal(row.status, 200);
    assert.ok(row.prompt_tokens > 0, "the input's tokens, counted by Sluice");
    assert.equal(row.tokens_counted, 1);
    assertCost(row, ([...input].length / 1e6) * PER_MCHAR, "the input's characters, per million");
  });

  test('stream_format sse: the events pass on, usage from speech.audio.done', async () => {
    reset();
    const input = 'Events, please.';
    const response = await openai.audio.speech.create({ model: 'tts', input, voice: 'alloy', response_format: 'wav', stream_format: 'sse' });
    assert.match(response.headers.get('content-type')!, /^text\/event-stream/);
    const text = await response.text();
    const events = text.split('\n\n').filter((frame) => frame.startsWith('data: ')).map((frame) => JSON.parse(frame.slice(6)) as { type: string; audio?: string });
    const audio = Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio!, 'base64')));
    assert.ok(audio.equals(speechAudio(input)));
    assert.equal(events.at(-1)!.type, 'speech.audio.done');
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.prompt_tokens, [...input].length, "the upstream's input_tokens");
    assert.equal(row.stream, 1);
    assertCost(row, ([...input].length / 1e6) * PER_MCHAR, "the input's characters beside the upstream's tokens (this model has no token price)");
  });

  test('a caller that leaves mid-speech cancels the upstream request', async () => {
    reset();
    a.behaviour = { tokenDelayMs: 300 };
    const controller = new AbortController();
    const response = await fetch(`${sluice.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts', input: 'A long story that the caller will not wait for.', voice: 'alloy' }),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value !== undefined && first.value.length > 0, 'the first audio arrived before the upstream finished');
    controller.abort();
    await eventually(() => (a.aborted.some((request) => request.path === '/v1/audio/speech') ? true : undefined), 5000, 'the upstream request to be cut');
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.operation === 'audio.speech' && r.status === 499), 5000, 'the 499 row');
    assert.equal(row.error_kind, 'client_closed');
  });

  test('input: required, at most 4096 characters; voice required; response_format and stream_format checked', async () => {
    reset();
    const cases: [Record<string, unknown>, string][] = [
      [{ model: 'tts', voice: 'alloy' }, 'input'],
      [{ model: 'tts', voice: 'alloy', input: 'x'.repeat(4097) }, 'input'],
      [{ model: 'tts', input: 'hi' }, 'voice'],
      [{ model: 'tts', input: 'hi', voice: 'alloy', response_format: 'ogg' }, 'response_format'],
      [{ model: 'tts', input: 'hi', voice: 'alloy', stream_format: 'chunks' }, 'stream_format'],
      [{ model: 'tts', input: 'hi', voice: 'alloy', speed: 9 }, 'speed'],
    ];
    for (const [body, param] of cases) {
      const error = await openai.audio.speech.create(body as never).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.BadRequestError, JSON.stringify(body));
      assert.equal(error.param, param, error.message);
    }
    // Exactly 4096 characters (astral ones counted once) is fine.
    const response = await openai.audio.speech.create({ model: 'tts', voice: 'alloy', input: '😀'.repeat(4096) });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
    assert.equal(posted(a, '/v1/audio/speech').length, 1);
    assertCost(await rowFor(response.headers.get('x-request-id')!), (4096 / 1e6) * PER_MCHAR, 'billed by characters (code points, not UTF-16 units)');
  });
});

describe('image edits', () => {
  test('images.edit with a file upload: the edited image back, the upload byte for byte upstream, one ledger row with its input tokens', async () => {
    reset();
    const { data, response } = await openai.images.edit({ image: await toFile(EDITED_PNG, 'in.png', { type: 'image/png' }), prompt: 'add a hat', model: 'image-editor', n: 2 }).withResponse();
    assert.equal(data.data?.length, 2);
    assert.equal(data.data![0]!.b64_json, EDITED_PNG.toString('base64'));
    const [request] = posted(a, '/v1/images/edits');
    const form = await formOf(request!);
    assert.equal(form.get('model'), 'image-up');
    assert.equal(form.get('prompt'), 'add a hat');
    assert.equal(form.get('n'), '2');
    assert.ok(Buffer.from(await (form.get('image') as File).arrayBuffer()).equals(EDITED_PNG));
    const row = await rowFor(response.headers.get('x-request-id')!);
    assert.equal(row.operation, 'images.edits');
    assert.equal(row.model, 'image-editor');
    assert.equal(row.prompt_tokens, 3 + 194, "gpt-image-1's input tokens");
    assert.equal(row.completion_tokens, 272 * 2);
    assertCost(row, ((3 + 194) * IMAGE_IN + 272 * 2 * IMAGE_OUT) / 1e6 + 2 * PER_IMAGE, 'the tokens at their prices, and the two images in the answer per_image');
  });

  test('image, prompt and model are required, n checked; nothing reaches the upstream', async () => {
    reset();
    const cases: [Record<string, unknown>, string][] = [
      [{ prompt: 'x', model: 'image-editor' }, 'image'],
      [{ image: await toFile(EDITED_PNG, 'in.png'), model: 'image-editor' }, 'prompt'],
      [{ image: await toFile(EDITED_PNG, 'in.png'), prompt: 'x' }, 'model'],
      [{ image: await toFile(EDITED_PNG, 'in.png'), prompt: 'x', model: 'image-editor', n: 11 }, 'n'],
    ];
    for (const [body, param] of cases) {
      const error = await openai.images.edit(body as never).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.BadRequestError, `${param}: ${String(error)}`);
      assert.equal(error.param, param, error.message);
    }
    assert.equal(a.requests.length, 0);
  });
});

describe('keys, limits and routing apply to every one of them', () => {
  const calls = {
    transcription: (client: OpenAI, model = 'whisper') => toFile(WAV, 'a.wav').then((file) => client.audio.transcriptions.create({ file, model })),
    translation: (client: OpenAI, model = 'whisper') => toFile(WAV, 'a.wav').then((file) => client.audio.translations.create({ file, model })),
    speech: (client: OpenAI, model = 'tts') => client.audio.speech.create({ model, input: 'hi', voice: 'alloy' }).then((r) => r.arrayBuffer()),
    edit: (client: OpenAI, model = 'image-editor') => toFile(EDITED_PNG, 'in.png').then((image) => client.images.edit({ image, prompt: 'x', model })),
  };

  test("a key whose allow-list leaves the model out: 403; a disabled key: 403; nothing reaches the upstream", async () => {
    reset();
    const limited = await createKey(sluice.dataDir, 'acme', ['--models', 'chat-only']);
    const disabled = await createKey(sluice.dataDir, 'acme');
    assert.equal((await cli(['keys', 'disable', disabled.id, '--data', sluice.dataDir])).code, 0);
    for (const [name, call] of Object.entries(calls)) {
      const refused = await call(new OpenAI({ apiKey: limited.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 })).catch((e: unknown) => e);
      assert.ok(refused instanceof OpenAI.PermissionDeniedError, `${name}: ${String(refused)}`);
      assert.match(refused.message, /may not use the model/);
      const off = await eventually(async () => {
        const error = await call(new OpenAI({ apiKey: disabled.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 })).catch((e: unknown) => e);
        return error instanceof OpenAI.PermissionDeniedError ? error : undefined;
      }, 5000, `${name}: the disabled key refused`);
      assert.equal(off.status, 403);
    }
    assert.equal(a.requests.length, 0);
  });

  test('rpm: the second call in a minute is a 429 with the limit headers', async () => {
    reset();
    for (const [name, call] of Object.entries(calls)) {
      const limitedKey = (await createKey(sluice.dataDir, 'acme', ['--rpm', '1'])).key;
      const client = new OpenAI({ apiKey: limitedKey, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      await call(client);
      const error = await call(client).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.RateLimitError, `${name}: ${String(error)}`);
      assert.ok(error.headers.get('retry-after') !== null, name);
    }
    assert.equal(a.requests.length, Object.keys(calls).length, 'only the admitted calls went upstream');
  });

  test('a budget binds on per_image for edits: n images beyond what the whole budget buys refused up front, one image admitted, then the budget spent; nothing refused reaches the upstream', async () => {
    reset();
    const budgeted = (await createKey(sluice.dataDir, 'acme', ['--budget-usd', '0.05', '--budget-period', 'day'])).key;
    const client = new OpenAI({ apiKey: budgeted, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const edit = (n: number) => toFile(EDITED_PNG, 'in.png', { type: 'image/png' }).then((image) => client.images.edit({ image, prompt: 'x', model: 'image-editor', n }).withResponse());
    // Four at $0.04: $0.12 beyond one image, more than the whole $0.05.
    const upFront = await edit(4).catch((e: unknown) => e);
    assert.ok(upFront instanceof OpenAI.RateLimitError && upFront.code === 'insufficient_quota', String(upFront));
    assert.match(upFront.message, /more than this API key's whole spend budget/);
    assert.equal(upFront.headers.get('retry-after'), null);
    assert.equal(posted(a, '/v1/images/edits').length, 0);
    const { response } = await edit(1);
    const row = await rowFor(response.headers.get('x-request-id')!);
    assertCost(row, ((1 + 194) * IMAGE_IN + 272 * IMAGE_OUT) / 1e6 + PER_IMAGE, 'one image and its tokens, past the budget');
    const spent = await edit(1).catch((e: unknown) => e);
    assert.ok(spent instanceof OpenAI.RateLimitError && spent.code === 'insufficient_quota', String(spent));
    assert.match(spent.message, /has used its spend budget/);
    assert.equal(posted(a, '/v1/images/edits').length, 1, 'only the admitted edit went upstream');
  });

  test('a retry to the second deployment before the upstream answered: the whole upload is sent again', async () => {
    reset();
    a.behaviour = { hangUp: 'after-request' };
    const transcription = await calls.transcription(openai, 'whisper-pair');
    assert.equal(transcription.text, TRANSCRIPT);
    const speech = Buffer.from(await calls.speech(openai, 'tts-pair'));
    assert.ok(speech.equals(speechAudio('hi')));
    const edit = await calls.edit(openai, 'image-pair');
    assert.equal(edit.data?.length, 1);
    for (const path of ['/v1/audio/transcriptions', '/v1/images/edits']) {
      const [first] = posted(a, path);
      const [second] = posted(b, path);
      assert.ok(first !== undefined && second !== undefined, `${path}: tried on a, then on b`);
      assert.equal(second.rawBody!.length, first.rawBody!.length, `${path}: the same number of bytes both times (a fresh boundary of the same length)`);
      const [formA, formB] = await Promise.all([formOf(first), formOf(second)]);
      for (const [name, value] of formA) {
        const again = formB.get(name);
        if (value instanceof File) assert.ok(again instanceof File && Buffer.from(await again.arrayBuffer()).equals(Buffer.from(await value.arrayBuffer())), `${path}: ${name} resent whole`);
        else assert.equal(again, value);
      }
    }
    assert.equal(posted(b, '/v1/audio/speech').length, 1);
    const rows = await eventually(async () => {
      const retried = (await sluice.ledger()).filter((row) => ['whisper-pair', 'tts-pair', 'image-pair'].includes(row.model));
      return retried.length === 3 ? retried : undefined;
    });
    for (const row of rows) {
      assert.equal(row.status, 200);
      assert.match(row.deployment!, /^b\//);
      assert.equal(row.attempts, 2);
    }
  });
});

describe('bad uploads', () => {
  test('a 30 MB upload, file before model as the SDK writes it: a readable 413 in OpenAI shape, nothing upstream, memory flat', async () => {
    reset();
    const big = Buffer.alloc(30_000_000, 1);
    WAV.copy(big);
    const upload = async () => openai.audio.transcriptions.create({ file: await toFile(big, 'long.wav', { type: 'audio/wav' }), model: 'whisper' }).catch((e: unknown) => e);
    // One upload first: reading any body leaves the socket's read buffers for the collector, and RSS takes that in once.
    assert.equal(((await upload()) as InstanceType<typeof OpenAI.APIError>).status, 413);
    // Four at once: were each upload held, the gateway would hold 120 MB; read and thrown away, the collector keeps up.
    const before = residentBytes(sluice.child.pid!);
    const errors = await Promise.all(Array.from({ length: 4 }, upload));
    const grown = residentBytes(sluice.child.pid!) - before;
    for (const error of errors) {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      assert.equal(error.status, 413, String(error));
      assert.equal((error.error as { type?: string }).type, 'invalid_request_error');
      assert.match(error.message, /larger than the 26214400 bytes/);
    }
    assert.ok(grown < 60_000_000, `the gateway's memory grew by ${grown} bytes for four 30 MB uploads at once`);
    // Sent chunked (no content-length): refused by the count as the bytes arrive (what came until then is held, up to the cap).
    const chunked = await fetch(`${sluice.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=XYZ' },
      body: Readable.toWeb(Readable.from((function* () {
        yield Buffer.from('--XYZ\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n');
        for (let i = 0; i < 30; i++) yield Buffer.alloc(1_000_000, 2);
        yield Buffer.from('\r\n--XYZ--\r\n');
      })())) as unknown as Blob,
      duplex: 'half',
    } as RequestInit);
    assert.equal(chunked.status, 413);
    assert.equal(((await chunked.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
    assert.equal(a.requests.length, 0);
    const row = await eventually(async () => (await sluice.ledger()).find((r) => r.status === 413 && r.operation === 'audio.transcriptions'));
    assert.equal(row.error_kind, 'payload_too_large');
  });

  test('a wrong boundary, no boundary, a body that is not multipart, a truncated one: a 400 in OpenAI shape; nothing upstream', async () => {
    reset();
    const part = '--AAA\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper\r\n--AAA\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n';
    const whole = Buffer.concat([Buffer.from(part), WAV, Buffer.from('\r\n--AAA--\r\n')]);
    const cases: [string, Buffer | string][] = [
      ['multipart/form-data; boundary=BBB', whole],
      ['multipart/form-data', whole],
      ['application/json', JSON.stringify({ model: 'whisper', file: 'a.wav' })],
      ['multipart/form-data; boundary=AAA', whole.subarray(0, whole.length - 200)],
      ['multipart/form-data; boundary=AAA', ''],
    ];
    for (const [contentType, body] of cases) {
      const response = await fetch(`${sluice.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': contentType }, body });
      const answer = (await response.json()) as { error: { message: string; type: string } };
      assert.equal(response.status, 400, `${contentType}: ${answer.error.message}`);
      assert.equal(answer.error.type, 'invalid_request_error');
      assert.match(answer.error.message, /multipart/);
    }
    // The right boundary works, the proof that the cases above failed for their own fault.
    const good = await fetch(`${sluice.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=AAA' }, body: whole });
    assert.equal(good.status, 200);
    assert.equal(a.requests.length, 1);
  });

  test('max_upload_bytes from the configuration file, applied on reload to the next upload', async () => {
    reset();
    const file = join(sluice.dataDir, 'sluice.yaml');
    // Replaced whole, as an editor saves: the gateway never reads a half-written file.
    const save = (text: string) => {
      writeFileSync(`${file}.new`, text);
      renameSync(`${file}.new`, file);
    };
    save(`max_upload_bytes: 10000\n${config}`);
    try {
      const refused = await eventually(async () => {
        const error = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'a.wav'), model: 'whisper' }).catch((e: unknown) => e);
        return error instanceof OpenAI.APIError && error.status === 413 ? error : undefined;
      }, 5000, 'the smaller cap in force');
      assert.match(refused.message, /larger than the 10000 bytes/);
      a.requests.length = 0;
      const again = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'a.wav'), model: 'whisper' }).catch((e: unknown) => e);
      assert.ok(again instanceof OpenAI.APIError && again.status === 413, String(again));
      assert.equal(a.requests.length, 0, 'nothing reached the upstream');
    } finally {
      save(config);
      const text = await eventually(async () => {
        const answer = await openai.audio.transcriptions.create({ file: await toFile(WAV, 'a.wav'), model: 'whisper' }).catch(() => undefined);
        return answer?.text;
      }, 5000, 'the default cap back');
      assert.equal(text, TRANSCRIPT);
    }
  });

  test('more parts than any operation has: a 400, read in linear time', async () => {
    reset();
    const parts = Array.from({ length: 5000 }, (_, i) => `--Q\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('');
    const response = await fetch(`${sluice.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=Q' }, body: `${parts}--Q--\r\n` });
    assert.equal(response.status, 400);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /more than 64 parts/);
    assert.equal(a.requests.length, 0);
  });
});

test('the WAV the tests send is one the fake reads as 1.5 s', () => {
  assert.equal(wavSeconds(WAV), 1.5);
});
