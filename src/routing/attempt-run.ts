import { performance } from 'node:perf_hooks';
import type { CatalogueModel, Deployment } from '../catalogue/catalogue.js';
import { GatewayError } from '../core/errors.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import { generateAll, streamAll, type CallTarget } from '../generation/fan-out.js';
import type { Answer, ProviderCall } from '../generation/operation.js';
import type { Provider, WireOperation } from '../generation/provider.js';
import { relayFormat } from '../wire/relay-format.js';
import type { DeploymentHealth } from './deployment-health.js';
import { holdUntilContent, isContentPart } from './first-content.js';
import type { RouteOutcome, UpstreamTimer } from './router.js';

/**
 * One attempt's invoker and clock: it calls the deployment's adapter, holds a stream until its
 * first content, and aborts the attempt when the first-token timeout or the request's deadline
 * passes (every adapter honours the signal; the attempt then fails with the timeout's error rather
 * than the abort's). A class, not closures: it is made once per request on the hot path.
 */
export class AttemptRun {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timerFires: 'deadline' | 'first_token' = 'deadline';
  /** The adapter was called. */
  invoked = false;
  streamed = false;
  /** The upstream answered: a stream's first content, or a whole answer. */
  answered = false;
  /** The error a timeout replaced the attempt's own with. */
  timeout: GatewayError | undefined;
  deadlinePassed = false;
  /** The caller's wire operation when the upstream took it as it came; null when translated. */
  relayed: WireOperation | null = null;
  /** performance.now() up to which this attempt's upstream time has been added to the request's. */
  private accountedTo = performance.now();

  constructor(
    private readonly provider: Provider,
    private readonly deployment: Deployment,
    private readonly health: DeploymentHealth,
    private readonly progress: RouteOutcome,
    private readonly startedAt: number,
    private readonly deadlineAt: number,
    private readonly asked: CatalogueModel,
    private readonly now: () => number,
    private readonly traceHeaders: Readonly<Record<string, string>> | undefined,
    private readonly upstreamTime: UpstreamTimer,
  ) {
    this.arm(deadlineAt - startedAt, 'deadline');
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The caller went away. */
  readonly cancel = (): void => this.controller.abort();

  finish(): void {
    clearTimeout(this.timer);
    this.accountUpstreamTime();
  }

  /** Asks the provider what the operation planned for this attempt; a stream comes back holding its first content. */
  async call(call: Exclude<ProviderCall, { kind: 'none' }>, requestId: string): Promise<Answer> {
    const target: CallTarget = { model: this.deployment.model, requestId, signal: this.controller.signal, traceHeaders: this.traceHeaders };
    if (call.kind === 'relay') return this.relay(call, target);
    this.invoked = true;
    if (!call.stream) {
      this.progress.accepted = true;
      const result = await generateAll(this.provider, call.subCalls, target);
      this.answer();
      return { kind: 'generated', result };
    }
    this.streamed = true;
    this.holdStream();
    const parts = await streamAll(this.provider, call.subCalls, target);
    this.progress.accepted = true;
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
    else this.progress.accepted = true;
    const relayed = await this.provider.relay({ ...call, model: target.model, requestId: target.requestId, signal: target.signal, traceHeaders: target.traceHeaders });
    const providerId = this.deployment.providerId;
    const format = relayFormat(call.operation);
    if (!relayed.stream) {
      const problem = format.wholeProblem(relayed.body);
      if (problem !== undefined) throw unreadableUpstream(providerId, problem);
      this.answer();
      return { kind: 'relayed', body: relayed.body };
    }
    this.progress.accepted = true;
    const failureIn = format.failureIn;
    const events = await holdUntilContent(relayed.events, format.isContent, failureIn === undefined ? undefined : (event) => failureIn(event, providerId));
    this.answer();
    return { kind: 'relaying', events };
  }

  /** Adds the upstream time since the last account to the request's (read by `Server-Timing` and the overhead metric). */
  private accountUpstreamTime(): void {
    const now = performance.now();
    this.upstreamTime.upstreamMs += now - this.accountedTo;
    this.accountedTo = now;
  }

  /** From here a stream's first content must come within its first-token timeout; the wait for the headers counts. */
  private holdStream(): void {
    clearTimeout(this.timer);
    const firstTokenBy = Math.min(this.startedAt + this.deployment.routing.firstTokenTimeoutMs, this.deadlineAt);
    this.arm(firstTokenBy - this.now(), firstTokenBy === this.deadlineAt ? 'deadline' : 'first_token');
  }

  private answer(): void {
    clearTimeout(this.timer);
    this.accountUpstreamTime();
    this.answered = true;
    const now = this.now();
    this.health.succeeded(now, now - this.startedAt);
  }

  private arm(ms: number, fires: 'deadline' | 'first_token'): void {
    this.timerFires = fires;
    this.timer = setTimeout(this.expire, Math.max(0, ms));
  }

  private readonly expire = (): void => {
    if (this.timerFires === 'deadline') {
      this.deadlinePassed = true;
      this.timeout = new GatewayError('upstream_timeout', `No answer from model \`${this.asked.id}\` within the routing deadline of ${this.asked.routing.deadlineMs} ms.`, { upstreamFailure: 'timeout' });
    } else {
      const { providerId, routing } = this.deployment;
      this.timeout = new GatewayError('upstream_timeout', `The upstream provider '${providerId}' sent no first token within ${routing.firstTokenTimeoutMs} ms (first_token_timeout_ms).`, { upstreamFailure: 'timeout' });
    }
    this.controller.abort();
  };
}
