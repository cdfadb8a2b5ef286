import type { Principal } from '../core/principal.js';
import type { Endpoint } from '../config/config-file.js';
import { GatewayError } from '../core/errors.js';
import type { Catalogue, CatalogueModel } from './catalogue.js';

/**
 * The caller operations each catalogue endpoint serves: a chat model answers in every chat-shaped
 * dialect, OpenAI's Responses API included. The first is the operation's usual name in messages.
 */
export const ENDPOINT_OPERATIONS: Readonly<Record<Endpoint, readonly string[]>> = {
  completions: ['/v1/completions'],
  chat: ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1beta/models/{model}:generateContent', '/v1beta/models/{model}:streamGenerateContent'],
  responses: ['/v1/responses'],
  embeddings: ['/v1/embeddings', '/v1beta/models/{model}:embedContent', '/v1beta/models/{model}:batchEmbedContents'],
  rerank: ['/v1/rerank', '/v2/rerank'],
  images: ['/v1/images/generations', '/v1/images/edits'],
  transcriptions: ['/v1/audio/transcriptions', '/v1/audio/translations'],
  speech: ['/v1/audio/speech'],
  moderations: ['/v1/moderations'],
};

/** Every caller operation a model serves, each once. */
export function operationsOf(model: CatalogueModel): string[] {
  return [...new Set([...model.endpoints].flatMap((endpoint) => ENDPOINT_OPERATIONS[endpoint]))];
}

/**
 * The model a key asked for by `id` (a model id, an alias or a name a pattern matches), if it exists
 * and the key may use it: the model it resolves to, whose id the allow-list, limits, prices and the
 * ledger go by (a key allowed a model may use every alias of it).
 */
export function modelForKey(catalogue: Catalogue, id: string, principal: Principal): CatalogueModel {
  const model = catalogue.resolve(id);
  if (model === undefined) {
    throw new GatewayError('model_not_found', `The model \`${id}\` does not exist. GET /v1/models lists the models your key may use.`, {
      param: 'model',
    });
  }
  if (principal.allowedModels !== null && !principal.allowedModels.has(model.id)) {
    // Under the name asked for only: which model an alias stands for is not told to a key that may not use it (its list hides it too).
    throw new GatewayError('model_not_permitted', `This API key may not use the model \`${id}\`. Check /app/keys.`, { param: 'model' });
  }
  return model;
}

/**
 * As modelForKey, and the model must serve the operation asked for: one of `endpoints` (the
 * Responses API is served by `chat` and `responses` models alike). The first names the operation.
 */
export function modelForOperation(catalogue: Catalogue, id: string, principal: Principal, endpoints: Endpoint | readonly Endpoint[]): CatalogueModel {
  const model = modelForKey(catalogue, id, principal);
  const wanted: readonly Endpoint[] = typeof endpoints === 'string' ? [endpoints] : endpoints;
  if (!wanted.some((endpoint) => model.endpoints.has(endpoint))) {
    const serves = [...model.endpoints].map((e) => ENDPOINT_OPERATIONS[e][0]).join(', ');
    throw new GatewayError('unsupported_endpoint', `The model \`${id}\` does not serve ${ENDPOINT_OPERATIONS[wanted[0]!][0]}; it serves ${serves}.`, {
      param: 'model',
    });
  }
  return model;
}

/**
 * Names among a key's models that are no model id but stand for one (an alias, or a name a
 * `model_aliases` pattern matches), with the model each stands for: a key's models are model ids,
 * and a key allowed a model may use every alias of it, so these are refused with the id to name.
 */
export function aliasedNames(catalogue: Catalogue, names: readonly string[]): string[] {
  return names.flatMap((name) => {
    const model = catalogue.get(name) === undefined ? catalogue.resolve(name) : undefined;
    return model === undefined ? [] : [`'${name}' stands for the model '${model.id}'`];
  });
}

/** The refusal for aliasedNames' findings. */
export function aliasedNamesProblem(found: readonly string[]): string {
  return `${found.join(', ')}: a key's models are model ids (a key allowed a model may use its aliases), so name the model instead`;
}
