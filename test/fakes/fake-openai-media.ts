import type { ServerResponse } from 'node:http';
import { json, sleep, type Behaviour, type RecordedRequest } from './fake-server.js';
import { pcmWav } from './wav.js';

/**
 * OpenAI's media endpoints as a fake serves them, validating as OpenAI does and answering in its
 * error bodies (`{"error":{message,type,param,code}}`):
 * - `POST /v1/audio/transcriptions` and `/v1/audio/translations`: a multipart form (parsed by
 *   undici's own form-data parser, not Sluice's) with `model` and `file`, which must be a WAV (its
 *   RIFF/WAVE header checked); `response_format` json (`{text, usage}`: `usage` of type duration,
 *   or of type tokens for a `gpt-4o…` model), verbose_json (`duration`, `segments`), text, srt,
 *   vtt (text/plain); `stream: true` (transcriptions) answers `transcript.text.delta` events and a
 *   `transcript.text.done` with token usage.
 * - `POST /v1/images/edits`: `model`, `prompt`, one or more PNG `image` (`image[]`) files; `n`
 *   images answered as `data: [{b64_json}]` with gpt-image-1's token usage.
 * - `POST /v1/audio/speech`: JSON `model`, `input` (≤ 4096 characters), `voice`,
 *   `response_format`; the audio (speechAudio) sent in SPEECH_CHUNKS pieces, `tokenDelayMs` apart
 *   (default 10 ms), so that streaming shows; `stream_format: sse` answers `speech.audio.delta`
 *   events and a `speech.audio.done` with usage.
 * Returns false for any other request, which the fake's own handler then takes.
 */
export async function fakeOpenAIMedia(request: RecordedRequest, res: ServerResponse, behaviour: Behaviour, models: ReadonlySet<string>): Promise<boolean> {
  if (request.method !== 'POST') return false;
  switch (request.path) {
    case '/v1/audio/transcriptions':
    case '/v1/audio/translations':
      await transcription(request, res, behaviour, models, request.path.endsWith('translations') ? 'translate' : 'transcribe');
      return true;
    case '/v1/images/edits':
      await imageEdit(request, res, models);
      return true;
    case '/v1/audio/speech':
      await speech(request, res, behaviour, models);
      return true;
    default:
      return false;
  }
}

/** What the fake hears in every audio file. */
export const TRANSCRIPT = 'The quick brown fox jumps over the lazy dog.';
export const TRANSLATION = 'Translated: the quick brown fox jumps over the lazy dog.';
export const SPEECH_CHUNKS = 8;

function openAIError(res: ServerResponse, status: number, message: string, param: string | null, code: string | null = null): void {
  json(res, status, { error: { message, type: 'invalid_request_error', param, code } });
}

/** The form of a multipart request, or undefined (and the 400 sent) when the body is not one. */
async function formOf(request: RecordedRequest, res: ServerResponse): Promise<FormData | undefined> {
  const contentType = String(request.headers['content-type'] ?? '');
  if (!contentType.startsWith('multipart/form-data') || request.rawBody === undefined) {
    openAIError(res, 400, "Invalid Content-Type header (application/json), expected multipart/form-data. (HINT: If you're using curl, you can pass -F 'key=value' to send form data.)", null);
    return undefined;
  }
  try {
    return await new Response(new Uint8Array(request.rawBody), { headers: { 'content-type': contentType } }).formData();
  } catch {
    openAIError(res, 400, 'Could not parse multipart form', null);
    return undefined;
  }
}

