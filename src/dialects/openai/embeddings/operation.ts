import { embeddingInputs } from '../../../generation/embedding.js';
import { planEmbeddings } from '../../../generation/embedding-plan.js';
import { NO_OUTPUT, type Operation } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { bearerToken } from '../../../wire/key-carriers.js';
import { rendered, wholeReply } from '../../reply.js';
import { parseEmbeddingsRequest, type EmbeddingsRequest } from './request.js';
import { embeddingsBody } from './writer.js';

/**
 * `POST /v1/embeddings`. Every upstream gets the embedding model (an OpenAI-compatible one in its
 * own wire, unknown fields passed on; Gemini translated), the inputs split into calls of at most
 * what it takes and joined again in order. Usage is the upstream's, else Sluice's count of the inputs.
 */
export const embeddings: Operation<EmbeddingsRequest> = {
  endpoint: 'embeddings',
  dialect: 'openai',
  operation: 'embeddings',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseEmbeddingsRequest,
  outputBound: () => NO_OUTPUT,
  countUsage: (request) => countUsage(embeddingInputs(request.embedding.input), []),
  plan: (request, { model, provider }) => planEmbeddings([request.embedding], request.encoding, model, provider.capabilities(model), 'input'),
  answer(request, answer) {
    if (answer.kind !== 'embedded') throw new Error('an embedding request is always embedded');
    const result = answer.result;
    return wholeReply(result.usage, () => [], (usage) => rendered(embeddingsBody(result, request.encoding, request.model, usage)));
  },
};
