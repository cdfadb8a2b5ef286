import type { Logger } from 'pino';
import type { LimitUse } from '../limits/limit-admission.js';
import { BUDGET_PERIODS, DEFAULT_BUDGET_PERIOD, hasLimits, limitsSchema, normaliseLimits, type BudgetPeriod, type Limits } from '../core/key-limits.js';
import { readMcpAllowList } from '../core/mcp-access.js';
import type { AccountRecord, KeyRecord } from '../store/store.js';
import type { ConsoleDeps } from './console-context.js';
import { formatInt, formatUsd, html, MONTHS, type Html } from './html.js';

/** The limit fields of the console's forms, by their form names. */
export const LIMIT_FIELDS = ['rpm', 'tpm', 'concurrency', 'budget_usd', 'budget_period', 'mcp'] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];
/** What a limits form holds: the text typed, kept as typed so a refused form comes back as it was. */
export type LimitValues = Record<LimitField, string>;

/** A use that could not be read (the counters failed or were too slow): the page says so and goes on. */
export const UNAVAILABLE = 'unavailable';
export type UseOrUnavailable = LimitUse | typeof UNAVAILABLE;

/** How long the keys page waits for one scope's use before showing it as unavailable. */
const USE_TIMEOUT_MS = 2000;
/** Scopes read at once, so that a page of many limited keys does not flood the counters. */
const USE_PARALLELISM = 16;

const INTEGER_FIELDS = {
  rpm: { key: 'rpm', label: 'Requests per minute', hint: 'in any rolling minute' },
  tpm: { key: 'tpm', label: 'Tokens per minute', hint: 'prompt plus the output cap at admission, settled to what was used' },
  concurrency: { key: 'concurrency', label: 'Requests in flight', hint: 'at once' },
} as const satisfies Record<string, { key: keyof Limits; label: string; hint: string }>;

const PERIOD_LABELS: Record<BudgetPeriod, string> = {
  day: 'per day (UTC)',
  week: 'per week (from Monday, UTC)',
  month: 'per calendar month (UTC)',
  total: 'in total (never renews)',
};

export function emptyLimitValues(): LimitValues {
  return { rpm: '', tpm: '', concurrency: '', budget_usd: '', budget_period: DEFAULT_BUDGET_PERIOD, mcp: '' };
}

/** Stored limits as a form shows them. */
export function limitValuesOf(limits: Limits | null): LimitValues {
  return {
    rpm: limits?.rpm === undefined ? '' : String(limits.rpm),
    tpm: limits?.tpm === undefined ? '' : String(limits.tpm),
    concurrency: limits?.concurrency === undefined ? '' : String(limits.concurrency),
    budget_usd: limits?.budgetUsd === undefined ? '' : String(limits.budgetUsd),
    budget_period: limits?.budgetPeriod ?? DEFAULT_BUDGET_PERIOD,
    mcp: limits?.mcp?.join(', ') ?? '',
  };
}

export function limitValuesFromForm(form: URLSearchParams): LimitValues {
  const values = emptyLimitValues();
  for (const field of LIMIT_FIELDS) values[field] = (form.get(field) ?? values[field]).trim();
  return values;
}

/** True when a form's limit fields hold anything: the create form opens its limits section then. */
export function anyLimitTyped(values: LimitValues): boolean {
  return values.rpm !== '' || values.tpm !== '' || values.concurrency !== '' || values.budget_usd !== '' || values.mcp !== '';
}

/** Empty, or `none` as on the command line: no limit. */
function isNone(text: string): boolean {
  return text === '' || text.toLowerCase() === 'none';
}

/**
 * A limits form's fields → limits (null for none), or an error per field. The period is read only
 * with a budget: the select always sends one. Checked once more by the store's own schema.
 */
