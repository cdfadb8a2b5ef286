import type { Handler, RequestContext } from '../../http/handler.js';
import type { Figures, Health } from '../../status/health.js';
import type { DeploymentState } from '../../routing/deployment-health.js';
import { HISTORY_DAYS, type ComponentStatus, type DayBar, type ModelStatus, type StatusSnapshot } from '../../status/status-monitor.js';
import { page, visitor, type ConsoleDeps } from '../console-context.js';
import { formatInt, timeTag, html, layout, type Html, type LayoutOptions } from '../html.js';
import { sendHtml, sendPublicJson, wantsJson } from '../http.js';
import { healthPill } from './models/views.js';
import { mcpServerViews, type McpServerView } from '../../mcp/mcp-server-status.js';

const HEADLINES: Record<Health, string> = {
  up: 'All systems operational',
  degraded: 'Some services are degraded',
  down: 'Major outage',
  unknown: 'No recent traffic to judge by',
};

function percent(value: number | null, digits = 2): string {
  return value === null ? '—' : `${(value * 100).toFixed(digits)}%`;
}

function figuresJson(f: Figures) {
  return {
    requests: f.requests,
    failures: f.failures,
    error_rate: f.errorRate,
    latency_ms: f.latencyMs,
    last_probe: f.lastProbe && { at: new Date(f.lastProbe.at).toISOString(), ok: f.lastProbe.ok, latency_ms: Math.round(f.lastProbe.latencyMs), error: f.lastProbe.errorKind },
  };
}

function componentJson(c: ComponentStatus) {
  return {
    id: c.id,
    status: c.state,
    last_hour: figuresJson(c.lastHour),
    uptime_90d: c.uptime90d,
    days: c.days.filter((d) => d.total > 0).map((d) => ({ date: d.date, total: d.total, failures: d.failures, uptime: d.uptime })),
  };
}

/** An MCP server as the public page shows it: its id and how its connection stands, never its address, headers or error. */
function mcpServerJson(view: McpServerView) {
  return { id: view.entry.id, status: view.state?.state ?? 'unknown', since: view.state === null ? null : new Date(view.state.since).toISOString() };
}

/**
 * The headline with the MCP servers in it. Beside models, a down server (its tools left out of
 * /mcp) makes a gateway that is otherwise up read as degraded. A gateway of MCP servers alone is
 * judged by them: all ready is up, some down degraded, all down down (Redis and the like still count).
 */
export function overallWith(snapshot: StatusSnapshot, mcp: readonly McpServerView[]): Health {
  const down = mcp.filter((view) => view.state?.state === 'down').length;
  if (snapshot.providers.length > 0 || mcp.length === 0) return snapshot.overall === 'up' && down > 0 ? 'degraded' : snapshot.overall;
  const servers: Health = down === mcp.length ? 'down' : down > 0 ? 'degraded' : mcp.every((view) => view.state?.state === 'ready') ? 'up' : 'unknown';
  const rank: Record<Health, number> = { unknown: 0, up: 1, degraded: 2, down: 3 };
  return rank[snapshot.overall] > rank[servers] ? snapshot.overall : servers;
}

export function statusJson(snapshot: StatusSnapshot, mcp: readonly McpServerView[]) {
  const overall = overallWith(snapshot, mcp);
  return {
    status: overall,
    description: HEADLINES[overall],
    generated_at: new Date(snapshot.generatedAt).toISOString(),
    degraded: snapshot.degraded.map((d) => ({ component: d.component, since: new Date(d.since).toISOString(), message: d.message })),
    providers: snapshot.providers.map((p) => ({ ...componentJson(p), models: p.models.map((m) => ({ ...componentJson(m), deployments: m.deployments })), unlisted_models: p.unlisted })),
    mcp_servers: mcp.map(mcpServerJson),
  };
}

const MCP_STATES = { ready: 'Ready', connecting: 'Connecting', down: 'Down' } as const;
const MCP_PILLS = { ready: 'up', connecting: 'degraded', down: 'down' } as const;

