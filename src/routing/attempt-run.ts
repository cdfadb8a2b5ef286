import { performance } from 'node:perf_hooks';
import type { CatalogueModel, Deployment } from '../catalogue/catalogue.js';
import { CLIENT_CLOSED_REQUEST, GatewayError, toGatewayError, type UpstreamFailureCondition } from '../core/errors.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { embedAll, generateAll, streamAll, type CallTarget } from '../generation/fan-out.js';
import type { Usage } from '../generation/model.js';
import type { Answer, ProviderCall } from '../generation/operation.js';
import type { Provider, TransferOperation, WireOperation } from '../generation/provider.js';
import { relayFormat } from '../wire/relay-format.js';
import type { DeploymentHealth } from './deployment-health.js';
import { holdUntilContent, isContentPart } from './first-content.js';
import type { RouteJob, RouteOutcome } from './router.js';
import type { AttemptTelemetry, UpstreamRefusal } from '../telemetry/telemetry.js';

/** What one attempt is made of. */
export interface AttemptSetting {
  readonly job: RouteJob;
  readonly provider: Provider;
  readonly deployment: Deployment;
  /** The public model the attempt serves: the one asked for, or a fallback. */
  readonly model: CatalogueModel;
  readonly health: DeploymentHealth;
  readonly outcome: RouteOutcome;
  readonly deadlineAt: number;
  readonly now: () => number;
}

/**
 * One attempt, from the call to its record: it calls the deployment's adapter, holds a stream until
 * its first content, and aborts the attempt when the caller leaves or the first-token timeout or the
 * request's deadline passes (every adapter honours the signal; the attempt then fails with the
 * timeout's error rather than the abort's). It is in flight, and counted busy on its deployment,
 * until it is closed. A class, not closures: it is made once per request on the hot path.
 */
export class AttemptRun {
  private readonly controller = new AbortController();
  private readonly startedAt: number;
  private readonly observed: AttemptTelemetry;
  private timer: NodeJS.Timeout | undefined;
  private timerFires: 'deadline' | 'first_token' = 'deadline';
  /** The adapter was called. */
  invoked = false;
  private streamed = false;
  /** The error a timeout replaced the attempt's own with. */
  private timeout: GatewayError | undefined;
  private deadlinePassed = false;
  /** The caller's wire operation when the upstream took it as it came (relayed JSON, or transferred bytes); null when translated. */
  private relayed: WireOperation | TransferOperation | null = null;
  /** The attempt asked for embeddings (relayed or translated, as the adapter does it). */
  private embedding = false;
  /** performance.now() up to which this attempt's upstream time has been added to the request's. */
  private accountedTo = performance.now();

  constructor(private readonly s: AttemptSetting) {
    const { job, deployment, provider } = s;
    this.startedAt = s.now();
    this.observed = job.telemetry.attempt({ deployment, providerKind: provider.kind, origin: provider.origin });
    this.arm(s.deadlineAt - this.startedAt, 'deadline');
    if (job.signal.aborted) this.cancel();
    else job.signal.addEventListener('abort', this.cancel, { once: true });
    s.health.begin(this.startedAt);
  }

  /** The caller went away. */
  private readonly cancel = (): void => this.controller.abort();

  /** The error the attempt ended with: a timeout's, else its own. */
  errorOf(thrown: unknown): GatewayError {
    return this.timeout ?? toGatewayError(thrown);
  }

