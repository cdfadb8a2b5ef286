import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { LeanCounter, LeanHistogram, type Labels } from './lean-metrics.js';
import { clientOperationName, DURATION_BUCKETS, EXECUTE_TOOL, UNRESOLVED_TOOL, providerName, serverOf, serverOperationName, TIME_PER_OUTPUT_TOKEN_BUCKETS, TIME_TO_FIRST_TOKEN_BUCKETS, TOKEN_BUCKETS } from './gen-ai.js';
import type { ConnectionUse } from '../generation/provider.js';
import type { Deployment } from '../catalogue/catalogue.js';
import type { AttemptOutcome, AttemptStart, GenerationRecord, GenerationStart, McpCallMethod, ServedRequest, ToolCallRecord } from './telemetry.js';


/** What the metrics read at each scrape from the parts that keep their own counts. */
export interface MetricSources {
  inFlight(): number;
  ledger(): { readonly buffered: number; readonly written: number; readonly writeFailures: number };
  keyCache(): { readonly hits: number; readonly misses: number };
  catalogueCache(): { readonly hits: number; readonly misses: number };
  /** Refusals by scope kind (`key`, `account`) and reason (`rpm`, `tpm`, `concurrency`, `budget`). */
  limitRefusals(): Iterable<readonly [scope: string, reason: string, count: number]>;
  deployments(): Iterable<{ readonly model: string; readonly deployment: string; readonly state: string }>;
  connections(): Iterable<{ readonly provider: string; readonly use: ConnectionUse }>;
  /** Each shared component this process was configured with (`redis`, `notifications`), and whether it runs without it now. */
  degraded(): Iterable<{ readonly component: string; readonly degraded: boolean }>;
}


/** An attempt's label sets: its call's, and the call's with each token type. */
interface AttemptLabels {
  readonly call: Labels;
  readonly input: Labels;
  readonly output: Labels;
}

/** More distinct request label sets than any catalogue has models: the cache then starts over. */
const MAX_CACHED_LABEL_SETS = 10_000;

/**
 * The model label of a request whose model the catalogue lacks: one value for every such name, so a
 * caller cannot add series by naming models. Not a possible catalogue id (those begin with a letter or digit).
 */
export const UNRESOLVED_MODEL = '(unresolved)';

/** Sluice's overhead is sub-millisecond when all is well: finer buckets than the conventions' durations. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

const SERVER_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_response_model', 'error_type'] as const;
const CLIENT_LABELS = [
  'gen_ai_operation_name',
  'gen_ai_provider_name',
  'gen_ai_request_model',
  'server_address',
  'server_port',
  'error_type',
  'sluice_model',
  'sluice_deployment',
] as const;

/** An MCP tool call's labels: the conventions' names, and Sluice's own `server` (a configured id, never a caller's text). */
/** The distinct tool labels one server may have; its further tools are counted under OTHER_TOOLS. */
export const MAX_TOOL_LABELS = 100;
const OTHER_TOOLS = 'other';
const TOOL_CALL_LABELS = ['mcp_method_name', 'gen_ai_operation_name', 'gen_ai_tool_name', 'server', 'error_type'] as const;

