import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { Usage } from '../generation/model.js';

/** USD for one request at the model's per-million-token prices; 0 for a model without pricing. */
export function costUsd(model: CatalogueModel | undefined, usage: Usage): number {
  const pricing = model?.pricing;
  if (pricing === undefined) return 0;
  const uncachedInput = Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite);
  return (
    (uncachedInput * pricing.inputPerMtok +
      usage.cachedInput * pricing.cachedInputPerMtok +
      usage.cacheWrite * pricing.cacheWritePerMtok +
      usage.output * pricing.outputPerMtok) /
    1_000_000
  );
}
