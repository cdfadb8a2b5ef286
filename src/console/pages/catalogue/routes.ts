import type { AdminResult, FieldErrors, SecretChanges } from '../../../catalogue/catalogue-admin.js';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { importModels, type ImportOutcome } from '../../../discovery/model-import.js';
import { toGatewayError } from '../../../core/errors.js';
import type { DiscoveredList } from '../../../store/store.js';
import { DISCOVER_DEFAULTS, ENDPOINTS, PROVIDER_DEFAULTS, PROVIDER_KINDS, UPSTREAM_APIS, type DeploymentConfig, type DiscoverConfig } from '../../../config/config-file.js';
import { exclusion } from '../../../catalogue/discovered.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { checkedForm, page, requireSession, userOf, type ConsoleDeps } from '../../console-context.js';
import { formatPrice, html, layout, type Html } from '../../html.js';
import { FormError, redirect, sendHtml } from '../../http.js';
import { PAGE_SIZE, pageOf, pageSpec, paged, pager, type PageSpec, type Paged } from '../../paging.js';
import { priceSource } from '../models.js';
import type { Session } from '../../sessions.js';

type Values = Record<string, string | string[]>;
type Kind = 'providers' | 'models';

/** The provider form's limits, each with its label and placeholder (the default where there is one). */
const LIMIT_FIELDS: readonly (readonly [name: string, label: string, placeholder: string])[] = [
  ['connect_timeout_ms', 'Connect timeout (ms)', String(PROVIDER_DEFAULTS.connect_timeout_ms)],
  ['response_timeout_ms', 'Response timeout (ms, until headers)', String(PROVIDER_DEFAULTS.response_timeout_ms)],
  ['idle_timeout_ms', 'Idle timeout (ms)', String(PROVIDER_DEFAULTS.idle_timeout_ms)],
  ['keep_alive_timeout_ms', 'Keep idle connections (ms)', String(PROVIDER_DEFAULTS.keep_alive_timeout_ms)],
  ['max_response_bytes', 'Largest whole answer (bytes)', String(PROVIDER_DEFAULTS.max_response_bytes)],
  ['max_connections', 'Max connections', '256'],
];

