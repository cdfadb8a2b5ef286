import type { Consumption } from '../relay-format.js';
import { usageFromResponses } from './usage.js';

/**
 * What an OpenAI image answer (`POST /images/generations`) says it consumed: `data` holds one item
 * per image made (each `b64_json` or `url`), the billed units; gpt-image models also report
 * `usage` in the Responses API's words (`input_tokens`, `output_tokens`, text and image tokens
 * detailed), dall-e models none.
 */
export function imagesConsumption(body: Readonly<Record<string, unknown>>): Consumption {
  return { usage: usageFromResponses(body.usage), units: { images: Array.isArray(body.data) ? body.data.length : 0 } };
}
