import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import type { Degradation } from '../limits/failover-counter.js';
import type { DeploymentStatus } from '../routing/router.js';
import type { DailyStatusRow, ProbeResult, StatusRepository, TrafficSample, UsageRepository } from '../store/store.js';
import { figuresOf, healthOf, type Figures, type Health } from './health.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const HISTORY_DAYS = 90;
/**
 * Most ledger rows read for one snapshot (the reading holds the event loop); beyond this the
 * last hour's figures come from its newest rows, which on a busy gateway is the recent past.
 */
const MAX_TRAFFIC_ROWS = 20_000;
/** How fresh a snapshot must be: pages poll it, and a failure must show within seconds. */
const SNAPSHOT_TTL_MS = 1000;

export interface DayBar {
  /** YYYY-MM-DD (UTC). */
  readonly date: string;
  readonly total: number;
  readonly failures: number;
  /** Share of requests and probes that did not fail; null on a day without any. */
  readonly uptime: number | null;
}

export interface ComponentStatus {
  readonly id: string;
  readonly state: Health;
  readonly lastHour: Figures;
  readonly uptime90d: number | null;
  readonly days: readonly DayBar[];
}

export interface ModelStatus extends ComponentStatus {
  /** Each deployment's routing state and live latency, as this process sees them. */
  readonly deployments: readonly DeploymentStatus[];
}

export interface ProviderStatus extends ComponentStatus {
  readonly models: readonly ModelStatus[];
  /** Models of this provider left out of `models`: past PROVIDER_MODELS_LISTED, those without any figures. */
  readonly unlisted: number;
}

/**
 * A provider with more models than this (a large discovered list) lists only those with figures
 * (traffic, probes or history), so that the status page costs what the traffic is, not the catalogue.
 */
export const PROVIDER_MODELS_LISTED = 100;

export interface StatusSnapshot {
  readonly generatedAt: number;
  readonly overall: Health;
  readonly providers: readonly ProviderStatus[];
  /** What the gateway itself runs degraded on now (Redis unreachable, say), as this process sees it. */
  readonly degraded: readonly Degradation[];
}

/** What is computed from the store and cached: everything but the live deployment states. */
interface StoredSnapshot {
  readonly generatedAt: number;
  readonly overall: Health;
  /** Each provider's `models` holds only the models with figures (traffic, probes or history); the rest share `idle`. */
  readonly providers: readonly (ComponentStatus & { readonly models: ReadonlyMap<string, ComponentStatus> })[];
  /** The status of a model without any figures, under any id. */
  readonly idle: ComponentStatus;
  /** The health of each model with figures and of each provider, for `healthOf`. */
  readonly health: { readonly models: ReadonlyMap<string, Health>; readonly providers: ReadonlyMap<string, Health> };
}

/** A model's health: its own traffic, else its (first deployment's) provider's. */
export type HealthOf = (model: CatalogueModel) => Health;

/**
 * Health from what the store holds: the last hour of real traffic (the ledger) and of probes,
 * and the daily counters for the 90-day history. Computed on demand and cached briefly, so every
 * process answers from the same data without coordination. Only the models with figures are
 * computed one by one: a large discovered catalogue is mostly models without any.
 */
export class StatusMonitor {
  private cached: { at: number; snapshot: Promise<StoredSnapshot> } | undefined;

  constructor(
    /** The ledger's recent traffic. */
    private readonly usage: Pick<UsageRepository, 'traffic'>,
    private readonly status: StatusRepository,
    private readonly catalogue: LiveCatalogue,
    private readonly deployments: (model: CatalogueModel) => DeploymentStatus[],
    private readonly degradations: () => Degradation[] = () => [],
    private readonly now: () => number = Date.now,
  ) {}

  /** The stored figures as of at most a second ago, with the deployments' routing states as they are now. */
  async snapshot(): Promise<StatusSnapshot> {
    const stored = await this.stored();
    const catalogue = this.catalogue.current();
    const degraded = this.degradations();
    const modelsOf = catalogue.derive('status:models-of-provider', (models) => groupBy(models, (model) => model.providerId));
    const position = catalogue.ordered();
    return {
      generatedAt: stored.generatedAt,
      overall: degraded.length > 0 && stored.overall !== 'down' ? 'degraded' : stored.overall,
      degraded,
      providers: stored.providers.map((provider) => {
        // A model is listed under its first deployment's provider, but its figures are its own on every provider.
        const all = modelsOf.get(provider.id) ?? [];
        // Looked up from the few with figures, in catalogue order, rather than sought among all.
        const listed =
          all.length <= PROVIDER_MODELS_LISTED
            ? all
            : [...provider.models.keys()].flatMap((id) => catalogue.get(id) ?? []).filter((model) => model.providerId === provider.id).sort((a, b) => position.indexOf(a.id) - position.indexOf(b.id));
        return {
          ...provider,
          models: listed.map((model) => {
            const own = provider.models.get(model.id) ?? stored.idle;
            return { ...own, id: model.id, state: ownOrProvider(own.state, provider.state), deployments: this.deployments(model) };
          }),
          unlisted: all.length - listed.length,
        };
      }),
    };
  }

