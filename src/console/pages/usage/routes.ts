import type { ServerResponse } from 'node:http';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { dayOf } from '../../../store/sql-status.js';
import type { AccountRecord, UsageFigures, UsageGroup } from '../../../store/store.js';
import { isoDay, usageReport, type Breakdown, type TopList, type UsageReport } from '../../../usage/usage-report.js';
import { accountFilterForm } from '../../account-filter.js';
import { page, requireSession, userOf, type ConsoleDeps } from '../../console-context.js';
import { csvLine } from '../../csv.js';
import { formatInt, formatUsd, html, layout, trusted, type Html } from '../../html.js';
import { FormError, sendHtml } from '../../http.js';
import type { Session } from '../../sessions.js';
import { compactNumber, compactUsd, dayChart, type ChartSeries } from '../../usage-chart.js';

/** The ranges offered, in days up to today (UTC) included. */
const RANGES = [7, 30, 90] as const;
type Range = (typeof RANGES)[number];
const DEFAULT_RANGE: Range = 30;
const BREAKDOWNS: Record<Breakdown, string> = { model: 'Model', key: 'Key' };
/** How much of a key id is shown (`key_` and six characters): enough to tell keys of one name apart. */
const KEY_ID_SHOWN = 'key_'.length + 6;
/** The tone (stylesheet colour) of the "other" series, after those of the top ones. */
const OTHER_TONE = 'other';

/** The page's parameters as typed values: anything unknown falls back to the default. */
interface UsageParams {
  readonly range: Range;
  /** An admin's choice of account by name; null for all. Members always see their own. */
  readonly account: string | null;
  readonly breakdown: Breakdown;
}

function parseParams(query: URLSearchParams, session: Session): UsageParams {
  const range = RANGES.find((r) => String(r) === query.get('range')) ?? DEFAULT_RANGE;
  const by = query.get('by');
  const breakdown: Breakdown = by === 'key' ? 'key' : 'model';
  // A member's `account` parameter is ignored: their own account is the only one they see.
  const account = session.account.isAdmin ? query.get('account') || null : null;
  return { range, account, breakdown };
}

/** The parameters as a query string; defaults are left out. */
function queryOf(params: UsageParams): URLSearchParams {
  const query = new URLSearchParams();
  if (params.range !== DEFAULT_RANGE) query.set('range', String(params.range));
  if (params.account !== null) query.set('account', params.account);
  if (params.breakdown !== 'model') query.set('by', params.breakdown);
  return query;
}

/** The same page (or its CSV) with some parameters changed. */
function usageHref(path: string, params: UsageParams, change: Partial<UsageParams> = {}): string {
  const text = queryOf({ ...params, ...change }).toString();
  return text === '' ? path : `${path}?${text}`;
}

/** Whose usage the session sees: a member's own account; an admin's chosen one, or undefined for every account's. */
async function scope(deps: ConsoleDeps, session: Session, params: UsageParams): Promise<AccountRecord | undefined> {
  if (!session.account.isAdmin) return session.account;
  if (params.account === null) return undefined;
  const account = await deps.store.accounts.byName(params.account);
  if (account === undefined) throw new FormError(404, 'There is no such account.');
  return account;
}

function days(params: UsageParams): { fromDay: number; toDay: number } {
  const toDay = dayOf(Date.now());
  return { fromDay: toDay - params.range + 1, toDay };
}

/** A key as the console names it: its name and the start of its id. */
function keyLabel(group: UsageGroup): string {
  const id = `${group.keyId!.slice(0, KEY_ID_SHOWN)}…`;
  return group.keyName === undefined ? `unknown key (${id})` : `${group.keyName} (${id})`;
}

function seriesLabel(report: UsageReport, group: UsageGroup | undefined): string {
  if (group === undefined) return report.query.breakdown === 'model' ? 'Other models' : 'Other keys';
  return report.query.breakdown === 'model' ? group.model! : keyLabel(group);
}

function figureCells(figures: UsageFigures, total: UsageFigures | undefined): Html {
  return html`<td class="num">${formatInt(figures.requests)}</td>
    <td class="num">${formatInt(figures.failed)}</td>
    <td class="num">${formatInt(figures.inputTokens)}</td>
    <td class="num">${formatInt(figures.outputTokens)}</td>
    <td class="num">${formatUsd(figures.costUsd)}</td>
    ${total === undefined ? '' : html`<td class="num">${total.costUsd > 0 ? `${((figures.costUsd / total.costUsd) * 100).toFixed(1)}%` : '—'}</td>`}`;
}

const FIGURE_HEADERS = html`<th scope="col" class="num">Requests</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Input tokens</th><th scope="col" class="num">Output tokens</th><th scope="col" class="num">Spend</th>`;