/**
 * The Prometheus metrics of one process: OpenTelemetry's GenAI instruments under the names its
 * Prometheus compatibility rules give them (dots to underscores, the unit as a suffix, `_total`
 * on counters), and Sluice's own. Labels are bounded by the catalogue and the routes: never a key,
 * account or request id. With several workers the primary adds every worker's up (cluster-metrics.ts).
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requestDuration: LeanHistogram;
  private readonly timeToFirstToken: LeanHistogram;
  private readonly timePerOutputToken: LeanHistogram;
  private readonly operationDuration: LeanHistogram;
  private readonly tokenUsage: LeanHistogram;
  private readonly requests: LeanCounter;
  private readonly overhead: LeanHistogram;
  private readonly cost: LeanCounter;
  private readonly retries: LeanCounter;
  private readonly fallbacks: LeanCounter;
  private readonly toolCallDuration: LeanHistogram;
  /** The tool labels given so far, by server. */
  private readonly toolLabels = new Map<string, Set<string>>();
  private readonly toolCallOverhead: LeanHistogram;
  private readonly attemptLabelSets = new WeakMap<Deployment, Map<string, AttemptLabels>>();
  private readonly generationLabelSets = new Map<string, Labels>();
  /** Label sets the meter stage makes on every request, kept (see keptLabels): the metrics find their cells by the object. */
  private readonly servedLabelSets = new Map<string, Labels>();
  private readonly overheadLabelSets = new Map<string, Labels>();
  private readonly costLabelSets = new Map<string, Labels>();

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requestDuration = new LeanHistogram({
      name: 'gen_ai_server_request_duration_seconds',
      help: 'gen_ai.server.request.duration: generation requests Sluice served, until the last byte.',
      labelNames: SERVER_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.timeToFirstToken = new LeanHistogram({
      name: 'gen_ai_server_time_to_first_token_seconds',
      help: 'gen_ai.server.time_to_first_token: successful streams, until their first content reached the caller.',
      labelNames: SERVER_LABELS,
      buckets: TIME_TO_FIRST_TOKEN_BUCKETS,
      registers,
    });
    this.timePerOutputToken = new LeanHistogram({
      name: 'gen_ai_server_time_per_output_token_seconds',
      help: 'gen_ai.server.time_per_output_token: successful streams, per output token after the first.',
      labelNames: SERVER_LABELS,
      buckets: TIME_PER_OUTPUT_TOKEN_BUCKETS,
      registers,
    });
    this.operationDuration = new LeanHistogram({
      name: 'gen_ai_client_operation_duration_seconds',
      help: "gen_ai.client.operation.duration: Sluice's calls to upstreams, one per routing attempt.",
      labelNames: CLIENT_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.tokenUsage = new LeanHistogram({
      name: 'gen_ai_client_token_usage',
      help: "gen_ai.client.token.usage: tokens of Sluice's calls to upstreams, by gen_ai_token_type.",
      labelNames: [...CLIENT_LABELS, 'gen_ai_token_type'],
      buckets: TOKEN_BUCKETS,
      registers,
    });
    this.requests = new LeanCounter({ name: 'sluice_http_requests_total', help: 'HTTP requests by route pattern, caller dialect and status.', labelNames: ['route', 'dialect', 'status'], registers });
    this.overhead = new LeanHistogram({
      name: 'sluice_overhead_seconds',
      help: 'What Sluice added to a generation request: its whole time less the time spent waiting on upstreams.',
      labelNames: ['route'],
      buckets: OVERHEAD_BUCKETS,
      registers,
    });
    this.cost = new LeanCounter({ name: 'sluice_cost_usd_total', help: 'Cost in USD of the requests served, by public model.', labelNames: ['model'], registers });
    this.retries = new LeanCounter({ name: 'sluice_routing_retries_total', help: 'Attempts after the first, by the public model asked for.', labelNames: ['model'], registers });
    this.fallbacks = new LeanCounter({ name: 'sluice_routing_fallbacks_total', help: 'Attempts that went to a fallback model, by the public model asked for.', labelNames: ['model'], registers });

    this.toolCallDuration = new LeanHistogram({
      name: 'mcp_server_operation_duration_seconds',
      help: 'mcp.server.operation.duration: MCP calls Sluice served to an upstream (tools/call as gen_ai_operation_name execute_tool, resources/read, prompts/get), by method, upstream server, tool and error.',
      labelNames: TOOL_CALL_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.toolCallOverhead = new LeanHistogram({
      name: 'sluice_mcp_overhead_seconds',
      help: 'What Sluice added to an MCP tool call: its whole time less the time spent waiting on the upstream server.',
      labelNames: ['server'],
      buckets: OVERHEAD_BUCKETS,
      registers,
    });

    new Gauge({ name: 'sluice_http_requests_in_flight', help: 'HTTP requests whose handlers are running.', registers, collect: function () { this.set(sources.inFlight()); } });
    new Gauge({ name: 'sluice_ledger_rows_buffered', help: 'Ledger rows recorded but not yet written to the store.', registers, collect: function () { this.set(sources.ledger().buffered); } });
    countedBy(registers, 'sluice_ledger_rows_written_total', 'Ledger rows written to the store.', [], () => [[{}, sources.ledger().written]]);
    countedBy(registers, 'sluice_ledger_write_failures_total', 'Ledger batches the store did not take (the rows stay in the journal and are tried again).', [], () => [[{}, sources.ledger().writeFailures]]);
    countedBy(registers, 'sluice_cache_lookups_total', 'API key lookups (cache: keys) and catalogue version checks (cache: catalogue), by whether the cache served them.', ['cache', 'result'], () => {
      const keys = sources.keyCache();
      const catalogue = sources.catalogueCache();
      return [
        [{ cache: 'keys', result: 'hit' }, keys.hits],
        [{ cache: 'keys', result: 'miss' }, keys.misses],
        [{ cache: 'catalogue', result: 'hit' }, catalogue.hits],
        [{ cache: 'catalogue', result: 'miss' }, catalogue.misses],
      ];
    });
    countedBy(registers, 'sluice_limit_refusals_total', 'Requests refused by a rate limit or budget, by scope (key, account) and reason (rpm, tpm, concurrency, budget, unpriced: a budget on a model without a price).', ['scope', 'reason'], function* () {
      for (const [scope, reason, count] of sources.limitRefusals()) yield [{ scope, reason }, count];
    });
    new Gauge({
      name: 'sluice_deployment_state',
      help: "Routing's view of each deployment (up, degraded, cooling, open): the number of processes that see it in that state.",
      labelNames: ['model', 'deployment', 'state'],
      registers,
      collect: function () {
        this.reset();
        for (const { model, deployment, state } of sources.deployments()) this.set({ model, deployment, state }, 1);
      },
    });
    new Gauge({
      name: 'sluice_degraded',
      help: 'Shared components this process runs without (redis: limits counted on this machine; notifications: changes found by polling), 1 while it does: the number of processes that do.',
      labelNames: ['component'],
      registers,
      collect: function () {
        this.reset();
        for (const { component, degraded } of sources.degraded()) this.set({ component }, degraded ? 1 : 0);
      },
    });
    new Gauge({
      name: 'sluice_upstream_connections',
      help: 'Connections to each provider (connected, free, running requests, pending and queued requests).',
      labelNames: ['provider', 'state'],
      registers,
      collect: function () {
        this.reset();
        for (const { provider, use } of sources.connections()) {
          for (const state of ['connected', 'free', 'pending', 'running', 'queued'] as const) this.set({ provider, state }, use[state]);
        }
      },
    });
  }

  served(request: ServedRequest): void {
    const { route, dialect, status } = request;
    const key = `${route}\u0000${dialect}\u0000${status}`;
    this.requests.inc(this.servedLabelSets.get(key) ?? keptLabels(this.servedLabelSets, key, { route, dialect, status }));
  }

  attemptEnded(start: AttemptStart, outcome: AttemptOutcome): void {
    const labels = this.attemptLabels(start, outcome);
    this.operationDuration.observe(labels.call, outcome.durationMs / 1000);
    if (outcome.inputTokens > 0) this.tokenUsage.observe(labels.input, outcome.inputTokens);
    if (outcome.outputTokens > 0) this.tokenUsage.observe(labels.output, outcome.outputTokens);
  }

  /** An attempt's label sets, made once per deployment and outcome and kept (the metrics find their cells by them). */
  private attemptLabels(start: AttemptStart, outcome: AttemptOutcome): AttemptLabels {
    const { deployment } = start;
    let byOutcome = this.attemptLabelSets.get(deployment);
    if (byOutcome === undefined) this.attemptLabelSets.set(deployment, (byOutcome = new Map()));
    const key = `${start.providerKind}\u0000${start.origin}\u0000${outcome.relayed}\u0000${outcome.embedding === true}\u0000${outcome.errorKind}`;
    let labels = byOutcome.get(key);
    if (labels === undefined) {
      const server = serverOf(start.origin);
      const call: Labels = {
        gen_ai_operation_name: clientOperationName(start.providerKind, deployment.model.upstreamApi, outcome.relayed, outcome.embedding === true),
        gen_ai_provider_name: providerName(start.providerKind),
        gen_ai_request_model: deployment.upstreamModel,
        server_address: server.address,
        server_port: server.port,
        sluice_model: deployment.model.id,
        sluice_deployment: deployment.name,
      };
      if (outcome.errorKind !== null) call.error_type = outcome.errorKind;
      labels = { call, input: { ...call, gen_ai_token_type: 'input' }, output: { ...call, gen_ai_token_type: 'output' } };
      byOutcome.set(key, labels);
    }
    return labels;
  }

  toolCallEnded(method: McpCallMethod, record: ToolCallRecord): void {
    // Tool execution by the GenAI conventions; the other methods are MCP's alone. (Labels in TOOL_CALL_LABELS's order.)
    const tool: Labels = method === 'tools/call' ? { gen_ai_operation_name: EXECUTE_TOOL, gen_ai_tool_name: this.toolLabel(record.server, record.tool) } : {};
    const labels: Labels = { mcp_method_name: method, ...tool, server: record.server ?? UNRESOLVED_TOOL };
    if (record.errorKind !== null) labels.error_type = record.errorKind;
    this.toolCallDuration.observe(labels, record.durationMs / 1000);
    if (record.server !== null && record.upstreamMs > 0) this.toolCallOverhead.observe({ server: record.server }, Math.max(0, record.durationMs - record.upstreamMs) / 1000);
  }

  /** A tool's label: its (printable) name for the first MAX_TOOL_LABELS tools of its server, then `other` (an upstream cannot grow the series without bound). */
  private toolLabel(server: string | null, tool: string | null): string {
    if (server === null || tool === null) return UNRESOLVED_TOOL;
    let seen = this.toolLabels.get(server);
    if (seen === undefined) this.toolLabels.set(server, (seen = new Set()));
    if (seen.has(tool)) return tool;
    if (seen.size >= MAX_TOOL_LABELS) return OTHER_TOOLS;
    seen.add(tool);
    return tool;
  }

  generationEnded(start: GenerationStart, record: GenerationRecord): void {
    const labels = generationLabelsOf(this.generationLabelSets, start, record);
    this.requestDuration.observe(labels, record.durationMs / 1000);
    if (record.errorKind === null && start.stream && record.firstByteMs !== null) {
      this.timeToFirstToken.observe(labels, record.firstByteMs / 1000);
      if (record.outputTokens > 1) this.timePerOutputToken.observe(labels, (record.durationMs - record.firstByteMs) / 1000 / (record.outputTokens - 1));
    }
    if (record.attempts > 0) {
      const route = start.route;
      this.overhead.observe(this.overheadLabelSets.get(route) ?? keptLabels(this.overheadLabelSets, route, { route }), Math.max(0, record.durationMs - record.upstreamMs) / 1000);
    }
    if (record.costUsd > 0) {
      const model = responseModelOf(record);
      this.cost.inc(this.costLabelSets.get(model) ?? keptLabels(this.costLabelSets, model, { model }), record.costUsd);
    }
    if (record.attempts > 1) this.retries.inc({ model: record.catalogueModel ?? UNRESOLVED_MODEL }, record.attempts - 1);
    if (record.fallbacks > 0) this.fallbacks.inc({ model: record.catalogueModel ?? UNRESOLVED_MODEL }, record.fallbacks);
  }
}

/** The public model that answered, as a label: a catalogue id, or UNRESOLVED_MODEL when the catalogue lacked the name asked for. */
function responseModelOf(record: GenerationRecord): string {
  // With the model asked for unresolved no attempt was made, so `model` is the caller's own name.
  return record.catalogueModel === null ? UNRESOLVED_MODEL : record.model;
}

/** A request's label sets by what they are made of (catalogue ids and names fixed in code, so bounded). */
/** Keeps a label set under `key` for the next requests: a fresh object per request would cost the metric a key and a weak entry each time. */
function keptLabels(cache: Map<string, Labels>, key: string, labels: Labels): Labels {
  if (cache.size >= MAX_CACHED_LABEL_SETS) cache.clear();
  cache.set(key, labels);
  return labels;
}

function generationLabelsOf(cache: Map<string, Labels>, start: GenerationStart, record: GenerationRecord): Labels {
  const requestModel = record.catalogueModel ?? UNRESOLVED_MODEL;
  const responseModel = responseModelOf(record);
  const key = `${start.operation}\u0000${record.providerKind}\u0000${requestModel}\u0000${responseModel}\u0000${record.errorKind}`;
  let labels = cache.get(key);
  if (labels === undefined) {
    labels = {
      gen_ai_operation_name: serverOperationName(start.operation),
      gen_ai_provider_name: providerName(record.providerKind),
      gen_ai_request_model: requestModel,
      gen_ai_response_model: responseModel,
    };
    if (record.errorKind !== null) labels.error_type = record.errorKind;
    if (cache.size >= MAX_CACHED_LABEL_SETS) cache.clear();
    cache.set(key, labels);
  }
  return labels;
}

/**
 * A counter whose value another part keeps as a plain number (so that part needs no metrics
 * library): read at each scrape, and the growth since the last one added.
 */
function countedBy(registers: Registry[], name: string, help: string, labelNames: string[], read: () => Iterable<readonly [Labels, number]>): void {
  const seen = new Map<string, number>();
  new Counter({
    name,
    help,
    labelNames,
    registers,
    collect: function () {
      for (const [labels, value] of read()) {
        const key = JSON.stringify(labels);
        const before = seen.get(key);
        if (before === undefined || value > before) this.inc(labels, value - (before ?? 0));
        seen.set(key, value);
      }
    },
  });
}