export function parseLimitValues(values: LimitValues): { limits: Limits | null; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const limits: { -readonly [K in keyof Limits]: Limits[K] } = {};
  for (const [field, { key }] of Object.entries(INTEGER_FIELDS) as [keyof typeof INTEGER_FIELDS, (typeof INTEGER_FIELDS)[keyof typeof INTEGER_FIELDS]][]) {
    const text = values[field];
    if (isNone(text)) continue;
    const number = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(number) || number < 1) errors[field] = 'must be a whole number of at least 1 (leave it empty for no limit)';
    else limits[key] = number;
  }
  const budget = values.budget_usd.replace(/^\$/, '');
  if (!isNone(budget)) {
    const number = /^(\d+(\.\d*)?|\.\d+)$/.test(budget) ? Number(budget) : Number.NaN;
    if (!Number.isFinite(number) || number <= 0) errors.budget_usd = 'must be an amount in USD above 0, such as 20 or 2.50 (leave it empty for no budget)';
    else limits.budgetUsd = number;
    if (!(BUDGET_PERIODS as readonly string[]).includes(values.budget_period)) errors.budget_period = `must be one of ${BUDGET_PERIODS.join(', ')}`;
    else limits.budgetPeriod = values.budget_period as BudgetPeriod;
  }
  const mcp = parseMcpAllowList(values.mcp);
  if (typeof mcp === 'string') errors.mcp = mcp;
  else if (mcp !== undefined) limits.mcp = mcp;
  if (Object.keys(errors).length > 0) return { limits: null, errors };
  const checked = limitsSchema.safeParse(limits);
  if (!checked.success) {
    for (const issue of checked.error.issues) {
      const name = String(issue.path[0] ?? '_');
      errors[name === 'budgetUsd' ? 'budget_usd' : name === 'budgetPeriod' ? 'budget_period' : name] = issue.message;
    }
    return { limits: null, errors };
  }
  return { limits: normaliseLimits(checked.data), errors };
}

/** The MCP field: entries separated by commas or spaces; empty (or `none`) for no MCP server at all. An error's text when it is refused. */
function parseMcpAllowList(text: string): readonly string[] | undefined | string {
  if (isNone(text.trim())) return undefined;
  const list = readMcpAllowList(text.split(/[\s,]+/).filter((entry) => entry !== ''));
  return 'problem' in list ? list.problem : list;
}

/** An MCP allow-list as a page shows it: each entry as code, or a muted "no MCP server" (deny by default). */
export function describeMcp(limits: Limits | null): Html {
  const entries = limits?.mcp;
  if (entries === undefined || entries.length === 0) return html`<span class="muted">no MCP server</span>`;
  return html`${entries.map((entry, i) => html`${i > 0 ? ', ' : ''}<code>${entry}</code>`)}`;
}

/**
 * The limit fields of a form, in a fieldset: labelled, with hints, errors wired to their inputs
 * (`${prefix}-${field}`, `…-hint`, `…-err`). An empty field is no limit.
 */