  /** Asks the provider what the operation planned for this attempt; a stream comes back holding its first content. */
  async call(call: Exclude<ProviderCall, { kind: 'none' }>, requestId: string): Promise<Answer> {
    const target: CallTarget = { model: this.s.deployment.model, requestId, signal: this.controller.signal, traceHeaders: this.observed.headers };
    if (call.kind === 'relay') return this.relay(call, target);
    this.invoked = true;
    if (call.kind === 'embed') {
      this.embedding = true;
      this.s.outcome.accepted = true;
      const result = await embedAll(this.s.provider, call.batches, call.encoding, target);
      this.answer();
      return { kind: 'embedded', result };
    }
    if (call.kind === 'transfer') {
      this.relayed = call.operation;
      // The upstream has the request once it is sent; its answer counts as given once its headers came (a body streams on).
      this.s.outcome.accepted = true;
      const transferred = await this.s.provider.transfer({ operation: call.operation, body: call.body, stream: call.stream, model: target.model, requestId: target.requestId, signal: target.signal, traceHeaders: target.traceHeaders });
      this.answer();
      return { kind: 'transferred', transferred };
    }
    if (!call.stream) {
      this.s.outcome.accepted = true;
      const result = await generateAll(this.s.provider, call.subCalls, target);
      this.answer();
      return { kind: 'generated', result };
    }
    this.streamed = true;
    this.holdStream();
    const parts = await streamAll(this.s.provider, call.subCalls, target);
    this.s.outcome.accepted = true;
    const held = await holdUntilContent(parts, isContentPart);
    this.answer();
    return { kind: 'generating', parts: held };
  }

  private async relay(call: Extract<ProviderCall, { kind: 'relay' }>, target: CallTarget): Promise<Answer> {
    this.invoked = true;
    this.streamed = call.stream;
    this.relayed = call.operation;
    // The upstream has the prompt once a whole answer is asked for (until it is refused), or once a stream began.
    if (call.stream) this.holdStream();
    else this.s.outcome.accepted = true;
    const relayed = await this.s.provider.relay({ ...call, model: target.model, requestId: target.requestId, signal: target.signal, traceHeaders: target.traceHeaders });
    const providerId = this.s.deployment.providerId;
    const format = relayFormat(call.operation);
    if (!relayed.stream) {
      const problem = format.wholeProblem(relayed.body);
      if (problem !== undefined) throw unreadableUpstream(providerId, problem);
      this.answer();
      return { kind: 'relayed', body: relayed.body };
    }
    this.s.outcome.accepted = true;
    const failureIn = format.failureIn;
    const events = await holdUntilContent(relayed.events, format.isContent, failureIn === undefined ? undefined : (event) => failureIn(event, providerId));
    this.answer();
    return { kind: 'relaying', events };
  }

  /** Passed over before any upstream call: its span ends, and nothing is recorded against the deployment. */
  skip(errorKind: string): void {
    this.s.health.settledWithoutVerdict();
    this.observed.skipped(errorKind);
  }

  /**
   * The attempt failed, before its answer or while it was written: the deployment's verdict, and the
   * attempt's record with what it consumed (what the write measured, else, once the upstream had
   * the prompt, the prompt: whatever came of it, it was consumed).
   */
  async fail(error: GatewayError, usage: Usage | null): Promise<void> {
    const { job, health, deployment, outcome, now } = this.s;
    const gone = job.signal.aborted;
    // The request's own deadline and the caller's leaving say nothing about the deployment.
    if (!gone && !this.deadlinePassed && isDeploymentFault(error.upstreamFailure)) health.failed(now(), now() - this.startedAt, retryAfterMs(error.retryAfter, now()), deployment.routing);
    else health.settledWithoutVerdict();
    // A whole answer refused, or whose connection failed, was never worked on (one cut short because the caller left was).
    if (!gone && !this.streamed && (typeof error.upstreamFailure === 'number' || error.upstreamFailure === 'connect_error')) outcome.accepted = false;
    const consumed = usage?.input ?? (outcome.accepted ? await job.promptTokens().catch(() => 0) : 0);
    this.record(gone ? CLIENT_CLOSED_REQUEST : error.status, gone ? 'client_closed' : error.kind, consumed, usage?.output ?? 0, refusalOf(error));
  }

  /** The answer was written; a failure after content had flowed counts against the deployment (its time to first content was measured already). */
  succeed(usage: Usage | null, failure: GatewayError | undefined): void {
    const { health, deployment, now } = this.s;
    if (failure !== undefined && isDeploymentFault(failure.upstreamFailure)) health.failed(now(), 0, undefined, deployment.routing);
    this.record(failure?.status ?? 200, failure?.kind ?? null, usage?.input ?? 0, usage?.output ?? 0, undefined);
  }

