import { bearerToken } from '../../auth/key-carriers.js';
import { modelForKey } from '../../catalogue/access.js';
import { openAIModel, openAIModelList } from '../../dialects/openai/model-list.js';
import { GatewayError } from '../../errors.js';
import { sendJson, type GatewayDeps, type Handler } from '../server.js';

/** `GET /v1/models`: the models the calling key may use. */
export function listModelsRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    const principal = await deps.authenticator.authenticate(bearerToken(ctx.req.headers));
    const models = deps.catalogue().permitted(principal.allowedModels);
    if (principal.allowedModels !== null && models.length === 0) {
      throw new GatewayError('no_model_permission', 'This API key may not use any model in the catalogue. Check /app/keys.');
    }
    sendJson(ctx.res, 200, JSON.stringify(openAIModelList(models)));
  };
}

/** `GET /v1/models/{id}`; ids may contain slashes (`meta-llama/Llama-3.1-8B`). */
export function retrieveModelRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    const principal = await deps.authenticator.authenticate(bearerToken(ctx.req.headers));
    const id = decodePathPart(ctx.path.slice('/v1/models/'.length));
    sendJson(ctx.res, 200, JSON.stringify(openAIModel(modelForKey(deps.catalogue(), id, principal))));
  };
}

function decodePathPart(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new GatewayError('model_not_found', 'The model id in the path is not validly encoded.');
  }
}
