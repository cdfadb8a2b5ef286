// The catalogue's pages (`/app/catalogue/...`, admins only): the route table and its handlers,
// which read the live catalogue, hand parsed forms to the catalogue admin and answer with a view.
import type { AdminResult } from '../../../catalogue/catalogue-admin.js';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { GENERATION_ENDPOINTS } from '../../../config/config-file.js';
import { toGatewayError } from '../../../core/errors.js';
import { importModels, type ImportOutcome } from '../../../discovery/model-import.js';
import { ModelListingError } from '../../../providers/model-listing.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { checkedForm, page, requireSession, type ConsoleDeps } from '../../console-context.js';
import { FormError, redirect, sendHtml } from '../../http.js';
import { pageOf, pageSpec, paged, type PageSpec, type Paged } from '../../paging.js';
import { decodeParam, findRoute, pathRoute, type PathParams } from '../../path-routes.js';
import type { Session } from '../../sessions.js';
import { formValues, modelFormErrors, providerFormErrors, readModelForm, readProviderForm, valuesOf } from './forms.js';
import { deletePage, importPage, modelForm, overviewPage, providerForm, type EntryKind, type EntryMode } from './views.js';

type CatalogueHandler = (ctx: RequestContext, session: Session, params: PathParams) => Promise<void>;

/** The overview's page of models: catalogue order, those whose id contains `q` when there is one. */
function modelPage(all: readonly CatalogueModel[], q: string, spec: PageSpec): Paged<CatalogueModel> {
  const needle = q.trim().toLowerCase();
  if (needle === '') return pageOf(all, spec);
  const start = (spec.page - 1) * spec.limit;
  const page: CatalogueModel[] = [];
  let total = 0;
  for (const model of all) {
    if (!model.id.toLowerCase().includes(needle)) continue;
    if (total >= start && page.length < spec.limit) page.push(model);
    total++;
  }
  return paged(page, total, spec);
}

