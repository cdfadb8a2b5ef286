import { usageOf, type BilledUnits, type Usage } from '../../generation/model.js';
import { isObject } from '../json.js';

/**
 * Usage as OpenAI's media APIs report it: transcriptions and translations (`duration` in
 * verbose_json; `usage` of type `tokens` or `duration`), image edits and generations (`usage` in
 * input/output tokens, the images in `data`), speech's stream of events (`speech.audio.done`).
 */

/** A transcript's usage: tokens and seconds of audio where the upstream gave them; null when it gave neither. */
export function transcriptionUsage(body: unknown): Usage | null {
  if (!isObject(body)) return null;
  const tokens = tokenUsage(body.usage);
  const seconds = secondsOf(body.duration) ?? (isObject(body.usage) && body.usage.type === 'duration' ? secondsOf(body.usage.seconds) : undefined);
  if (tokens === null && seconds === undefined) return null;
  return withUnits(tokens ?? usageOf(0, 0), seconds === undefined ? {} : { audioSeconds: seconds });
}

/** An image answer's usage: the images in `data`, and the tokens where the upstream counts them (gpt-image-1). */
export function imagesUsage(body: unknown): Usage {
  const images = isObject(body) && Array.isArray(body.data) ? body.data.length : 0;
  return withUnits((isObject(body) ? tokenUsage(body.usage) : null) ?? usageOf(0, 0), { images });
}

/** `{input_tokens, output_tokens}` (OpenAI's media and Responses APIs), null if absent. */
export function tokenUsage(raw: unknown): Usage | null {
  if (!isObject(raw) || typeof raw.input_tokens !== 'number') return null;
  return usageOf(raw.input_tokens, typeof raw.output_tokens === 'number' ? raw.output_tokens : 0);
}

/** `usage` with these units besides the ones it has. */
export function withUnits(usage: Usage, units: BilledUnits): Usage {
  return { ...usage, units: { ...usage.units, ...units } };
}

function secondsOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
