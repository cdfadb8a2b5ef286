import { imagesConsumption } from '../../../wire/openai/images.js';
import { relayedJsonOperation } from '../relayed-json.js';
import { imagesRequest, imagesSchema } from './request.js';

/**
 * `POST /v1/images/generations`: relayed to `{base_url}/images/generations`, its `b64_json` and
 * `url` answers passed as they came. The images made are billed units; gpt-image models report
 * tokens, and where an upstream reports none Sluice counts the prompt's. Admitted for `n` images
 * (reserved at the model's `per_image`), with no output tokens reserved.
 */
export const imageGenerations = relayedJsonOperation({
  endpoint: 'images',
  operation: 'images.generations',
  path: '/v1/images/generations',
  relayOperation: 'openai.images.generations',
  schema: imagesSchema,
  request: imagesRequest,
  inputs: (request) => [request.prompt],
  units: (request) => ({ images: request.n }),
  consumption: imagesConsumption,
});
