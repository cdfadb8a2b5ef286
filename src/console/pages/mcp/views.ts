// The MCP servers pages as HTML (admins only): every server with its state and tools, the HTTP
// server form (no command field: a stdio server is the configuration file's alone) and the removal
// confirmation. Header values are never rendered: names only, the values masked.
import type { FieldErrors } from '../../../catalogue/catalogue-admin.js';
import { isStdioServer, MCP_TRANSPORTS } from '../../../config/config-file.js';
import { maskBaseUrl } from '../../../core/masked-url.js';
import type { McpServerView } from '../../../mcp/mcp-server-status.js';
import { userOf } from '../../console-context.js';
import { formatPrice, html, layout, timeTag, type Html } from '../../html.js';
import type { Session } from '../../sessions.js';
import type { FormValues } from '../catalogue/forms.js';

export type McpFormMode = 'create' | 'update';

const STATE_LABELS = { ready: 'Ready', connecting: 'Connecting', down: 'Down' } as const;
/** The pill colours the status page uses: ready reads as up, connecting as degraded. */
const STATE_PILLS = { ready: 'up', connecting: 'degraded', down: 'down' } as const;
const TRANSPORT_LABELS = { streamable_http: 'Streamable HTTP', sse: 'HTTP+SSE (older)', stdio: 'stdio' } as const;
/** A tool's description is the upstream's text: long ones are cut on the overview. */
const DESCRIPTION_MAX = 300;

function stateCell(view: McpServerView, now: number): Html {
  const { state } = view;
  if (state === null) return html`<span class="pill pill-unknown">Not started</span><br><span class="muted small">taken up within a second</span>`;
  return html`<span class="pill pill-${STATE_PILLS[state.state]}" data-state="${state.state}">${STATE_LABELS[state.state]}</span>
    <br><span class="muted small">since ${timeTag(state.since, now)}${state.restarts > 0 ? html`, ${state.restarts} restart${state.restarts === 1 ? '' : 's'}` : ''}${state.protocolVersion === null ? '' : html`, protocol ${state.protocolVersion}`}</span>
    ${state.error === null ? '' : html`<br><span class="field-error small" data-mcp-error>${state.error}</span>`}`;
}

function addressCell(view: McpServerView): Html {
  const config = view.entry.config;
  if (isStdioServer(config)) return html`${TRANSPORT_LABELS.stdio}: <code>${config.command}</code>${Object.keys(config.env).length > 0 ? html`<br><span class="muted small">environment: ${Object.keys(config.env).join(', ')}</span>` : ''}`;
  return html`${TRANSPORT_LABELS[config.transport]}<br><code>${maskBaseUrl(config.url)}</code>`;
}

function headersCell(view: McpServerView): Html {
  if (view.entry.headerNames.length === 0) return html`<span class="muted">none</span>`;
  return html`<ul class="plain headers">${view.entry.headerNames.map((name) => html`<li><code>${name}: ••••••••</code></li>`)}</ul>`;
}

function toolsCell(view: McpServerView): Html {
  if (view.tools === null) return html`<span class="muted">${view.state?.state === 'ready' ? 'unavailable' : '—'}</span>`;
  if (view.tools.length === 0) return html`<span class="muted">no tools</span>`;
  return html`<details><summary>${view.tools.length} tool${view.tools.length === 1 ? '' : 's'}</summary><ul class="plain" data-tools="${view.entry.id}">${view.tools.map(
    (tool) => html`<li data-tool="${tool.name}"><code>${tool.name}</code>${tool.description ? html`<br><span class="muted small">${tool.description.length > DESCRIPTION_MAX ? `${tool.description.slice(0, DESCRIPTION_MAX)}…` : tool.description}</span>` : ''}</li>`,
  )}</ul></details>`;
}

export function mcpOverviewPage(session: Session, views: readonly McpServerView[], notice: string | null, now: number): Html {
  return layout({
    title: 'MCP servers',
    nav: 'mcp',
    user: userOf(session),
    body: html`<div class="page-head">
  <h1>MCP servers</h1>
  <p class="lead">The upstream MCP servers this gateway offers at <code>/mcp</code> (all of them, each tool named <code>server__tool</code>) and <code>/mcp/&lt;server&gt;</code>. A key reaches a server only when its MCP allow-list names it (see its limits). Servers from the configuration file are read-only here, and only the configuration file declares a stdio server (a command run on the gateway’s host). Servers added here are reached over HTTP, in every gateway process within a second. States are this gateway process’s connections.</p>
</div>
${notice ? html`<p class="notice notice-ok" role="status">${notice}</p>` : ''}
<section aria-labelledby="mcp-heading">
  <div class="section-head"><h2 id="mcp-heading">Servers</h2><a class="btn btn-small" href="/app/mcp/new">Add HTTP server</a></div>
  <div class="table-scroll" role="region" aria-label="MCP servers" tabindex="0"><table class="data mcp-servers">
    <thead><tr><th scope="col">Server<br><span class="muted">origin</span></th><th scope="col">Transport and address</th><th scope="col">Headers</th><th scope="col" class="num">Per call</th><th scope="col">State</th><th scope="col">Tools</th><th scope="col">Actions</th></tr></thead>
    <tbody>${views.length === 0 ? html`<tr><td colspan="7" class="empty">No MCP servers yet.</td></tr>` : views.map(
      (view) => html`<tr data-mcp-server="${view.entry.id}"><th scope="row"><code>${view.entry.id}</code><br><span class="tag tag-${view.entry.origin}">${view.entry.origin === 'config' ? 'configuration file' : 'console'}</span></th>
      <td>${addressCell(view)}</td>
      <td>${headersCell(view)}</td>
      <td class="num">${view.entry.config.price_per_call === undefined ? html`<span class="muted">free</span>` : formatPrice(view.entry.config.price_per_call)}</td>
      <td>${stateCell(view, now)}</td>
      <td>${toolsCell(view)}</td>
      <td class="actions stacked">${view.entry.origin === 'console' ? html`<a class="btn btn-small btn-secondary" href="/app/mcp/${encodeURIComponent(view.entry.id)}/edit">Edit<span class="visually-hidden"> ${view.entry.id}</span></a> <a class="btn btn-small btn-danger" href="/app/mcp/${encodeURIComponent(view.entry.id)}/delete">Remove<span class="visually-hidden"> ${view.entry.id}</span></a>` : html`<span class="muted">—</span>`}</td></tr>`,
    )}</tbody>
  </table></div>
</section>`,
  });
}

