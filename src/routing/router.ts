import type { CatalogueModel, Deployment } from '../catalogue/catalogue.js';
import { GatewayError, toGatewayError } from '../core/errors.js';
import type { Usage } from '../generation/model.js';
import type { Answer, AttemptTarget, ProviderCall } from '../generation/operation.js';
import type { ProviderRegistry } from '../generation/provider.js';
import type { AttemptLogEntry } from '../core/attempts.js';
import { HealthBoard, type DeploymentHealth, type DeploymentState } from './deployment-health.js';
import { AttemptRun, logAttempt } from './attempt-run.js';
import type { GenerationTelemetry } from '../telemetry/telemetry.js';

/** What the request's upstream time is added to (read by `Server-Timing` and the overhead metric). */
export interface UpstreamTimer {
  upstreamMs: number;
}

/** A request to route. */
export interface RouteJob {
  readonly model: CatalogueModel;
  readonly requestId: string;
  /** A fallback model the caller may use for this operation, or undefined to skip it. */
  fallback(id: string): CatalogueModel | undefined;
  /** What an attempt asks of its deployment's provider (the operation's plan for it). */
  plan(target: AttemptTarget): ProviderCall;
  /** Aborted when the caller goes away: the attempt in flight is cancelled, or the wait before the next. */
  readonly signal: AbortSignal;
  /** Told of each attempt; gives the trace context each passes upstream. */
  readonly telemetry: GenerationTelemetry;
  readonly timer: UpstreamTimer;
  /** Sluice's count of the prompt, for an abandoned attempt the upstream had accepted. */
  promptTokens(): Promise<number>;
}

/** How the request was routed, for the meter stage: the last attempt's deployment and model, and every attempt ended so far. */
export interface RouteOutcome {
  deployment: Deployment | undefined;
  served: CatalogueModel | undefined;
  readonly attempts: AttemptLogEntry[];
  /** Whether the upstream of the latest attempt had the prompt (what a caller who left is billed for). */
  accepted: boolean;
}

/** Routing's result: an answer (its attempt still open while it is written), or the failure that ended the request. */
export type Routed =
  | { readonly ok: true; readonly answer: Answer; readonly target: AttemptTarget; readonly call: ProviderCall; readonly outcome: RouteOutcome; readonly answered: AnsweredAttempt }
  | { readonly ok: false; readonly error: GatewayError; readonly outcome: RouteOutcome };

/** The attempt that answered: in flight (and counted busy) until its answer is written, then ended with what the write saw. */
export interface AnsweredAttempt {
  end(written: AttemptEnd): Promise<void>;
}

/** How the writing of an answer ended. */
export interface AttemptEnd {
  /** What the answer consumed, as metered; null when nothing is known. */
  readonly usage: Usage | null;
  /** A failure after the answer began (the caller had it as an error event). */
  readonly failure: GatewayError | undefined;
  /** The write failed before its first byte, or the caller left. */
  readonly thrown: GatewayError | undefined;
}

export interface DeploymentStatus {
  readonly provider: string;
  readonly upstream_model: string;
  readonly state: DeploymentState;
  readonly latency_ms: number | null;
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

  deploymentStatus(model: CatalogueModel): DeploymentStatus[] {
    const now = this.now();
    return model.deployments.map((deployment) => {
      const health = this.healthOf(deployment);
      const latency = health.latency(now);
      return { provider: deployment.providerId, upstream_model: deployment.upstreamModel, state: health.state(now, deployment.routing), latency_ms: latency === null ? null : Math.round(latency) };
    });
  }

  /** Makes attempts until one answers (its stream holding its first content), or none may follow. */
  async invoke(job: RouteJob): Promise<Routed> {
    const outcome: RouteOutcome = { deployment: undefined, served: undefined, attempts: [], accepted: false };
    try {
      const answered = await this.run(job, outcome);
      return { ok: true, answer: answered.answer, target: answered.target, call: answered.call, outcome, answered };
    } catch (thrown) {
      return { ok: false, error: toGatewayError(thrown), outcome };
    }
  }

