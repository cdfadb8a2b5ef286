import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort } from './redis.js';
import { eventually, tempDir } from './sluice.js';

/** A scrape job: one target, with the bearer token Prometheus sends, if any. */
export interface ScrapeJob {
  readonly job: string;
  /** `host:port`. */
  readonly target: string;
  readonly bearer?: string;
}

/** One series of an instant query's answer. */
export interface Sample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

/** An alert as Prometheus's `/api/v1/alerts` lists it. */
export interface ActiveAlert {
  readonly labels: Readonly<Record<string, string>>;
  readonly state: 'pending' | 'firing';
}

/** A rule as `/api/v1/rules` reports its last evaluation. */
export interface RuleHealth {
  readonly name: string;
  readonly health: string;
  readonly lastError?: string;
}

export interface RunningPrometheus {
  /** The instant value of a PromQL expression that yields one series (wrap it in `sum(...)`), or undefined when it yields none. */
  value(promql: string): Promise<number | undefined>;
  /** Every series an instant query yields (a query Prometheus refuses throws, with its error). */
  query(promql: string): Promise<Sample[]>;
  /** The alerts pending or firing under the rule files it was started with. */
  alerts(): Promise<ActiveAlert[]>;
  /** Every rule of those files, with the health of its last evaluation. */
  rules(): Promise<RuleHealth[]>;
  /** The values a label takes in the series a selector matches (Grafana's `label_values(selector, label)`). */
  labelValues(label: string, match: string): Promise<string[]>;
  /** Every metric name Prometheus has stored. */
  names(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Debian's Prometheus server (installed by scripts/test-prerequisites.sh), scraping every 500 ms
 * with its own storage in a temporary directory: the real reader of `/metrics`.
 */
export async function startPrometheus(jobs: readonly ScrapeJob[], options: { ruleFiles?: readonly string[] } = {}): Promise<RunningPrometheus> {
  const dir = tempDir('sluice-prometheus-');
  const port = await closedPort();
  const scrapeConfigs = jobs
    .map(
      (job) => `  - job_name: ${JSON.stringify(job.job)}
    scrape_interval: 500ms
    scrape_timeout: 400ms
    static_configs: [{ targets: [${JSON.stringify(job.target)}] }]${job.bearer === undefined ? '' : `\n    authorization: { credentials: ${JSON.stringify(job.bearer)} }`}`,
    )
    .join('\n');
  const ruleFiles = options.ruleFiles === undefined ? '' : `rule_files: ${JSON.stringify(options.ruleFiles)}\n`;
  writeFileSync(join(dir, 'prometheus.yml'), `global: { evaluation_interval: 1s }\n${ruleFiles}scrape_configs:\n${scrapeConfigs}\n`);
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A missing binary fails the test here; unheard, the error would end the test process with the test still open.
  let failed: Error | undefined;
  child.once('error', (error) => (failed = error));
  const base = `http://127.0.0.1:${port}`;
  await eventually(
    () => {
      if (failed !== undefined) throw new Error(`prometheus could not start: ${failed.message} (scripts/test-prerequisites.sh installs it)`);
      return fetch(`${base}/-/ready`).then((r) => (r.ok ? true : undefined), () => undefined);
    },
    15_000,
    `Prometheus to be ready (${stderr})`,
  );
  const api = async (path: string): Promise<any> => {
    const response = await fetch(`${base}${path}`);
    const body = (await response.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error}`);
    return body.data;
  };
  const query = async (promql: string): Promise<Sample[]> => {
    const data = (await api(`/api/v1/query?query=${encodeURIComponent(promql)}`)) as { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
    if (data.resultType !== 'vector') throw new Error(`${promql} yields a ${data.resultType}, not an instant vector`);
    return data.result.map(({ metric, value }) => ({ metric, value: Number(value[1]) }));
  };
  return {
    query,
    async value(promql) {
      const series = await query(promql);
      if (series.length > 1) throw new Error(`${promql} yields ${series.length} series`);
      return series[0]?.value;
    },
    alerts: async () => ((await api('/api/v1/alerts')) as { alerts: ActiveAlert[] }).alerts,
    rules: async () => ((await api('/api/v1/rules')) as { groups: { rules: RuleHealth[] }[] }).groups.flatMap((group) => group.rules),
    labelValues: (label, match) => api(`/api/v1/label/${encodeURIComponent(label)}/values?match[]=${encodeURIComponent(match)}`) as Promise<string[]>,
    names: () => api('/api/v1/label/__name__/values') as Promise<string[]>,
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
