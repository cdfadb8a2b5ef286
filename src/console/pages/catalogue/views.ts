// The catalogue's pages as HTML: the overview of providers and models, the provider and model
// forms, the removal confirmation and an import's outcome.
import type { FieldErrors } from '../../../catalogue/catalogue-admin.js';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import type { ProviderEntry } from '../../../catalogue/live-catalogue.js';
import { SECRET_KINDS, type SecretField } from '../../../catalogue/provider-secrets.js';
import { exclusion } from '../../../catalogue/discovered.js';
import { DISCOVER_DEFAULTS, ENDPOINTS, PRICE_UNITS, PROVIDER_KINDS, UPSTREAM_APIS, type DiscoverConfig, type PriceUnit } from '../../../config/config-file.js';
import type { ImportOutcome } from '../../../discovery/model-import.js';
import type { DiscoveredList } from '../../../store/store.js';
import { maskUrl } from '../../../core/masked-url.js';
import { userOf } from '../../console-context.js';
import { html, layout, timeTag, type Html } from '../../html.js';
import { PAGE_SIZE, pager, type Paged } from '../../paging.js';
import type { Session } from '../../sessions.js';
import { priceLines, priceSource } from '../models/views.js';
import { PROVIDER_LIMIT_FIELDS, type FormValues } from './forms.js';

/** The two kinds of entry, as the paths name them. */
export type EntryKind = 'providers' | 'models';
/** A form adds an entry or changes a stored one. */
export type EntryMode = 'create' | 'update';