function topTable(options: { id: string; title: string; list: TopList; totals: UsageFigures; head: Html; line: (group: UsageGroup) => Html; other: string; columns: number }): Html {
  const { list, totals } = options;
  return html`<section aria-labelledby="${options.id}-heading">
  <h2 id="${options.id}-heading">${options.title}</h2>
  <div class="table-scroll" role="region" aria-labelledby="${options.id}-heading" tabindex="0">
  <table class="data" id="${options.id}" aria-labelledby="${options.id}-heading">
    <thead><tr>${options.head}${FIGURE_HEADERS}<th scope="col" class="num">Share of spend</th></tr></thead>
    <tbody>
    ${
      list.lines.length === 0
        ? html`<tr><td colspan="${options.columns + 6}" class="empty">No usage in this range.</td></tr>`
        : list.lines.map((group) => html`<tr>${options.line(group)}${figureCells(group, totals)}</tr>`)
    }
    ${list.other === undefined ? '' : html`<tr data-other><th scope="row" colspan="${options.columns}">${options.other}</th>${figureCells(list.other, totals)}</tr>`}
    </tbody>
  </table>
  </div>
</section>`;
}

function usagePage(session: Session, params: UsageParams, report: UsageReport, accounts: readonly AccountRecord[], shown: AccountRecord | undefined): Html {
  const isAdmin = session.account.isAdmin;
  const { totals } = report;
  const dayNames = report.days.map((d) => isoDay(d.day));
  const from = dayNames[0]!;
  const to = dayNames.at(-1)!;
  const tableNote = 'The same figures are in the table “Figures per day” below.';
  const stacked = (pick: (figures: UsageFigures) => number): ChartSeries[] =>
    report.series.map((s, i) => ({ label: seriesLabel(report, s.group), values: s.days.map(pick), tone: s.group === undefined ? OTHER_TONE : String(i) }));
  const whose = shown === undefined ? 'every account' : html`the account <strong>${shown.name}</strong>`;
  const link = (change: Partial<UsageParams>) => usageHref('/app/usage', params, change);
  const switcher = <T extends string | number>(label: string, options: readonly { value: T; text: string }[], current: T, change: (value: T) => Partial<UsageParams>) =>
    html`<nav class="switch" aria-label="${label}"><span class="switch-label" aria-hidden="true">${label}</span><ul>${options.map(
      (o) => html`<li><a href="${link(change(o.value))}"${o.value === current ? trusted(' aria-current="true"') : ''}>${o.text}</a></li>`,
    )}</ul></nav>`;

  const body = html`<div class="page-head">
  <h1>Usage</h1>
  <p class="lead">Requests, tokens and spend of ${whose}, per UTC day from ${from} to ${to} (today). Today’s figures grow as requests are written to the ledger, within a second.</p>
</div>
<div class="usage-controls">
  ${switcher('Range', RANGES.map((r) => ({ value: r, text: `${r} days` })), params.range, (range) => ({ range }))}
  ${switcher('Break down by', (Object.keys(BREAKDOWNS) as Breakdown[]).map((b) => ({ value: b, text: BREAKDOWNS[b] })), params.breakdown, (breakdown) => ({ breakdown }))}
  ${isAdmin ? accountFilterForm('/app/usage', accounts, params.account, Object.fromEntries(queryOf({ ...params, account: null }))) : ''}
  <a class="btn btn-secondary btn-small csv-link" href="${usageHref('/app/usage.csv', params)}" download>Download CSV<span class="visually-hidden"> of these figures</span></a>
</div>
<dl class="stats usage-totals" aria-label="Totals from ${from} to ${to}">
  <div><dt>Requests</dt><dd data-total="requests">${formatInt(totals.requests)}</dd></div>
  <div><dt>Failed</dt><dd data-total="failed">${formatInt(totals.failed)}</dd></div>
  <div><dt>Input tokens</dt><dd data-total="input_tokens">${formatInt(totals.inputTokens)}</dd></div>
  <div><dt>Output tokens</dt><dd data-total="output_tokens">${formatInt(totals.outputTokens)}</dd></div>
  <div><dt>Spend</dt><dd data-total="cost_usd">${formatUsd(totals.costUsd)}</dd></div>
</dl>
<section aria-labelledby="requests-chart-heading">
  <h2 id="requests-chart-heading">Requests per day <span class="muted small">by ${BREAKDOWNS[params.breakdown].toLowerCase()}</span></h2>
  ${dayChart({ id: 'requests-chart', title: `Requests per day by ${params.breakdown}, ${from} to ${to}`, tableNote, days: dayNames, series: stacked((f) => f.requests), tick: compactNumber, exact: (v) => `${formatInt(v)} requests`, whole: true })}
</section>
<section aria-labelledby="tokens-chart-heading">
  <h2 id="tokens-chart-heading">Tokens per day <span class="muted small">input and output</span></h2>
  ${dayChart({
    id: 'tokens-chart',
    title: `Tokens per day, input and output, ${from} to ${to}`,
    tableNote,
    days: dayNames,
    series: [
      { label: 'Input tokens', values: report.days.map((d) => d.inputTokens), tone: 'input' },
      { label: 'Output tokens', values: report.days.map((d) => d.outputTokens), tone: 'output' },
    ],
    tick: compactNumber,
    exact: (v) => `${formatInt(v)} tokens`,
    whole: true,
  })}
</section>
<section aria-labelledby="spend-chart-heading">
  <h2 id="spend-chart-heading">Spend per day <span class="muted small">by ${BREAKDOWNS[params.breakdown].toLowerCase()}</span></h2>
  ${dayChart({ id: 'spend-chart', title: `Spend per day by ${params.breakdown}, ${from} to ${to}`, tableNote, days: dayNames, series: stacked((f) => f.costUsd), tick: compactUsd, exact: formatUsd, whole: false })}
</section>
${topTable({
  id: 'top-models',
  title: 'Top models',
  list: report.models,
  totals,
  head: html`<th scope="col">Model</th>`,
  line: (group) => html`<th scope="row" data-model="${group.model!}"><code>${group.model!}</code></th>`,
  other: 'All other models',
  columns: 1,
})}
${topTable({
  id: 'top-keys',
  title: 'Top keys',
  list: report.keys,
  totals,
  head: html`<th scope="col">Key</th>${shown === undefined ? html`<th scope="col">Account</th>` : ''}`,
  line: (group) => html`<th scope="row" data-key-id="${group.keyId!}">${keyLabel(group)}</th>${shown === undefined ? html`<td>${group.accountName ?? '—'}</td>` : ''}`,
  other: 'All other keys',
  columns: shown === undefined ? 2 : 1,
})}
<section aria-labelledby="per-day-heading">
  <h2 id="per-day-heading">Figures per day</h2>
  <details class="per-day">
    <summary>Show the table (${report.days.length} days)</summary>
    <div class="table-scroll" role="region" aria-labelledby="per-day-heading" tabindex="0">
    <table class="data compact" id="per-day" aria-labelledby="per-day-heading">
      <thead><tr><th scope="col">Day (UTC)</th>${FIGURE_HEADERS}</tr></thead>
      <tbody>${report.days.map((d) => html`<tr data-day="${isoDay(d.day)}"><th scope="row"><time datetime="${isoDay(d.day)}">${isoDay(d.day)}</time></th>${figureCells(d, undefined)}</tr>`)}</tbody>
      <tfoot><tr><th scope="row">Total</th>${figureCells(totals, undefined)}</tr></tfoot>
    </table>
    </div>
  </details>
</section>`;
  return layout({ title: 'Usage', nav: 'usage', user: userOf(session), body });
}

