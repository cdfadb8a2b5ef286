import { rerankConsumption } from '../../../wire/rerank/usage.js';
import { ONE_CALL, relayedJsonOperation } from '../relayed-json.js';
import { rerankRequest, rerankSchema } from './request.js';

/**
 * `POST /v1/rerank` and `/v2/rerank`: relayed to `{base_url}/rerank` (vLLM serves it there, beside
 * /v1/rerank and /v2/rerank). Tokens as the upstream counted them (vLLM, Jina), else Sluice's count
 * of the query and the documents; one billed request per call, or Cohere's search units.
 */
export const rerank = relayedJsonOperation({
  endpoint: 'rerank',
  operation: 'rerank',
  path: '/v1/rerank',
  relayOperation: 'openai.rerank',
  schema: rerankSchema,
  request: rerankRequest,
  unionExpectations: { 'documents[]': 'a string or an object with a string `text`' },
  inputs: (request) => [request.query, ...request.documents],
  units: () => ONE_CALL,
  consumption: rerankConsumption,
});
