import { encodedAs, type Embedding } from '../../../generation/embedding.js';
import { planEmbeddings } from '../../../generation/embedding-plan.js';
import { NO_OUTPUT, type Operation } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import { rendered, wholeReply } from '../../reply.js';
import { credential, GOOGLE_JSON, modelNamed } from '../generate/operation.js';
import { parseBatchEmbedContentsRequest, parseEmbedContentRequest, type GeminiEmbedRequest } from './request.js';

function values(embedding: Embedding): { values: readonly number[] } {
  return { values: encodedAs(embedding, 'float') as readonly number[] };
}

/**
 * Google's embedding methods on every model that serves `embeddings`, whatever its upstream: the
 * embedding model goes to the model's provider (an OpenAI-compatible server, or Gemini's own
 * batchEmbedContents), split into calls of at most what it takes, and the vectors come back as
 * Google answers them, in request order.
 */
function embedOperation(operation: string, parse: Operation<GeminiEmbedRequest>['parse']): Operation<GeminiEmbedRequest> {
  return {
    endpoint: 'embeddings',
    operation,
    dialect: 'gemini',
    credential,
    parse,
    modelNamed,
    outputBound: () => NO_OUTPUT,
    countUsage: (request) => countUsage(request.texts, []),
    // Each of the caller's differing runs (task, title, dimensions) split on its own.
    plan: (request, { model, provider }) => planEmbeddings(request.requests, 'float', model, provider.capabilities(model), request.batch ? 'requests' : 'content'),
    answer(request, answer) {
      if (answer.kind !== 'embedded') throw new Error('an embedding request is always embedded');
      const { embeddings, usage } = answer.result;
      const body = request.batch ? { embeddings: embeddings.map(values) } : { embedding: values(embeddings[0]!) };
      return wholeReply(usage, () => [], () => rendered(JSON.stringify(body), GOOGLE_JSON));
    },
  };
}

/** `POST /v1beta/models/{model}:embedContent` (and under /v1). */
export const geminiEmbedContent = embedOperation('gemini.embed_content', parseEmbedContentRequest);

/** `POST /v1beta/models/{model}:batchEmbedContents` (and under /v1); @google/genai's `models.embedContent` always calls this one. */
export const geminiBatchEmbedContents = embedOperation('gemini.batch_embed_contents', parseBatchEmbedContentsRequest);
