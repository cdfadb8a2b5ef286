import type { CatalogueModel, PricingSource } from '../../catalogue/catalogue.js';
import { operationsOf } from '../../catalogue/access.js';
import type { Handler, RequestContext } from '../../http/handler.js';
import type { Health } from '../../status/health.js';
import { page, visitor, type ConsoleDeps } from '../console-context.js';
import { formatInt, formatPrice, html, layout, type Html, type LayoutOptions } from '../html.js';
import { FormError, sendHtml, sendPublicJson, wantsJson } from '../http.js';

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

/** Search over id, display name, owner and description; sorting with missing values last either way. */
function select(models: readonly CatalogueModel[], q: string, sort: SortKey, dir: 'asc' | 'desc'): CatalogueModel[] {
  const needle = q.trim().toLowerCase();
  const found = needle === '' ? [...models] : models.filter((m) => [m.id, m.displayName ?? '', m.ownedBy, m.description ?? ''].some((text) => text.toLowerCase().includes(needle)));
  if (sort === 'default') return dir === 'desc' ? found.reverse() : found;
  const value = SORTS[sort].value;
  return found.sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    const order = x < y ? -1 : x > y ? 1 : 0;
    return dir === 'asc' ? order : -order;
  });
}

export function healthPill(health: Health): Html {
  const label = { up: 'Up', degraded: 'Degraded', down: 'Down', unknown: 'No recent data' }[health];
  return html`<span class="pill pill-${health}">${label}</span>`;
}

function price(value: number | undefined): Html {
  return value === undefined ? html`<span class="muted">—</span>` : html`${formatPrice(value)}`;
}

function listPage(models: CatalogueModel[], health: Map<string, Health>, q: string, sort: SortKey, dir: 'asc' | 'desc', total: number, user: LayoutOptions['user']) {
  const header = (key: SortKey, label: string, numeric = false) => {
    const active = sort === key;
    const nextDir = active && dir === 'asc' ? 'desc' : 'asc';
    const params = new URLSearchParams({ ...(q ? { q } : {}), sort: key, dir: nextDir });
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
  <button type="submit" class="btn btn-small">Apply</button>
</form>
<p class="muted small" role="status">${models.length === total ? `${total} model${total === 1 ? '' : 's'}` : `${models.length} of ${total} models match “${q}”`}. Prices in USD per million tokens.</p>
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
      ? html`<tr><td colspan="9" class="empty">No model matches.</td></tr>`
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
    <td>${healthPill(health.get(m.id) ?? 'unknown')}</td>
  </tr>`,
        )
  }
  </tbody>
</table>
</div>`,
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
    const health = await deps.status.modelHealth();
    const all = deps.catalogue.current().models;
    const q = (query.get('q') ?? '').slice(0, 200);
    const sortParam = query.get('sort') ?? 'default';
    // Own keys only: `in` would also accept what every object inherits (constructor, toString, …).
    // An unknown sort is the catalogue order, as an unknown `dir` is ascending.
    const sort: SortKey = Object.hasOwn(SORTS, sortParam) ? (sortParam as SortKey) : 'default';
    const dir = query.get('dir') === 'desc' ? 'desc' : 'asc';
    const models = select(all, q, sort, dir);
    if (forceJson || wantsJson(ctx.req, query)) {
      return sendPublicJson(ctx.res, { object: 'list', note: KEY_DEPENDENT_NOTE, data: models.map((m) => modelJson(m, health.get(m.id) ?? 'unknown')) });
    }
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, listPage(models, health, q, sort, dir, all.length, user), headers);
  };

  const detail = page(deps, async (ctx) => {
    let id: string;
    try {
      id = decodeURIComponent(ctx.path.slice('/models/'.length));
    } catch {
      throw new FormError(404, 'There is no such model.');
    }
    const query = new URLSearchParams(ctx.query);
    const json = wantsJson(ctx.req, query);
    const model = deps.catalogue.current().get(id);
    if (model === undefined) {
      if (json) return void ctx.res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `There is no model '${id}'.`, code: 'model_not_found' } }));
      throw new FormError(404, `There is no model “${id}” in the catalogue. See /models for every model.`);
    }
    const health = (await deps.status.modelHealth()).get(model.id) ?? 'unknown';
    if (json) return sendPublicJson(ctx.res, { ...modelJson(model, health), note: KEY_DEPENDENT_NOTE });
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, detailPage(model, health, user), headers);
  });

  return { list: page(deps, (ctx) => respondList(ctx, false)), json: page(deps, (ctx) => respondList(ctx, true)), detail };
}