export function limitsFieldset(values: LimitValues, errors: Record<string, string>, options: { prefix: string; legend: string | Html }): Html {
  const id = (field: string) => `${options.prefix}-${field}`;
  const describedBy = (field: string, hint: boolean) => {
    const ids = [hint ? `${id(field)}-hint` : '', errors[field] ? `${id(field)}-err` : ''].filter(Boolean).join(' ');
    return html`${ids ? html` aria-describedby="${ids}"` : ''}${errors[field] ? html` aria-invalid="true"` : ''}`;
  };
  const fieldError = (field: string) => (errors[field] ? html`<p class="field-error" id="${id(field)}-err">${errors[field]}</p>` : '');
  const integer = (field: keyof typeof INTEGER_FIELDS) => html`<div class="field">
    <label for="${id(field)}">${INTEGER_FIELDS[field].label}</label>
    <input id="${id(field)}" name="${field}" type="number" min="1" step="1" inputmode="numeric" value="${values[field]}" placeholder="no limit" autocomplete="off"${describedBy(field, true)}>
    <p class="hint" id="${id(field)}-hint">${INTEGER_FIELDS[field].hint}</p>
    ${fieldError(field)}
  </div>`;
  return html`<fieldset class="field limits-fieldset" aria-describedby="${id('about')}">
  <legend>${options.legend}</legend>
  <p class="hint" id="${id('about')}">Leave a field empty for no limit of that kind. A request over any limit is refused with 429.</p>
  <div class="limit-fields">
    ${integer('rpm')}
    ${integer('tpm')}
    ${integer('concurrency')}
    <div class="field">
      <label for="${id('budget_usd')}">Budget (USD)</label>
      <input id="${id('budget_usd')}" name="budget_usd" type="number" min="0" step="any" inputmode="decimal" value="${values.budget_usd}" placeholder="no budget" autocomplete="off"${describedBy('budget_usd', true)}>
      <p class="hint" id="${id('budget_usd')}-hint">spend at the models’ prices, reserved at admission</p>
      ${fieldError('budget_usd')}
    </div>
    <div class="field">
      <label for="${id('budget_period')}">Budget period</label>
      <select id="${id('budget_period')}" name="budget_period"${describedBy('budget_period', false)}>
        ${BUDGET_PERIODS.map((period) => html`<option value="${period}"${values.budget_period === period ? html` selected` : ''}>${PERIOD_LABELS[period]}</option>`)}
      </select>
      ${fieldError('budget_period')}
    </div>
  </div>
  <div class="field">
    <label for="${id('mcp')}">MCP servers and tools</label>
    <input id="${id('mcp')}" name="mcp" value="${values.mcp}" placeholder="none" autocomplete="off" spellcheck="false"${describedBy('mcp', true)}>
    <p class="hint" id="${id('mcp')}-hint">What it may use at <code>/mcp</code>: MCP server ids (all their tools) and <code>server/tool</code> entries, separated by commas or spaces. Unlike the limits above, empty means <strong>no</strong> MCP server at all. An account’s list is a ceiling over its keys’.</p>
    ${fieldError('mcp')}
  </div>
</fieldset>`;
}

/** `$0.00`, `$3.20`, `$0.0012`: money against a budget reads better with its cents. */
function usd(value: number): string {
  return value === 0 ? '$0.00' : formatUsd(value);
}

function renewal(period: BudgetPeriod, at: number | null, now: number): Html | string {
  if (period === 'total' || at === null || !Number.isFinite(at)) return '';
  const date = new Date(at);
  const iso = date.toISOString();
  if (period === 'day') return html` <span class="muted">(renews <time datetime="${iso}" title="${iso}">00:00 UTC</time>)</span>`;
  const year = date.getUTCFullYear() === new Date(now).getUTCFullYear() ? '' : ` ${date.getUTCFullYear()}`;
  return html` <span class="muted">(renews <time datetime="${iso}" title="${iso}">${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}${year}</time>)</span>`;
}

const PERIOD_NOW: Record<BudgetPeriod, string> = { day: 'today', week: 'this week', month: 'this month', total: 'in total' };

/** One limit against its use: `rpm 12/100`, marked when it is reached. */
function part(text: string, full: boolean): Html {
  return full ? html`<span class="limit limit-full">${text}<span class="visually-hidden"> (limit reached)</span></span>` : html`<span class="limit">${text}</span>`;
}

/**
 * A scope's limits with what is used of them now: `rpm 12/100 · tpm 3,200/50,000 · in flight 1/4 ·
 * $3.20 of $20.00 this month (renews 1 Dec)`; the limits alone when the use is unavailable.
 */
