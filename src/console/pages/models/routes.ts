import type { Catalogue, CatalogueModel, PricingSource } from '../../../catalogue/catalogue.js';
import { operationsOf } from '../../../catalogue/access.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import type { Health } from '../../../status/health.js';
import type { HealthOf } from '../../../status/status-monitor.js';
import { page, visitor, type ConsoleDeps } from '../../console-context.js';
import { formatInt, formatPrice, html, layout, type Html, type LayoutOptions } from '../../html.js';
import { FormError, sendHtml, sendPublicJson, wantsJson } from '../../http.js';
import { decodeParam } from '../../path-routes.js';
import { PAGE_SIZE, pageHref, pageOf, pageSpec, paged, pager, PagingError, type PageSpec, type Paged } from '../../paging.js';

/** A bad paging parameter of `/models.json`, in the public JSON's error shape. */
function sendPublicJsonError(ctx: RequestContext, error: PagingError): void {
  ctx.res
    .writeHead(error.status, { 'content-type': 'application/json', 'cache-control': 'no-cache', 'access-control-allow-origin': '*' })
    .end(JSON.stringify({ error: { message: error.message, code: 'invalid_request', param: error.param } }));
}

export const KEY_DEPENDENT_NOTE =
  'This page lists every model the gateway offers. The list an API key gets from GET /v1/models depends on the key: a key restricted to some models sees only those. Prices, context windows and operations here are authoritative; those in API listings are not.';

const SORTS = {
  default: { label: 'Catalogue order', value: () => 0 },
  id: { label: 'Model', value: (m: CatalogueModel) => m.id.toLowerCase() },
  owner: { label: 'Owner', value: (m: CatalogueModel) => m.ownedBy.toLowerCase() },
  context: { label: 'Context', value: (m: CatalogueModel) => m.contextWindow ?? null },
  output: { label: 'Max output', value: (m: CatalogueModel) => m.maxOutputTokens ?? null },
  input_price: { label: 'Input price', value: (m: CatalogueModel) => m.pricing?.inputPerMtok ?? null },
  output_price: { label: 'Output price', value: (m: CatalogueModel) => m.pricing?.outputPerMtok ?? null },
} as const satisfies Record<string, { label: string; value: (m: CatalogueModel) => string | number | null }>;
type SortKey = keyof typeof SORTS;

function modelJson(model: CatalogueModel, health: Health) {
  return {
    id: model.id,
    display_name: model.displayName ?? model.id,
    owned_by: model.ownedBy,
    description: model.description ?? null,
    created: model.created,
    context_window: model.contextWindow ?? null,
    max_output_tokens: model.maxOutputTokens ?? null,
    pricing: model.pricing ? { input_per_mtok: model.pricing.inputPerMtok, output_per_mtok: model.pricing.outputPerMtok, currency: 'USD' } : null,
    pricing_source: pricingSourceJson(model.pricingSource),
    operations: operationsOf(model),
    health,
  };
}

function pricingSourceJson(source: PricingSource | undefined) {
  if (source === undefined) return null;
  return source.kind === 'entry' ? { kind: source.kind } : { kind: source.kind, origin: source.origin, as_of: source.asOf };
}

/** Where a model's price came from, in words: its own entry, or which price list; a dash when unpriced. */
export function priceSource(model: CatalogueModel): Html {
  return model.pricingSource === undefined ? html`<span class="muted">—</span>` : html`${pricingSourceLabel(model.pricingSource)}`;
}

function pricingSourceLabel(source: PricingSource): string {
  // The admin page's Origin column says which entry; the public page needs no more.
  if (source.kind === 'entry') return 'its own pricing';
  return source.origin === 'shipped' ? `Sluice price list of ${source.asOf}` : `imported price list of ${source.asOf}`;
}

