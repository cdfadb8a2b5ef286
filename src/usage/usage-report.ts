import { toolOfRolledUp } from '../core/tool-calls.js';
import { DAY_MS, dayOf } from '../store/sql-status.js';
import { compareText } from '../store/text-order.js';
import type { Store, UsageFigures, UsageFilter, UsageGroup } from '../store/store.js';

/**
 * Usage reports, read from the daily roll-ups only (never the ledger): the console's usage page and
 * its CSV, and `sluice usage`. Days are days since the Unix epoch (UTC); `isoDay` names one.
 */

/** The lines of a top list; the rest is added up as "other". */
const TOP_LINES = 10;
/** The lines of a stacked chart: the top ones of the list, then "other". */
const CHART_SERIES = 5;

export const ZERO: UsageFigures = { requests: 0, failed: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedRequests: 0 };

/**
 * Spend as reports show it: `$0.12`; "unpriced" where all there is to show is requests to models
 * without a price (their $0 is not a price); `$0.12 + unpriced` where some were.
 */
export function spendText(figures: Pick<UsageFigures, 'costUsd' | 'unpricedRequests'>, format: (usd: number) => string): string {
  if (figures.unpricedRequests === 0) return format(figures.costUsd);
  return figures.costUsd === 0 ? 'unpriced' : `${format(figures.costUsd)} + unpriced`;
}

/** `2026-11-20` for a day since the epoch. */
export function isoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** The day of a `YYYY-MM-DD` date that exists (not 2026-02-30), or undefined. */
export function parseIsoDay(text: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (match === null) return undefined;
  const at = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return isoDay(dayOf(at)) === text ? dayOf(at) : undefined;
}

export function addFigures(a: UsageFigures, b: UsageFigures): UsageFigures {
  return {
    requests: a.requests + b.requests,
    failed: a.failed + b.failed,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    costUsd: a.costUsd + b.costUsd,
    unpricedRequests: a.unpricedRequests + b.unpricedRequests,
  };
}

/** What is left of `total` without `parts`; never below zero (floating-point sums of spend may differ in the last bit). */
function remainder(total: UsageFigures, parts: readonly UsageFigures[]): UsageFigures {
  const taken = parts.reduce(addFigures, ZERO);
  return {
    requests: Math.max(0, total.requests - taken.requests),
    failed: Math.max(0, total.failed - taken.failed),
    inputTokens: Math.max(0, total.inputTokens - taken.inputTokens),
    outputTokens: Math.max(0, total.outputTokens - taken.outputTokens),
    costUsd: Math.max(0, total.costUsd - taken.costUsd),
    unpricedRequests: Math.max(0, total.unpricedRequests - taken.unpricedRequests),
  };
}

/** The dimension a page's charts are stacked by. */
export type Breakdown = 'model' | 'key';

export interface ReportQuery {
  readonly fromDay: number;
  readonly toDay: number;
  /** One account's usage; undefined for every account's. */
  readonly accountId?: string;
  readonly breakdown: Breakdown;
}

/** A top list: its lines (highest spend first) and the rest added up. */
export interface TopList {
  readonly lines: readonly UsageGroup[];
  /** Everything outside `lines`; undefined when nothing is. */
  readonly other: UsageFigures | undefined;
}

/**
 * One stacked series of a chart: a model or key of the top list (`group`), or the rest (`group`
 * undefined). Broken down by model, MCP tool calls are a series of their own (`toolCalls`), never
 * "other models".
 */
export interface Series {
  readonly group: UsageGroup | undefined;
  readonly toolCalls?: true;
  /** The series' figures on each day of the report, in order. */
  readonly days: readonly UsageFigures[];
}

export interface UsageReport {
  readonly query: ReportQuery;
  /** Every day of the range in order, days without traffic as zeros. */
  readonly days: readonly (UsageFigures & { readonly day: number })[];
  /** Everything: model requests and MCP tool calls. */
  readonly totals: UsageFigures;
  /** The models alone (MCP tool calls are in `tools`). */
  readonly models: TopList;
  /** MCP tool calls: each line's `model` is its `server/tool` (they have no tokens). */
  readonly tools: TopList;
  /** The MCP tool calls' figures, of `totals`. */
  readonly toolTotals: UsageFigures;
  readonly keys: TopList;
  /** The top CHART_SERIES models or keys (as the breakdown says), then the rest when there is any. */
  readonly series: readonly Series[];
}

/**
 * The usage page's figures, from the roll-ups only: two scans of the range (its figures by day and
 * model, which give the days, the top models and their series; the top keys), and for a breakdown
 * by key, the top keys' days, read through the key index.
 */