/** Resolves once the response can take more (true), or when the client has gone (false). */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** The CSV's columns: one line per day, key and model with traffic in the range (days without any have no line). */
const CSV_HEADER = ['day', 'account', 'key_id', 'key_name', 'model', 'requests', 'failed', 'input_tokens', 'output_tokens', 'cost_usd'];

export function usageRoutes(deps: ConsoleDeps): { page: Handler; csv: Handler } {
  const read = async (ctx: RequestContext) => {
    const session = await requireSession(deps, ctx);
    if (!session) return undefined;
    const params = parseParams(new URLSearchParams(ctx.query), session);
    return { session, params, account: await scope(deps, session, params) };
  };

  const usage = page(deps, async (ctx) => {
    const chosen = await read(ctx);
    if (!chosen) return;
    const { session, params, account } = chosen;
    const [report, accounts] = await Promise.all([
      usageReport(deps.store, { ...days(params), accountId: account?.id, breakdown: params.breakdown }),
      session.account.isAdmin ? deps.store.accounts.list() : Promise.resolve([]),
    ]);
    sendHtml(ctx.res, 200, usagePage(session, params, report, accounts, account));
  });

  const csv = page(deps, async (ctx) => {
    const chosen = await read(ctx);
    if (!chosen) return;
    const { params, account } = chosen;
    const range = days(params);
    // Names from before the account-name rule may hold anything: the file name keeps the safe characters.
    const file = `sluice-usage-${(account?.name ?? 'all').replace(/[^A-Za-z0-9._@-]/g, '_')}-${isoDay(range.fromDay)}-to-${isoDay(range.toDay)}.csv`;
    const res = ctx.res;
    res.writeHead(200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${file}"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.write(csvLine(CSV_HEADER));
    // A day at a time, as the client takes it: a deployment with many keys never holds the whole file in memory.
    for (let day = range.fromDay; day <= range.toDay; day++) {
      const groups = await deps.store.usageDaily.summary({ fromDay: day, toDay: day, ...(account && { accountId: account.id }) }, ['day', 'key', 'model']);
      const lines = groups.map((g) => csvLine([isoDay(day), g.accountName ?? g.accountId!, g.keyId!, g.keyName ?? '', g.model!, g.requests, g.failed, g.inputTokens, g.outputTokens, g.costUsd]));
      if (lines.length > 0 && !res.write(lines.join('')) && !(await drained(res))) return;
    }
    res.end();
  });

  return { page: usage, csv };
}
