// The public model pages as HTML: the searchable, sortable list and one model's page, and the
// health, price and price-source labels the status and catalogue pages share.
import { operationsOf } from '../../../catalogue/access.js';
import type { Catalogue, CatalogueModel, PricingSource } from '../../../catalogue/catalogue.js';
import type { Pricing } from '../../../pricing/cost.js';
import type { Health } from '../../../status/health.js';
import type { HealthOf } from '../../../status/status-monitor.js';
import { dayTag, formatInt, formatPrice, html, layout, type Html, type LayoutOptions } from '../../html.js';
import { PAGE_SIZE, pageHref, pager, type Paged } from '../../paging.js';
import { tryIt } from './try-it.js';
import { KEY_DEPENDENT_NOTE, SORTS, type ListQuery, type SortKey } from './listing.js';

/** Where a model's price came from, in words: its own entry, or which price list; a dash when unpriced. */
export function priceSource(model: CatalogueModel): Html {
  return model.pricingSource === undefined ? html`<span class="muted">—</span>` : html`${pricingSourceLabel(model.pricingSource)}`;
}

function pricingSourceLabel(source: PricingSource): string {
  // The admin page's Origin column says which entry; the public page needs no more.
  if (source.kind === 'entry') return 'its own pricing';
  return source.origin === 'shipped' ? `Sluice price list of ${source.asOf}` : `imported price list of ${source.asOf}`;
}

export function healthPill(health: Health): Html {
  const label = { up: 'Up', degraded: 'Degraded', down: 'Down', unknown: 'No recent data' }[health];
  return html`<span class="pill pill-${health}">${label}</span>`;
}

/** The prices besides tokens, in words, in the order pricing lists them. */
const UNIT_PRICES = [
  ['perImage', 'per image'],
  ['perAudioMinute', 'per minute of audio'],
  ['perMchar', 'per million characters'],
  ['perRequest', 'per request'],
] as const satisfies readonly (readonly [keyof Pricing, string])[];

/** "$0.04 per image", one for each unit besides tokens a model is sold in. */
export function unitPrices(pricing: Pricing | undefined): string[] {
  if (pricing === undefined) return [];
  return UNIT_PRICES.flatMap(([unit, label]) => (pricing[unit] === undefined ? [] : [`${formatPrice(pricing[unit])} ${label}`]));
}

/** Every price of a model, one a line ("$0.20 per 1M input tokens", "$0.04 per image"); a dash when unpriced. */
export function priceLines(pricing: Pricing | undefined): Html {
  const tokens = [
    ['inputPerMtok', 'input'],
    ['outputPerMtok', 'output'],
  ] as const;
  const lines = [...tokens.flatMap(([unit, label]) => (pricing?.[unit] === undefined ? [] : [`${formatPrice(pricing[unit])} per 1M ${label} tokens`])), ...unitPrices(pricing)];
  return lines.length === 0 ? html`<span class="muted">—</span>` : html`${lines.map((line, i) => html`${i > 0 ? html`<br>` : ''}${line}`)}`;
}

/** A token price on a model's page: "not priced" without pricing, and for a model not sold by the token. */
function perMtok(pricing: Pricing | undefined, value: number | undefined): string {
  if (pricing === undefined) return 'not priced';
  return value === undefined ? 'not sold by the token' : `${formatPrice(value)} per million tokens`;
}

function price(value: number | undefined): Html {
  return value === undefined ? html`<span class="muted">—</span>` : html`${formatPrice(value)}`;
}

/** The catalogue's other names: each model's exact aliases, and the `model_aliases` patterns. */
export type CatalogueNames = Pick<Catalogue, 'aliasesOf' | 'patterns'>;

/** A page of the list (`all` models in the catalogue), sorted and searched as `q`, `sort` and `dir` say; each model's aliases under it, the patterns below. */
export function listPage(list: Paged<CatalogueModel>, query: URLSearchParams, healthOf: HealthOf, { q, sort, dir }: ListQuery, all: number, names: CatalogueNames, user: LayoutOptions['user']): Html {
  const models = list.items;
  const aliasesOf = (m: CatalogueModel) => names.aliasesOf(m.id);
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
<p class="muted small" role="status">${q.trim() === '' ? `${all} model${all === 1 ? '' : 's'}` : `${list.total} of ${all} models match “${q}”`}. Token prices in USD per million tokens; other units under the model.</p>
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
    <th scope="row"><a href="/models/${encodeURIComponent(m.id)}"><code>${m.id}</code></a>${m.displayName ? html`<br><span class="muted">${m.displayName}</span>` : ''}${aliasesOf(m).length > 0 ? html`<br><span class="muted small aliases">aliases: ${aliasesOf(m).map((alias, i) => html`${i > 0 ? ', ' : ''}<code>${alias}</code>`)}</span>` : ''}${unitPrices(m.pricing).length > 0 ? html`<br><span class="price-units small">${unitPrices(m.pricing).join(', ')}</span>` : ''}</th>
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
${pager('/models', query, list, 'Models')}
${
  names.patterns.length === 0
    ? ''
    : html`<p class="muted small" id="model-patterns">Other names, by pattern (the first that matches wins; an id or an alias comes first; GET /v1/models cannot list them): ${names.patterns.map((p, i) => html`${i > 0 ? '; ' : ''}<code>${p.pattern}</code> → <a href="/models/${encodeURIComponent(p.target.id)}"><code>${p.target.id}</code></a>`)}.</p>`
}`,
  });
}

/** `origin`: this gateway as the reader reached it, for the "Try it" example. */
export function detailPage(m: CatalogueModel, health: Health, user: LayoutOptions['user'], origin: string): Html {
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
  <dt>Input price</dt><dd>${perMtok(m.pricing, m.pricing?.inputPerMtok)}</dd>
  <dt>Output price</dt><dd>${perMtok(m.pricing, m.pricing?.outputPerMtok)}</dd>
  ${m.pricing?.inputPerMtok !== undefined ? html`<dt>Cached input price</dt><dd>${perMtok(m.pricing, m.pricing.cachedInputPerMtok)}</dd>
  <dt>Cache write price</dt><dd>${perMtok(m.pricing, m.pricing.cacheWritePerMtok)}</dd>` : ''}
  ${unitPrices(m.pricing).length > 0 ? html`<dt>Other prices</dt><dd class="price-units">${unitPrices(m.pricing).join(', ')}</dd>` : ''}
  <dt>Price from</dt><dd class="price-source">${priceSource(m)}</dd>
  <dt>Operations</dt><dd>${operationsOf(m).map((path, i) => html`${i > 0 ? ', ' : ''}<code>POST ${path}</code>`)}</dd>
  ${m.version ? html`<dt>Version</dt><dd>${m.version}</dd>` : ''}
  ${m.created ? html`<dt>Released</dt><dd>${dayTag(m.created * 1000)}</dd>` : ''}
</dl>
<h2>Try it</h2>
<pre><code class="try-it">${tryIt(m, origin)}</code></pre>
<p class="muted small">Whether your key may use this model depends on the key; see <a href="/app/keys">your keys</a>. JSON: <a href="/models/${encodeURIComponent(m.id)}?format=json">this model</a>.</p>`,
  });
}