function modelOf(form: FormData, res: ServerResponse, models: ReadonlySet<string>): string | undefined {
  const model = form.get('model');
  if (typeof model !== 'string' || model === '') {
    openAIError(res, 400, 'you must provide a model parameter', null);
    return undefined;
  }
  if (!models.has(model)) {
    json(res, 404, { error: { message: `The model \`${model}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', param: null, code: 'model_not_found' } });
    return undefined;
  }
  return model;
}

/** Seconds of a PCM WAV from its header; undefined when the bytes are not a RIFF/WAVE file with a fmt and a data chunk. */
export function wavSeconds(bytes: Buffer): number | undefined {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 20 <= bytes.length) byteRate = bytes.readUInt32LE(at + 16);
    if (id === 'data') return byteRate === undefined || byteRate === 0 ? undefined : Math.min(size, bytes.length - at - 8) / byteRate;
    at += 8 + size + (size % 2);
  }
  return undefined;
}

async function transcription(request: RecordedRequest, res: ServerResponse, behaviour: Behaviour, models: ReadonlySet<string>, task: 'transcribe' | 'translate'): Promise<void> {
  const form = await formOf(request, res);
  if (form === undefined) return;
  const file = form.get('file');
  if (!(file instanceof File)) return openAIError(res, 400, "Missing required parameter: 'file'.", 'file', 'missing_required_parameter');
  const model = modelOf(form, res, models);
  if (model === undefined) return;
  const seconds = wavSeconds(Buffer.from(await file.arrayBuffer()));
  if (seconds === undefined) {
    return openAIError(res, 400, "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']", 'file', 'invalid_value');
  }
  const format = form.get('response_format') ?? 'json';
  if (typeof format !== 'string' || !['json', 'text', 'srt', 'vtt', 'verbose_json'].includes(format)) {
    return openAIError(res, 400, `Invalid value for 'response_format': ${String(format)}.`, 'response_format', 'invalid_value');
  }
  const text = task === 'translate' ? TRANSLATION : TRANSCRIPT;
  const words = text.split(' ');
  const tokens = { type: 'tokens', input_tokens: Math.ceil(seconds * 10), output_tokens: words.length, total_tokens: Math.ceil(seconds * 10) + words.length, input_token_details: { text_tokens: 0, audio_tokens: Math.ceil(seconds * 10) } };
  const usage = model.startsWith('gpt-4o') ? tokens : { type: 'duration', seconds: Math.ceil(seconds) };
  if (task === 'transcribe' && form.get('stream') === 'true') {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    for (const [i, word] of words.entries()) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: i === 0 ? word : ` ${word}`, logprobs: null })}\n\n`);
      await sleep(behaviour.tokenDelayMs ?? 5);
    }
    res.end(`data: ${JSON.stringify({ type: 'transcript.text.done', text, logprobs: null, usage: tokens })}\n\n`);
    return;
  }
  const end = stamp(seconds);
  switch (format) {
    case 'json':
      return json(res, 200, { text, usage });
    case 'verbose_json':
      return json(res, 200, { task, language: 'english', duration: seconds, text, segments: [{ id: 0, seek: 0, start: 0, end: seconds, text, tokens: [50364], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.1, no_speech_prob: 0.01 }], usage: { type: 'duration', seconds: Math.ceil(seconds) } });
    case 'text':
      return plain(res, `${text}\n`);
    case 'srt':
      return plain(res, `1\n00:00:00,000 --> ${end.replace('.', ',')}\n${text}\n\n`);
    default:
      return plain(res, `WEBVTT\n\n00:00:00.000 --> ${end}\n${text}\n\n`);
  }
}

function stamp(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}.${pad(ms % 1000, 3)}`;
}

function plain(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A 1×1 PNG, what every edit answers. */
export const EDITED_PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000200a5e1f3d60000000049454e44ae426082', 'hex');

async function imageEdit(request: RecordedRequest, res: ServerResponse, models: ReadonlySet<string>): Promise<void> {
  const form = await formOf(request, res);
  if (form === undefined) return;
  const images = [...form.getAll('image'), ...form.getAll('image[]')];
  if (images.length === 0) return openAIError(res, 400, "Missing required parameter: 'image'.", 'image', 'missing_required_parameter');
  for (const image of images) {
    if (!(image instanceof File) || !Buffer.from(await image.arrayBuffer()).subarray(0, 8).equals(PNG_MAGIC)) {
      return openAIError(res, 400, 'Invalid image file or mode for image 1, please check your image file.', 'image', 'invalid_image_file');
    }
  }
  const prompt = form.get('prompt');
  if (typeof prompt !== 'string' || prompt === '') return openAIError(res, 400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  const model = modelOf(form, res, models);
  if (model === undefined) return;
  const n = Number(form.get('n') ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > 10) return openAIError(res, 400, `Invalid 'n': integer between 1 and 10 expected.`, 'n', 'invalid_value');
  const promptTokens = prompt.split(/\s+/).length;
  json(res, 200, {
    created: 1_713_833_628,
    data: Array.from({ length: n }, () => ({ b64_json: EDITED_PNG.toString('base64') })),
    usage: { total_tokens: promptTokens + 194 * images.length + 272 * n, input_tokens: promptTokens + 194 * images.length, output_tokens: 272 * n, input_tokens_details: { text_tokens: promptTokens, image_tokens: 194 * images.length } },
  });
}

/** The audio the fake speaks for an input: a WAV of 8 kHz 16-bit mono, 10 ms per character, its samples made from the text. */
export function speechAudio(input: string): Buffer {
  const rate = 8000;
  const samples = Math.max(1, [...input].length) * (rate / 100);
  return pcmWav(samples, rate, (i) => Math.sin((i * (input.charCodeAt(i % Math.max(1, input.length)) || 440)) / 500) * 12_000);
}

const SPEECH_TYPES: Record<string, string> = { mp3: 'audio/mpeg', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' };

async function speech(request: RecordedRequest, res: ServerResponse, behaviour: Behaviour, models: ReadonlySet<string>): Promise<void> {
  const body = request.body;
  if (body === undefined || typeof body !== 'object') return openAIError(res, 400, 'We could not parse the JSON body of your request.', null);
  if (typeof body.model !== 'string' || !models.has(body.model)) {
    return json(res, 404, { error: { message: `The model \`${body.model}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', param: null, code: 'model_not_found' } });
  }
  if (typeof body.input !== 'string') return openAIError(res, 400, "Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  if ([...body.input].length > 4096) return openAIError(res, 400, "Invalid 'input': string too long.", 'input', 'string_above_max_length');
  if (body.voice === undefined) return openAIError(res, 400, "Missing required parameter: 'voice'.", 'voice', 'missing_required_parameter');
  const format = body.response_format ?? 'mp3';
  if (SPEECH_TYPES[format] === undefined) return openAIError(res, 400, `Invalid value for 'response_format': ${format}.`, 'response_format', 'invalid_value');
  const audio = speechAudio(body.input);
  const piece = Math.ceil(audio.length / SPEECH_CHUNKS);
  const delay = behaviour.tokenDelayMs ?? 10;
  if (body.stream_format === 'sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    for (let at = 0; at < audio.length && !res.destroyed; at += piece) {
      res.write(`data: ${JSON.stringify({ type: 'speech.audio.delta', audio: audio.subarray(at, at + piece).toString('base64') })}\n\n`);
      await sleep(delay);
    }
    const input = [...body.input].length;
    res.end(`data: ${JSON.stringify({ type: 'speech.audio.done', usage: { input_tokens: input, output_tokens: SPEECH_CHUNKS * 10, total_tokens: input + SPEECH_CHUNKS * 10 } })}\n\n`);
    return;
  }
  res.writeHead(200, { 'content-type': SPEECH_TYPES[format]!, 'transfer-encoding': 'chunked' });
  for (let at = 0; at < audio.length; at += piece) {
    if (res.destroyed) return;
    res.write(audio.subarray(at, at + piece));
    await sleep(delay);
  }
  res.end();
}