function errorSummary(errors: FieldErrors): Html {
  const entries = Object.entries(errors);
  if (entries.length === 0) return html``;
  return html`<div class="notice notice-error" role="alert"><p>Nothing was saved:</p><ul>${entries.map(([name, message]) => html`<li>${name === '_' ? '' : html`<code>${name}</code>: `}${message}</li>`)}</ul></div>`;
}

function textInput(name: string, label: string, values: FormValues, errors: FieldErrors, options: { type?: string; hint?: string | Html; required?: boolean; readonly?: boolean; placeholder?: string; step?: string } = {}): Html {
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

/** The HTTP server form. `headerNames`: the stored headers' names (their values are never sent back). */
export function mcpServerForm(session: Session, mode: McpFormMode, values: FormValues, errors: FieldErrors, headerNames: readonly string[]): Html {
  const action = mode === 'create' ? '/app/mcp/new' : `/app/mcp/${encodeURIComponent(String(values.id))}/edit`;
  const transport = typeof values.transport === 'string' && values.transport !== '' ? values.transport : 'streamable_http';
  return layout({
    title: mode === 'create' ? 'Add MCP server' : 'Edit MCP server',
    nav: 'mcp',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/mcp">MCP servers</a> / ${mode === 'create' ? 'new server' : html`<code>${values.id}</code>`}</p>
<section class="card narrow">
<h1>${mode === 'create' ? 'Add an HTTP MCP server' : html`Edit MCP server <code>${values.id}</code>`}</h1>
<p class="hint">Servers added here are reached over HTTP. A stdio server (a command run on the gateway’s host) can be declared only in the configuration file.</p>
${errorSummary(errors)}
<form method="post" action="${action}" class="stack">
  <input type="hidden" name="csrf" value="${session.csrf}">
  ${textInput('id', 'Id', values, errors, { required: true, readonly: mode === 'update', hint: html`1-32 letters, digits, <code>-</code> or <code>_</code> (never two <code>_</code> in a row): its tools are offered as <code>id__tool</code>, and keys name it in their MCP allow-list.` })}
  ${textInput('url', 'URL', values, errors, { type: 'url', required: true, placeholder: 'https://mcp.example.com/mcp', hint: 'The server’s MCP endpoint (http:// or https://). Not this gateway’s own /mcp.' })}
  <div class="field">
    <label for="f-transport">Transport</label>
    <select id="f-transport" name="transport">${MCP_TRANSPORTS.map((t) => html`<option value="${t}"${transport === t ? html` selected` : ''}>${TRANSPORT_LABELS[t]}</option>`)}</select>
    ${errors.transport ? html`<p class="field-error">${errors.transport}</p>` : ''}
  </div>
  ${textInput('price_per_call', 'Price per tool call (USD)', values, errors, { type: 'number', step: 'any', placeholder: 'free', hint: 'Counted against key and account budgets; empty: tool calls are free and budgets do not count them.' })}
  <div class="field">
    <label for="f-headers">Headers <span class="muted">(optional, one <code>Name: value</code> per line)</span></label>
    <textarea id="f-headers" name="headers" rows="2" spellcheck="false" aria-describedby="f-headers-hint" autocomplete="off"></textarea>
    <p class="hint" id="f-headers-hint">Sent on every request to the server (its token): stored encrypted and never shown again. ${mode === 'update' ? (headerNames.length > 0 ? html`Set now: ${headerNames.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}: ••••••••</code>`)}. Leave blank to keep them; lines typed here replace them all.` : 'None set.') : ''}</p>
    ${mode === 'update' && headerNames.length > 0 ? html`<label class="check"><input type="checkbox" name="clear_headers" value="1"> Remove the stored headers</label>` : ''}
    ${errors.headers ? html`<p class="field-error">${errors.headers}</p>` : ''}
  </div>
  <div class="row"><button type="submit" class="btn">${mode === 'create' ? 'Add server' : 'Save server'}</button><a class="btn btn-secondary" href="/app/mcp">Cancel</a></div>
</form>
</section>`,
  });
}

export function mcpDeletePage(session: Session, id: string, refusal?: string): Html {
  return layout({
    title: 'Remove MCP server',
    nav: 'mcp',
    user: userOf(session),
    body: html`<section class="card narrow">
  <h1>Remove the MCP server <code>${id}</code>?</h1>
  ${refusal ? html`<p class="notice notice-error" role="alert">Not removed: ${refusal}</p>` : ''}
  <p>Its tools leave <code>/mcp</code> within a second, in every gateway process; calls under way end with an error. Keys that name it keep the entry but reach nothing.</p>
  <form method="post" action="/app/mcp/${encodeURIComponent(id)}/delete" class="row">
    <input type="hidden" name="csrf" value="${session.csrf}">
    <button type="submit" class="btn btn-danger">Remove server</button>
    <a class="btn btn-secondary" href="/app/mcp">Cancel</a>
  </form>
</section>`,
  });
}
