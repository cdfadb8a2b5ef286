import type { RoutingPolicy } from '../config/config-file.js';

/** A deployment as /status shows it. */
export type DeploymentState = 'up' | 'degraded' | 'cooling' | 'open';

/** How far a latency sample moves the average at most: a burst of samples must not erase the history at once. */
const MAX_WEIGHT = 0.5;
/** And at least: at thousands of requests a second, time alone would give each sample next to no weight, and a failure none. */
const MIN_WEIGHT = 0.05;
/** The time constant of the decaying average: a sample this old weighs about a third of a fresh one. */
const DECAY_MS = 10_000;
/** The least a failure counts as, in ms. */
const FAILURE_PENALTY_MS = 1000;
/** An average this stale is forgotten, so that a deployment avoided for being slow is tried again. */
const STALE_MS = 60_000;

/**
 * What this process knows of one upstream deployment (a provider and an upstream model, shared by
 * every public model that uses it): requests in flight, a decaying average of latency, recent
 * failures and the circuit they drive, and a cooling period from the upstream's `Retry-After`.
 *
 * The circuit: `failures` failures within `window_ms` open it for `cooldown_ms`; then one trial
 * request is let through, whose success closes it and whose failure opens it again.
 */
export class DeploymentHealth {
  inFlight = 0;
  private latencyMs: number | null = null;
  private sampledAt = 0;
  private failures: number[] = [];
  private openUntil = 0;
  private trialInFlight = false;
  private coolingUntil = 0;
  /** When it last failed (0: never), for choosing among deployments that are all out. */
  lastFailureAt = 0;

  /** The average latency in ms, or null when there is no recent sample. */
  latency(now: number): number | null {
    return this.latencyMs !== null && now - this.sampledAt <= STALE_MS ? this.latencyMs : null;
  }

  state(now: number, routing: RoutingPolicy): DeploymentState {
    if (this.openUntil > 0) return 'open';
    if (this.coolingUntil > now) return 'cooling';
    return this.failures.some((at) => at > now - routing.circuit.windowMs) ? 'degraded' : 'up';
  }

  /** An open circuit past its cooldown, with no trial yet: the next request should be that trial, whatever the strategy says. */
  trialDue(now: number): boolean {
    return this.openUntil > 0 && now >= this.openUntil && !this.trialInFlight && this.coolingUntil <= now;
  }

  /** Whether a request may be sent now: not cooling, and the circuit closed or due its one trial. */
  available(now: number): boolean {
    if (this.coolingUntil > now) return false;
    if (this.openUntil === 0) return true;
    return now >= this.openUntil && !this.trialInFlight;
  }

  /** How long its `Retry-After` still asks to wait, in ms (0: not cooling). */
  coolingLeft(now: number): number {
    return Math.max(0, this.coolingUntil - now);
  }

  /** An attempt starts; an open circuit past its cooldown lets this one through as its trial. */
  begin(now: number): void {
    this.inFlight++;
    if (this.openUntil > 0 && now >= this.openUntil) this.trialInFlight = true;
  }

  end(): void {
    this.inFlight--;
  }

  /** The upstream answered (a stream's first content, or a whole answer) after `latencyMs`. */
  succeeded(now: number, latencyMs: number): void {
    // Only a trial closes an open circuit: a request already in flight when it opened proves little.
    if (this.openUntil > 0 && this.trialInFlight) {
      // A closed circuit starts afresh: what it measured while failing no longer says anything.
      this.openUntil = 0;
      this.failures = [];
      this.latencyMs = null;
    }
    this.sample(now, latencyMs);
    this.trialInFlight = false;
  }

  /** The attempt failed for a reason that is the deployment's; `retryAfterMs` cools it. */
  failed(now: number, elapsedMs: number, retryAfterMs: number | undefined, routing: RoutingPolicy): void {
    const { circuit, retryAfterMaxMs } = routing;
    // A failure weighs as a slow answer (twice the usual, a second at least), so the latency strategy
    // steers away from a failing deployment without shutting it out: under load it still gets its share.
    this.sample(now, Math.max(elapsedMs, 2 * (this.latencyMs ?? 0), FAILURE_PENALTY_MS));
    this.lastFailureAt = now;
    if (retryAfterMs !== undefined && retryAfterMs > 0) this.coolingUntil = Math.max(this.coolingUntil, now + Math.min(retryAfterMs, retryAfterMaxMs));
    const wasTrial = this.trialInFlight;
    this.trialInFlight = false;
    this.failures = this.failures.filter((at) => at > now - circuit.windowMs);
    this.failures.push(now);
    if (wasTrial || this.failures.length >= circuit.failures) this.openUntil = now + circuit.cooldownMs;
  }

  private sample(now: number, latencyMs: number): void {
    if (this.latencyMs === null || now - this.sampledAt > STALE_MS) this.latencyMs = latencyMs;
    else {
      const weight = Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, 1 - Math.exp(-(now - this.sampledAt + 1) / DECAY_MS)));
      this.latencyMs += weight * (latencyMs - this.latencyMs);
    }
    this.sampledAt = now;
  }

  /** The attempt ended without a verdict on the deployment (the caller left, the request was at fault). */
  settledWithoutVerdict(): void {
    this.trialInFlight = false;
  }
}

/** Every deployment's health in this process, by provider and upstream model. */
export class HealthBoard {
  private readonly byDeployment = new Map<string, DeploymentHealth>();

  of(providerId: string, upstreamModel: string): DeploymentHealth {
    const key = `${providerId}\u0000${upstreamModel}`;
    let health = this.byDeployment.get(key);
    if (health === undefined) {
      health = new DeploymentHealth();
      this.byDeployment.set(key, health);
    }
    return health;
  }
}
