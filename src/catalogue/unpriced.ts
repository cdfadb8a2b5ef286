import type { Endpoint } from '../config/config-file.js';
import { pricedFor, type BillingUnit } from '../pricing/cost.js';
import type { Catalogue, CatalogueModel } from './catalogue.js';

/** What each endpoint's requests are billed in (the operations' `outputBound` units, and tokens). */
const BILLED_BY_ENDPOINT: Readonly<Record<Endpoint, readonly BillingUnit[]>> = {
  completions: ['tokens'],
  chat: ['tokens'],
  responses: ['tokens'],
  embeddings: ['tokens'],
  images: ['tokens', 'images'],
  transcriptions: ['tokens', 'audioSeconds'],
  speech: ['tokens', 'characters'],
  rerank: ['tokens', 'requests'],
  moderations: ['tokens', 'requests'],
};

/** Whether some operation the model serves has no price in any unit it is billed in (a per_image price does not price chat). */
export function isUnpriced(model: CatalogueModel): boolean {
  return [...model.endpoints].some((endpoint) => !pricedFor(model.pricing, BILLED_BY_ENDPOINT[endpoint]));
}

/**
 * The models a spend budget cannot bind on, sorted: those without a price for some operation they
 * serve (a `pricing:` entry, the console's, or a price list's). A budgeted key is refused them
 * (src/limits/limit-admission.ts); a model priced at 0 is free, not unpriced. `allowed`: a key's
 * allow-list, null for every model.
 */
export function unpricedModelIds(catalogue: Catalogue, allowed: readonly string[] | null = null): string[] {
  const models = allowed === null ? catalogue.models : allowed.flatMap((id) => catalogue.get(id) ?? []);
  return models
    .filter(isUnpriced)
    .map((model) => model.id)
    .sort();
}

/** The ids for one line of a warning: the first `shown`, then how many more. */
export function listOfIds(ids: readonly string[], shown = 20): string {
  return ids.length <= shown ? ids.join(', ') : `${ids.slice(0, shown).join(', ')} and ${ids.length - shown} more`;
}
