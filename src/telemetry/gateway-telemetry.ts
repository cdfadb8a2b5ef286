import type { Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { GatewayMetrics } from './metrics.js';
import type { AttemptOutcome, AttemptStart, AttemptTelemetry, GenerationRecord, GenerationStart, GenerationTelemetry, ServedRequest, Telemetry, ToolCallRecord, ToolCallStart, ToolCallTelemetry, UpstreamRefusal } from './telemetry.js';
import { callerTraceHeaders, type Tracing } from './tracing.js';

/**
 * The meter stage's readers together: Prometheus metrics always, OpenTelemetry traces when the
 * environment asks, one JSON access-log line per request unless turned off, and a warning with the
 * upstream's own words for every attempt an upstream refused (so an operator can see why), but
 * only once a minute (in each process) for a fault of the configuration that every request repeats
 * (an upstream path that does not exist), lest it flood the log.
 */
/** How often a fault every request repeats (UpstreamRefusal's `operatorFault`) is logged, per key. */
const OPERATOR_FAULT_LOG_MS = 60_000;

export class GatewayTelemetry implements Telemetry {
  /** When each operator fault was last logged. */
  private readonly faultsLogged = new Map<string, number>();

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly tracing: Tracing | null,
    private readonly accessLog: Logger | null,
    private readonly logger: Logger,
  ) {}

  served(request: ServedRequest): void {
    this.metrics.served(request);
    if (this.accessLog === null || request.quiet === true) return;
    const generation = request.generation;
    // Ids, figures and names only: never a header, a body or a secret.
    this.accessLog.info(
      generation === undefined
        ? { requestId: request.requestId, route: request.route, status: request.status, latencyMs: round(request.durationMs) }
        : {
            requestId: request.requestId,
            route: request.route,
            status: request.status,
            latencyMs: round(request.durationMs),
            keyId: generation.keyId,
            model: generation.model,
            errorKind: generation.errorKind,
            inputTokens: generation.inputTokens,
            outputTokens: generation.outputTokens,
            costUsd: generation.costUsd,
            attempts: generation.attempts,
            upstreamMs: round(generation.upstreamMs),
          },
      'request',
    );
  }

  generation(start: GenerationStart): GenerationTelemetry {
    return new GenerationObservation(this.metrics, this.tracing, this.logger, start, this.faultDue);
  }

  toolCall(start: ToolCallStart): ToolCallTelemetry {
    const span = this.tracing?.toolCall(start);
    return {
      end: (record: ToolCallRecord) => {
        this.metrics.toolCallEnded(record);
        if (span !== undefined) this.tracing!.toolCallEnded(span, record);
      },
    };
  }

  /** Whether an operator fault is due to be logged again: at most once a minute per key, not once per request. */
  private readonly faultDue = (key: string, now = Date.now()): boolean => {
    const last = this.faultsLogged.get(key);
    if (last !== undefined && now - last < OPERATOR_FAULT_LOG_MS) return false;
    this.faultsLogged.set(key, now);
    return true;
  };
}

class GenerationObservation implements GenerationTelemetry {
  private readonly span: Span | undefined;

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly tracing: Tracing | null,
    private readonly logger: Logger,
    private readonly start: GenerationStart,
    private readonly faultDue: (key: string) => boolean,
  ) {
    this.span = tracing?.request(start);
  }

  attempt(start: AttemptStart): AttemptTelemetry {
    if (this.tracing === null || this.span === undefined) {
      // Not tracing: the caller's own context still reaches the upstream, so its trace stays whole.
      const headers = this.start.headers.traceparent === undefined ? undefined : callerTraceHeaders(this.start.headers);
      return {
        headers,
        end: (outcome) => {
          this.metrics.attemptEnded(start, outcome);
          if (outcome.upstreamRefusal !== undefined) this.logRefusal(start, outcome.upstreamRefusal);
        },
        skipped: () => undefined,
      };
    }
    const { span, headers } = this.tracing.attempt(this.span, start);
    const tracing = this.tracing;
    return {
      headers,
      end: (outcome: AttemptOutcome) => {
        this.metrics.attemptEnded(start, outcome);
        tracing.attemptEnded(span, start, outcome);
        if (outcome.upstreamRefusal !== undefined) this.logRefusal(start, outcome.upstreamRefusal);
      },
      skipped: (errorKind: string) => tracing.attemptSkipped(span, errorKind),
    };
  }

  private logRefusal(start: AttemptStart, refusal: UpstreamRefusal): void {
    const fault = refusal.operatorFault;
    if (fault !== undefined) {
      if (this.faultDue(fault.key)) {
        this.logger.warn({ requestId: this.start.requestId, model: this.start.model, deployment: start.deployment.name, upstreamBody: refusal.body, fix: 'operator', repeats: 'logged at most once a minute' }, fault.message);
      }
      return;
    }
    this.logger.warn(
      { requestId: this.start.requestId, model: this.start.model, deployment: start.deployment.name, upstreamStatus: refusal.status, upstreamBody: refusal.body },
      `upstream ${start.deployment.providerId} answered HTTP ${refusal.status}`,
    );
  }

  end(record: GenerationRecord): void {
    this.metrics.generationEnded(this.start, record);
    if (this.span !== undefined) this.tracing!.requestEnded(this.span, record);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
