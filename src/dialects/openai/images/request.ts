import { z } from 'zod';
import { invalid } from '../validation.js';
import type { RelayedJsonRequest } from '../relayed-json.js';

/**
 * `POST /v1/images/generations` bodies, with the values OpenAI documents across its image models
 * (which of them a model takes is the upstream's to say): `prompt`, `n` 1..10, `size` (`auto` or
 * WIDTHxHEIGHT), `quality`, `response_format`, `background`, `output_format`, `output_compression`,
 * `style`, `moderation`, `user`. OpenAI picks dall-e-2 when `model` is absent; Sluice routes by the
 * model, so it must be named. Unknown fields are passed on.
 */
export const imagesSchema = z.looseObject({
  model: z.string().min(1),
  prompt: z.string().min(1),
  n: z.number().int().min(1).max(10).nullish(),
  size: z.string().regex(/^(auto|\d{1,5}x\d{1,5})$/, "must be 'auto' or WIDTHxHEIGHT, as '1024x1024'").nullish(),
  quality: z.enum(['auto', 'standard', 'hd', 'low', 'medium', 'high']).nullish(),
  response_format: z.enum(['url', 'b64_json']).nullish(),
  background: z.enum(['auto', 'transparent', 'opaque']).nullish(),
  output_format: z.enum(['png', 'jpeg', 'webp']).nullish(),
  output_compression: z.number().int().min(0).max(100).nullish(),
  style: z.enum(['vivid', 'natural']).nullish(),
  moderation: z.enum(['auto', 'low']).nullish(),
  user: z.string().nullish(),
  stream: z.boolean().nullish(),
});

export interface ImagesRequest extends RelayedJsonRequest {
  readonly prompt: string;
  /** Images asked for. */
  readonly n: number;
}

export function imagesRequest(body: z.infer<typeof imagesSchema>): ImagesRequest {
  // gpt-image's partial images come as server-sent events, which Sluice does not relay: refused rather than answered whole.
  if (body.stream === true) throw invalid('stream', "Streaming image generation is not supported by this gateway: leave 'stream' out or set it to false.", 'unsupported_parameter');
  return { model: body.model, stream: false, body, prompt: body.prompt, n: body.n ?? 1 };
}
