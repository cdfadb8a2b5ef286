// The public models JSON: a model's shape in `/models.json` and `/models/<id>?format=json`, and a
// bad paging parameter in the public JSON's error shape.
import { operationsOf } from '../../../catalogue/access.js';
import type { CatalogueModel, PricingSource } from '../../../catalogue/catalogue.js';
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
    pricing: model.pricing ? { input_per_mtok: model.pricing.inputPerMtok, output_per_mtok: model.pricing.outputPerMtok, currency: 'USD' } : null,
    pricing_source: pricingSourceJson(model.pricingSource),
    operations: operationsOf(model),
    health,
  };
}

function pricingSourceJson(source: PricingSource | undefined) {
  if (source === undefined) return null;
  return source.kind === 'entry' ? { kind: source.kind } : { kind: source.kind, origin: source.origin, as_of: source.asOf };
}
