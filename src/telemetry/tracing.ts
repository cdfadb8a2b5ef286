import { performance } from 'node:perf_hooks';
import { defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { clientOperationName, EXECUTE_TOOL, providerName, serverOf, serverOperationName } from './gen-ai.js';
import type { AttemptOutcome, AttemptStart, GenerationRecord, GenerationStart, ToolCallRecord, ToolCallStart } from './telemetry.js';

/** Which OTLP encoding the standard variables ask for; gRPC is not offered (it would bring a second HTTP stack). */
function protocolOf(env: NodeJS.ProcessEnv): 'http/protobuf' | 'http/json' {
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  if (protocol === 'http/protobuf' || protocol === 'http/json') return protocol;
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL '${protocol}' is not supported: use http/protobuf or http/json`);
}

/**
 * Whether the standard OpenTelemetry variables turn tracing on: off by default, on when an OTLP
 * endpoint is named or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_SDK_DISABLED=true` and
 * `OTEL_TRACES_EXPORTER=none` keep it off.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim());
  if (exporters.includes('none')) return false;
  return exporters.includes('otlp') || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT) || Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

const propagator = new W3CTraceContextPropagator();

/**
 * Spans of generation requests, exported over OTLP/HTTP with the OpenTelemetry SDK: one server span
 * per request (its parent the caller's `traceparent`) and a client span per upstream attempt,
 * whose context goes upstream in `traceparent`. Nothing is registered globally: contexts are
 * passed by hand, so no async-context tracking runs on the request path.
 */
export class Tracing {
  private readonly tracer: Tracer;

  private constructor(private readonly provider: TracerProvider) {
    this.tracer = provider.getTracer('sluice');
  }

  /** The tracing the environment asks for, or null; a setting it cannot honour stops start-up. */
  static async fromEnv(env: NodeJS.ProcessEnv, logger: Logger): Promise<Tracing | null> {
    if (!tracingWanted(env)) return null;
    const protocol = protocolOf(env);
    // The SDK loads only when tracing is on (with the semantic conventions it brings, a few MB per process).
    const [{ detectResources, envDetector, resourceFromAttributes }, { BatchSpanProcessor, TracerProvider }, { batchSettingsFromEnv, samplerFromEnv }] = await Promise.all([
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
      import('./tracing-env.js'),
    ]);
    // The exporters read the endpoint, headers, timeout and compression from the same variables.
    const exporter: SpanExporter =
      protocol === 'http/json' ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter() : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
    const resource = resourceFromAttributes({ 'service.name': 'sluice' }).merge(detectResources({ detectors: [envDetector] }));
    const provider = new TracerProvider({ resource, sampler: samplerFromEnv(env), spanProcessors: [new BatchSpanProcessor({ exporter, ...batchSettingsFromEnv(env) })] });
    logger.info({ protocol, endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'the default (localhost:4318)' }, 'traces are exported over OTLP');
    return new Tracing(provider);
  }

  request(start: GenerationStart): Span {
    const parent = propagator.extract(ROOT_CONTEXT, start.headers, defaultTextMapGetter);
    const operation = serverOperationName(start.operation);
    return this.tracer.startSpan(
      `${operation} ${start.model}`,
      {
        kind: SpanKind.SERVER,
        startTime: performance.timeOrigin + start.startedAt,
        attributes: { 'gen_ai.operation.name': operation, 'gen_ai.request.model': start.model, 'http.request.method': 'POST', 'http.route': start.route.slice(start.route.indexOf(' ') + 1) },
      },
      parent,
    );
  }

