import { identifyListingCaller } from '../../wire/key-carriers.js';
import type { Principal } from '../../core/principal.js';
import { modelForKey } from '../../catalogue/access.js';
import { asAlias } from '../../catalogue/catalogue.js';
import { DIALECTS } from '../../dialects/dialect.js';
import { GatewayError } from '../../core/errors.js';
import type { Handler, RequestContext } from '../handler.js';
import { sendJson, type GatewayDeps } from '../server.js';

/** `/v1/models/{id}` for every dialect, and `/v1beta/models/{name}` where the Google SDKs look. */
export const MODEL_PATH_PREFIXES = ['/v1/models/', '/v1beta/models/'] as const;

/**
 * Picks the caller's dialect from its key carriers (see identifyListingCaller) before anything can
 * fail, so that even a missing key is answered in the caller's own error shape.
 */
async function authenticateListingCaller(deps: GatewayDeps, ctx: RequestContext): Promise<{ principal: Principal; query: URLSearchParams }> {
  const query = new URLSearchParams(ctx.query);
  const caller = identifyListingCaller(ctx.req.headers, query, ctx.path.startsWith('/v1beta/'));
  ctx.dialect = DIALECTS[caller.dialect];
  if (caller.conflicting) {
    throw new GatewayError('conflicting_api_keys', 'The request carries two different API keys; send exactly one.');
  }
  return { principal: await deps.authenticator.authenticate(caller.key), query };
}

/** `GET /v1/models` (and `/v1beta/models`): the models the calling key may use. */
export function listModelsRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    const { principal, query } = await authenticateListingCaller(deps, ctx);
    const models = deps.catalogue().permitted(principal.allowedModels);
    if (principal.allowedModels !== null && models.count === 0) {
      throw new GatewayError('no_model_permission', 'This API key may not use any model in the catalogue. Check /app/keys.');
    }
    sendJson(ctx.res, 200, JSON.stringify(ctx.dialect.listModels(models, query)));
  };
}

/** One model; ids may contain slashes (`meta-llama/Llama-3.1-8B`), Gemini names start `models/`. */
export function retrieveModelRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    const { principal } = await authenticateListingCaller(deps, ctx);
    const prefix = MODEL_PATH_PREFIXES.find((p) => ctx.path.startsWith(p))!;
    let id = decodePathPart(ctx.path.slice(prefix.length));
    if (ctx.dialect.name === 'gemini' && id.startsWith('models/')) id = id.slice('models/'.length);
    // An alias (or a name a pattern matches) is described under the name asked for, as its answers carry it.
    sendJson(ctx.res, 200, JSON.stringify(ctx.dialect.describeModel(asAlias(modelForKey(deps.catalogue(), id, principal), id))));
  };
}

function decodePathPart(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new GatewayError('model_not_found', 'The model id in the path is not validly encoded.');
  }
}