export async function usageReport(store: Pick<Store, 'usageDaily'>, query: ReportQuery): Promise<UsageReport> {
  const filter: UsageFilter = { fromDay: query.fromDay, toDay: query.toDay, ...(query.accountId === undefined ? {} : { accountId: query.accountId }) };
  const [cells, keys] = await Promise.all([store.usageDaily.summary(filter, ['day', 'model']), store.usageDaily.summary(filter, ['key'], { top: TOP_LINES })]);
  const dayTotals = new Map<number, UsageFigures>();
  const modelTotals = new Map<string, UsageFigures>();
  const toolTotalsByName = new Map<string, UsageFigures>();
  const toolDays = new Map<number, UsageFigures>();
  for (const cell of cells) {
    dayTotals.set(cell.day!, addFigures(dayTotals.get(cell.day!) ?? ZERO, cell));
    const tool = toolOfRolledUp(cell.model!);
    if (tool === undefined) modelTotals.set(cell.model!, addFigures(modelTotals.get(cell.model!) ?? ZERO, cell));
    else {
      toolTotalsByName.set(tool, addFigures(toolTotalsByName.get(tool) ?? ZERO, cell));
      toolDays.set(cell.day!, addFigures(toolDays.get(cell.day!) ?? ZERO, cell));
    }
  }
  const days: (UsageFigures & { day: number })[] = [];
  for (let day = query.fromDay; day <= query.toDay; day++) days.push({ ...(dayTotals.get(day) ?? ZERO), day });
  const totals = days.reduce<UsageFigures>(addFigures, ZERO);
  const toolTotals = [...toolDays.values()].reduce<UsageFigures>(addFigures, ZERO);
  // The order of the store's top lists: highest spend, then most requests, then by name.
  const topOf = (figures: Map<string, UsageFigures>) =>
    [...figures]
      .map(([model, group]): UsageGroup => ({ ...group, model }))
      .sort((a, b) => b.costUsd - a.costUsd || b.requests - a.requests || compareText(a.model!, b.model!))
      .slice(0, TOP_LINES);
  const models = topOf(modelTotals);
  const tools = topOf(toolTotalsByName);

  const charted = (query.breakdown === 'model' ? models : keys).slice(0, CHART_SERIES);
  const perDay =
    query.breakdown === 'model' ? cells.filter((cell) => charted.some((g) => g.model === cell.model)) : await store.usageDaily.summary({ ...filter, keyIds: charted.map((g) => g.keyId!) }, ['day', 'key']);
  const idOf = (group: UsageGroup) => (query.breakdown === 'model' ? group.model! : group.keyId!);
  const byDay = new Map(perDay.map((group) => [`${group.day}\u0000${idOf(group)}`, group]));
  const series: Series[] = charted.map((group) => ({ group, days: days.map(({ day }) => figuresOf(byDay.get(`${day}\u0000${idOf(group)}`))) }));
  if (query.breakdown === 'model' && toolTotals.requests > 0) series.push({ group: undefined, toolCalls: true, days: days.map(({ day }) => toolDays.get(day) ?? ZERO) });
  const rest = days.map((day, i) => remainder(day, series.map((s) => s.days[i]!)));
  if (rest.some((day) => day.requests > 0)) series.push({ group: undefined, days: rest });

  const modelSum = remainder(totals, [toolTotals]);
  return { query, days, totals, models: topList(models, modelSum), tools: topList(tools, toolTotals), toolTotals, keys: topList(keys, totals), series };
}

function topList(lines: readonly UsageGroup[], totals: UsageFigures): TopList {
  const other = remainder(totals, lines);
  return { lines, other: other.requests > 0 ? other : undefined };
}

function figuresOf(group: UsageGroup | undefined): UsageFigures {
  if (group === undefined) return ZERO;
  const { requests, failed, inputTokens, outputTokens, costUsd, unpricedRequests } = group;
  return { requests, failed, inputTokens, outputTokens, costUsd, unpricedRequests };
}

/** How `sluice usage` groups its lines. */
export const GROUPINGS = ['day', 'model', 'key'] as const;
export type Grouping = (typeof GROUPINGS)[number];

/**
 * What `sluice usage --json` prints per group: the fields of its grouping, then the figures (tokens and
 * spend as stored, a number for machines; `unpriced_requests` says how many requests had no price).
 */
export function usageRecord(group: UsageGroup, by: Grouping): Record<string, string | number | null> {
  const tool = by === 'model' ? toolOfRolledUp(group.model!) : undefined;
  // An MCP tool call's line names its tool and counts calls: it has no tokens to show as zeros.
  if (tool !== undefined) return { mcp_tool: tool, calls: group.requests, failed: group.failed, cost_usd: group.costUsd, unpriced_calls: group.unpricedRequests };
  const fields: Record<string, string | number | null> = {};
  if (by === 'day') fields.day = isoDay(group.day!);
  if (by === 'key') {
    fields.account = group.accountName ?? null;
    fields.key_id = group.keyId!;
  }
  if (by === 'model') fields.model = group.model!;
  return { ...fields, requests: group.requests, input_tokens: group.inputTokens, output_tokens: group.outputTokens, cost_usd: group.costUsd, unpriced_requests: group.unpricedRequests };
}
