import type { CatalogueModel } from '../catalogue/catalogue.js';
import { GatewayError } from '../core/errors.js';
import { splitEmbeddingRequest, type EmbeddingRequest } from './embedding.js';
import type { ProviderCall } from './operation.js';
import type { Capabilities } from './provider.js';

/** OpenAI's own limit on the inputs of one request; a larger request is refused whatever the upstream. */
export const MAX_EMBEDDING_INPUTS = 2048;

/**
 * What one attempt asks an upstream for an embedding request, the same for every caller dialect:
 * refused up front (a 400 naming the model, or `inputParam`) where the upstream has no embedding API
 * or takes no token ids; else the inputs in calls of at most what the upstream takes, in order.
 * Each of `requests` is split on its own (a Google batch whose requests differ in task or title).
 */
export function planEmbeddings(requests: readonly EmbeddingRequest[], encoding: 'float' | 'base64', model: CatalogueModel, caps: Capabilities, inputParam: string): Extract<ProviderCall, { kind: 'embed' }> {
  if (caps.maxEmbeddingInputs === 0) {
    throw new GatewayError('unsupported_endpoint', `Model \`${model.id}\` cannot make embeddings: it is served through ${caps.upstream}, which has no embedding API.`, { param: 'model' });
  }
  if (!caps.embedsTokenIds && requests.some((request) => request.input.kind === 'tokens')) {
    throw new GatewayError('unsupported_parameter', `Model \`${model.id}\` cannot embed token ids: it is served through ${caps.upstream}, which takes text only. Send the text instead.`, {
      param: inputParam,
      code: 'unsupported_parameter',
    });
  }
  return { kind: 'embed', batches: requests.flatMap((request) => splitEmbeddingRequest(request, caps.maxEmbeddingInputs)), encoding };
}