  attempt(request: Span, start: AttemptStart): { span: Span; headers: Record<string, string> } {
    const { deployment } = start;
    const server = serverOf(start.origin);
    const span = this.tracer.startSpan(
      deployment.upstreamModel,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.provider.name': providerName(start.providerKind),
          'gen_ai.request.model': deployment.upstreamModel,
          'server.address': server.address,
          'server.port': server.port,
          'sluice.deployment': deployment.name,
          'sluice.model': deployment.model.id,
        },
      },
      trace.setSpan(ROOT_CONTEXT, request),
    );
    return { span, headers: contextHeaders(trace.setSpan(ROOT_CONTEXT, span)) };
  }

  attemptEnded(span: Span, start: AttemptStart, outcome: AttemptOutcome): void {
    const operation = clientOperationName(start.providerKind, start.deployment.model.upstreamApi, outcome.relayed, outcome.embedding === true);
    span.updateName(`${operation} ${start.deployment.upstreamModel}`);
    span.setAttributes({ 'gen_ai.operation.name': operation, 'gen_ai.usage.input_tokens': outcome.inputTokens, 'gen_ai.usage.output_tokens': outcome.outputTokens, 'sluice.status': outcome.status });
    if (outcome.errorKind !== null) {
      span.setAttribute('error.type', outcome.errorKind);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  /** An attempt passed over before any upstream call: its span ends, saying why (no call failed, so it is not in error). */
  attemptSkipped(span: Span, errorKind: string): void {
    span.setAttribute('sluice.skipped', errorKind);
    span.end();
  }

  requestEnded(span: Span, record: GenerationRecord): void {
    span.setAttributes({
      'gen_ai.provider.name': providerName(record.providerKind),
      'gen_ai.response.model': record.model,
      'gen_ai.usage.input_tokens': record.inputTokens,
      'gen_ai.usage.output_tokens': record.outputTokens,
      'http.response.status_code': record.status,
      'sluice.request_id': record.requestId,
      'sluice.attempts': record.attempts,
      'sluice.cost_usd': record.costUsd,
    });
    if (record.errorKind !== null) span.setAttribute('error.type', record.errorKind);
    // A server span is in error for what the server got wrong, not for what the caller did.
    if (record.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /**
   * An MCP call to an upstream: a tool call is the conventions' `execute_tool` span (its parent the caller's `traceparent`),
   * named for the tool once it is resolved (`execute_tool read_file`; a name the gateway does not
   * know is never put in a span).
   */
  toolCall(start: ToolCallStart): Span {
    const parent = propagator.extract(ROOT_CONTEXT, start.headers, defaultTextMapGetter);
    const tool = start.method === 'tools/call';
    return this.tracer.startSpan(
      tool ? EXECUTE_TOOL : start.method,
      {
        kind: SpanKind.SERVER,
        startTime: performance.timeOrigin + start.startedAt,
        attributes: { ...(tool ? { 'gen_ai.operation.name': EXECUTE_TOOL } : {}), 'mcp.method.name': start.method, 'sluice.request_id': start.requestId },
      },
      parent,
    );
  }

  toolCallEnded(span: Span, record: ToolCallRecord): void {
    // Printable and bounded (see ToolCallRecord): the upstream's text never breaks a span name.
    if (record.tool !== null) {
      span.updateName(`${EXECUTE_TOOL} ${record.tool}`);
      span.setAttribute('gen_ai.tool.name', record.tool);
    }
    if (record.server !== null) span.setAttribute('sluice.mcp.server', record.server);
    span.setAttributes({ 'sluice.status': record.status, 'sluice.upstream_ms': record.upstreamMs });
    if (record.errorKind !== null) span.setAttribute('error.type', record.errorKind);
    if (record.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /** Sends what is buffered; called on a graceful stop. */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** The caller's own trace context, passed upstream as it came when Sluice does not trace. */
export function callerTraceHeaders(headers: GenerationStart['headers']): Record<string, string> | undefined {
  const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
  return trace.getSpanContext(parent) === undefined ? undefined : contextHeaders(parent);
}

function contextHeaders(context: Context): Record<string, string> {
  const headers: Record<string, string> = {};
  propagator.inject(context, headers, defaultTextMapSetter);
  return headers;
}