/** The MCP servers' connections as this process sees them now: a down server's tools are left out of /mcp. */
function mcpSection(mcp: readonly McpServerView[], now: number): Html | string {
  if (mcp.length === 0) return '';
  return html`<section class="card" aria-labelledby="mcp-status-heading" data-mcp-status>
  <h2 id="mcp-status-heading">MCP servers</h2>
  <div class="table-scroll" role="region" aria-label="MCP servers" tabindex="0"><table class="data compact">
    <thead><tr><th scope="col">Server</th><th scope="col">State (this process)</th><th scope="col">Since</th></tr></thead>
    <tbody>${mcp.map(
      (view) => html`<tr data-mcp-server="${view.entry.id}"><th scope="row"><code>${view.entry.id}</code></th><td>${view.state === null ? html`<span class="pill pill-unknown">Not started</span>` : html`<span class="pill pill-${MCP_PILLS[view.state.state]}" data-state="${view.state.state}">${MCP_STATES[view.state.state]}</span>`}</td><td>${view.state === null ? html`<span class="muted">—</span>` : timeTag(view.state.since, now)}</td></tr>`,
    )}</tbody>
  </table></div>
  <p class="muted small">Tools of a server that is down are left out of <code>/mcp</code> until it is back.</p>
</section>`;
}

function barClass(day: DayBar): string {
  if (day.uptime === null) return 'bar-none';
  if (day.uptime >= 0.995) return 'bar-up';
  if (day.uptime >= 0.95) return 'bar-degraded';
  return 'bar-down';
}

function bars(c: ComponentStatus): Html {
  return html`<div class="history">
  <div class="bars" role="img" aria-label="Uptime per day for ${HISTORY_DAYS} days: ${c.uptime90d === null ? 'no data' : percent(c.uptime90d)} overall">
    ${c.days.map((d) => html`<span class="bar ${barClass(d)}" title="${d.date}: ${d.uptime === null ? 'no data' : `${percent(d.uptime)} of ${formatInt(d.total)}`}"></span>`)}
  </div>
  <div class="bars-legend muted small"><span>${HISTORY_DAYS} days ago</span><span>${c.uptime90d === null ? 'no data' : `${percent(c.uptime90d)} uptime`}</span><span>today</span></div>
</div>`;
}

function latency(f: Figures): string {
  return f.latencyMs === null ? '—' : `${formatInt(f.latencyMs.p50)} / ${formatInt(f.latencyMs.p95)} / ${formatInt(f.latencyMs.p99)} ms`;
}

/**
 * Words as well as colour: the pill says the state. These are the router's (does this process send
 * requests there now?), not health: worded apart from the models' Up / Down / No recent data, so
 * that a model with no recent traffic whose deployment takes requests does not read as "Up" twice over.
 */
const DEPLOYMENT_STATES: Record<DeploymentState, string> = { up: 'Routable', degraded: 'Routable, recent failures', cooling: 'Cooling down', open: 'Circuit open' };

/** One row per deployment of each model: where its requests go, and how the router sees that upstream now. */
function deploymentTable(providerId: string, models: readonly ModelStatus[]): Html {
  return html`<div class="table-scroll" role="region" aria-label="Deployments of the models of ${providerId}" tabindex="0"><table class="data compact">
    <caption>Deployments: where requests are routed now</caption>
    <thead><tr><th scope="col">Model</th><th scope="col">Deployment</th><th scope="col">Router (this process)</th><th scope="col" class="num">Live latency</th></tr></thead>
    <tbody>${models.map((m) =>
      m.deployments.map(
        (d) => html`<tr data-deployment-of="${m.id}" data-deployment="${d.provider}/${d.upstream_model}"><th scope="row"><code>${m.id}</code></th><td><code>${d.provider}/${d.upstream_model}</code></td><td><span class="pill pill-${d.state}">${DEPLOYMENT_STATES[d.state]}</span></td><td class="num">${d.latency_ms === null ? '—' : `${formatInt(d.latency_ms)} ms`}</td></tr>`,
      ),
    )}</tbody>
  </table></div>`;
}

