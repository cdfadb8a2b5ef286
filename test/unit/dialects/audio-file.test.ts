import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { readAudioFile } from '../../../src/dialects/openai/audio/audio-file.js';
import type { FilePart } from '../../../src/dialects/openai/uploads/form.js';
import { pcmWav } from '../../fakes/wav.js';

/** A PCM WAV of `seconds` at 16 kHz mono. */
function wav(seconds: number): Buffer {
  const rate = 16_000;
  return pcmWav(Math.round(seconds * rate), rate);
}

/** A FLAC stream's head: the marker and a last STREAMINFO block saying 44.1 kHz, mono, 16 bits, `samples` samples. */
function flac(samples: number): Buffer {
  const info = Buffer.alloc(34);
  info.writeUInt16BE(4096, 0);
  info.writeUInt16BE(4096, 2);
  // 20 bits of sample rate, 3 of channels − 1, 5 of bits per sample − 1, 36 of total samples.
  const packed = (BigInt(44_100) << 44n) | (0n << 41n) | (15n << 36n) | BigInt(samples);
  info.writeBigUInt64BE(packed, 10);
  return Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.from([0x80, 0, 0, 34]), info]);
}

/** A file part in chunks of `size` bytes, as a socket delivers an upload. */
function part(bytes: Buffer, filename: string, size = 1000): FilePart {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return { kind: 'file', name: 'file', filename, contentType: 'application/octet-stream', chunks, size: bytes.length };
}

test("a WAV's container and duration, read from its header across the upload's chunks", async () => {
  assert.deepEqual(await readAudioFile(part(wav(1.5), 'a.wav', 7)), { container: 'wav', seconds: 1.5 });
  assert.deepEqual(await readAudioFile(part(wav(61.25), 'long.wav', 65_536)), { container: 'wav', seconds: 61.25 });
});

test("a FLAC's duration from its STREAMINFO", async () => {
  assert.deepEqual(await readAudioFile(part(flac(88_200), 'a.flac')), { container: 'flac', seconds: 2 });
});

test('the bytes decide, not the name: a PNG called .wav, text, and nothing at all are refused naming file', async () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000200a5e1f3d60000000049454e44ae426082', 'hex');
  for (const [bytes, name] of [[png, 'photo.wav'], [Buffer.from('WEBVTT\n\nnot audio at all'), 'notes.mp3'], [Buffer.from([0, 1, 2, 3]), 'x.ogg']] as const) {
    await assert.rejects(readAudioFile(part(bytes, name)), (error: unknown) => error instanceof GatewayError && error.status === 400 && error.param === 'file' && error.message.includes(name));
  }
  // A WAV whose name says otherwise is still a WAV.
  assert.equal((await readAudioFile(part(wav(0.5), 'photo.png'))).container, 'wav');
});
