import { z } from 'zod';
import type { RelayedJsonRequest } from '../relayed-json.js';

/**
 * `POST /v1/moderations` bodies, as OpenAI documents them: `input` a string, an array of strings, or
 * (omni-moderation models) an array of `{type: 'text', text}` and `{type: 'image_url', image_url:
 * {url}}` parts. OpenAI picks `omni-moderation-latest` when `model` is absent; Sluice routes by the
 * model, so it must be named. Unknown fields are passed on.
 */
const part = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.literal('image_url'), image_url: z.looseObject({ url: z.string().min(1) }) }),
]);

export const moderationSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.string()).min(1), z.array(part).min(1)]),
});

export const MODERATION_INPUT = 'a string, a non-empty array of strings, or a non-empty array of text and image_url parts';

export interface ModerationRequest extends RelayedJsonRequest {
  /** The texts to classify (images are not counted in tokens). */
  readonly texts: readonly string[];
}

export function moderationRequest(body: z.infer<typeof moderationSchema>): ModerationRequest {
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : input.flatMap((item) => (typeof item === 'string' ? [item] : item.type === 'text' ? [item.text] : []));
  return { model: body.model, stream: false, body, texts };
}