export function catalogueRoutes(deps: ConsoleDeps): Handler {
  const { catalogueAdmin: admin } = deps;
  const done = (ctx: RequestContext, message: string) => redirect(ctx.res, `/app/catalogue?done=${encodeURIComponent(message)}`);
  const stored = (kind: EntryKind, id: string) => (kind === 'providers' ? admin.storedProvider(id) : admin.storedModel(id));
  const notConsole = (kind: EntryKind, id: string) => new FormError(404, `There is no console ${kind === 'providers' ? 'provider' : 'model'} “${id}” (entries from the configuration file are changed there).`);
  const providerIds = () => deps.catalogue.providers().map((p) => p.id);

  const overview: CatalogueHandler = async (ctx, session) => {
    const query = new URLSearchParams(ctx.query);
    const notice = query.get('done');
    // Only our own fixed messages come back this way; anything else is dropped.
    const known = notice !== null && /^(Provider|Model) [^<>]{1,220} (added|saved|removed)\.$/.test(notice) ? notice : null;
    const discovered = await deps.store.catalogue.discovered();
    const all = deps.catalogue.current().models;
    const q = (query.get('q') ?? '').slice(0, 200);
    const list = modelPage(all, q, pageSpec(query));
    sendHtml(ctx.res, 200, overviewPage({ session, notice: known, providers: deps.catalogue.providers(), modelCount: all.length, list, q, query, discovered, now: Date.now() }));
  };

  /** The upstream's own model list, registered as console models. */
  const importFrom: CatalogueHandler = async (ctx, session, params) => {
    await checkedForm(ctx, session);
    const providerId = decodeParam(params.id!, 'There is no such provider.');
    let outcome: ImportOutcome | { error: string; url: string | null } | undefined;
    try {
      outcome = await importModels(providerId, deps.catalogue, admin, deps.providers);
    } catch (error) {
      // GatewayError messages name the provider and the failure, never its credential; the address is masked.
      outcome = { error: toGatewayError(error).message, url: error instanceof ModelListingError ? error.url : null };
    }
    if (outcome === undefined) throw new FormError(404, `There is no provider “${providerId}”.`);
    sendHtml(ctx.res, 'error' in outcome ? 502 : 200, importPage(session, providerId, outcome));
  };

  /** GET: the confirmation; POST: removes the console entry (409 while a model still uses the provider). */
  const remove: CatalogueHandler = async (ctx, session, params) => {
    const kind = params.kind as EntryKind;
    const id = decodeParam(params.id!, 'There is no such entry.');
    if ((await stored(kind, id)) === undefined) throw notConsole(kind, id);
    // A provider that models still use is named with them.
    const users = () => (kind === 'providers' ? deps.catalogue.current().models.filter((m) => m.deployments.some((d) => d.providerId === id)).map((m) => m.id) : []);
    if (ctx.req.method === 'GET') return sendHtml(ctx.res, 200, deletePage(session, kind, id, users()));
    await checkedForm(ctx, session);
    const result = kind === 'providers' ? await admin.deleteProvider(id) : await admin.deleteModel(id);
    if (!result.ok) return sendHtml(ctx.res, 409, deletePage(session, kind, id, users(), Object.values(result.errors).join(' ')));
    done(ctx, `${kind === 'providers' ? 'Provider' : 'Model'} ${id} removed.`);
  };

  /** GET: the entry's form (blank, or the stored entry); POST: saves it, or shows the form again with its errors (400). */
  const entry = (mode: EntryMode): CatalogueHandler => async (ctx, session, params) => {
    const kind = params.kind as EntryKind;
    const id = mode === 'create' ? '' : decodeParam(params.id!, 'There is no such entry.');
    const existing = mode === 'update' ? await stored(kind, id) : undefined;
    if (mode === 'update' && existing === undefined) throw notConsole(kind, id);
    const provider = kind === 'providers' && mode === 'update' ? deps.catalogue.providers().find((p) => p.id === id) : undefined;
    const secrets = { headerNames: provider?.headerNames ?? [], set: provider?.secretsSet ?? [] };

    if (ctx.req.method === 'GET') {
      const values = existing ? valuesOf(existing) : kind === 'providers' ? { kind: 'openai' } : { endpoints: [...GENERATION_ENDPOINTS], provider: new URLSearchParams(ctx.query).get('provider') ?? '' };
      return sendHtml(ctx.res, 200, kind === 'providers' ? providerForm(session, mode, values, {}, secrets) : modelForm(session, mode, values, {}, providerIds()));
    }

    const form = await checkedForm(ctx, session);
    if (mode === 'update') form.set('id', id); // the id names the entry; it is not editable
    let result: AdminResult;
    if (kind === 'providers') {
      const { raw, secrets: changes, errors } = readProviderForm(form);
      result = Object.keys(errors).length > 0 ? { ok: false, errors } : await admin.saveProvider(mode, raw, changes);
      if (!result.ok) result = { ok: false, errors: providerFormErrors(result.errors) };
    } else {
      const { raw, lines, errors } = readModelForm(form);
      result = Object.keys(errors).length > 0 ? { ok: false, errors } : await admin.saveModel(mode, raw);
      if (!result.ok) result = { ok: false, errors: modelFormErrors(result.errors, lines) };
    }
    if (!result.ok) {
      const values = formValues(form);
      return sendHtml(ctx.res, 400, kind === 'providers' ? providerForm(session, mode, values, result.errors, secrets) : modelForm(session, mode, values, result.errors, providerIds()));
    }
    done(ctx, `${kind === 'providers' ? 'Provider' : 'Model'} ${id || form.get('id')} ${mode === 'create' ? 'added' : 'saved'}.`);
  };

  const routes = [
    pathRoute('GET', '/app/catalogue', overview),
    pathRoute('POST', '/app/catalogue/providers/:id/import', importFrom),
    pathRoute(['GET', 'POST'], '/app/catalogue/:kind(providers|models)/new', entry('create')),
    pathRoute(['GET', 'POST'], '/app/catalogue/:kind(providers|models)/:id/edit', entry('update')),
    pathRoute(['GET', 'POST'], '/app/catalogue/:kind(providers|models)/:id/delete', remove),
  ];

  return page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    // Another process may have written a moment ago; show the store as it is, not as last polled.
    await deps.catalogue.refresh();
    const route = findRoute(routes, ctx.req.method, ctx.path);
    if (route === undefined) throw new FormError(404, 'There is no such page.');
    await route.handler(ctx, session, route.params);
  });
}
