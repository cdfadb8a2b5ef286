import type { Principal } from '../auth/authenticator.js';
import type { Endpoint } from '../config/config-file.js';
import { GatewayError } from '../errors.js';
import type { Catalogue, CatalogueModel } from './catalogue.js';

const OPERATION_PATHS: Record<Endpoint, string> = {
  completions: '/v1/completions',
  chat: '/v1/chat/completions',
};

/** The model a key asked for, if it exists and the key may use it. */
export function modelForKey(catalogue: Catalogue, id: string, principal: Principal): CatalogueModel {
  const model = catalogue.get(id);
  if (model === undefined) {
    throw new GatewayError('model_not_found', `The model \`${id}\` does not exist. GET /v1/models lists the models your key may use.`, {
      param: 'model',
    });
  }
  if (principal.allowedModels !== null && !principal.allowedModels.has(id)) {
    throw new GatewayError('model_not_permitted', `This API key may not use the model \`${id}\`. Check /app/keys.`, { param: 'model' });
  }
  return model;
}

/** As modelForKey, and the model must serve the operation asked for. */
export function modelForOperation(catalogue: Catalogue, id: string, principal: Principal, endpoint: Endpoint): CatalogueModel {
  const model = modelForKey(catalogue, id, principal);
  if (!model.endpoints.has(endpoint)) {
    const serves = [...model.endpoints].map((e) => OPERATION_PATHS[e]).join(', ');
    throw new GatewayError('unsupported_endpoint', `The model \`${id}\` does not serve ${OPERATION_PATHS[endpoint]}; it serves ${serves}.`, {
      param: 'model',
    });
  }
  return model;
}