/** A text input of an entry form, with its label, hint and error wired for assistive technology. */
function field(name: string, label: string, values: Values, errors: FieldErrors, options: { type?: string; hint?: string | Html; required?: boolean; readonly?: boolean; placeholder?: string; step?: string } = {}): Html {
  const id = `f-${name}`;
  const error = errors[name];
  const described = [options.hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ');
  const value = values[name];
  return html`<div class="field">
  <label for="${id}">${label}${options.required ? '' : html` <span class="muted">(optional)</span>`}</label>
  <input id="${id}" name="${name}" type="${options.type ?? 'text'}" value="${typeof value === 'string' ? value : ''}"${options.required ? html` required` : ''}${options.readonly ? html` readonly` : ''}${options.placeholder ? html` placeholder="${options.placeholder}"` : ''}${options.step ? html` step="${options.step}"` : ''}${described ? html` aria-describedby="${described}"` : ''}${error ? html` aria-invalid="true"` : ''} autocomplete="off">
  ${options.hint ? html`<p class="hint" id="${id}-hint">${options.hint}</p>` : ''}
  ${error ? html`<p class="field-error" id="${id}-err">${error}</p>` : ''}
</div>`;
}

/** A textarea of an entry form, wired like `field`. The newline after the tag is dropped by the parser, so a value's own first blank line survives. */
function textField(name: string, label: string, values: Values, errors: FieldErrors, options: { hint?: string | Html; rows?: number; placeholder?: string } = {}): Html {
  const id = `f-${name}`;
  const error = errors[name];
  const described = [options.hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ');
  const value = values[name];
  return html`<div class="field">
  <label for="${id}">${label} <span class="muted">(optional)</span></label>
  <textarea id="${id}" name="${name}" rows="${options.rows ?? 3}" spellcheck="false"${options.placeholder ? html` placeholder="${options.placeholder}"` : ''}${described ? html` aria-describedby="${described}"` : ''}${error ? html` aria-invalid="true"` : ''} autocomplete="off">
${typeof value === 'string' ? value : ''}</textarea>
  ${options.hint ? html`<p class="hint" id="${id}-hint">${options.hint}</p>` : ''}
  ${error ? html`<p class="field-error" id="${id}-err">${error}</p>` : ''}
</div>`;
}

function errorSummary(errors: FieldErrors): Html {
  const entries = Object.entries(errors);
  if (entries.length === 0) return html``;
  return html`<div class="notice notice-error" role="alert"><p>Nothing was saved:</p><ul>${entries.map(([name, message]) => html`<li>${name === '_' ? '' : html`<code>${name}</code>: `}${message}</li>`)}</ul></div>`;
}

/** Each deployment as `provider/upstream model`, the name the ledger and /status use, with its weight and priority where they are not the defaults. */
function deploymentList(model: CatalogueModel): Html {
  return html`<ul class="plain">${model.deployments.map((d) => {
    const attributes = [d.weight !== 1 ? `weight ${d.weight}` : '', d.priority !== 0 ? `priority ${d.priority}` : ''].filter(Boolean).join(', ');
    return html`<li><code>${d.name}</code>${attributes ? html` <span class="muted small">${attributes}</span>` : ''}</li>`;
  })}</ul>`;
}

/** Where an entry came from: a discovered model names its provider. */
function originTag(origin: CatalogueModel['origin'], providerId: string): Html {
  const label = origin === 'config' ? 'configuration file' : origin === 'console' ? 'console' : `discovered from ${providerId}`;
  return html`<span class="tag tag-${origin}">${label}</span>`;
}

/** How many models of a stored list the patterns take: at `max_models`, discovery cut the list there. */
function takenCount(list: DiscoveredList | undefined, settings: DiscoverConfig): number {
  if (!Array.isArray(list?.models)) return 0;
  return (list.models as { id?: unknown }[]).filter((model) => typeof model?.id === 'string' && exclusion(settings, model.id) === undefined).length;
}

/** A provider's discovery: off, or its interval and how the last listing went. */
function discoveryCell(settings: DiscoverConfig | undefined, list: DiscoveredList | undefined): Html {
  if (settings === undefined) return html`<span class="muted">off</span>`;
  const listed = list?.listedAt == null ? 'not listed yet' : `listed ${new Date(list.listedAt).toISOString()}`;
  const atLimit = takenCount(list, settings) >= settings.max_models;
  return html`every ${settings.interval_ms / 1000} s<br><span class="muted small">${listed}</span>${atLimit ? html`<br><span class="field-error small">at the limit of ${settings.max_models} models (discover.max_models): any more the upstream lists are left out</span>` : ''}${list?.error ? html`<br><span class="field-error small">last listing failed: ${list.error}</span>` : ''}`;
}

/** The query for the pager's links: the one-time notice is not carried to other pages. */
function withoutNotice(query: URLSearchParams): URLSearchParams {
  const kept = new URLSearchParams(query);
  kept.delete('done');
  return kept;
}

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

function overview(deps: ConsoleDeps, session: Session, notice: string | null, lists: readonly DiscoveredList[], query: URLSearchParams) {
  const providers = deps.catalogue.providers();
  const all = deps.catalogue.current().models;
  const q = (query.get('q') ?? '').slice(0, 200);
  const list = modelPage(all, q, pageSpec(query));
  const models = list.items;
  const listOf = new Map(lists.map((list) => [list.providerId, list]));
  const origin = (o: CatalogueModel['origin']) => originTag(o, '');
  return layout({
    title: 'Catalogue',
    nav: 'catalogue',
    user: userOf(session),
    body: html`<div class="page-head">
  <h1>Catalogue</h1>
  <p class="lead">Providers and models. Entries from the configuration file are read-only here: change them in the file. Entries added here take effect on <code>/v1/models</code> and <a href="/models">/models</a> within a second, in every gateway process.</p>
</div>
${notice ? html`<p class="notice notice-ok" role="status">${notice}</p>` : ''}
<section aria-labelledby="providers-heading">
  <div class="section-head"><h2 id="providers-heading">Providers</h2><a class="btn btn-small" href="/app/catalogue/providers/new">Add provider</a></div>
  <div class="table-scroll" role="region" aria-label="Providers" tabindex="0"><table class="data">
    <thead><tr><th scope="col">Id</th><th scope="col">Kind</th><th scope="col">Base URL</th><th scope="col">API key</th><th scope="col">Probe</th><th scope="col">Discovery</th><th scope="col">Origin</th><th scope="col">Actions</th></tr></thead>
    <tbody>${providers.length === 0 ? html`<tr><td colspan="8" class="empty">No providers yet.</td></tr>` : providers.map(
      (p) => html`<tr data-provider="${p.id}"><th scope="row"><code>${p.id}</code></th><td>${p.config.kind}</td><td><code>${p.config.base_url}</code></td>
      <td>${p.hasApiKey ? 'set' : html`<span class="muted">none</span>`}${p.headerNames.length > 0 ? html`<br><span class="muted small">headers: ${p.headerNames.join(', ')}</span>` : ''}</td>
      <td>${p.config.probe ? `${p.config.probe.model} every ${p.config.probe.interval_ms / 1000} s` : html`<span class="muted">off</span>`}</td>
      <td>${discoveryCell(p.config.discover, listOf.get(p.id))}</td>
      <td>${origin(p.origin)}</td>
      <td class="actions"><form method="post" action="/app/catalogue/providers/${encodeURIComponent(p.id)}/import" class="inline"><input type="hidden" name="csrf" value="${session.csrf}"><button type="submit" class="btn btn-small btn-secondary">Import models<span class="visually-hidden"> of ${p.id}</span></button></form>${p.origin === 'console' ? html` <a class="btn btn-small btn-secondary" href="/app/catalogue/providers/${encodeURIComponent(p.id)}/edit">Edit<span class="visually-hidden"> ${p.id}</span></a> <a class="btn btn-small btn-danger" href="/app/catalogue/providers/${encodeURIComponent(p.id)}/delete">Remove<span class="visually-hidden"> ${p.id}</span></a>` : ''}</td></tr>`,
    )}</tbody>
  </table></div>
</section>
<section aria-labelledby="models-heading">
  <div class="section-head"><h2 id="models-heading">Models</h2>${providers.length > 0 ? html`<a class="btn btn-small" href="/app/catalogue/models/new">Add model</a>` : html`<span class="muted small">Add a provider first.</span>`}</div>
  <form class="filter" method="get" action="/app/catalogue" role="search">
    <label for="q">Find models by id</label>
    <input id="q" name="q" type="search" value="${q}">
    ${list.limit === PAGE_SIZE.default ? '' : html`<input type="hidden" name="limit" value="${list.limit}">`}
    <button type="submit" class="btn btn-small">Find</button>
  </form>
  <p class="muted small" role="status">${q.trim() === '' ? `${all.length} model${all.length === 1 ? '' : 's'}` : `${list.total} of ${all.length} models have “${q}” in their id`}.</p>
  <div class="table-scroll" role="region" aria-label="Models" tabindex="0"><table class="data">
    <thead><tr><th scope="col">Id</th><th scope="col">Deployments</th><th scope="col">Fallbacks</th><th scope="col">Operations</th><th scope="col" class="num">Input / 1M</th><th scope="col" class="num">Output / 1M</th><th scope="col">Price from</th><th scope="col">Origin</th><th scope="col">Actions</th></tr></thead>
    <tbody>${models.length === 0 ? html`<tr><td colspan="9" class="empty">${all.length === 0 ? 'No models yet.' : list.page > list.pages ? 'No models on this page.' : 'No model matches.'}</td></tr>` : models.map(
      (m) => html`<tr data-model="${m.id}"><th scope="row"><code>${m.id}</code>${m.displayName ? html`<br><span class="muted">${m.displayName}</span>` : ''}</th><td>${deploymentList(m)}</td>
      <td>${m.fallbacks.length === 0 ? html`<span class="muted">—</span>` : m.fallbacks.map((f, i) => html`${i > 0 ? ', ' : ''}<code>${f}</code>`)}</td>
      <td>${[...m.endpoints].join(', ')}</td><td class="num">${m.pricing ? formatPrice(m.pricing.inputPerMtok) : '—'}</td><td class="num">${m.pricing ? formatPrice(m.pricing.outputPerMtok) : '—'}</td>
      <td class="price-source">${priceSource(m)}</td>
      <td>${originTag(m.origin, m.providerId)}</td>
      <td class="actions stacked">${m.origin === 'console' ? html`<a class="btn btn-small btn-secondary" href="/app/catalogue/models/${encodeURIComponent(m.id)}/edit">Edit<span class="visually-hidden"> ${m.id}</span></a> <a class="btn btn-small btn-danger" href="/app/catalogue/models/${encodeURIComponent(m.id)}/delete">Remove<span class="visually-hidden"> ${m.id}</span></a>` : html`<span class="muted">—</span>`}</td></tr>`,
    )}</tbody>
  </table></div>
  ${pager('/app/catalogue', withoutNotice(query), list, 'Models')}
</section>`,
  });
}

/** What an import did: the models registered, those skipped and why, or the upstream's refusal. */
function importPage(session: Session, providerId: string, outcome: ImportOutcome | { error: string }) {
  return layout({
    title: 'Import models',
    nav: 'catalogue',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/catalogue">Catalogue</a> / import from <code>${providerId}</code></p>
<section class="card">
<h1>Import models from <code>${providerId}</code></h1>
${'error' in outcome
  ? html`<div class="notice notice-error" role="alert"><p>The upstream's model list could not be read: ${outcome.error}</p></div>`
  : html`<p class="notice notice-ok" role="status">${outcome.added.length} added, ${outcome.skipped.length} skipped.</p>
<h2>Added</h2>
${outcome.added.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="plain" data-import="added">${outcome.added.map((a) => html`<li><code>${a.id}</code>${a.id === a.upstreamModel ? '' : html` <span class="muted small">(upstream <code>${a.upstreamModel}</code>)</span>`}</li>`)}</ul>`}
<h2>Skipped</h2>
${outcome.skipped.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="plain" data-import="skipped">${outcome.skipped.map((s) => html`<li><code>${s.upstreamModel}</code>: ${s.reason}</li>`)}</ul>`}`}
<p><a class="btn" href="/app/catalogue">Back to the catalogue</a></p>
</section>`,
  });
}

function providerForm(session: Session, mode: 'create' | 'update', values: Values, errors: FieldErrors, secrets: { hasApiKey: boolean; headerNames: readonly string[] }) {
  const action = mode === 'create' ? '/app/catalogue/providers/new' : `/app/catalogue/providers/${encodeURIComponent(String(values.id))}/edit`;
  return layout({
    title: mode === 'create' ? 'Add provider' : 'Edit provider',
    nav: 'catalogue',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/catalogue">Catalogue</a> / ${mode === 'create' ? 'new provider' : html`<code>${values.id}</code>`}</p>
<section class="card narrow">
<h1>${mode === 'create' ? 'Add a provider' : html`Edit provider <code>${values.id}</code>`}</h1>
${errorSummary(errors)}
<form method="post" action="${action}" class="stack">
  <input type="hidden" name="csrf" value="${session.csrf}">
  ${field('id', 'Id', values, errors, { required: true, readonly: mode === 'update', hint: 'Letters, digits and ._:/@+-; models refer to it.' })}
  <div class="field">
    <label for="f-kind">Kind</label>
    <select id="f-kind" name="kind">${PROVIDER_KINDS.map((k) => html`<option value="${k}"${values.kind === k ? html` selected` : ''}>${k}${k === 'openai' ? ' (any OpenAI-compatible server: vLLM, llama.cpp, Ollama, …)' : ''}</option>`)}</select>
    ${errors.kind ? html`<p class="field-error">${errors.kind}</p>` : ''}
  </div>
  ${field('base_url', 'Base URL', values, errors, { type: 'url', placeholder: 'http://10.0.0.5:8000/v1' })}
  <div class="field">
    <label for="f-api_key">API key <span class="muted">(optional)</span></label>
    <input id="f-api_key" name="api_key" type="password" autocomplete="new-password" aria-describedby="f-api_key-hint" value="">
    <p class="hint" id="f-api_key-hint">Stored encrypted and never shown again. ${mode === 'update' ? (secrets.hasApiKey ? 'A key is set: leave blank to keep it.' : 'No key is set.') : ''}</p>
    ${mode === 'update' && secrets.hasApiKey ? html`<label class="check"><input type="checkbox" name="clear_api_key" value="1"> Remove the stored API key</label>` : ''}
    ${errors.api_key ? html`<p class="field-error">${errors.api_key}</p>` : ''}
  </div>
  <div class="field">
    <label for="f-headers">Extra headers <span class="muted">(optional, one <code>Name: value</code> per line)</span></label>
    <textarea id="f-headers" name="headers" rows="2" aria-describedby="f-headers-hint" autocomplete="off"></textarea>
    <p class="hint" id="f-headers-hint">Stored encrypted with the key. ${mode === 'update' ? (secrets.headerNames.length > 0 ? `Set now: ${secrets.headerNames.join(', ')}. Leave blank to keep them.` : 'None set.') : ''}</p>
    ${mode === 'update' && secrets.headerNames.length > 0 ? html`<label class="check"><input type="checkbox" name="clear_headers" value="1"> Remove the stored headers</label>` : ''}
    ${errors.headers ? html`<p class="field-error">${errors.headers}</p>` : ''}
  </div>
  <details${LIMIT_FIELDS.some(([name]) => errors[name]) ? html` open` : ''}>
    <summary>Timeouts and connections</summary>
    ${LIMIT_FIELDS.map(([name, label, placeholder]) => field(name, label, values, errors, { type: 'number', placeholder }))}
  </details>
  <fieldset class="field">
    <legend>Active probe <span class="muted">(optional; a one-token completion, never billed to a key)</span></legend>
    ${field('probe_model', 'Probe model id', values, errors, { hint: 'A catalogue model of this provider.' })}
    ${field('probe_interval_ms', 'Probe every (ms)', values, errors, { type: 'number', placeholder: '60000' })}
    ${errors.probe ? html`<p class="field-error">${errors.probe}</p>` : ''}
  </fieldset>
  <fieldset class="field">
    <legend>Model discovery <span class="muted">(optional; the upstream's own model list, kept current)</span></legend>
    <label class="check"><input type="checkbox" name="discover" value="1"${values.discover === '1' ? html` checked` : ''}> Discover this provider's models</label>
    ${field('discover_interval_ms', 'Read the list every (ms)', values, errors, { type: 'number', placeholder: '300000' })}
    ${field('discover_include', 'Only names matching', values, errors, { placeholder: 'llama*, qwen*', hint: 'Comma-separated patterns (* any characters, ? one); empty: every model.' })}
    ${field('discover_exclude', 'Leave out names matching', values, errors, { placeholder: '*embed*' })}
    ${field('discover_id_prefix', 'Public id prefix', values, errors, { placeholder: 'team/' })}
    ${field('discover_max_models', 'Take at most (models)', values, errors, { type: 'number', placeholder: String(DISCOVER_DEFAULTS.max_models), hint: 'Models the upstream lists beyond this are left out, with a warning.' })}
  </fieldset>
  <div class="row"><button type="submit" class="btn">${mode === 'create' ? 'Add provider' : 'Save provider'}</button><a class="btn btn-secondary" href="/app/catalogue">Cancel</a></div>
</form>
</section>`,
  });
}

const ENDPOINT_LABELS: Readonly<Record<(typeof ENDPOINTS)[number], string>> = {
  completions: 'Legacy completions (/v1/completions)',
  chat: 'Chat (/v1/chat/completions, /v1/messages, /v1/responses, Gemini generateContent)',
  responses: 'Responses only (/v1/responses)',
};

function modelForm(deps: ConsoleDeps, session: Session, mode: 'create' | 'update', values: Values, errors: FieldErrors) {
  const action = mode === 'create' ? '/app/catalogue/models/new' : `/app/catalogue/models/${encodeURIComponent(String(values.id))}/edit`;
  const endpoints = Array.isArray(values.endpoints) ? values.endpoints : [];
  return layout({
    title: mode === 'create' ? 'Add model' : 'Edit model',
    nav: 'catalogue',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/catalogue">Catalogue</a> / ${mode === 'create' ? 'new model' : html`<code>${values.id}</code>`}</p>
<section class="card narrow">
<h1>${mode === 'create' ? 'Register a model' : html`Edit model <code>${values.id}</code>`}</h1>
${errorSummary(errors)}
<form method="post" action="${action}" class="stack">
  <input type="hidden" name="csrf" value="${session.csrf}">
  ${field('id', 'Model id', values, errors, { required: true, readonly: mode === 'update', hint: 'The public id clients send, e.g. my-llama-70b.' })}
  <div class="field">
    <label for="f-provider">Provider</label>
    <select id="f-provider" name="provider" required${errors.provider ? html` aria-describedby="f-provider-err" aria-invalid="true"` : ''}>${deps.catalogue.providers().map((p) => html`<option value="${p.id}"${values.provider === p.id ? html` selected` : ''}>${p.id}</option>`)}</select>
    ${errors.provider ? html`<p class="field-error" id="f-provider-err">${errors.provider}</p>` : ''}
  </div>
  ${field('upstream_model', 'Upstream model', values, errors, { hint: 'The name the provider knows it by; default: the model id.' })}
  <details${values.deployments || values.fallbacks || errors.deployments || errors.fallbacks ? html` open` : ''}>
    <summary>More deployments and fallbacks</summary>
    ${textField('deployments', 'More deployments', values, errors, {
      rows: 3,
      placeholder: 'gpu-box-2 llama-3.1-70b weight=2',
      hint: html`Further upstreams serving this model, besides the provider above: one per line, <code>provider [upstream_model] [weight=N] [priority=N] [upstream_api=${UPSTREAM_APIS.join('|')}]</code>. The upstream model defaults to the model id, weight to 1 (its share of traffic among the deployments of one priority), priority to 0 (tried first; a higher one only once every deployment before it is out). <code>upstream_api</code> is for <code>openai</code> providers only. The provider above is the first deployment, with the default weight and priority.`,
    })}
    ${field('fallbacks', 'Fallbacks', values, errors, { hint: 'Other model ids, separated by commas or spaces, tried in order when every deployment of this model failed.' })}
  </details>
  ${field('display_name', 'Display name', values, errors)}
  ${field('owned_by', 'Owner', values, errors, { hint: 'Default: the provider id.' })}
  <div class="field">
    <label for="f-description">Description <span class="muted">(optional)</span></label>
    <textarea id="f-description" name="description" rows="2">${typeof values.description === 'string' ? values.description : ''}</textarea>
  </div>
  ${field('context_window', 'Context window (tokens)', values, errors, { type: 'number' })}
  ${field('max_output_tokens', 'Max output (tokens)', values, errors, { type: 'number' })}
  <fieldset class="field">
    <legend>Operations</legend>
    ${ENDPOINTS.map((e) => html`<label class="check"><input type="checkbox" name="endpoints" value="${e}"${endpoints.includes(e) ? html` checked` : ''}> ${ENDPOINT_LABELS[e]}</label>`)}
    ${errors.endpoints ? html`<p class="field-error">${errors.endpoints}</p>` : ''}
  </fieldset>
  <fieldset class="field">
    <legend>Price, USD per million tokens <span class="muted">(optional; both or neither)</span></legend>
    ${field('input_per_mtok', 'Input price', values, errors, { type: 'number', step: 'any' })}
    ${field('output_per_mtok', 'Output price', values, errors, { type: 'number', step: 'any' })}
    ${errors.pricing ? html`<p class="field-error">${errors.pricing}</p>` : ''}
  </fieldset>
  <details>
    <summary>More</summary>
    ${field('version', 'Version', values, errors)}
    ${field('created', 'Created (Unix seconds)', values, errors, { type: 'number' })}
  </details>
  <div class="row"><button type="submit" class="btn">${mode === 'create' ? 'Register model' : 'Save model'}</button><a class="btn btn-secondary" href="/app/catalogue">Cancel</a></div>
</form>
</section>`,
  });
}

/**
 * The confirmation before a removal. A provider that any model's deployment still uses is named
 * with its users and offered no button (the admin refuses it anyway, and `refusal` says so when a
 * model took it up in the meantime).
 */
function deletePage(deps: ConsoleDeps, session: Session, kind: Kind, id: string, refusal?: string) {
  const noun = kind === 'providers' ? 'provider' : 'model';
  const users = kind === 'providers' ? deps.catalogue.current().models.filter((m) => m.deployments.some((d) => d.providerId === id)).map((m) => m.id) : [];
  return layout({
    title: `Remove ${noun}`,
    nav: 'catalogue',
    user: userOf(session),
    body: html`<section class="card narrow">
  <h1>Remove the ${noun} <code>${id}</code>?</h1>
  ${refusal ? html`<p class="notice notice-error" role="alert">Not removed: ${refusal}</p>` : ''}
  <p>${kind === 'models' ? 'Requests for this model fail with 404 within a second; keys that list it keep the id but cannot use it.' : 'The provider is removed within a second. A provider that models still use cannot be removed.'}</p>
  ${users.length > 0 ? html`<p class="notice notice-error"${refusal ? '' : html` role="alert"`}>Still used by ${users.length === 1 ? 'the model' : 'the models'} ${users.map((u, i) => html`${i > 0 ? ', ' : ''}<code>${u}</code>`)}: remove ${users.length === 1 ? 'it' : 'them'}, or edit ${users.length === 1 ? 'its' : 'their'} deployments, first.</p>` : ''}
  <form method="post" action="/app/catalogue/${kind}/${encodeURIComponent(id)}/delete" class="row">
    <input type="hidden" name="csrf" value="${session.csrf}">
    ${users.length === 0 ? html`<button type="submit" class="btn btn-danger">Remove ${noun}</button>` : ''}
    <a class="btn btn-secondary" href="/app/catalogue">${users.length === 0 ? 'Cancel' : 'Back to the catalogue'}</a>
  </form>
</section>`,
  });
}

/** Form text → the configuration file's shapes; numbers that do not parse are reported here, the rest by the schema. */
function numberField(form: URLSearchParams, name: string, errors: FieldErrors, integer = true): number | undefined {
  const text = (form.get(name) ?? '').trim();
  if (text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    errors[name] = integer ? 'must be a whole number' : 'must be a number';
    return undefined;
  }
  return value;
}

function text(form: URLSearchParams, name: string): string | undefined {
  const value = (form.get(name) ?? '').trim();
  return value === '' ? undefined : value;
}

function formValues(form: URLSearchParams): Values {
  const values: Values = {};
  for (const key of new Set(form.keys())) {
    if (key === 'csrf' || key === 'api_key' || key === 'headers') continue; // credentials are never echoed back
    const all = form.getAll(key);
    values[key] = key === 'endpoints' ? all : (all[0] ?? '');
  }
  return values;
}

function providerInput(form: URLSearchParams, errors: FieldErrors): { raw: Record<string, unknown>; secrets: SecretChanges } {
  const raw: Record<string, unknown> = { id: text(form, 'id') ?? '', kind: text(form, 'kind') ?? '' };
  const baseUrl = text(form, 'base_url');
  if (baseUrl !== undefined) raw.base_url = baseUrl;
  for (const [name] of LIMIT_FIELDS) {
    const value = numberField(form, name, errors);
    if (value !== undefined) raw[name] = value;
  }
  const probeModel = text(form, 'probe_model');
  const probeInterval = numberField(form, 'probe_interval_ms', errors);
  if (probeModel !== undefined || probeInterval !== undefined) {
    if (probeModel === undefined || probeInterval === undefined) errors.probe = 'give both the probe model and its interval, or neither';
    else raw.probe = { model: probeModel, interval_ms: probeInterval };
  }
  if (form.get('discover') === '1') {
    const patterns = (name: string) => text(form, name)?.split(',').map((p) => p.trim()).filter((p) => p !== '');
    const discover: Record<string, unknown> = {};
    const interval = numberField(form, 'discover_interval_ms', errors);
    if (interval !== undefined) discover.interval_ms = interval;
    const include = patterns('discover_include');
    if (include !== undefined && include.length > 0) discover.include = include;
    const exclude = patterns('discover_exclude');
    if (exclude !== undefined && exclude.length > 0) discover.exclude = exclude;
    const prefix = text(form, 'discover_id_prefix');
    if (prefix !== undefined) discover.id_prefix = prefix;
    const maxModels = numberField(form, 'discover_max_models', errors);
    if (maxModels !== undefined) discover.max_models = maxModels;
    raw.discover = discover;
  }
  const secrets: { apiKey?: string | null; headers?: Record<string, string> | null } = {};
  const apiKey = form.get('api_key') ?? '';
  if (form.get('clear_api_key') === '1') secrets.apiKey = null;
  else if (apiKey.trim() !== '') secrets.apiKey = apiKey.trim();
  const headerText = (form.get('headers') ?? '').trim();
  if (form.get('clear_headers') === '1') secrets.headers = null;
  else if (headerText !== '') {
    const headers = new Map<string, string>();
    for (const line of headerText.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      const name = colon === -1 ? '' : line.slice(0, colon).trim();
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
        errors.headers = 'each line must be `Name: value` with a valid header name';
        break;
      }
      // The schema's header record drops a `__proto__` key: refuse it rather than lose it unseen.
      if (name === '__proto__') {
        errors.headers = '`__proto__` cannot be used as a header name';
        break;
      }
      headers.set(name, line.slice(colon + 1).trim());
    }
    secrets.headers = Object.fromEntries(headers);
  }
  return { raw, secrets };
}

const DEPLOYMENT_ATTRIBUTES = ['weight', 'priority', 'upstream_api'] as const;

/**
 * The "More deployments" lines → deployment entries, one per non-blank line:
 * `provider [upstream_model] [weight=N] [priority=N] [upstream_api=…]`. Only what the schema
 * cannot say in the user's terms is judged here (the shape of a line, numbers that do not parse);
 * the rest (weight > 0, a known provider, …) is the admin's, whose errors `formErrors` maps back
 * through `lines`, the textarea line of each entry.
 */
function deploymentLines(source: string, errors: FieldErrors): { entries: Record<string, unknown>[]; lines: number[] } {
  const entries: Record<string, unknown>[] = [];
  const lines: number[] = [];
  const problems: string[] = [];
  source.split(/\r?\n/).forEach((line, index) => {
    const tokens = line.trim().split(/\s+/).filter((token) => token !== '');
    if (tokens.length === 0) return;
    const at = `line ${index + 1}`;
    const [provider, ...rest] = tokens as [string, ...string[]];
    if (provider.includes('=')) problems.push(`${at}: start with the provider id, then the upstream model, then attributes`);
    const entry: Record<string, unknown> = { provider };
    if (rest[0] !== undefined && !rest[0].includes('=')) entry.upstream_model = rest.shift();
    for (const token of rest) {
      const eq = token.indexOf('=');
      const key = token.slice(0, eq);
      const value = token.slice(eq + 1);
      if (eq === -1) problems.push(`${at}: '${token}' is not an attribute (weight=N, priority=N or upstream_api=…)`);
      else if (!(DEPLOYMENT_ATTRIBUTES as readonly string[]).includes(key)) problems.push(`${at}: unknown attribute '${key}' (use weight=, priority= or upstream_api=)`);
      else if (Object.hasOwn(entry, key)) problems.push(`${at}: ${key} is given twice`);
      else if (key === 'upstream_api') entry[key] = value;
      else {
        const number = value.trim() === '' ? NaN : Number(value);
        if (!Number.isFinite(number)) problems.push(`${at}: ${key} must be a number`);
        else if (key === 'priority' && !Number.isInteger(number)) problems.push(`${at}: priority must be a whole number`);
        else entry[key] = number;
      }
    }
    entries.push(entry);
    lines.push(index + 1);
  });
  if (problems.length > 0) errors.deployments = problems.join('; ');
  return { entries, lines };
}

/** A further deployment as a line of the form, with only its attributes that are not the defaults. */
function deploymentLine(deployment: DeploymentConfig): string {
  const parts = [deployment.provider];
  if (deployment.upstream_model !== undefined) parts.push(deployment.upstream_model);
  if (deployment.weight !== 1) parts.push(`weight=${deployment.weight}`);
  if (deployment.priority !== 0) parts.push(`priority=${deployment.priority}`);
  if (deployment.upstream_api !== undefined) parts.push(`upstream_api=${deployment.upstream_api}`);
  return parts.join(' ');
}

/**
 * The admin names a deployment by its index in the entry; the form shows the first as the Provider
 * and Upstream model fields and the others as lines of the textarea, so its errors go there, by line.
 */
function formErrors(errors: FieldErrors, lines: readonly number[]): FieldErrors {
  const mapped: FieldErrors = {};
  const add = (name: string, message: string) => (mapped[name] = Object.hasOwn(mapped, name) ? `${mapped[name]}; ${message}` : message);
  for (const [path, message] of Object.entries(errors)) {
    const deployment = /^deployments\.(\d+)(?:\.(.+))?$/.exec(path);
    if (deployment !== null) {
      const index = Number(deployment[1]);
      const attribute = deployment[2];
      if (index === 0) {
        const name = attribute === 'upstream_model' ? 'upstream_model' : 'provider';
        add(name, attribute === undefined || attribute === name ? message : `${attribute}: ${message}`);
      } else add('deployments', `line ${lines[index - 1] ?? index}${attribute === undefined ? '' : `, ${attribute}`}: ${message}`);
    } else if (path.startsWith('fallbacks.')) add('fallbacks', message);
    else add(path, message);
  }
  return mapped;
}

/** The model form → a configuration entry: the `provider:` short form, or `deployments:` when there are more lines. */
function modelInput(form: URLSearchParams, errors: FieldErrors): { raw: Record<string, unknown>; lines: number[] } {
  const raw: Record<string, unknown> = { id: text(form, 'id') ?? '' };
  const first: Record<string, unknown> = { provider: text(form, 'provider') ?? '' };
  const upstreamModel = text(form, 'upstream_model');
  if (upstreamModel !== undefined) first.upstream_model = upstreamModel;
  const { entries, lines } = deploymentLines(form.get('deployments') ?? '', errors);
  if (entries.length === 0) Object.assign(raw, first);
  else raw.deployments = [first, ...entries];
  const fallbacks = (form.get('fallbacks') ?? '').split(/[\s,]+/).filter((id) => id !== '');
  if (fallbacks.length > 0) raw.fallbacks = fallbacks;
  for (const name of ['display_name', 'owned_by', 'description', 'version']) {
    const value = text(form, name);
    if (value !== undefined) raw[name] = value;
  }
  for (const name of ['context_window', 'max_output_tokens', 'created']) {
    const value = numberField(form, name, errors);
    if (value !== undefined) raw[name] = value;
  }
  const endpoints = form.getAll('endpoints');
  if (endpoints.length > 0) raw.endpoints = endpoints;
  const input = numberField(form, 'input_per_mtok', errors, false);
  const output = numberField(form, 'output_per_mtok', errors, false);
  if (input !== undefined || output !== undefined) {
    if (input === undefined || output === undefined) errors.pricing = 'give both prices, or neither';
    else raw.pricing = { input_per_mtok: input, output_per_mtok: output };
  }
  return { raw, lines };
}

/** Stored entry → form values, for editing. */
function valuesOf(stored: Record<string, unknown>): Values {
  const values: Values = {};
  for (const [key, value] of Object.entries(stored)) {
    if (key === 'discover' && value && typeof value === 'object') {
      const discover = value as { interval_ms?: number; include?: string[]; exclude?: string[]; id_prefix?: string; max_models?: number };
      values.discover = '1';
      if (discover.interval_ms !== undefined) values.discover_interval_ms = String(discover.interval_ms);
      if (discover.include !== undefined) values.discover_include = discover.include.join(', ');
      if (discover.exclude !== undefined) values.discover_exclude = discover.exclude.join(', ');
      if (discover.id_prefix !== undefined) values.discover_id_prefix = discover.id_prefix;
      if (discover.max_models !== undefined) values.discover_max_models = String(discover.max_models);
    } else if (key === 'probe' && value && typeof value === 'object') {
      const probe = value as { model: string; interval_ms: number };
      values.probe_model = probe.model;
      values.probe_interval_ms = String(probe.interval_ms);
    } else if (key === 'pricing' && value && typeof value === 'object') {
      const pricing = value as { input_per_mtok: number; output_per_mtok: number };
      values.input_per_mtok = String(pricing.input_per_mtok);
      values.output_per_mtok = String(pricing.output_per_mtok);
    } else if (key === 'deployments' && Array.isArray(value)) {
      // The first deployment fills the Provider and Upstream model fields; the others are lines.
      const [first, ...rest] = value as DeploymentConfig[];
      if (first !== undefined) {
        values.provider = first.provider;
        if (first.upstream_model !== undefined) values.upstream_model = first.upstream_model;
      }
      values.deployments = rest.map(deploymentLine).join('\n');
    } else if (key === 'fallbacks' && Array.isArray(value)) values.fallbacks = value.join(', ');
    else if (Array.isArray(value)) values[key] = value.map(String);
    else if (value !== undefined && value !== null) values[key] = String(value);
  }
  return values;
}

export function catalogueRoutes(deps: ConsoleDeps): Handler {
  const { catalogueAdmin: admin } = deps;
  const done = (ctx: RequestContext, message: string) => redirect(ctx.res, `/app/catalogue?done=${encodeURIComponent(message)}`);

  return page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    // Another process may have written a moment ago; show the store as it is, not as last polled.
    await deps.catalogue.refresh();
    const method = ctx.req.method;
    if (ctx.path === '/app/catalogue' && method === 'GET') {
      const query = new URLSearchParams(ctx.query);
      const notice = query.get('done');
      // Only our own fixed messages come back this way; anything else is dropped.
      const known = notice !== null && /^(Provider|Model) [^<>]{1,220} (added|saved|removed)\.$/.test(notice) ? notice : null;
      return sendHtml(ctx.res, 200, overview(deps, session, known, await deps.store.catalogue.discovered(), query));
    }
    const importing = /^\/app\/catalogue\/providers\/([^/]+)\/import$/.exec(ctx.path);
    if (importing !== null && method === 'POST') {
      await checkedForm(ctx, session);
      let providerId: string;
      try {
        providerId = decodeURIComponent(importing[1]!);
      } catch {
        throw new FormError(404, 'There is no such provider.');
      }
      let outcome: ImportOutcome | { error: string } | undefined;
      try {
        outcome = await importModels(providerId, deps.catalogue, admin, deps.providers);
      } catch (error) {
        // GatewayError messages name the provider and the failure, never its credential.
        outcome = { error: toGatewayError(error).message };
      }
      if (outcome === undefined) throw new FormError(404, `There is no provider “${providerId}”.`);
      return sendHtml(ctx.res, 'error' in outcome ? 502 : 200, importPage(session, providerId, outcome));
    }
    const match = /^\/app\/catalogue\/(providers|models)\/(?:(new)|([^/]+)\/(edit|delete))$/.exec(ctx.path);
    if (match === null || (method !== 'GET' && method !== 'POST')) throw new FormError(404, 'There is no such page.');
    const kind = match[1] as Kind;
    let id = '';
    try {
      id = match[3] === undefined ? '' : decodeURIComponent(match[3]);
    } catch {
      throw new FormError(404, 'There is no such entry.');
    }
    const op = match[2] ?? match[4]!;
    const noun = kind === 'providers' ? 'Provider' : 'Model';

    if (op === 'delete') {
      const stored = kind === 'providers' ? await admin.storedProvider(id) : await admin.storedModel(id);
      if (stored === undefined) throw new FormError(404, `There is no console ${noun.toLowerCase()} “${id}” (entries from the configuration file are changed there).`);
      if (method === 'GET') return sendHtml(ctx.res, 200, deletePage(deps, session, kind, id));
      await checkedForm(ctx, session);
      const result = kind === 'providers' ? await admin.deleteProvider(id) : await admin.deleteModel(id);
      if (!result.ok) return sendHtml(ctx.res, 409, deletePage(deps, session, kind, id, Object.values(result.errors).join(' ')));
      return done(ctx, `${noun} ${id} removed.`);
    }

    const mode = op === 'new' ? 'create' : 'update';
    let stored: Record<string, unknown> | undefined;
    if (mode === 'update') {
      stored = kind === 'providers' ? await admin.storedProvider(id) : await admin.storedModel(id);
      if (stored === undefined) throw new FormError(404, `There is no console ${noun.toLowerCase()} “${id}” (entries from the configuration file are changed there).`);
    }
    const entry = kind === 'providers' && mode === 'update' ? deps.catalogue.providers().find((p) => p.id === id) : undefined;
    const secrets = { hasApiKey: entry?.hasApiKey ?? false, headerNames: entry?.headerNames ?? [] };

    if (method === 'GET') {
      const values = stored ? valuesOf(stored) : kind === 'providers' ? { kind: 'openai' } : { endpoints: ['completions'], provider: new URLSearchParams(ctx.query).get('provider') ?? '' };
      return sendHtml(ctx.res, 200, kind === 'providers' ? providerForm(session, mode, values, {}, secrets) : modelForm(deps, session, mode, values, {}));
    }

    const form = await checkedForm(ctx, session);
    if (mode === 'update') form.set('id', id); // the id names the entry; it is not editable
    const errors: FieldErrors = {};
    let result: AdminResult;
    if (kind === 'providers') {
      const { raw, secrets: changes } = providerInput(form, errors);
      result = Object.keys(errors).length > 0 ? { ok: false, errors } : await admin.saveProvider(mode, raw, changes);
      // `discover.interval_ms` is the form's `discover_interval_ms`.
      if (!result.ok) result = { ok: false, errors: Object.fromEntries(Object.entries(result.errors).map(([field, message]) => [field.replace(/^discover\./, 'discover_'), message])) };
    } else {
      const { raw, lines } = modelInput(form, errors);
      result = Object.keys(errors).length > 0 ? { ok: false, errors } : await admin.saveModel(mode, raw);
      if (!result.ok) result = { ok: false, errors: formErrors(result.errors, lines) };
    }
    if (!result.ok) {
      const values = formValues(form);
      const page = kind === 'providers' ? providerForm(session, mode, values, result.errors, secrets) : modelForm(deps, session, mode, values, result.errors);
      return sendHtml(ctx.res, 400, page);
    }
    return done(ctx, `${noun} ${id || form.get('id')} ${mode === 'create' ? 'added' : 'saved'}.`);
  });
}
