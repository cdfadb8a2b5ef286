import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { Usage } from '../completions/completion.js';

/** USD for one request at the model's per-million-token prices; 0 for a model without pricing. */
export function costUsd(model: CatalogueModel | undefined, usage: Usage): number {
  const pricing = model?.pricing;
  if (pricing === undefined) return 0;
  return (usage.promptTokens * pricing.inputPerMtok + usage.completionTokens * pricing.outputPerMtok) / 1_000_000;
}
