// The public models JSON: a model's shape in `/models.json` and `/models/<id>?format=json`, and a
// bad paging parameter in the public JSON's error shape.
import { operationsOf } from '../../../catalogue/access.js';
import { PRICE_UNIT_FIELDS, type CatalogueModel, type PricingSource } from '../../../catalogue/catalogue.js';
import type { Pricing } from '../../../pricing/cost.js';
import type { RequestContext } from '../../../http/handler.js';
import type { Health } from '../../../status/health.js';
import type { PagingError } from '../../paging.js';

/** A bad paging parameter of `/models.json`, in the public JSON's error shape. */
export function sendPublicJsonError(ctx: RequestContext, error: PagingError): void {
  ctx.res
    .writeHead(error.status, { 'content-type': 'application/json', 'cache-control': 'no-cache', 'access-control-allow-origin': '*' })
    .end(JSON.stringify({ error: { message: error.message, code: 'invalid_request', param: error.param } }));
}

/** A model as `/models.json` and `/models/<id>?format=json` give it. */
export function modelJson(model: CatalogueModel, health: Health) {
  return {
    id: model.id,
    display_name: model.displayName ?? model.id,
    owned_by: model.ownedBy,
    description: model.description ?? null,
    created: model.created,
    context_window: model.contextWindow ?? null,
    max_output_tokens: model.maxOutputTokens ?? null,
    pricing: model.pricing ? listedPricing(model.pricing) : null,
    pricing_source: pricingSourceJson(model.pricingSource),
    operations: operationsOf(model),
    health,
  };
}

/** The price units `/models.json` lists, each only when the model is sold in it. */
const LISTED_UNITS = ['input_per_mtok', 'output_per_mtok', 'per_image', 'per_audio_minute', 'per_mchar', 'per_request'] as const;

/** A priced model's prices in the units it is sold in only (an image model has no token prices; cache prices are not listed). */
function listedPricing(pricing: Pricing) {
  const listed: Partial<Record<(typeof LISTED_UNITS)[number], number>> = {};
  for (const unit of LISTED_UNITS) {
    const value = pricing[PRICE_UNIT_FIELDS[unit]];
    if (value !== undefined) listed[unit] = value;
  }
  return { ...listed, currency: 'USD' as const };
}

function pricingSourceJson(source: PricingSource | undefined) {
  if (source === undefined) return null;
  return source.kind === 'entry' ? { kind: source.kind } : { kind: source.kind, origin: source.origin, as_of: source.asOf };
}