/** The models in a sort of the page (missing values last either way; ties keep the catalogue order), sorted once per catalogue snapshot. */
function sorted(catalogue: Catalogue, sort: SortKey, dir: 'asc' | 'desc'): readonly CatalogueModel[] {
  return catalogue.derive(`models-page:${sort}:${dir}`, (all) => {
    if (sort === 'default') return dir === 'desc' ? [...all].reverse() : all;
    // Each model's value is read once, not once per comparison.
    const value = SORTS[sort].value;
    const keyed = all.map((model) => ({ model, key: value(model) }));
    keyed.sort(({ key: x }, { key: y }) => {
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      const order = x < y ? -1 : x > y ? 1 : 0;
      return dir === 'asc' ? order : -order;
    });
    return keyed.map(({ model }) => model);
  });
}

/** Each model's lower-case id, display name, owner and description, aligned with `sorted`; prepared on the first search. */
function searchTexts(catalogue: Catalogue, sort: SortKey, dir: 'asc' | 'desc'): readonly string[] {
  return catalogue.derive(`models-page:text:${sort}:${dir}`, () => {
    const textOf = catalogue.derive('models-page:text', (models) => new Map(models.map((m) => [m, [m.id, m.displayName ?? '', m.ownedBy, m.description ?? ''].join('\u0000').toLowerCase()])));
    return sorted(catalogue, sort, dir).map((m) => textOf.get(m)!);
  });
}

/**
 * One page of the models, sorted, and filtered by a search over id, display name, owner and
 * description. Without a search the page is a slice; a search reads each model's prepared text once.
 */
function select(catalogue: Catalogue, q: string, sort: SortKey, dir: 'asc' | 'desc', spec: PageSpec): Paged<CatalogueModel> {
  const models = sorted(catalogue, sort, dir);
  const needle = q.trim().toLowerCase();
  if (needle === '') return pageOf(models, spec);
  // The prepared text joins the fields with NUL, which no search may span.
  if (needle.includes('\u0000')) return paged([], 0, spec);
  const texts = searchTexts(catalogue, sort, dir);
  const start = (spec.page - 1) * spec.limit;
  const page: CatalogueModel[] = [];
  let total = 0;
  for (let i = 0; i < texts.length; i++) {
    if (!texts[i]!.includes(needle)) continue;
    if (total >= start && page.length < spec.limit) page.push(models[i]!);
    total++;
  }
  return paged(page, total, spec);
}

export function healthPill(health: Health): Html {
  const label = { up: 'Up', degraded: 'Degraded', down: 'Down', unknown: 'No recent data' }[health];
  return html`<span class="pill pill-${health}">${label}</span>`;
}

function price(value: number | undefined): Html {
  return value === undefined ? html`<span class="muted">—</span>` : html`${formatPrice(value)}`;
}

