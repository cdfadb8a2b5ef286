import type { CatalogueModel, PermittedModels } from '../catalogue/catalogue.js';
import type { GatewayError } from '../core/errors.js';
import { anthropicDialect } from './anthropic/dialect.js';
import { geminiDialect } from './gemini/dialect.js';
import { openAIDialect } from './openai/dialect.js';
import type { CallerDialect } from '../generation/operation.js';

/** A model listing or a model, as the dialect's JSON body. */
export type ModelsBody = Readonly<Record<string, unknown>>;

/**
 * How one family of callers is spoken to: its error bodies and its model listing. Handlers pick a
 * Dialect once they know the caller and never format a body themselves.
 */
export interface Dialect {
  readonly name: CallerDialect;
  renderError(error: GatewayError, requestId: string): { status: number; body: string };
  /** One page of the models a key may use, paged by the dialect's own query parameters: the JSON body. */
  listModels(models: PermittedModels, query: URLSearchParams): ModelsBody;
  describeModel(model: CatalogueModel): ModelsBody;
}

export const DIALECTS: Readonly<Record<CallerDialect, Dialect>> = {
  openai: openAIDialect,
  anthropic: anthropicDialect,
  gemini: geminiDialect,
};

