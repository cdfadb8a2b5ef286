import { html, type Html } from './html.js';

/**
 * Bar charts of figures per day, drawn on the server as inline SVG: no script, no outside asset.
 * Colours come from the stylesheet's `tone-N` classes (so dark mode applies); each bar carries a
 * <title> (a tooltip) and the chart a title and description for assistive technology, which the
 * page completes with a table of the same figures.
 */

export interface ChartSeries {
  readonly label: string;
  /** One value per day, in the order of the chart's days. */
  readonly values: readonly number[];
  /** The colour: `tone-<tone>` in the stylesheet. */
  readonly tone: string;
}

export interface DayChart {
  /** Unique on the page: the SVG's title and description are found by it. */
  readonly id: string;
  readonly title: string;
  /** Said after the title to assistive technology: where the same figures are as a table. */
  readonly tableNote: string;
  /** Each day as YYYY-MM-DD, oldest first. */
  readonly days: readonly string[];
  /** Stacked, first at the bottom. */
  readonly series: readonly ChartSeries[];
  /** A value as a tick label (short), and in full (tooltips, the description). */
  readonly tick: (value: number) => string;
  readonly exact: (value: number) => string;
  /** Counts have no tick between two whole numbers. */
  readonly whole: boolean;
}

const WIDTH = 960;
const HEIGHT = 240;
// Room for a tick label such as `$0.000025` on the left, and half of the last day's label on the right.
const MARGIN = { top: 14, right: 28, bottom: 30, left: 84 };
const PLOT_WIDTH = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_HEIGHT = HEIGHT - MARGIN.top - MARGIN.bottom;
/** Day labels under a chart, at most: wide enough apart never to overlap. */
const MAX_DAY_LABELS = 10;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `Nov 20` for `2026-11-20`. */
function shortDay(iso: string): string {
  return `${MONTHS[Number(iso.slice(5, 7)) - 1]} ${Number(iso.slice(8, 10))}`;
}

/** The y axis: a round step (1, 2 or 5 times a power of ten) giving at most four intervals above `max`. */
function axis(max: number, whole: boolean): { top: number; step: number } {
  if (max <= 0) return { top: whole ? 4 : 1, step: whole ? 1 : 0.25 };
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= rough)!;
  if (whole) step = Math.max(1, Math.round(step));
  return { top: Math.ceil(max / step) * step, step };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export function dayChart(chart: DayChart): Html {
  const n = chart.days.length;
  const totals = chart.days.map((_, day) => chart.series.reduce((sum, s) => sum + s.values[day]!, 0));
  const max = Math.max(0, ...totals);
  const { top, step } = axis(max, chart.whole);
  const y = (value: number) => MARGIN.top + PLOT_HEIGHT - (value / top) * PLOT_HEIGHT;
  const slot = PLOT_WIDTH / n;
  const barWidth = Math.max(1, slot * 0.72);
  const every = Math.ceil(n / MAX_DAY_LABELS);

  const ticks: Html[] = [];
  for (let value = 0; value <= top + step / 2; value += step) {
    const at = round(y(value));
    ticks.push(html`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${at}" y2="${at}"></line><text x="${MARGIN.left - 8}" y="${at}" dy="0.32em" text-anchor="end">${chart.tick(value)}</text>`);
  }
  const bars = chart.series.map((series, index) => {
    const rects: Html[] = [];
    chart.days.forEach((day, i) => {
      const value = series.values[i]!;
      if (value <= 0) return;
      const below = chart.series.slice(0, index).reduce((sum, s) => sum + s.values[i]!, 0);
      const x = round(MARGIN.left + i * slot + (slot - barWidth) / 2);
      const yTop = round(y(below + value));
      const height = Math.max(0.5, round(y(below) - y(below + value)));
      rects.push(html`<rect x="${x}" y="${yTop}" width="${round(barWidth)}" height="${height}"><title>${day} · ${series.label}: ${chart.exact(value)}</title></rect>`);
    });
    return html`<g class="tone-${series.tone}">${rects}</g>`;
  });
  // Today (the last day) always has its label; the others every `every` days back from it.
  const labels = chart.days.map((day, i) =>
    (n - 1 - i) % every === 0 ? html`<text x="${round(MARGIN.left + (i + 0.5) * slot)}" y="${HEIGHT - 10}" text-anchor="middle">${shortDay(day)}</text>` : '',
  );
  const busiest = totals.indexOf(max);
  const description =
    max === 0
      ? `No traffic from ${chart.days[0]} to ${chart.days[n - 1]}.`
      : `${n} days, ${chart.days[0]} to ${chart.days[n - 1]}. ${chart.series.map((s) => `${s.label}: ${chart.exact(s.values.reduce((a, b) => a + b, 0))}`).join('; ')}. Busiest day ${chart.days[busiest]}: ${chart.exact(max)}. ${chart.tableNote}`;

  return html`<figure class="chart">
  <div class="chart-frame">
  <svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${chart.id}-title ${chart.id}-desc" focusable="false">
    <title id="${chart.id}-title">${chart.title}</title>
    <desc id="${chart.id}-desc">${description}</desc>
    <g class="chart-grid">${ticks}</g>
    ${bars}
    <g class="chart-days">${labels}</g>
    ${max === 0 ? html`<text class="chart-empty" x="${MARGIN.left + PLOT_WIDTH / 2}" y="${MARGIN.top + PLOT_HEIGHT / 2}" text-anchor="middle">No traffic in this range</text>` : ''}
  </svg>
  </div>
  <figcaption><ul class="legend">${chart.series.map((s) => html`<li><span class="swatch tone-${s.tone}" aria-hidden="true"></span>${s.label}</li>`)}</ul></figcaption>
</figure>`;
}

/** 950, 1.2k, 3.4M: tick labels that fit the axis. */
export function compactNumber(value: number): string {
  const abs = Math.abs(value);
  for (const [size, suffix] of [[1e9, 'B'], [1e6, 'M'], [1e3, 'k']] as const) {
    if (abs >= size) return `${trim(value / size)}${suffix}`;
  }
  return trim(value);
}

/** $0.25, $12, $1.2k. */
export function compactUsd(value: number): string {
  if (value !== 0 && Math.abs(value) < 1) return `$${Number(value.toPrecision(2))}`;
  return `$${compactNumber(value)}`;
}

function trim(value: number): string {
  return String(Number(value.toFixed(value >= 100 || Number.isInteger(value) ? 0 : 1)));
}
