import type { ServerResponse } from 'node:http';
import type { CatalogueModel, Deployment } from '../catalogue/catalogue.js';
import { GatewayError, toGatewayError, type UpstreamFailureCondition } from '../core/errors.js';
import type { Meter } from '../generation/operation.js';
import type { Provider } from '../core/provider.js';
import type { ProviderRegistry } from '../providers/provider-adapters.js';
import type { AttemptLogEntry } from '../core/attempts.js';
import { HealthBoard, type DeploymentHealth, type DeploymentState } from './deployment-health.js';
import type { Invoker } from '../generation/invoke.js';
import { AttemptRun } from './attempt-run.js';
import type { AttemptTelemetry, GenerationTelemetry, UpstreamRefusal } from '../telemetry/telemetry.js';

/** What the request's upstream time is added to (the response, whose `Server-Timing` reads it). */
export interface UpstreamTimer {
  upstreamMs: number;
}

/** What a dialect's attempt is given: one deployment, its adapter, and an invoker that holds a stream until its first content. */
export interface RoutedAttempt {
  readonly deployment: Deployment;
  readonly provider: Provider;
  readonly invoke: Invoker;
  readonly signal: AbortSignal;
  readonly meter: Meter;
}

/** A request to route. */
export interface RouteJob {
  readonly model: CatalogueModel;
  /** A fallback model the caller may use for this operation, or undefined to skip it. */
  fallback(id: string): CatalogueModel | undefined;
  /** Whether the caller has gone away (it then calls the progress's `cancel`). */
  gone(): boolean;
  /** Whether anything reached the caller is read from it; `x-sluice-attempts` is set on it; upstream time is added to it. */
  readonly res: ServerResponse & UpstreamTimer;
  /** Told of each attempt; gives the trace context each passes upstream. */
  readonly telemetry: GenerationTelemetry;
  attempt(attempt: RoutedAttempt): Promise<void>;
  /** Sluice's count of the prompt, for an abandoned attempt the upstream had accepted. */
  promptTokens(): Promise<number>;
}

/** Filled in as the request is routed; read by the meter stage whether it ended well or not. */
export interface RouteProgress {
  /** The meter of the latest attempt. */
  meter: Meter;
  /** The latest attempt's deployment and public model. */
  deployment: Deployment | undefined;
  served: CatalogueModel | undefined;
  readonly attempts: AttemptLogEntry[];
  /** Called when the caller goes away: cancels the attempt in flight, or the wait before the next. */
  cancel: () => void;
  /** Whether the upstream of the latest attempt had the prompt (what a caller who left is billed for). */
  accepted: boolean;
}

export interface DeploymentStatus {
  readonly provider: string;
  readonly upstream_model: string;
  readonly state: DeploymentState;
  readonly latency_ms: number | null;
}

function newMeter(): Meter {
  return { usage: null, tokensCounted: false, firstByteAt: null, failure: null };
}

/** The progress of a request not yet routed. */
export function newProgress(): RouteProgress {
  return { meter: newMeter(), deployment: undefined, served: undefined, attempts: [], cancel: doNothing, accepted: false };
}

/**
 * The invoke stage's routing: which deployment of a model takes each attempt (by priority level,
 * then strategy), when another attempt is made (a failure in `retry_on` before anything reached
 * the caller), how long to wait first (backoff for a deployment tried again, its cooling), and when
 * the model's fallbacks take over. Every deployment's health is this process's own.
 */
export class Router {
  private readonly board = new HealthBoard();
  /** The board's entry of each catalogue deployment, found once: a catalogue reload brings new deployment objects. */
  private readonly healthByDeployment = new WeakMap<Deployment, DeploymentHealth>();