/** A text input of an entry form, with its label, hint and error wired for assistive technology. */
export function field(name: string, label: string, values: FormValues, errors: FieldErrors, options: { type?: string; hint?: string | Html; required?: boolean; readonly?: boolean; placeholder?: string; step?: string } = {}): Html {
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
function textField(name: string, label: string, values: FormValues, errors: FieldErrors, options: { hint?: string | Html; rows?: number; placeholder?: string } = {}): Html {
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

export function errorSummary(errors: FieldErrors): Html {
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

/** What a model listing that failed requested, when known: `GET <url>` (its credentials masked when it was recorded). */
function requested(url: string | null | undefined): Html {
  return url ? html` <span class="tried">(GET <code>${url}</code>)</span>` : html``;
}

/** A provider's discovery: off, or its interval and how the last listing went (a failure with the address it requested). */
function discoveryCell(settings: DiscoverConfig | undefined, list: DiscoveredList | undefined, now: number): Html {
  if (settings === undefined) return html`<span class="muted">off</span>`;
  const listed = list?.listedAt == null ? html`not listed yet` : html`listed ${timeTag(list.listedAt, now)}`;
  const atLimit = takenCount(list, settings) >= settings.max_models;
  return html`every ${settings.interval_ms / 1000} s<br><span class="muted small">${listed}</span>${atLimit ? html`<br><span class="field-error small">at the limit of ${settings.max_models} models (discover.max_models): any more the upstream lists are left out</span>` : ''}${list?.error ? html`<br><span class="field-error small" data-discovery-error>last listing failed${list.errorAt === null ? '' : html` ${timeTag(list.errorAt, now)}`}: ${list.error}${requested(list.errorUrl)}</span>` : ''}`;
}

/** The query for the pager's links: the one-time notice is not carried to other pages. */
function withoutNotice(query: URLSearchParams): URLSearchParams {
  const kept = new URLSearchParams(query);
  kept.delete('done');
  return kept;
}

/** What the overview shows: the providers, a page of the models (those matching `q`), and each provider's last listing. */
export interface OverviewInput {
  readonly session: Session;
  /** The one-time notice after a change, already checked to be one of ours. */
  readonly notice: string | null;
  readonly providers: readonly ProviderEntry[];
  /** How many models the catalogue has in all. */
  readonly modelCount: number;
  readonly list: Paged<CatalogueModel>;
  readonly q: string;
  readonly query: URLSearchParams;
  readonly discovered: readonly DiscoveredList[];
  readonly now: number;
}

export function overviewPage({ session, notice, providers, modelCount, list, q, query, discovered, now }: OverviewInput): Html {
  const models = list.items;
  const listOf = new Map(discovered.map((list) => [list.providerId, list]));
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
    <thead><tr><th scope="col">Id</th><th scope="col">Kind</th><th scope="col">Base URL</th><th scope="col">Credentials</th><th scope="col">Probe</th><th scope="col">Discovery</th><th scope="col">Origin</th><th scope="col">Actions</th></tr></thead>
    <tbody>${providers.length === 0 ? html`<tr><td colspan="8" class="empty">No providers yet.</td></tr>` : providers.map(
      (p) => html`<tr data-provider="${p.id}"><th scope="row"><code>${p.id}</code></th><td>${p.config.kind}</td><td><code>${maskUrl(p.config.base_url)}</code></td>
      <td>${credentialsCell(p)}</td>
      <td>${p.config.probe ? `${p.config.probe.model} every ${p.config.probe.interval_ms / 1000} s` : html`<span class="muted">off</span>`}</td>
      <td>${discoveryCell(p.config.discover, listOf.get(p.id), now)}</td>
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
  <p class="muted small" role="status">${q.trim() === '' ? `${modelCount} model${modelCount === 1 ? '' : 's'}` : `${list.total} of ${modelCount} models have “${q}” in their id`}.</p>
  <div class="table-scroll" role="region" aria-label="Models" tabindex="0"><table class="data">
    <thead><tr><th scope="col">Id</th><th scope="col">Deployments</th><th scope="col">Fallbacks</th><th scope="col">Operations</th><th scope="col">Prices</th><th scope="col">Price from</th><th scope="col">Origin</th><th scope="col">Actions</th></tr></thead>
    <tbody>${models.length === 0 ? html`<tr><td colspan="8" class="empty">${modelCount === 0 ? 'No models yet.' : list.page > list.pages ? 'No models on this page.' : 'No model matches.'}</td></tr>` : models.map(
      (m) => html`<tr data-model="${m.id}"><th scope="row"><code>${m.id}</code>${m.displayName ? html`<br><span class="muted">${m.displayName}</span>` : ''}</th><td>${deploymentList(m)}</td>
      <td>${m.fallbacks.length === 0 ? html`<span class="muted">—</span>` : m.fallbacks.map((f, i) => html`${i > 0 ? ', ' : ''}<code>${f}</code>`)}</td>
      <td>${[...m.endpoints].join(', ')}</td><td class="prices">${priceLines(m.pricing)}</td>
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
export function importPage(session: Session, providerId: string, outcome: ImportOutcome | { error: string; url: string | null }): Html {
  return layout({
    title: 'Import models',
    nav: 'catalogue',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/catalogue">Catalogue</a> / import from <code>${providerId}</code></p>
<section class="card">
<h1>Import models from <code>${providerId}</code></h1>
${'error' in outcome
  ? html`<div class="notice notice-error" role="alert"><p>The upstream's model list could not be read: ${outcome.error}${requested(outcome.url)}</p></div>`
  : html`<p class="notice notice-ok" role="status">${outcome.added.length} added, ${outcome.skipped.length} skipped.</p>
<h2>Added</h2>
${outcome.added.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="plain" data-import="added">${outcome.added.map((a) => html`<li><code>${a.id}</code>${a.id === a.upstreamModel ? '' : html` <span class="muted small">(upstream <code>${a.upstreamModel}</code>)</span>`}</li>`)}</ul>`}
<h2>Skipped</h2>
${outcome.skipped.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="plain" data-import="skipped">${outcome.skipped.map((s) => html`<li><code>${s.upstreamModel}</code>: ${s.reason}</li>`)}</ul>`}`}
<p><a class="btn" href="/app/catalogue">Back to the catalogue</a></p>
</section>`,
  });
}

/** Each credential as the console names it (never its value). */
const SECRET_LABELS: Readonly<Record<SecretField, string>> = {
  api_key: 'API key',
  headers: 'Extra headers',
  entra_client_secret: 'Entra client secret',
  access_key_id: 'AWS access key id',
  secret_access_key: 'AWS secret access key',
  session_token: 'AWS session token',
  credentials: 'service-account key',
};

const capitalised = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/** Which credentials a provider holds, by name: "API key set", or none; header names (no values). */
/** Where a cloud provider with no stored credential takes one from: the setting's name, never its value (a file's path is the host's). */
function credentialSource(config: ProviderEntry['config']): string | undefined {
  if (config.ownCredentialsOnly === true) return undefined;
  if (config.kind === 'vertex') return config.credentials_file !== undefined ? 'Key from credentials_file' : 'Key from GOOGLE_APPLICATION_CREDENTIALS';
  if (config.kind === 'bedrock') return 'AWS credentials from the environment or AWS_PROFILE';
  return undefined;
}

function credentialsCell(p: ProviderEntry): Html {
  const named = p.secretsSet.filter((field) => field !== 'headers');
  const source = named.length === 0 ? credentialSource(p.config) : undefined;
  return html`${named.length === 0 ? (source === undefined ? html`<span class="muted">none</span>` : source) : named.map((field, i) => html`${i > 0 ? html`<br>` : ''}${capitalised(SECRET_LABELS[field])} set`)}${p.headerNames.length > 0 ? html`<br><span class="muted small">headers: ${p.headerNames.join(', ')}</span>` : ''}`;
}

/** What the provider form says of the stored credentials, which it never shows. */
export interface StoredSecrets {
  readonly headerNames: readonly string[];
  /** Every credential field that holds a value. */
  readonly set: readonly SecretField[];
}

const KIND_NOTES: Readonly<Record<(typeof PROVIDER_KINDS)[number], string>> = {
  openai: ' (any OpenAI-compatible server: vLLM, llama.cpp, Ollama, …)',
  anthropic: '',
  gemini: ' (Google AI Studio)',
  azure: ' (Azure OpenAI)',
  bedrock: ' (Amazon Bedrock)',
  vertex: ' (Google Vertex AI)',
};

/** The kinds a block of the provider form is for, as its `data-kinds` (the script shows only the chosen kind's). */
const kindsOf = (field: SecretField): string => SECRET_KINDS[field].join(' ');

/**
 * A credential input: empty whatever is stored (a stored value is never sent back), "set" with a
 * checkbox to remove it when there is one. A textarea for a pasted key file.
 */
function secretField(name: Exclude<SecretField, 'headers'>, mode: EntryMode, errors: FieldErrors, secrets: StoredSecrets, hint: string | Html, textarea = false): Html {
  const id = `f-${name}`;
  const isSet = mode === 'update' && secrets.set.includes(name);
  const state = mode === 'update' ? (isSet ? `${name === 'api_key' ? 'A key' : 'A value'} is set: leave blank to keep it.` : 'None is set.') : '';
  return html`<div class="field" data-kinds="${kindsOf(name)}">
    <label for="${id}">${capitalised(SECRET_LABELS[name])} <span class="muted">(optional)</span></label>
    ${textarea
      ? html`<textarea id="${id}" name="${name}" rows="4" spellcheck="false" autocomplete="off" aria-describedby="${id}-hint"></textarea>`
      : html`<input id="${id}" name="${name}" type="password" autocomplete="new-password" aria-describedby="${id}-hint" value="">`}
    <p class="hint" id="${id}-hint">Stored encrypted and never shown again. ${hint} ${state}</p>
    ${isSet ? html`<label class="check"><input type="checkbox" name="clear_${name}" value="1"> Remove the stored ${SECRET_LABELS[name]}</label>` : ''}
    ${errors[name] ? html`<p class="field-error">${errors[name]}</p>` : ''}
  </div>`;
}

/** The fields of one cloud kind, in a group the script shows only while that kind is chosen (all are shown without it). */
function kindGroup(kind: string, legend: string, body: Html): Html {
  return html`<fieldset class="field" data-kinds="${kind}">
    <legend>${legend} <span class="muted">(kind <code>${kind}</code> only; other kinds refuse these fields)</span></legend>
    ${body}
  </fieldset>`;
}

export function providerForm(session: Session, mode: EntryMode, values: FormValues, errors: FieldErrors, secrets: StoredSecrets): Html {
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
    <select id="f-kind" name="kind" data-kind-select>${PROVIDER_KINDS.map((k) => html`<option value="${k}"${values.kind === k ? html` selected` : ''}>${k}${KIND_NOTES[k]}</option>`)}</select>
    ${errors.kind ? html`<p class="field-error">${errors.kind}</p>` : ''}
  </div>
  ${field('base_url', 'Base URL', values, errors, { type: 'url', placeholder: 'http://10.0.0.5:8000/v1', hint: 'Required for openai and azure (the resource endpoint, https://RESOURCE.openai.azure.com); the others default to their vendor’s, in the region or location below.' })}
  ${secretField('api_key', mode, errors, secrets, 'On Azure, the resource’s key (or use Entra ID below instead).')}
  ${kindGroup('azure', 'Azure OpenAI', html`
    ${field('api_version', 'API version', values, errors, { placeholder: '2024-10-21', hint: 'Empty: the v1 API (/openai/v1/…).' })}
    <p class="hint">Instead of an API key, Microsoft Entra ID client credentials (all of tenant, client id and client secret):</p>
    ${field('entra_tenant_id', 'Entra tenant id', values, errors)}
    ${field('entra_client_id', 'Entra client id', values, errors)}
    ${secretField('entra_client_secret', mode, errors, secrets, 'The app registration’s client secret.')}
    ${field('entra_authority_url', 'Entra authority URL', values, errors, { type: 'url', placeholder: 'https://login.microsoftonline.com', hint: 'A sovereign or private cloud’s own; default the public cloud’s.' })}
    <label class="check"><input type="checkbox" name="allow_data_sources" value="1"${values.allow_data_sources === 'true' ? html` checked` : ''}> Let callers use On Your Data (<code>data_sources</code>)</label>
    <p class="hint">The resource then queries the Search indexes, Cosmos DB or blob storage a caller names, with its own managed identity. Off: such a request is refused.</p>`)}
  ${kindGroup('bedrock', 'Amazon Bedrock', html`
    ${field('region', 'AWS region', values, errors, { placeholder: 'us-east-1' })}
    ${secretField('access_key_id', mode, errors, secrets, 'Required: a console provider never uses the gateway host’s AWS environment or profiles.')}
    ${secretField('secret_access_key', mode, errors, secrets, 'Required, with the access key id.')}
    ${secretField('session_token', mode, errors, secrets, 'Only for temporary credentials.')}`)}
  ${kindGroup('vertex', 'Google Vertex AI', html`
    ${field('project', 'Google Cloud project', values, errors, { placeholder: 'my-project' })}
    ${field('location', 'Location', values, errors, { placeholder: 'europe-west4 or global' })}
    ${secretField('credentials', mode, errors, secrets, 'Required: paste the service-account key file’s JSON. A console provider never reads a file on the gateway’s host or GOOGLE_APPLICATION_CREDENTIALS.', true)}`)}
  <div class="field" data-kinds="${kindsOf('headers')}">
    <label for="f-headers">Extra headers <span class="muted">(optional, one <code>Name: value</code> per line)</span></label>
    <textarea id="f-headers" name="headers" rows="2" aria-describedby="f-headers-hint" autocomplete="off"></textarea>
    <p class="hint" id="f-headers-hint">Stored encrypted with the key. ${mode === 'update' ? (secrets.headerNames.length > 0 ? `Set now: ${secrets.headerNames.join(', ')}. Leave blank to keep them.` : 'None set.') : ''}</p>
    ${mode === 'update' && secrets.headerNames.length > 0 ? html`<label class="check"><input type="checkbox" name="clear_headers" value="1"> Remove the stored headers</label>` : ''}
    ${errors.headers ? html`<p class="field-error">${errors.headers}</p>` : ''}
  </div>
  <details${PROVIDER_LIMIT_FIELDS.some(([name]) => errors[name]) ? html` open` : ''}>
    <summary>Timeouts and connections</summary>
    ${PROVIDER_LIMIT_FIELDS.map(([name, label, placeholder]) => field(name, label, values, errors, { type: 'number', placeholder }))}
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
  embeddings: 'Embeddings (/v1/embeddings, Gemini embedContent)',
  rerank: 'Rerank (/v1/rerank, /v2/rerank)',
  images: 'Images (/v1/images/generations, /v1/images/edits)',
  transcriptions: 'Transcriptions (/v1/audio/transcriptions, /v1/audio/translations)',
  speech: 'Speech (/v1/audio/speech)',
  moderations: 'Moderations (/v1/moderations)',
};

const PRICE_LABELS: Readonly<Record<PriceUnit, string>> = {
  input_per_mtok: 'Input price, per million tokens',
  output_per_mtok: 'Output price, per million tokens',
  cached_input_per_mtok: 'Cached input, per million tokens (default: same as input)',
  cache_write_per_mtok: 'Cache write, per million tokens (default: same as input)',
  per_image: 'Per image',
  per_audio_minute: 'Per minute of input audio',
  per_mchar: 'Per million input characters',
  per_request: 'Per request',
};

/** The model form; `providerIds` are the providers a deployment can name. */
export function modelForm(session: Session, mode: EntryMode, values: FormValues, errors: FieldErrors, providerIds: readonly string[]): Html {
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
    <select id="f-provider" name="provider" required${errors.provider ? html` aria-describedby="f-provider-err" aria-invalid="true"` : ''}>${providerIds.map((id) => html`<option value="${id}"${values.provider === id ? html` selected` : ''}>${id}</option>`)}</select>
    ${errors.provider ? html`<p class="field-error" id="f-provider-err">${errors.provider}</p>` : ''}
  </div>
  ${field('upstream_model', 'Upstream model', values, errors, { hint: 'The name the provider knows it by; default: the model id.' })}
  ${field('aliases', 'Aliases', values, errors, { hint: 'Other names clients may ask for this model by, separated by commas or spaces (exact names; patterns such as claude-* go in the configuration file’s model_aliases).' })}
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
    <legend>Prices in USD <span class="muted">(optional; only the units the model is sold in; none: unpriced, or the price list's)</span></legend>
    ${PRICE_UNITS.map((unit) => field(unit, PRICE_LABELS[unit], values, errors, { type: 'number', step: 'any' }))}
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
 * The confirmation before a removal. A provider that any model's deployment still uses (`users`,
 * the ids of those models) is named with its users and offered no button (the admin refuses it
 * anyway, and `refusal` says so when a model took it up in the meantime).
 */
export function deletePage(session: Session, kind: EntryKind, id: string, users: readonly string[], refusal?: string): Html {
  const noun = kind === 'providers' ? 'provider' : 'model';
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