  /** Ends the attempt: no longer in flight on its deployment, its upstream time counted. */
  close(): void {
    this.s.job.signal.removeEventListener('abort', this.cancel);
    clearTimeout(this.timer);
    this.accountUpstreamTime();
    this.s.health.end();
  }

  private record(status: number, errorKind: string | null, promptTokens: number, completionTokens: number, upstreamRefusal: UpstreamRefusal | undefined): void {
    const { outcome, model, deployment, now } = this.s;
    logAttempt(outcome, this.observed, { model, deployment, relayed: this.relayed, embedding: this.embedding, latencyMs: now() - this.startedAt, status, errorKind, promptTokens, completionTokens, upstreamRefusal });
  }

  /** Adds the upstream time since the last account to the request's (read by `Server-Timing` and the overhead metric). */
  private accountUpstreamTime(): void {
    const now = performance.now();
    this.s.job.timer.upstreamMs += now - this.accountedTo;
    this.accountedTo = now;
  }

  /** From here a stream's first content must come within its first-token timeout; the wait for the headers counts. */
  private holdStream(): void {
    clearTimeout(this.timer);
    const firstTokenBy = Math.min(this.startedAt + this.s.deployment.routing.firstTokenTimeoutMs, this.s.deadlineAt);
    this.arm(firstTokenBy - this.s.now(), firstTokenBy === this.s.deadlineAt ? 'deadline' : 'first_token');
  }

  private answer(): void {
    clearTimeout(this.timer);
    this.accountUpstreamTime();
    const now = this.s.now();
    this.s.health.succeeded(now, now - this.startedAt);
  }

  private arm(ms: number, fires: 'deadline' | 'first_token'): void {
    this.timerFires = fires;
    this.timer = setTimeout(this.expire, Math.max(0, ms));
  }

  private readonly expire = (): void => {
    if (this.timerFires === 'deadline') {
      this.deadlinePassed = true;
      const asked = this.s.job.model;
      this.timeout = new GatewayError('upstream_timeout', `No answer from model \`${asked.id}\` within the routing deadline of ${asked.routing.deadlineMs} ms.`, { upstreamFailure: 'timeout' });
    } else {
      const { providerId, routing } = this.s.deployment;
      this.timeout = new GatewayError('upstream_timeout', `The upstream provider '${providerId}' sent no first token within ${routing.firstTokenTimeoutMs} ms (first_token_timeout_ms).`, { upstreamFailure: 'timeout' });
    }
    this.controller.abort();
  };
}

/** How one attempt ended, for the ledger's attempt log and the attempt's span. */
export interface AttemptEnding {
  readonly model: CatalogueModel;
  readonly deployment: Deployment;
  readonly relayed: WireOperation | TransferOperation | null;
  /** The attempt asked for embeddings. */
  readonly embedding?: boolean;
  readonly latencyMs: number;
  readonly status: number;
  readonly errorKind: string | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly upstreamRefusal: UpstreamRefusal | undefined;
}

export function logAttempt(outcome: RouteOutcome, observed: AttemptTelemetry, ending: AttemptEnding): void {
  const { model, deployment, relayed, embedding, latencyMs, status, errorKind, promptTokens, completionTokens, upstreamRefusal } = ending;
  outcome.attempts.push({ model: model.id, deployment: deployment.name, providerId: deployment.providerId, status, errorKind, promptTokens, completionTokens, latencyMs });
  observed.end({ relayed, embedding: embedding === true, status, errorKind, inputTokens: promptTokens, outputTokens: completionTokens, durationMs: latencyMs, upstreamRefusal });
}

/** What the upstream said when it answered an attempt with an HTTP error. */
function refusalOf(error: GatewayError): UpstreamRefusal | undefined {
  if (error.upstreamBody === undefined || typeof error.upstreamFailure !== 'number') return undefined;
  const refusal = { status: error.upstreamFailure, body: error.upstreamBody };
  return error.logOnceAs === undefined ? refusal : { ...refusal, operatorFault: { key: error.logOnceAs, message: error.message } };
}

/**
 * A failure that is the deployment's rather than the request's, which its circuit counts whatever
 * `retry_on` says: a connection that failed, a timeout, a refused credential, a rate limit, a 5xx.
 */
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
