import type { UpstreamModel } from '../catalogue/upstream-model.js';
import { GatewayError } from '../core/errors.js';
import { randomId } from '../core/ids.js';
import { type Json, type UpstreamClient } from './upstream-client.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { isObject } from '../wire/json.js';

/** A model list longer than this many pages is a server paging in a loop, not a catalogue. */
const MAX_PAGES = 100;

/**
 * A model listing that failed, as the upstream's GatewayError, with the address of the page it
 * requested (credentials masked), so that the operator sees which URL to check.
 */
export class ModelListingError extends GatewayError {
  constructor(
    failure: GatewayError,
    readonly url: string,
  ) {
    const { status, param, retryAfter, headers, type, code, upstreamFailure, upstreamBody } = failure;
    super(failure.kind, failure.message, { status, param, retryAfter, headers, type, code, upstreamFailure, upstreamBody, cause: failure });
  }
}

/** One page of an upstream's list: its models, and the cursor of the next page (undefined on the last). */
export interface ModelPage {
  readonly models: readonly UpstreamModel[];
  readonly next: string | undefined;
}

/**
 * Every page of an upstream's model list, in order: `path(cursor)` names each page (no cursor for
 * the first), `read` turns its JSON into models and the next cursor. A cursor seen before ends the
 * listing as unreadable rather than looping; so does a list of more than MAX_PAGES pages. Any
 * failure is a ModelListingError naming the page's address.
 */
export async function listAllPages(client: UpstreamClient, signal: AbortSignal, path: (cursor: string | undefined) => string, read: (page: Json) => ModelPage): Promise<UpstreamModel[]> {
  const models: UpstreamModel[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  let pagePath = '';
  const call = { requestId: randomId('list_'), signal };
  for (let page = 0; page < MAX_PAGES; page++) {
    pagePath = path(cursor);
    let found: ModelPage;
    try {
      found = read(await client.getJson(pagePath, call));
    } catch (error) {
      // The caller's own time limit (AbortSignal.timeout) reads as the upstream's slowness it is.
      const failure =
        signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError'
          ? new GatewayError('upstream_timeout', `The upstream provider '${client.providerId}' did not list its models in time.`, { upstreamFailure: 'timeout' })
          : error;
      // Not a GatewayError: our own fault, thrown as it is.
      throw failure instanceof GatewayError ? new ModelListingError(failure, client.addressOf(pagePath)) : failure;
    }
    models.push(...found.models);
    if (found.next === undefined) return models;
    if (seen.has(found.next)) break;
    seen.add(found.next);
    cursor = found.next;
  }
  throw new ModelListingError(unreadableUpstream(client.providerId, 'a model list whose pages do not end'), client.addressOf(pagePath));
}

/** The array under `field` of a list page, or an unreadable-upstream failure. */
export function listField(client: UpstreamClient, page: Json, field: string): Json[] {
  const items = page[field];
  // Gemini leaves `models` out of an empty page.
  if (items === undefined && field === 'models') return [];
  if (!Array.isArray(items)) throw unreadableUpstream(client.providerId, `a model list without a '${field}' array`);
  return items.filter(isObject);
}

export function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function optionalCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** A model record without the fields the upstream did not give. */
export function upstreamModel(fields: { [K in keyof UpstreamModel]: UpstreamModel[K] | undefined }): UpstreamModel {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as unknown as UpstreamModel;
}
