import type { Dialect } from '../dialect.js';
import { openAIErrorBody } from './errors.js';
import { openAIModel } from './model-list.js';

export const openAIDialect: Dialect = {
  name: 'openai',
  renderError: (error) => ({ status: error.status, body: openAIErrorBody(error) }),
  // OpenAI's list has no paging: every model the key may use, in catalogue order.
  listModels: (models) => ({ object: 'list', data: models.map(openAIModel) }),
  describeModel: openAIModel,
};
