import type { Usage } from '../../generation/model.js';
import { usageFromResponses } from './usage.js';

type Json = Readonly<Record<string, unknown>>;

/**
 * OpenAI's image answers (`POST /images/generations`): `data` holds one item per image made, each
 * `b64_json` or `url`; gpt-image models also report `usage` in the Responses API's words
 * (`input_tokens`, `output_tokens`, text and image tokens detailed), dall-e models none.
 */
export function imagesMade(body: Json): number {
  return Array.isArray(body.data) ? body.data.length : 0;
}

export function imagesUsage(body: Json): Usage | null {
  return usageFromResponses(body.usage);
}