function statusPage(snapshot: StatusSnapshot, mcp: readonly McpServerView[], user: LayoutOptions['user']) {
  const overall = overallWith(snapshot, mcp);
  return layout({
    title: 'Status',
    user,
    nav: 'status',
    refreshSeconds: 15,
    body: html`<div class="page-head">
  <h1>Service status</h1>
</div>
<p class="banner banner-${overall}" id="overall" role="status"><strong>${HEADLINES[overall]}</strong> <span class="muted small">as of ${timeTag(snapshot.generatedAt, snapshot.generatedAt)}</span></p>
${snapshot.degraded.map((d) => html`<p class="banner banner-degraded" data-degraded="${d.component}">${d.message} <span class="muted small">since ${timeTag(d.since, snapshot.generatedAt)}</span></p>`)}
${snapshot.providers.length === 0 ? html`<p class="empty card">No providers are configured.</p>` : ''}
${mcpSection(mcp, snapshot.generatedAt)}
${snapshot.providers.map(
  (p) => html`<section class="card provider" data-provider="${p.id}" aria-labelledby="prov-${p.id}">
  <div class="provider-head">
    <h2 id="prov-${p.id}">${p.id}</h2>
    ${healthPill(p.state)}
  </div>
  <dl class="stats">
    <div><dt>Requests (1 h)</dt><dd>${formatInt(p.lastHour.requests)}</dd></div>
    <div><dt>Error rate</dt><dd>${percent(p.lastHour.errorRate, 1)}</dd></div>
    <div><dt>Latency p50/p95/p99</dt><dd>${latency(p.lastHour)}</dd></div>
    <div><dt>Last probe</dt><dd>${p.lastHour.lastProbe === null ? 'none' : html`${p.lastHour.lastProbe.ok ? 'ok' : `failed (${p.lastHour.lastProbe.errorKind ?? 'error'})`}, ${formatInt(Math.round(p.lastHour.lastProbe.latencyMs))} ms`}</dd></div>
  </dl>
  ${bars(p)}
  ${
    p.models.length === 0
      ? ''
      : html`<div class="table-scroll" role="region" aria-label="Models of ${p.id}" tabindex="0"><table class="data compact">
    <caption>Models: health over the last hour</caption>
    <thead><tr><th scope="col">Model</th><th scope="col">Health (1 h)</th><th scope="col" class="num">Requests (1 h)</th><th scope="col" class="num">Error rate</th><th scope="col" class="num">p50 / p95 / p99</th><th scope="col" class="num">90-day uptime</th></tr></thead>
    <tbody>${p.models.map(
      (m) => html`<tr data-model="${m.id}"><th scope="row"><a href="/models/${encodeURIComponent(m.id)}"><code>${m.id}</code></a></th><td>${healthPill(m.state)}${m.state !== 'unknown' && m.lastHour.requests === 0 && m.lastHour.lastProbe === null ? html` <span class="muted small">its provider’s</span>` : ''}</td><td class="num">${formatInt(m.lastHour.requests)}</td><td class="num">${percent(m.lastHour.errorRate, 1)}</td><td class="num">${latency(m.lastHour)}</td><td class="num">${percent(m.uptime90d)}</td></tr>`,
    )}</tbody>
  </table></div>
  ${deploymentTable(p.id, p.models)}`
  }
  ${p.unlisted === 0 ? '' : html`<p class="muted small" data-unlisted="${p.unlisted}">${formatInt(p.unlisted)} ${p.models.length === 0 ? '' : 'more '}model${p.unlisted === 1 ? '' : 's'} without traffic or probes in the last ${HISTORY_DAYS} days ${p.unlisted === 1 ? 'is' : 'are'} not listed here: see <a href="/models">Models</a>.</p>`}
</section>`,
)}
<details class="about" id="about-figures">
  <summary>What these figures mean</summary>
  <p class="muted small">Health comes from real traffic through this gateway over the last hour, and active probes where configured: a model with none of its own shows its provider’s health (“its provider’s”), as <a href="/models">Models</a> does. Error rate counts upstream and gateway failures, not callers’ mistakes. Latency is p50 / p95 / p99 of whole requests.</p>
  <p class="muted small">Each model’s deployments are the upstreams its requests are routed to, as the gateway process answering this page sees them now: routable; routable with recent failures (failures in the last circuit window); cooling down (the upstream asked for a pause with <code>Retry-After</code>); circuit open (too many failures: no requests until its cooldown ends, then one trial). A deployment is routable until requests fail, so it reads “Routable” while its model has no recent data. Live latency is a recent average of the time until the upstream answered (a stream’s first content; a failure counts as a slow answer); “—” when it has had no request in the last minute. A model is listed under the provider of its first deployment.</p>
</details>`,
  });
}

export function statusRoutes(deps: ConsoleDeps): { page: Handler; json: Handler } {
  const respond = async (ctx: RequestContext, forceJson: boolean) => {
    const snapshot = await deps.status.snapshot();
    const mcp = await mcpServerViews(deps.mcp.servers, deps.mcp.upstreams, false);
    if (forceJson || wantsJson(ctx.req, new URLSearchParams(ctx.query))) return sendPublicJson(ctx.res, statusJson(snapshot, mcp));
    const { user, headers } = await visitor(deps, ctx);
    sendHtml(ctx.res, 200, statusPage(snapshot, mcp, user), headers);
  };
  return { page: page(deps, (ctx) => respond(ctx, false)), json: page(deps, (ctx) => respond(ctx, true)) };
}
