import assert from 'node:assert/strict';
import { test } from 'node:test';
import { imagesUsage, transcriptionUsage } from '../../../src/wire/openai/media-usage.js';

test("a transcript's usage: verbose_json's duration, a usage of type duration, of type tokens, or none", () => {
  assert.deepEqual(transcriptionUsage({ text: 'x', duration: 8.47 }), { input: 0, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0, units: { audioSeconds: 8.47 } });
  assert.deepEqual(transcriptionUsage({ text: 'x', usage: { type: 'duration', seconds: 9 } })?.units, { audioSeconds: 9 });
  const tokens = transcriptionUsage({ text: 'x', usage: { type: 'tokens', input_tokens: 14, output_tokens: 45, total_tokens: 59, input_token_details: { audio_tokens: 14 } } });
  assert.equal(tokens?.input, 14);
  assert.equal(tokens?.output, 45);
  assert.deepEqual(tokens?.units, {});
  assert.equal(transcriptionUsage({ text: 'x' }), null);
  assert.equal(transcriptionUsage('plain text'), null);
  assert.equal(transcriptionUsage({ text: 'x', duration: -1 }), null, 'a negative duration is no duration');
});

test("an image answer's usage: the images in data, and gpt-image-1's tokens where given", () => {
  const usage = imagesUsage({ data: [{ b64_json: 'a' }, { b64_json: 'b' }], usage: { input_tokens: 50, output_tokens: 544, total_tokens: 594 } });
  assert.equal(usage.input, 50);
  assert.equal(usage.output, 544);
  assert.deepEqual(usage.units, { images: 2 });
  assert.deepEqual(imagesUsage({ data: [{ url: 'https://x' }] }).units, { images: 1 });
});