  /** Each model's health, read per model: the models page asks for a page of many. */
  async modelHealth(): Promise<HealthOf> {
    const { health } = await this.stored();
    return (model) => ownOrProvider(health.models.get(model.id) ?? 'unknown', health.providers.get(model.providerId) ?? 'unknown');
  }

  private stored(): Promise<StoredSnapshot> {
    const now = this.now();
    if (this.cached === undefined || now - this.cached.at > SNAPSHOT_TTL_MS) {
      const snapshot = this.compute(now);
      this.cached = { at: now, snapshot };
      snapshot.catch(() => (this.cached = undefined));
    }
    return this.cached.snapshot;
  }

  private async compute(now: number): Promise<StoredSnapshot> {
    const today = Math.floor(now / DAY_MS);
    const [traffic, probes, daily] = await Promise.all([
      this.usage.traffic(now - HOUR_MS, MAX_TRAFFIC_ROWS),
      this.status.probes(now - HOUR_MS),
      this.status.daily(today - HISTORY_DAYS + 1),
    ]);
    const catalogue = this.catalogue.current();
    // Grouped once, so that the cost follows the rows, not the rows times the models.
    const trafficOf = groupBy(traffic, (sample) => sample.model);
    const probesOf = groupBy(probes, (probe) => probe.model);
    const dailyOf = groupBy(daily, (row) => row.model);
    const withFigures = new Map<string, Map<string, ComponentStatus>>();
    const modelHealth = new Map<string, Health>();
    for (const id of new Set([...trafficOf.keys(), ...probesOf.keys(), ...dailyOf.keys()])) {
      const model = catalogue.get(id);
      if (model === undefined) continue;
      const status = component(id, trafficOf.get(id) ?? [], probesOf.get(id) ?? [], dailyOf.get(id) ?? [], now, today);
      const ofProvider = withFigures.get(model.providerId) ?? new Map<string, ComponentStatus>();
      withFigures.set(model.providerId, ofProvider.set(id, status));
      if (status.state !== 'unknown') modelHealth.set(id, status.state);
    }
    const providers = this.catalogue.providers().map((entry) => {
      const mine = (sample: { providerId: string }) => sample.providerId === entry.id;
      return { ...component(entry.id, traffic.filter(mine), probes.filter(mine), daily.filter(mine), now, today), models: withFigures.get(entry.id) ?? new Map<string, ComponentStatus>() };
    });
    return {
      generatedAt: now,
      overall: overallOf(providers.map((p) => p.state)),
      providers,
      idle: component('', [], [], [], now, today),
      health: { models: modelHealth, providers: new Map(providers.map((p) => [p.id, p.state])) },
    };
  }
}

/**
 * A model's state wherever it is shown (/status, /models, both JSON forms): its own figures' in the
 * last hour, else its provider's (a model nobody called lately is as well as its upstream).
 */
function ownOrProvider(own: Health, provider: Health): Health {
  return own === 'unknown' ? provider : own;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}

function component(id: string, traffic: TrafficSample[], probes: ProbeResult[], daily: DailyStatusRow[], now: number, today: number): ComponentStatus {
  const days = historyBars(daily, today);
  const total = days.reduce((sum, day) => sum + day.total, 0);
  const failures = days.reduce((sum, day) => sum + day.failures, 0);
  return {
    id,
    state: healthOf(traffic, probes, now),
    lastHour: figuresOf(traffic, probes),
    uptime90d: total === 0 ? null : (total - failures) / total,
    days,
  };
}

function historyBars(daily: readonly DailyStatusRow[], today: number): DayBar[] {
  const byDay = new Map<number, { total: number; failures: number }>();
  for (const row of daily) {
    const entry = byDay.get(row.day) ?? { total: 0, failures: 0 };
    entry.total += row.requests + row.probes;
    entry.failures += row.failures + row.probeFailures;
    byDay.set(row.day, entry);
  }
  const bars: DayBar[] = [];
  for (let day = today - HISTORY_DAYS + 1; day <= today; day++) {
    const entry = byDay.get(day) ?? { total: 0, failures: 0 };
    bars.push({
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      total: entry.total,
      failures: entry.failures,
      uptime: entry.total === 0 ? null : (entry.total - entry.failures) / entry.total,
    });
  }
  return bars;
}

/** Down only when everything with data is down; any trouble short of that is degraded. */
function overallOf(states: readonly Health[]): Health {
  const known = states.filter((state) => state !== 'unknown');
  if (known.length === 0) return 'unknown';
  if (known.every((state) => state === 'down')) return 'down';
  if (known.some((state) => state !== 'up')) return 'degraded';
  return 'up';
}
