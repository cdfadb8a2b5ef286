import type { CatalogueModel, ModelOrdering, ModelSequence } from '../../catalogue/catalogue.js';
import { GatewayError, type ErrorKind } from '../../core/errors.js';
import type { Dialect } from '../dialect.js';
import { intParam } from '../paging.js';

/** Anthropic's error `type` by HTTP status. */
function anthropicErrorType(status: number, kind: ErrorKind): string {
  if (kind === 'upstream_overloaded') return 'overloaded_error';
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** The `error` member of Anthropic's error bodies and stream error events. */
export function anthropicErrorObject(error: GatewayError): { type: string; message: string } {
  return { type: anthropicErrorType(error.status, error.kind), message: error.message };
}

/** RFC 3339 without fractional seconds, as Anthropic writes it; a model of unknown date shows the epoch. */
function rfc3339(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace('.000Z', 'Z');
}

export function anthropicModel(model: CatalogueModel) {
  return { type: 'model', id: model.id, display_name: model.displayName ?? model.id, created_at: rfc3339(model.created) };
}

/** Anthropic lists newest first; models of the same date keep the catalogue's order. */
const NEWEST_FIRST: ModelOrdering = { name: 'newest-first', compare: (a, b) => b.created - a.created };

function indexOfId(models: ModelSequence, id: string, param: string): number {
  const index = models.indexOf(id);
  if (index === -1) throw new GatewayError('invalid_request', `Invalid '${param}': no model '${id}' in this list.`, { param });
  return index;
}

export const anthropicDialect: Dialect = {
  name: 'anthropic',
  renderError: (error, requestId) => ({
    status: error.status,
    body: JSON.stringify({ type: 'error', error: anthropicErrorObject(error), request_id: requestId }),
  }),

  /** Newest first; `after_id` pages forward, `before_id` backward, `limit` 1..1000 (default 20). */
  listModels(models, query) {
    const limit = intParam(query, 'limit', 20, 1, 1000);
    const afterId = query.get('after_id');
    const beforeId = query.get('before_id');
    if (afterId !== null && beforeId !== null) {
      throw new GatewayError('invalid_request', "Send either 'after_id' or 'before_id', not both.", { param: 'before_id' });
    }
    const sequence = models.ordered(NEWEST_FIRST);
    const ordered = sequence.models;
    let start: number;
    let end: number;
    if (beforeId !== null) {
      end = indexOfId(sequence, beforeId, 'before_id');
      start = Math.max(0, end - limit);
    } else {
      start = afterId === null ? 0 : indexOfId(sequence, afterId, 'after_id') + 1;
      end = Math.min(ordered.length, start + limit);
    }
    const page = ordered.slice(start, end).map(anthropicModel);
    return {
      data: page,
      has_more: beforeId !== null ? start > 0 : end < ordered.length,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
    };
  },
  describeModel: anthropicModel,
};
