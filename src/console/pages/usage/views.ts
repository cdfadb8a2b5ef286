// The usage page as HTML: the totals, the charts per day, the top models and keys, and the
// figures per day as a table.
import type { AccountRecord, UsageFigures, UsageGroup } from '../../../store/store.js';
import { isoDay, spendText, type Breakdown, type TopList, type UsageReport } from '../../../usage/usage-report.js';
import { accountFilterForm } from '../../account-filter.js';
import { userOf } from '../../console-context.js';
import { DAY_MS, dayTag, formatInt, formatUsd, html, layout, trusted, type Html } from '../../html.js';
import type { Session } from '../../sessions.js';
import { compactNumber, compactUsd, dayChart, type ChartSeries } from '../../usage-chart.js';
import { queryOf, RANGES, usageHref, type UsageParams } from './params.js';

const BREAKDOWNS: Record<Breakdown, string> = { model: 'Model', key: 'Key' };
/** How much of a key id is shown (`key_` and six characters): enough to tell keys of one name apart. */
const KEY_ID_SHOWN = 'key_'.length + 6;
/** The tone (stylesheet colour) of the "other" series, after those of the top ones. */
const OTHER_TONE = 'other';
/** The tone of the MCP tool calls' series. */
const TOOLS_TONE = 'tools';

/**
 * The MCP tool calls: one line per `server/tool`, with calls, failures and spend (a tool call has no
 * tokens, so no token columns), and the rest added up.
 */
function toolsTable(report: UsageReport): Html | string {
  const { tools, toolTotals, totals } = report;
  if (toolTotals.requests === 0) return '';
  const cells = (figures: UsageFigures) => html`<td class="num">${formatInt(figures.requests)}</td><td class="num">${formatInt(figures.failed)}</td><td class="num">${spendText(figures, formatUsd)}</td><td class="num">${totals.costUsd > 0 ? `${((figures.costUsd / totals.costUsd) * 100).toFixed(1)}%` : '—'}</td>`;
  return html`<section aria-labelledby="top-tools-heading">
  <h2 id="top-tools-heading">Top MCP tools</h2>
  <p class="muted small">Tool calls through <code>/mcp</code>, by <code>server/tool</code>. They count as requests in the totals above; they have no tokens, and cost only what a server’s <code>price_per_call</code> says.</p>
  <div class="table-scroll" role="region" aria-labelledby="top-tools-heading" tabindex="0">
  <table class="data" id="top-tools" aria-labelledby="top-tools-heading">
    <thead><tr><th scope="col">Server/tool</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Spend</th><th scope="col" class="num">Share of spend</th></tr></thead>
    <tbody>
    ${tools.lines.map((group) => html`<tr><th scope="row" data-tool="${group.model!}"><code>${group.model!}</code></th>${cells(group)}</tr>`)}
    ${tools.other === undefined ? '' : html`<tr data-other><th scope="row">All other tools</th>${cells(tools.other)}</tr>`}
    </tbody>
  </table>
  </div>
</section>`;
}

/** A key as the console names it: its name and the start of its id. */
function keyLabel(group: UsageGroup): string {
  const id = `${group.keyId!.slice(0, KEY_ID_SHOWN)}…`;
  return group.keyName === undefined ? `unknown key (${id})` : `${group.keyName} (${id})`;
}

function seriesLabel(report: UsageReport, group: UsageGroup | undefined, toolCalls: boolean): string {
  if (toolCalls) return 'MCP tool calls';
  if (group === undefined) return report.query.breakdown === 'model' ? 'Other models' : 'Other keys';
  return report.query.breakdown === 'model' ? group.model! : keyLabel(group);
}

function figureCells(figures: UsageFigures, total: UsageFigures | undefined): Html {
  return html`<td class="num">${formatInt(figures.requests)}</td>
    <td class="num">${formatInt(figures.failed)}</td>
    <td class="num">${formatInt(figures.inputTokens)}</td>
    <td class="num">${formatInt(figures.outputTokens)}</td>
    <td class="num">${spendText(figures, formatUsd)}</td>
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

/** The usage of `shown` (every account's when undefined) as `params` chose it; `accounts` fill an admin's account filter. */
export function usagePage(session: Session, params: UsageParams, report: UsageReport, accounts: readonly AccountRecord[], shown: AccountRecord | undefined): Html {
  const isAdmin = session.account.isAdmin;
  const { totals } = report;
  const dayNames = report.days.map((d) => isoDay(d.day));
  const from = dayNames[0]!;
  const to = dayNames.at(-1)!;
  const tableNote = 'The same figures are in the table “Figures per day” below.';
  const stacked = (pick: (figures: UsageFigures) => number): ChartSeries[] =>
    report.series.map((s, i) => ({ label: seriesLabel(report, s.group, s.toolCalls === true), values: s.days.map(pick), tone: s.toolCalls ? TOOLS_TONE : s.group === undefined ? OTHER_TONE : String(i) }));
  const whose = shown === undefined ? 'every account' : html`the account <strong>${shown.name}</strong>`;
  const link = (change: Partial<UsageParams>) => usageHref('/app/usage', params, change);
  const switcher = <T extends string | number>(label: string, options: readonly { value: T; text: string }[], current: T, change: (value: T) => Partial<UsageParams>) =>
    html`<nav class="switch" aria-label="${label}"><span class="switch-label" aria-hidden="true">${label}</span><ul>${options.map(
      (o) => html`<li><a href="${link(change(o.value))}"${o.value === current ? trusted(' aria-current="true"') : ''}>${o.text}</a></li>`,
    )}</ul></nav>`;

  const body = html`<div class="page-head">
  <h1>Usage</h1>
  <p class="lead">Requests, tokens and spend of ${whose}, per UTC day from ${dayTag(report.days[0]!.day * DAY_MS)} to ${dayTag(report.days.at(-1)!.day * DAY_MS)} (today). Today’s figures grow as requests are written to the ledger, within a second.</p>
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
  <div><dt>Spend</dt><dd data-total="cost_usd">${spendText(totals, formatUsd)}</dd></div>
  ${report.toolTotals.requests === 0 ? '' : html`<div><dt>Of the requests, MCP tool calls</dt><dd data-total="tool_calls">${formatInt(report.toolTotals.requests)}</dd></div>`}
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
${toolsTable(report)}
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