  private async run(job: RouteJob, outcome: RouteOutcome): Promise<OpenAttempt> {
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
          if (waitMs > 0) await sleep(waitMs, job.signal);
          if (job.signal.aborted) throw lastError;
        }
        const result = await this.attempt(job, model, deployment, outcome, deadlineAt);
        if (!(result instanceof GatewayError) && result !== 'skipped') return result;
        if (result !== 'skipped') lastError = result;
        (failedHere ??= new Set()).add(this.healthOf(deployment));
      }
      chain ??= this.chainOf(job);
    }
    throw lastError ?? new GatewayError('internal_error', `Model \`${job.model.id}\` has no deployment to route to.`);
  }

  /**
   * One attempt on one deployment. Returns the attempt that answered (still open), the failure
   * when another attempt may follow, `skipped` when this deployment could not take the request
   * before any upstream call (its adapter is gone, or it cannot honour the request, after another
   * attempt failed); throws when nothing may follow.
   */
  private async attempt(job: RouteJob, model: CatalogueModel, deployment: Deployment, outcome: RouteOutcome, deadlineAt: number): Promise<OpenAttempt | GatewayError | 'skipped'> {
    const provider = this.providers.get(deployment.providerId);
    if (provider === undefined) {
      if (outcome.attempts.length > 0) return 'skipped';
      throw new GatewayError('internal_error', `The provider '${deployment.providerId}' of model \`${model.id}\` is not configured.`);
    }
    outcome.deployment = deployment;
    outcome.served = model;
    outcome.accepted = false;
    const target: AttemptTarget = { model: deployment.model, provider };
    let call: ProviderCall;
    try {
      call = job.plan(target);
    } catch (thrown) {
      // The deployment cannot honour the request: passed over after another attempt failed, else the request's answer.
      const error = toGatewayError(thrown);
      const observed = job.telemetry.attempt({ deployment, providerKind: provider.kind, origin: provider.origin });
      if (outcome.attempts.length > 0 && !job.signal.aborted) {
        observed.skipped(error.kind);
        return 'skipped';
      }
      logAttempt(outcome, observed, { model, deployment, relayed: null, latencyMs: 0, status: error.status, errorKind: error.kind, promptTokens: 0, completionTokens: 0, upstreamRefusal: undefined });
      throw error;
    }
    if (call.kind === 'none') {
      // Sluice answers itself: no upstream call, so no attempt and no deployment.
      outcome.deployment = undefined;
      return { answer: NO_ANSWER, target, call, end: () => Promise.resolve() };
    }
    const run = new AttemptRun({ job, provider, deployment, model, health: this.healthOf(deployment), outcome, deadlineAt, now: this.now });
    let answer: Answer;
    try {
      answer = await run.call(call, job.requestId);
    } catch (thrown) {
      try {
        const error = run.errorOf(thrown);
        if (!run.invoked && error.upstreamFailure === undefined && outcome.attempts.length > 0 && !job.signal.aborted) {
          run.skip(error.kind);
          return 'skipped';
        }
        await run.fail(error, null);
        const retryable = !job.signal.aborted && error.upstreamFailure !== undefined && deployment.routing.retryOn.has(error.upstreamFailure);
        if (!retryable) throw error;
        return error;
      } finally {
        run.close();
      }
    }
    return {
      answer,
      target,
      call,
      end: async (written) => {
        try {
          if (written.thrown === undefined) run.succeed(written.usage, written.failure);
          else await run.fail(run.errorOf(written.thrown), written.usage);
        } finally {
          run.close();
        }
      },
    };
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

/** Waits, or less if the caller goes away meanwhile. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

interface OpenAttempt extends AnsweredAttempt {
  readonly answer: Answer;
  readonly target: AttemptTarget;
  readonly call: ProviderCall;
}

const NO_ANSWER: Answer = { kind: 'none' };
const NO_FAILURES: ReadonlySet<DeploymentHealth> = new Set();