export function describeUse(limits: Limits, use: UseOrUnavailable | undefined, now: number): Html {
  const known = use === undefined || use === UNAVAILABLE ? null : use;
  const parts: Html[] = [];
  const period = limits.budgetPeriod ?? DEFAULT_BUDGET_PERIOD;
  if (known === null) {
    if (limits.rpm !== undefined) parts.push(part(`rpm ${formatInt(limits.rpm)}`, false));
    if (limits.tpm !== undefined) parts.push(part(`tpm ${formatInt(limits.tpm)}`, false));
    if (limits.concurrency !== undefined) parts.push(part(`in flight ${formatInt(limits.concurrency)}`, false));
    if (limits.budgetUsd !== undefined) parts.push(part(`${usd(limits.budgetUsd)} ${PERIOD_LABELS[period].replace(/ \(.*\)$/, '')}`, false));
  } else {
    if (limits.rpm !== undefined) parts.push(part(`rpm ${formatInt(known.requests)}/${formatInt(limits.rpm)}`, known.requests >= limits.rpm));
    if (limits.tpm !== undefined) parts.push(part(`tpm ${formatInt(known.tokens)}/${formatInt(limits.tpm)}`, known.tokens >= limits.tpm));
    if (limits.concurrency !== undefined) parts.push(part(`in flight ${formatInt(known.inFlight)}/${formatInt(limits.concurrency)}`, known.inFlight >= limits.concurrency));
    if (limits.budgetUsd !== undefined) {
      const spent = known.spentUsd ?? 0;
      parts.push(html`${part(`${usd(spent)} of ${usd(limits.budgetUsd)} ${PERIOD_NOW[period]}`, spent >= limits.budgetUsd)}${renewal(period, known.budgetResetsAt, now)}`);
    }
  }
  const joined = parts.map((p, i) => html`${i > 0 ? ' · ' : ''}${p}`);
  return html`${joined}${use === UNAVAILABLE ? html` <span class="muted">(use unavailable)</span>` : ''}`;
}

/** What the keys page shows: each limited key's use, and each limited account's (shared by its keys). */
export interface Uses {
  readonly keys: ReadonlyMap<string, UseOrUnavailable>;
  readonly accounts: ReadonlyMap<string, UseOrUnavailable>;
}

/** Runs `tasks` with at most `parallelism` at once. */
async function bounded<T>(tasks: readonly (() => Promise<T>)[], parallelism: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, tasks.length) }, worker));
  return results;
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads the use of the keys and accounts that have limits (and only those), a few at a time, each
 * with a deadline; a failure shows that one as unavailable and is logged once per page.
 */
export async function readUses(
  deps: Pick<ConsoleDeps, 'limits'> & { readonly logger: Logger },
  keys: readonly KeyRecord[],
  accounts: readonly Pick<AccountRecord, 'id' | 'limits'>[],
): Promise<Uses> {
  const accountLimits = new Map<string, Limits>();
  for (const account of accounts) if (hasLimits(account.limits)) accountLimits.set(account.id, account.limits);
  for (const key of keys) if (hasLimits(key.accountLimits) && !accountLimits.has(key.accountId)) accountLimits.set(key.accountId, key.accountLimits);
  const limitedKeys = keys.filter((key) => hasLimits(key.limits));
  const failures: unknown[] = [];
  const read = async (reading: Promise<LimitUse | null>): Promise<UseOrUnavailable> => {
    try {
      return (await withTimeout(reading, USE_TIMEOUT_MS)) ?? UNAVAILABLE;
    } catch (error) {
      failures.push(error);
      return UNAVAILABLE;
    }
  };
  const tasks = [
    ...limitedKeys.map((key) => () => read(deps.limits.used({ id: key.id, accountId: key.accountId, limits: key.limits, accountLimits: null }).then((use) => use.key))),
    ...[...accountLimits].map(([accountId, limits]) => () => read(deps.limits.used({ id: '', accountId, limits: null, accountLimits: limits }).then((use) => use.account))),
  ];
  const results = await bounded(tasks, USE_PARALLELISM);
  if (failures.length > 0) deps.logger.warn({ err: failures[0], failures: failures.length }, 'reading limit use for the keys page failed');
  return {
    keys: new Map(limitedKeys.map((key, i) => [key.id, results[i]!])),
    accounts: new Map([...accountLimits.keys()].map((accountId, i) => [accountId, results[limitedKeys.length + i]!])),
  };
}
