// The public model pages (`/models`, `/models.json`, `/models/<id>`): their handlers, each
// answering in HTML or, when asked, in the public JSON.
import { GatewayError } from '../../../core/errors.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { routeHint } from '../../../http/route-hints.js';
import { page, visitor, type ConsoleDeps } from '../../console-context.js';
import { FormError, gatewayOrigin, redirect, sendHtml, sendPublicJson, wantsJson } from '../../http.js';
import { pageHref, pageSpec, PagingError, type PageSpec } from '../../paging.js';
import { decodeParam } from '../../path-routes.js';
import { modelJson, sendPublicJsonError } from './json.js';
import { KEY_DEPENDENT_NOTE, readListQuery, select } from './listing.js';
import { detailPage, listPage } from './views.js';

/**
 * The public pages take no key: one that comes with an API key is a client whose base URL lacks
 * `/v1` (the openai SDK given http://host:port lists models at /models), answered as a wrong path
 * is, with the hint, rather than with every model in another shape.
 */
function keyless(handler: Handler): Handler {
  return (ctx) => {
    const { authorization } = ctx.req.headers;
    if (!(typeof authorization === 'string' && /^bearer /i.test(authorization)) && ctx.req.headers['x-api-key'] === undefined) return handler(ctx);
    throw new GatewayError('route_not_found', `There is no route GET ${ctx.path} for an API key (it is the public catalogue page); ${routeHint('GET', ctx.path, () => true)}`);
  };
}

export function modelsRoutes(deps: ConsoleDeps): { list: Handler; json: Handler; detail: Handler } {
  const respondList = async (ctx: RequestContext, forceJson: boolean) => {
    const query = new URLSearchParams(ctx.query);
    const json = forceJson || wantsJson(ctx.req, query);
    const catalogue = deps.catalogue.current();
    const listQuery = readListQuery(query);
    let spec: PageSpec;
    try {
      spec = pageSpec(query);
    } catch (error) {
      if (json && error instanceof PagingError) return sendPublicJsonError(ctx, error);
      throw error;
    }
    const list = select(catalogue, listQuery, spec);
    const healthOf = await deps.status.modelHealth();
    if (json) {
      const path = forceJson ? '/models.json' : '/models';
      return sendPublicJson(ctx.res, {
        object: 'list',
        note: KEY_DEPENDENT_NOTE,
        data: list.items.map((m) => modelJson(m, healthOf(m))),
        page: list.page,
        limit: list.limit,
        total: list.total,
        has_more: list.hasMore,
        next: list.hasMore ? pageHref(path, query, list.page + 1) : null,
      });
    }
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, listPage(list, query, healthOf, listQuery, catalogue.models.length, catalogue, user), headers);
  };

  const detail = page(deps, async (ctx) => {
    const id = decodeParam(ctx.path.slice('/models/'.length), 'There is no such model.');
    const query = new URLSearchParams(ctx.query);
    const json = wantsJson(ctx.req, query);
    const catalogue = deps.catalogue.current();
    const model = catalogue.get(id);
    // An alias's page is its model's.
    const aliased = model === undefined ? catalogue.named(id) : undefined;
    if (aliased !== undefined) return redirect(ctx.res, `/models/${encodeURIComponent(aliased.id)}${ctx.query === '' ? '' : `?${ctx.query}`}`);
    if (model === undefined) {
      if (json) return void ctx.res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `There is no model '${id}'.`, code: 'model_not_found' } }));
      throw new FormError(404, `There is no model “${id}” in the catalogue. See /models for every model.`);
    }
    const health = (await deps.status.modelHealth())(model);
    if (json) return sendPublicJson(ctx.res, { ...modelJson(model, health), note: KEY_DEPENDENT_NOTE });
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, detailPage(model, health, user, gatewayOrigin(ctx.req)), headers);
  });

  return { list: keyless(page(deps, (ctx) => respondList(ctx, false))), json: page(deps, (ctx) => respondList(ctx, true)), detail: keyless(detail) };
}