function listPage(list: Paged<CatalogueModel>, query: URLSearchParams, healthOf: HealthOf, q: string, sort: SortKey, dir: 'asc' | 'desc', all: number, user: LayoutOptions['user']) {
  const models = list.items;
  const limit: Record<string, string> = list.limit === PAGE_SIZE.default ? {} : { limit: String(list.limit) };
  const header = (key: SortKey, label: string, numeric = false) => {
    const active = sort === key;
    const nextDir = active && dir === 'asc' ? 'desc' : 'asc';
    const params = new URLSearchParams({ ...(q ? { q } : {}), sort: key, dir: nextDir, ...limit });
    return html`<th scope="col"${numeric ? html` class="num"` : ''}${active ? html` aria-sort="${dir === 'asc' ? 'ascending' : 'descending'}"` : ''}><a href="/models?${params.toString()}">${label}${active ? (dir === 'asc' ? ' ▲' : ' ▼') : ''}</a></th>`;
  };
  return layout({
    title: 'Models',
    user,
    nav: 'models',
    body: html`<div class="page-head">
  <h1>Models</h1>
  <p class="lead">${KEY_DEPENDENT_NOTE}</p>
</div>
<form class="filter" method="get" action="/models" role="search">
  <label for="q">Search models</label>
  <input id="q" name="q" type="search" value="${q}" placeholder="id, name, owner…">
  <label for="sort">Sort by</label>
  <select id="sort" name="sort">
    ${(Object.keys(SORTS) as SortKey[]).map((key) => html`<option value="${key}"${key === sort ? html` selected` : ''}>${SORTS[key].label}</option>`)}
  </select>
  <label for="dir">Order</label>
  <select id="dir" name="dir">
    <option value="asc"${dir === 'asc' ? html` selected` : ''}>ascending</option>
    <option value="desc"${dir === 'desc' ? html` selected` : ''}>descending</option>
  </select>
  ${list.limit === PAGE_SIZE.default ? '' : html`<input type="hidden" name="limit" value="${list.limit}">`}
  <button type="submit" class="btn btn-small">Apply</button>
</form>
<p class="muted small" role="status">${q.trim() === '' ? `${all} model${all === 1 ? '' : 's'}` : `${list.total} of ${all} models match “${q}”`}. Prices in USD per million tokens.</p>
<div class="table-scroll" role="region" aria-label="Models" tabindex="0">
<table class="data wide" id="models-table">
  <thead><tr>
    ${header('id', 'Model')}${header('owner', 'Owner')}${header('context', 'Context', true)}${header('output', 'Max output', true)}
    ${header('input_price', 'Input / 1M', true)}${header('output_price', 'Output / 1M', true)}<th scope="col">Price from</th>
    <th scope="col">Operations</th><th scope="col">Health</th>
  </tr></thead>
  <tbody>
  ${
    models.length === 0
      ? html`<tr><td colspan="9" class="empty">${list.page > list.pages ? html`No models on this page: <a href="${pageHref('/models', query, 1)}">back to the first</a>.` : 'No model matches.'}</td></tr>`
      : models.map(
          (m) => html`<tr data-model="${m.id}">
    <th scope="row"><a href="/models/${encodeURIComponent(m.id)}"><code>${m.id}</code></a>${m.displayName ? html`<br><span class="muted">${m.displayName}</span>` : ''}</th>
    <td>${m.ownedBy}</td>
    <td class="num">${m.contextWindow === undefined ? html`<span class="muted">—</span>` : formatInt(m.contextWindow)}</td>
    <td class="num">${m.maxOutputTokens === undefined ? html`<span class="muted">—</span>` : formatInt(m.maxOutputTokens)}</td>
    <td class="num price-in">${price(m.pricing?.inputPerMtok)}</td>
    <td class="num price-out">${price(m.pricing?.outputPerMtok)}</td>
    <td class="price-source">${priceSource(m)}</td>
    <td>${operationsOf(m).map((path, i) => html`${i > 0 ? ' ' : ''}<code>${path}</code>`)}</td>
    <td>${healthPill(healthOf(m))}</td>
  </tr>`,
        )
  }
  </tbody>
</table>
</div>
${pager('/models', query, list, 'Models')}`,
  });
}

