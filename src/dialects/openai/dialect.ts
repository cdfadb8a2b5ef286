import { GatewayError } from '../../core/errors.js';
import type { Dialect } from '../dialect.js';
import { intParam } from '../paging.js';
import { openAIErrorBody } from './errors.js';
import { openAIModel } from './model-list.js';

/**
 * OpenAI's own model list has no paging, and the SDK's `models.list()` reads one page only: so the
 * default page holds every model of any real catalogue (discovery keeps at most 10,000 per provider
 * by default), and a larger one is paged with `limit` and `after` as OpenAI's cursor lists are.
 */
export const OPENAI_MODEL_PAGE = { default: 10_000, max: 10_000 } as const;

export const openAIDialect: Dialect = {
  name: 'openai',
  renderError: (error) => ({ status: error.status, body: openAIErrorBody(error) }),
  /** Catalogue order; `after` is the id of the last model of the previous page, `has_more` says whether there is a next. */
  listModels(permitted, query) {
    const limit = intParam(query, 'limit', OPENAI_MODEL_PAGE.default, 1, OPENAI_MODEL_PAGE.max);
    const sequence = permitted.ordered();
    const after = query.get('after');
    let start = 0;
    if (after !== null) {
      const index = sequence.indexOf(after);
      if (index === -1) throw new GatewayError('invalid_request', `Invalid 'after': no model '${after.slice(0, 200)}' in this list.`, { param: 'after' });
      start = index + 1;
    }
    const page = sequence.models.slice(start, start + limit).map(openAIModel);
    return {
      object: 'list',
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: start + page.length < sequence.models.length,
    };
  },
  describeModel: openAIModel,
};
