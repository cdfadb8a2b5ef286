import { bearerToken } from '../../wire/key-carriers.js';
import { DIALECTS } from '../../dialects/dialect.js';
import { GatewayError } from '../../core/errors.js';
import type { Handler } from '../handler.js';
import { sendJson, type GatewayDeps } from '../server.js';

export const STORED_RESPONSES_PREFIX = '/v1/responses/';

/**
 * `GET /v1/responses/{id}` (the stored response object) and `DELETE /v1/responses/{id}`, for the
 * account that made the response only: another account's id is answered as an unknown one.
 */
export function storedResponsesRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    ctx.dialect = DIALECTS.openai;
    const principal = await deps.authenticator.authenticate(bearerToken(ctx.req.headers));
    const id = ctx.path.slice(STORED_RESPONSES_PREFIX.length);
    // Sluice's ids are plain letters and digits: anything else (a sub-path, an escape) names nothing here.
    if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new GatewayError('route_not_found', `There is no route ${ctx.req.method} ${ctx.path}.`);
    if (ctx.req.method === 'DELETE') {
      await deps.conversations.delete(principal, id);
      sendJson(ctx.res, 200, JSON.stringify({ id, object: 'response', deleted: true }));
      return;
    }
    sendJson(ctx.res, 200, JSON.stringify(await deps.conversations.get(principal, id)));
  };
}