  constructor(
    private readonly providers: ProviderRegistry,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** The deployment a single call outside routing (a token count) goes to: the one routing would pick first. */
  preferred(model: CatalogueModel): Deployment {
    return this.choose(model, NO_FAILURES, this.now()) ?? model.deployments[0]!;
  }

  deploymentStatus(model: CatalogueModel): DeploymentStatus[] {
    const now = this.now();
    return model.deployments.map((deployment) => {
      const health = this.healthOf(deployment);
      const latency = health.latency(now);
      return { provider: deployment.providerId, upstream_model: deployment.upstreamModel, state: health.state(now, deployment.routing), latency_ms: latency === null ? null : Math.round(latency) };
    });
  }

  /** Runs attempts until one answers; throws the last failure when none did. */
  async run(job: RouteJob, progress: RouteProgress): Promise<void> {
    const deadlineAt = this.now() + job.model.routing.deadlineMs;
    let failedHere: Set<DeploymentHealth> | undefined;
    let chain: CatalogueModel[] | undefined;
    let lastError: GatewayError | undefined;
    let repeats = 0;
    for (let link = 0; ; link++) {
      const model = link === 0 ? job.model : chain?.[link];
      if (model === undefined) break;
      for (let tries = 0; tries <= model.routing.retries; tries++) {
        let deployment = this.choose(model, failedHere ?? NO_FAILURES, this.now());
        let waitMs = 0;
        if (deployment === undefined) {
          // Every deployment failed for this request: on to a fallback, else the soonest one again, after a backoff.
          chain ??= this.chainOf(job);
          if (link + 1 < chain.length) break;
          deployment = this.soonest(model);
          repeats++;
          const { initial, max } = model.routing.backoffMs;
          const backoff = Math.min(max, initial * 2 ** (repeats - 1));
          // A Retry-After longer than the longest backoff goes back to the caller, who can wait as well as we can.
          const cooling = this.healthOf(deployment).coolingLeft(this.now());
          if (cooling > max) throw lastError!;
          waitMs = Math.max(backoff / 2 + (this.random() * backoff) / 2, cooling);
        }
        if (lastError !== undefined) {
          if (this.now() + waitMs >= deadlineAt) throw lastError;
          if (waitMs > 0) await sleep(waitMs, progress);
          if (job.gone()) throw lastError;
          job.res.setHeader('x-sluice-attempts', String(progress.attempts.length + 1));
        }
        const failure = await this.attempt(job, model, deployment, progress, deadlineAt);
        if (failure === undefined) return;
        if (failure !== 'skipped') lastError = failure;
        (failedHere ??= new Set()).add(this.healthOf(deployment));
      }
      chain ??= this.chainOf(job);
    }
    throw lastError ?? new GatewayError('internal_error', `Model \`${job.model.id}\` has no deployment to route to.`);
  }

  /**
   * One attempt on one deployment. Returns the failure when another attempt may follow, `skipped`
   * when this deployment could not take the request before any upstream call (its adapter is gone,
   * or it cannot honour the request, after another attempt failed); throws when nothing may follow.
   */
  private async attempt(job: RouteJob, model: CatalogueModel, deployment: Deployment, progress: RouteProgress, deadlineAt: number): Promise<GatewayError | 'skipped' | undefined> {
    const provider = this.providers.get(deployment.providerId);
    if (provider === undefined) {
      if (progress.attempts.length > 0) return 'skipped';
      throw new GatewayError('internal_error', `The provider '${deployment.providerId}' of model \`${model.id}\` is not configured.`);
    }
    const health = this.healthOf(deployment);
    const { routing } = deployment;
    const startedAt = this.now();
    const meter = newMeter();
    progress.meter = meter;
    progress.deployment = deployment;
    progress.served = model;
    progress.accepted = false;
    const observed = job.telemetry.attempt({ deployment, providerKind: provider.kind, origin: provider.origin });
    const run = new AttemptRun(provider, deployment, health, progress, startedAt, deadlineAt, job.model, this.now, observed.headers, job.res);
    if (job.gone()) run.cancel();
    health.begin(startedAt);
    try {
      await job.attempt({ deployment, provider, invoke: run, signal: run.signal, meter });
      const failure = meter.failure;
      // A failure after content had flowed: its time to first content was already measured, so only the penalty counts.
      if (failure !== null && isDeploymentFault(failure.upstreamFailure)) health.failed(this.now(), 0, undefined, routing);
      else if (!run.answered) health.settledWithoutVerdict();
      this.record(progress, model, deployment, startedAt, run, observed, failure?.status ?? 200, failure?.kind ?? null, meter.usage?.input ?? 0, meter.usage?.output ?? 0, undefined);
      return undefined;
    } catch (thrown) {
      const error = run.timeout ?? toGatewayError(thrown);
      const gone = job.gone();
      // The request's own deadline and the caller's leaving say nothing about the deployment.
      if (!gone && !run.deadlinePassed && isDeploymentFault(error.upstreamFailure)) health.failed(this.now(), this.now() - startedAt, retryAfterMs(error.retryAfter, this.now()), routing);
      else health.settledWithoutVerdict();
      if (!run.invoked && error.upstreamFailure === undefined && progress.attempts.length > 0 && !gone) {
        observed.skipped(error.kind);
        return 'skipped';
      }
      // A whole answer refused, or whose connection failed, was never worked on (one cut short because the caller left was).
      if (!gone && !run.streamed && (typeof error.upstreamFailure === 'number' || error.upstreamFailure === 'connect_error')) progress.accepted = false;
      // What the dialect measured, else, once the upstream had the prompt, the prompt: whatever came of it, it was consumed.
      const consumed = meter.usage?.input ?? (progress.accepted ? await job.promptTokens().catch(() => 0) : 0);
      this.record(progress, model, deployment, startedAt, run, observed, gone ? CLIENT_CLOSED_REQUEST : error.status, gone ? 'client_closed' : error.kind, consumed, meter.usage?.output ?? 0, refusalOf(error));
      const retryable = !gone && !job.res.headersSent && error.upstreamFailure !== undefined && routing.retryOn.has(error.upstreamFailure);
      if (!retryable) throw error;
      return error;
    } finally {
      run.finish();
      health.end();
      progress.cancel = doNothing;
    }
  }

  private record(
    progress: RouteProgress,
    model: CatalogueModel,
    deployment: Deployment,
    startedAt: number,
    run: AttemptRun,
    observed: AttemptTelemetry,
    status: number,
    errorKind: string | null,
    promptTokens: number,
    completionTokens: number,
    upstreamRefusal: UpstreamRefusal | undefined,
  ): void {
    const latencyMs = this.now() - startedAt;
    progress.attempts.push({ model: model.id, deployment: deployment.name, providerId: deployment.providerId, status, errorKind, promptTokens, completionTokens, latencyMs });
    observed.end({ relayed: run.relayed, status, errorKind, inputTokens: promptTokens, outputTokens: completionTokens, durationMs: latencyMs, upstreamRefusal });
  }

  /** The model and its fallbacks the caller may use, each once. */
  private chainOf(job: RouteJob): CatalogueModel[] {
    const chain = [job.model];
    for (const id of job.model.fallbacks) {
      const fallback = job.fallback(id);
      if (fallback !== undefined && !chain.includes(fallback)) chain.push(fallback);
    }
    return chain;
  }

  private healthOf(deployment: Deployment): DeploymentHealth {
    let health = this.healthByDeployment.get(deployment);
    if (health === undefined) {
      health = this.board.of(deployment.providerId, deployment.upstreamModel);
      this.healthByDeployment.set(deployment, health);
    }
    return health;
  }

  /**
   * The first priority level with a deployment that is available and has not failed for this
   * request, and among those the strategy's pick. When every deployment is out but some have not
   * been tried for this request (all open or cooling), the least recently failed of those: a
   * request is never refused without a try. Undefined once every deployment failed for this request.
   */
  private choose(model: CatalogueModel, failedHere: ReadonlySet<DeploymentHealth>, now: number): Deployment | undefined {
    const { deployments } = model;
    if (deployments.length === 1) {
      const only = deployments[0]!;
      return failedHere.has(this.healthOf(only)) ? undefined : only;
    }
    let level = Infinity;
    let candidates: Deployment[] = [];
    let untried: Deployment | undefined;
    let trial: Deployment | undefined;
    for (const deployment of deployments) {
      const health = this.healthOf(deployment);
      if (failedHere.has(health)) continue;
      if (untried === undefined || health.lastFailureAt < this.healthOf(untried).lastFailureAt) untried = deployment;
      if (!health.available(now) || deployment.priority > level) continue;
      if (deployment.priority < level) {
        level = deployment.priority;
        candidates = [];
        trial = undefined;
      }
      candidates.push(deployment);
      if (trial === undefined && health.trialDue(now)) trial = deployment;
    }
    if (candidates.length === 0) return untried;
    // A circuit due its trial gets it now, rather than when the strategy next happens to pick it.
    if (trial !== undefined) return trial;
    if (candidates.length === 1) return candidates[0];
    switch (model.routing.strategy) {
      case 'weighted':
        return this.byWeight(candidates);
      case 'least_busy': {
        const least = Math.min(...candidates.map((d) => this.healthOf(d).inFlight));
        return this.byWeight(candidates.filter((d) => this.healthOf(d).inFlight === least));
      }
      case 'latency':
        return this.powerOfTwoChoices(candidates, now);
    }
  }

  /** Two drawn by weight; the one with the lower latency times requests in flight (an unmeasured one is tried first). */
  private powerOfTwoChoices(candidates: readonly Deployment[], now: number): Deployment {
    const first = this.byWeight(candidates);
    const second = this.byWeight(candidates.filter((d) => d !== first));
    const cost = (deployment: Deployment) => {
      const health = this.healthOf(deployment);
      return (health.latency(now) ?? 0) * (health.inFlight + 1);
    };
    return cost(second) < cost(first) ? second : first;
  }

  private byWeight(candidates: readonly Deployment[]): Deployment {
    let total = 0;
    for (const d of candidates) total += d.weight;
    let point = this.random() * total;
    for (const d of candidates) {
      point -= d.weight;
      if (point < 0) return d;
    }
    return candidates[candidates.length - 1]!;
  }

  /** The deployment whose cooling ends soonest, the least recently failed among equals. */
  private soonest(model: CatalogueModel): Deployment {
    const now = this.now();
    let best = model.deployments[0]!;
    for (const deployment of model.deployments) {
      const health = this.healthOf(deployment);
      const bestHealth = this.healthOf(best);
      const cooling = health.coolingLeft(now);
      const bestCooling = bestHealth.coolingLeft(now);
      if (cooling < bestCooling || (cooling === bestCooling && health.lastFailureAt < bestHealth.lastFailureAt)) best = deployment;
    }
    return best;
  }
}

/** Recorded when the client went away before the answer was complete (nginx's convention). */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * A failure that is the deployment's rather than the request's, which its circuit counts whatever
 * `retry_on` says: a connection that failed, a timeout, a refused credential, a rate limit, a 5xx.
 */
/** What the upstream said when it answered an attempt with an HTTP error. */
function refusalOf(error: GatewayError): UpstreamRefusal | undefined {
  return error.upstreamBody === undefined || typeof error.upstreamFailure !== 'number' ? undefined : { status: error.upstreamFailure, body: error.upstreamBody };
}

function isDeploymentFault(failure: UpstreamFailureCondition | undefined): boolean {
  if (failure === undefined) return false;
  return typeof failure === 'string' || failure >= 500 || failure === 401 || failure === 403 || failure === 408 || failure === 429;
}

/** `Retry-After` in seconds or as an HTTP date, in ms from now. */
function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Waits, or less if the caller goes away meanwhile. */
function sleep(ms: number, progress: RouteProgress): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      progress.cancel = doNothing;
      resolve();
    };
    const timer = setTimeout(done, ms);
    progress.cancel = done;
  });
}

const doNothing = (): void => undefined;
const NO_FAILURES: ReadonlySet<DeploymentHealth> = new Set();
