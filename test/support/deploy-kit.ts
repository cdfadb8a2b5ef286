/**
 * The operator's kit in deploy/, read as its own tools read it: the Kubernetes manifests as YAML
 * documents, the Grafana dashboard's queries with its variables put in as Grafana would, and the
 * systemd unit's settings. Pure reading: the checks are the tests' (test/deploy-kit.test.ts,
 * test/unit/deploy-kit.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const DEPLOY_DIR = join(REPO_ROOT, 'deploy');

// ---- Kubernetes --------------------------------------------------------------------------------

/** A manifest as YAML gives it: the fields the tests read are checked where they are read. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly [field: string]: any;
}

/** Every document of every .yaml file in deploy/kubernetes (but the kustomization), with its file. */
export function readManifests(): { readonly file: string; readonly manifest: Manifest }[] {
  const dir = join(DEPLOY_DIR, 'kubernetes');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((document) => {
        if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]!.message}`);
        return { file, manifest: document.toJS() as Manifest };
      }),
    );
}

/** The one manifest of a kind. */
export function manifestOf(kind: string): Manifest {
  const found = readManifests().filter(({ manifest }) => manifest.kind === kind);
  if (found.length !== 1) throw new Error(`deploy/kubernetes has ${found.length} ${kind} manifests, not one`);
  return found[0]!.manifest;
}

export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: { readonly secretKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean } };
}

/** The Deployment's Sluice container. */
export function sluiceContainer(): { name: string; args: string[]; env: EnvVar[]; ports: { name: string; containerPort: number }[]; [field: string]: any } {
  const containers = manifestOf('Deployment').spec.template.spec.containers as any[];
  const container = containers.find((c) => c.name === 'sluice');
  if (container === undefined) throw new Error('the Deployment has no container named sluice');
  return container;
}

/** A plain `value:` of the container's environment; undefined when it has none. */
export function plainEnv(name: string): string | undefined {
  return sluiceContainer().env.find((variable) => variable.name === name)?.value;
}

/** The port of a `HOST:PORT` listen address. */
export function portOf(listen: string): number {
  const port = Number(/:(\d+)$/.exec(listen)?.[1]);
  if (!Number.isInteger(port)) throw new Error(`'${listen}' is no HOST:PORT`);
  return port;
}

// ---- Grafana -----------------------------------------------------------------------------------

const DASHBOARD_FILE = join(DEPLOY_DIR, 'grafana', 'sluice-dashboard.json');

export function readDashboard(): any {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'));
}

export interface PanelQuery {
  readonly panel: string;
  readonly refId: string;
  readonly expr: string;
}

/** Every query of every panel (rows hold none of their own while expanded). */
export function dashboardQueries(dashboard: any = readDashboard()): PanelQuery[] {
  return (dashboard.panels as any[])
    .filter((panel) => panel.type !== 'row')
    .flatMap((panel) => (panel.targets as any[]).map((target) => ({ panel: panel.title as string, refId: target.refId as string, expr: target.expr as string })));
}

/**
 * A query as Grafana sends it with the dashboard's defaults: the job `sluice`, every gateway and
 * model (the variables' "All", `.*`), and Grafana's own intervals at values that suit a Prometheus
 * scraping every 500 ms (a rate over `$__rate_interval` needs two scrapes in it).
 */
export function withVariables(expr: string): string {
  const values: Record<string, string> = { __rate_interval: '1m', __interval: '15s', __range: '10m', job: 'sluice', instance: '.*', model: '.*' };
  const text = expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => values[name] ?? whole);
  if (text.includes('$')) throw new Error(`a variable no dashboard defines: ${expr}`);
  return text;
}

// ---- systemd -----------------------------------------------------------------------------------

export const UNIT_FILE = join(DEPLOY_DIR, 'systemd', 'sluice.service');

/** The unit's settings by section and key, each key's values in order (a key may repeat). */
export function readUnit(text = readFileSync(UNIT_FILE, 'utf8')): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | undefined;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(trimmed);
    if (header !== null) {
      section = new Map();
      sections.set(header[1]!, section);
      continue;
    }
    const at = trimmed.indexOf('=');
    if (section === undefined || at < 0) throw new Error(`not a unit file line: ${line}`);
    const key = trimmed.slice(0, at);
    section.set(key, [...(section.get(key) ?? []), trimmed.slice(at + 1)]);
  }
  return sections;
}

/** The unit's `Environment=` assignments (`A=1 B=2` forms included; no quoting is used in ours). */
export function unitEnvironment(unit = readUnit()): Record<string, string> {
  const env: Record<string, string> = {};
  for (const assignments of unit.get('Service')?.get('Environment') ?? []) {
    for (const assignment of assignments.split(/\s+/)) {
      const at = assignment.indexOf('=');
      env[assignment.slice(0, at)] = assignment.slice(at + 1);
    }
  }
  return env;
}
