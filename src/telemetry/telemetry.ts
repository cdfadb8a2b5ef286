import type { Deployment } from '../catalogue/catalogue.js';

/**
 * The meter stage's readers (metrics, traces, the access log) behind one small seam: the HTTP
 * layer and routing report what happened, and never know who listens.
 */
export interface Telemetry {
  /** Any HTTP request, once its handler finished (generation or not). */
  served(request: ServedRequest): void;
  /** A generation request was admitted to routing: its trace begins (a no-op without tracing). */
  generation(start: GenerationStart): GenerationTelemetry;
  /** An MCP `tools/call` was parsed: its `execute_tool` span begins (a no-op without tracing). */
  toolCall(start: ToolCallStart): ToolCallTelemetry;
}

export interface ToolCallStart {
  readonly requestId: string;
  /** The caller's headers, for its W3C trace context. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
}

/** What a tool call came to: the upstream server and tool once resolved (null when the name was unknown or denied: never the caller's text). */
export interface ToolCallRecord {
  readonly server: string | null;
  /** The upstream's name of the tool. */
  readonly tool: string | null;
  /** HTTP-like, as in the ledger (200, 400 bad arguments, 404 unknown, 429 limited, 502, 504, 499). */
  readonly status: number;
  readonly errorKind: string | null;
  readonly durationMs: number;
  /** Time spent waiting on the upstream server. */
  readonly upstreamMs: number;
}

export interface ToolCallTelemetry {
  end(record: ToolCallRecord): void;
}

export interface ServedRequest {
  readonly requestId: string;
  /** The route's pattern (`POST /v1/chat/completions`, `GET /v1/models/{model}`), never the raw path. */
  readonly route: string;
  readonly dialect: string;
  readonly status: number;
  readonly durationMs: number;
  /** The meter stage's record, for a generation request. */
  readonly generation: GenerationRecord | undefined;
  /** Counted, but not worth an access-log line (a probe answered 200, every few seconds from every balancer). */
  readonly quiet?: boolean;
}

export interface GenerationStart {
  readonly requestId: string;
  /** The caller's headers, for its W3C trace context. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly route: string;
  /** The ledger's operation name (`chat`, `completions`, `messages`, `responses`, `generate_content`, `embeddings`, `rerank`, `images.generations`, …). */
  readonly operation: string;
  /** The public model the caller asked for. */
  readonly model: string;
  readonly stream: boolean;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
}

export interface GenerationTelemetry {
  attempt(start: AttemptStart): AttemptTelemetry;
  end(record: GenerationRecord): void;
}

export interface AttemptStart {
  readonly deployment: Deployment;
  /** The adapter's kind: `openai`, `anthropic`, `gemini`. */
  readonly providerKind: string;
  /** The upstream's origin (`http://10.0.0.5:8000`). */
  readonly origin: string;
}

export interface AttemptTelemetry {
  /** Headers that carry the trace context to the upstream (W3C `traceparent`), when there is one. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  end(outcome: AttemptOutcome): void;
  /** The attempt was passed over before any upstream call (its deployment cannot take the request): it ends, and no call is counted. */
  skipped(errorKind: string): void;
}

export interface AttemptOutcome {
  /** The caller's wire operation when the upstream took it as it came (`openai.chat`, `openai.audio.speech`); null when translated or embedded. */
  readonly relayed: string | null;
  /** The attempt asked for embeddings (relayed or translated); absent: it did not. */
  readonly embedding?: boolean;
  readonly status: number;
  readonly errorKind: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly durationMs: number;
  /** What the upstream said when it answered with an HTTP error. */
  readonly upstreamRefusal: UpstreamRefusal | undefined;
}

export interface UpstreamRefusal {
  /** The upstream's own status (a 401 the caller saw as 502). */
  readonly status: number;
  /** Its error body, its secrets redacted and truncated. */
  readonly body: string;
  /** A configuration fault every request repeats (an upstream path that does not exist): logged once a minute per `key`, with `message`. */
  readonly operatorFault?: { readonly key: string; readonly message: string };
}

/** A generation request as the meter stage closed it: what its ledger row says, and its timings. */
export interface GenerationRecord {
  readonly requestId: string;
  readonly keyId: string;
  readonly accountId: string;
  /** The public model that answered (or was asked for, when none did): the caller's own name when the catalogue lacks it. */
  readonly model: string;
  /** The catalogue's id of the model asked for; null when the catalogue has no such model (a caller's name is never a label). */
  readonly catalogueModel: string | null;
  readonly providerKind: string | null;
  readonly status: number;
  readonly errorKind: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
  readonly attempts: number;
  /** Attempts that went to a fallback model. */
  readonly fallbacks: number;
  readonly durationMs: number;
  /** Until the first byte went to the caller; null when none did. */
  readonly firstByteMs: number | null;
  /** Time spent waiting on upstreams, every attempt's. */
  readonly upstreamMs: number;
}

const NO_TOOL_CALL: ToolCallTelemetry = { end: () => undefined };
const NO_ATTEMPT: AttemptTelemetry = { headers: undefined, end: () => undefined, skipped: () => undefined };
const NO_GENERATION: GenerationTelemetry = { attempt: () => NO_ATTEMPT, end: () => undefined };

/** For wiring that observes nothing (tools, tests of a single stage). */
export const NO_TELEMETRY: Telemetry = { served: () => undefined, generation: () => NO_GENERATION, toolCall: () => NO_TOOL_CALL };
