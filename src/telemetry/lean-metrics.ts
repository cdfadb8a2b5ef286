import type { Registry } from 'prom-client';

export type Labels = Record<string, string | number>;

/** A value as prom-client's registries format and add up across workers. */
interface MetricValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName?: string;
}

/**
 * Histograms and counters for the request path, exposed through prom-client's registries (the text
 * format and the cluster's aggregation read any metric with prom-client's `get()` shape). prom-client's
 * own validate and hash every label set and make a closure on every observation, which cost more
 * than all the rest of the meter stage; here a label set is found by the label object a caller keeps
 * for it, else by its values joined, and counted in place. Label names are fixed in code, so they are
 * not checked again. A caller that keeps label objects must not change them.
 */
abstract class LeanMetric<Cell> {
  readonly aggregator = 'sum';
  protected cells = new Map<string, { readonly labels: Labels; readonly cell: Cell }>();
  /** Cells by the label object itself, for callers that keep their label sets (no key to build at all). */
  private byObject = new WeakMap<Labels, Cell>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registers: readonly Registry[],
  ) {
    for (const registry of registers) registry.registerMetric(this as never);
  }

  protected cellOf(labels: Labels): Cell {
    const known = this.byObject.get(labels);
    if (known !== undefined) return known;
    let key = '';
    for (const name of this.labelNames) key += `${labels[name] ?? ''}\u0000`;
    let entry = this.cells.get(key);
    if (entry === undefined) {
      entry = { labels: { ...labels }, cell: this.newCell() };
      this.cells.set(key, entry);
    }
    this.byObject.set(labels, entry.cell);
    return entry.cell;
  }

  protected abstract newCell(): Cell;

  reset(): void {
    this.cells = new Map();
    this.byObject = new WeakMap();
  }
}

interface HistogramCell {
  /** Observations per bucket (not cumulative); the last slot is past the largest bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export class LeanHistogram extends LeanMetric<HistogramCell> {
  readonly type = 'histogram';

  constructor(config: { name: string; help: string; labelNames: readonly string[]; buckets: readonly number[]; registers: readonly Registry[] }) {
    super(config.name, config.help, config.labelNames, config.registers);
    this.buckets = config.buckets;
  }

  private readonly buckets: readonly number[];

  observe(labels: Labels, value: number): void {
    const cell = this.cellOf(labels);
    let bucket = 0;
    while (bucket < this.buckets.length && value > this.buckets[bucket]!) bucket++;
    cell.counts[bucket]! += 1;
    cell.sum += value;
    cell.count += 1;
  }

  protected newCell(): HistogramCell {
    return { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
  }

  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: string; values: MetricValue[] }> {
    const values: MetricValue[] = [];
    for (const { labels, cell } of this.cells.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += cell.counts[i]!;
        values.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: cell.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...labels }, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...labels }, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export class LeanCounter extends LeanMetric<{ value: number }> {
  readonly type = 'counter';

  constructor(config: { name: string; help: string; labelNames: readonly string[]; registers: readonly Registry[] }) {
    super(config.name, config.help, config.labelNames, config.registers);
  }

  inc(labels: Labels, by = 1): void {
    this.cellOf(labels).value += by;
  }

  protected newCell(): { value: number } {
    return { value: 0 };
  }

  async get(): Promise<{ name: string; help: string; type: 'counter'; aggregator: string; values: MetricValue[] }> {
    const values: MetricValue[] = [];
    for (const { labels, cell } of this.cells.values()) values.push({ labels: { ...labels }, value: cell.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
