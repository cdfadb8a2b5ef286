import { countsAgainstProvider, type ProbeResult, type TrafficSample } from '../store/store.js';

export type Health = 'up' | 'degraded' | 'down' | 'unknown';

/** Real-traffic figures over a window, plus the newest probe result. */
export interface Figures {
  readonly requests: number;
  readonly failures: number;
  /** failures / requests; null without requests. */
  readonly errorRate: number | null;
  readonly latencyMs: { readonly p50: number; readonly p95: number; readonly p99: number } | null;
  readonly lastProbe: { readonly at: number; readonly ok: boolean; readonly latencyMs: number; readonly errorKind: string | null } | null;
}

/** The window a state is judged on: recent enough that a recovery shows soon after it happens. */
export const STATE_WINDOW_MS = 10 * 60_000;
export const DOWN_RATE = 0.5;
export const DEGRADED_RATE = 0.05;

export function figuresOf(traffic: readonly TrafficSample[], probes: readonly ProbeResult[]): Figures {
  const failures = traffic.filter((sample) => countsAgainstProvider(sample.status, sample.errorKind)).length;
  const latencies = traffic.map((sample) => sample.latencyMs).sort((a, b) => a - b);
  const newestProbe = probes.reduce<ProbeResult | undefined>((newest, probe) => (newest === undefined || probe.at > newest.at ? probe : newest), undefined);
  return {
    requests: traffic.length,
    failures,
    errorRate: traffic.length === 0 ? null : failures / traffic.length,
    latencyMs: latencies.length === 0 ? null : { p50: percentile(latencies, 0.5), p95: percentile(latencies, 0.95), p99: percentile(latencies, 0.99) },
    lastProbe: newestProbe === undefined ? null : { at: newestProbe.at, ok: newestProbe.ok, latencyMs: newestProbe.latencyMs, errorKind: newestProbe.errorKind },
  };
}

/**
 * up / degraded / down, the worse of two judgements so frequent probes cannot dilute real failures:
 * real traffic in the last STATE_WINDOW_MS (or the whole hour when the last minutes saw none),
 * where half or more failing is down and 5 % or more degraded; and the probes, where a failed
 * newest probe is degraded and two failed in a row is down. Nothing at all in the hour is unknown.
 */
export function healthOf(traffic: readonly TrafficSample[], probes: readonly ProbeResult[], now: number): Health {
  const recent = traffic.filter((sample) => sample.at >= now - STATE_WINDOW_MS);
  const judged = recent.length > 0 ? recent : traffic;
  let fromTraffic: Health = 'unknown';
  if (judged.length > 0) {
    const rate = judged.filter((sample) => countsAgainstProvider(sample.status, sample.errorKind)).length / judged.length;
    fromTraffic = rate >= DOWN_RATE ? 'down' : rate >= DEGRADED_RATE ? 'degraded' : 'up';
  }
  const newest = [...probes].sort((a, b) => b.at - a.at).slice(0, 2);
  let fromProbes: Health = 'unknown';
  if (newest.length > 0) fromProbes = newest[0]!.ok ? 'up' : newest[1]?.ok === false ? 'down' : 'degraded';
  return worse(fromTraffic, fromProbes);
}

const SEVERITY: Record<Health, number> = { unknown: 0, up: 1, degraded: 2, down: 3 };

function worse(a: Health, b: Health): Health {
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return Math.round(sorted[rank - 1]!);
}