function detailPage(m: CatalogueModel, health: Health, user: LayoutOptions['user']) {
  return layout({
    title: m.displayName ?? m.id,
    user,
    nav: 'models',
    body: html`<p class="crumbs"><a href="/models">Models</a> / <code>${m.id}</code></p>
<div class="page-head">
  <h1>${m.displayName ?? m.id}</h1>
  <p>${healthPill(health)} <a href="/status">Service status</a></p>
</div>
${m.description ? html`<p class="lead">${m.description}</p>` : ''}
<dl class="facts card">
  <dt>Model id</dt><dd><code>${m.id}</code></dd>
  <dt>Owner</dt><dd>${m.ownedBy}</dd>
  <dt>Context window</dt><dd>${m.contextWindow === undefined ? '—' : `${formatInt(m.contextWindow)} tokens`}</dd>
  <dt>Max output</dt><dd>${m.maxOutputTokens === undefined ? '—' : `${formatInt(m.maxOutputTokens)} tokens`}</dd>
  <dt>Input price</dt><dd>${m.pricing ? `${formatPrice(m.pricing.inputPerMtok)} per million tokens` : 'not priced'}</dd>
  <dt>Output price</dt><dd>${m.pricing ? `${formatPrice(m.pricing.outputPerMtok)} per million tokens` : 'not priced'}</dd>
  ${m.pricing ? html`<dt>Cached input price</dt><dd>${formatPrice(m.pricing.cachedInputPerMtok)} per million tokens</dd>
  <dt>Cache write price</dt><dd>${formatPrice(m.pricing.cacheWritePerMtok)} per million tokens</dd>` : ''}
  <dt>Price from</dt><dd class="price-source">${priceSource(m)}</dd>
  <dt>Operations</dt><dd>${operationsOf(m).map((path, i) => html`${i > 0 ? ', ' : ''}<code>POST ${path}</code>`)}</dd>
  ${m.version ? html`<dt>Version</dt><dd>${m.version}</dd>` : ''}
  ${m.created ? html`<dt>Released</dt><dd>${new Date(m.created * 1000).toISOString().slice(0, 10)}</dd>` : ''}
</dl>
<h2>Try it</h2>
<pre><code>curl -s $SLUICE_URL${tryIt(m).path} \\
  -H "Authorization: Bearer $SLUICE_KEY" -H 'content-type: application/json' \\
  -d '${JSON.stringify(tryIt(m).body)}'</code></pre>
<p class="muted small">Whether your key may use this model depends on the key; see <a href="/app/keys">your keys</a>. JSON: <a href="/models/${encodeURIComponent(m.id)}?format=json">this model</a>.</p>`,
  });
}

/** The simplest request the model serves, for the "Try it" example. */
function tryIt(m: CatalogueModel): { path: string; body: unknown } {
  if (m.endpoints.has('completions')) return { path: '/v1/completions', body: { model: m.id, prompt: 'Say hi', max_tokens: 16 } };
  if (m.endpoints.has('chat')) return { path: '/v1/chat/completions', body: { model: m.id, messages: [{ role: 'user', content: 'Say hi' }] } };
  return { path: '/v1/responses', body: { model: m.id, input: 'Say hi' } };
}

export function modelsRoutes(deps: ConsoleDeps): { list: Handler; json: Handler; detail: Handler } {
  const respondList = async (ctx: RequestContext, forceJson: boolean) => {
    const query = new URLSearchParams(ctx.query);
    const json = forceJson || wantsJson(ctx.req, query);
    const catalogue = deps.catalogue.current();
    const q = (query.get('q') ?? '').slice(0, 200);
    const sortParam = query.get('sort') ?? 'default';
    // Own keys only: `in` would also accept what every object inherits (constructor, toString, …).
    // An unknown sort is the catalogue order, as an unknown `dir` is ascending.
    const sort: SortKey = Object.hasOwn(SORTS, sortParam) ? (sortParam as SortKey) : 'default';
    const dir = query.get('dir') === 'desc' ? 'desc' : 'asc';
    let spec: PageSpec;
    try {
      spec = pageSpec(query);
    } catch (error) {
      if (json && error instanceof PagingError) return sendPublicJsonError(ctx, error);
      throw error;
    }
    const list = select(catalogue, q, sort, dir, spec);
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
    sendHtml(ctx.res, 200, listPage(list, query, healthOf, q, sort, dir, catalogue.models.length, user), headers);
  };

  const detail = page(deps, async (ctx) => {
    const id = decodeParam(ctx.path.slice('/models/'.length), 'There is no such model.');
    const query = new URLSearchParams(ctx.query);
    const json = wantsJson(ctx.req, query);
    const model = deps.catalogue.current().get(id);
    if (model === undefined) {
      if (json) return void ctx.res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `There is no model '${id}'.`, code: 'model_not_found' } }));
      throw new FormError(404, `There is no model “${id}” in the catalogue. See /models for every model.`);
    }
    const health = (await deps.status.modelHealth())(model);
    if (json) return sendPublicJson(ctx.res, { ...modelJson(model, health), note: KEY_DEPENDENT_NOTE });
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, detailPage(model, health, user), headers);
  });

  return { list: page(deps, (ctx) => respondList(ctx, false)), json: page(deps, (ctx) => respondList(ctx, true)), detail };
}
