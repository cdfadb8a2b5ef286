import type { CatalogueModel } from '../../catalogue/catalogue.js';

/** One model in OpenAI's shape. */
export function openAIModel(model: CatalogueModel) {
  return { id: model.id, object: 'model', created: model.created, owned_by: model.ownedBy };
}
