import { ONE_CALL, relayedJsonOperation } from '../relayed-json.js';
import { MODERATION_INPUT, moderationRequest, moderationSchema } from './request.js';

/**
 * `POST /v1/moderations`: relayed to `{base_url}/moderations`. OpenAI reports no usage for it, so
 * its tokens are always Sluice's count of the input's texts; one billed request per call.
 */
export const moderations = relayedJsonOperation({
  endpoint: 'moderations',
  operation: 'moderations',
  path: '/v1/moderations',
  relayOperation: 'openai.moderations',
  schema: moderationSchema,
  request: moderationRequest,
  unionExpectations: { input: MODERATION_INPUT },
  inputs: (request) => request.texts,
  units: () => ONE_CALL,
  consumption: () => ({ usage: null, units: ONE_CALL }),
});
