import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import type { EmbeddingRequest, EmbeddingResult } from './embedding.js';
import type { GenerationRequest, GenerationResult, StreamPart } from './model.js';

/** One upstream call. */
export interface GenerationCall {
  readonly request: GenerationRequest;
  readonly model: CatalogueModel;
  readonly requestId: string;
  /** Aborted when the caller goes away or the gateway gives up. */
  readonly signal: AbortSignal;
  /** Choices this call asks for: the invoke stage splits `request.n` over the upstream's own `n`. */
  readonly choices: number;
  /** Headers that carry the caller's trace context on to the upstream (W3C `traceparent`), when there is one. */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** What an upstream can honour, so that what it cannot is refused up front (see capabilities.ts). */
export interface Capabilities {
  /** For messages: "the Anthropic Messages API". */
  readonly upstream: string;
  /** Choices one upstream call can return (its `n`); more means several calls. */
  readonly maxChoicesPerCall: number;
  readonly maxTemperature: number;
  readonly maxStopSequences: number | null;
  readonly logprobs: boolean;
  readonly logitBias: boolean;
  readonly penalties: boolean;
  readonly topK: boolean;
  /** JSON output without a schema (OpenAI's `json_object`). */
  readonly jsonWithoutSchema: boolean;
  /** Fields the caller sent that Sluice does not model: passed on (same family of servers) or each refused. */
  readonly forwardsExtensions: boolean;
  /** Inputs one embedding call can take (Gemini's batchEmbedContents: 100); 0 when the upstream embeds nothing. */
  readonly maxEmbeddingInputs: number;
  /** Whether its embedding calls take token ids as inputs (OpenAI's wire does; Gemini's takes text only). */
  readonly embedsTokenIds: boolean;
}

/** The wire operations a caller can send that an upstream might take untouched. */
export type WireOperation =
  | 'openai.completions'
  | 'openai.chat'
  | 'openai.responses'
  | 'anthropic.messages'
  | 'anthropic.count_tokens'
  | 'gemini.generateContent'
  | 'gemini.countTokens'
  | 'openai.rerank'
  | 'openai.moderations'
  | 'openai.images.generations';

/**
 * The caller operations whose bodies or answers are not JSON (multipart uploads, binary audio): the
 * caller's request goes upstream as bytes, and the answer comes back as bytes.
 */
export type TransferOperation = 'openai.images.edits' | 'openai.audio.transcriptions' | 'openai.audio.translations' | 'openai.audio.speech';

/** One embedding call. */
export interface EmbedCall {
  readonly request: EmbeddingRequest;
  readonly model: CatalogueModel;
  readonly requestId: string;
  readonly signal: AbortSignal;
  /** How the caller wants the vectors: an upstream that can answer so is asked to (saves a conversion). */
  readonly encoding: 'float' | 'base64';
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** A request body ready for the wire: its bytes in order (an upload's file parts are the caller's own buffers, not copies). */
export interface OutgoingBody {
  readonly contentType: string;
  readonly chunks: readonly Uint8Array[];
  readonly length: number;
}

/** A caller's request relayed as bytes, its `model` already rewritten by the dialect. Resent whole on a retry. */
export interface TransferCall {
  readonly operation: TransferOperation;
  readonly body: OutgoingBody;
  /** The answer streams on to the caller as it comes (speech, a streamed transcript); else it is read whole, and capped as a whole answer is (max_response_bytes). */
  readonly stream: boolean;
  readonly model: CatalogueModel;
  readonly requestId: string;
  readonly signal: AbortSignal;
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** A 2xx answer's bytes as they arrive (a failure is a thrown GatewayError, as for every call). */
export interface Transferred {
  readonly contentType: string;
  /** Undefined when the upstream did not say. */
  readonly contentLength: number | undefined;
  readonly body: AsyncIterable<Uint8Array>;
}

/** A same-dialect request relayed as the caller sent it, `model` rewritten, usage always asked for. */
export interface RelayCall {
  readonly operation: WireOperation;
  readonly body: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  readonly model: CatalogueModel;
  readonly requestId: string;
  readonly signal: AbortSignal;
  /** Caller headers the upstream's own API reads (Anthropic's `anthropic-beta`), passed on as they came. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers that carry the caller's trace context on to the upstream (W3C `traceparent`), when there is one. */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** What a relay answers: the upstream's own JSON object, or its own stream events, each parsed once. */
export type RelayResponse =
  | { readonly stream: false; readonly body: Readonly<Record<string, unknown>> }
  | { readonly stream: true; readonly events: AsyncIterable<Readonly<Record<string, unknown>>> };

/** An upstream connection pool's use, as undici counts it. */
export interface ConnectionUse {
  readonly connected: number;
  readonly free: number;
  readonly pending: number;
  readonly running: number;
  readonly queued: number;
}

/**
 * What the invoke stage calls on one upstream, over the generation model or the caller's own wire.
 * The core never asks which kind of provider it is talking to: an adapter owns its mapping, its
 * connection pool and its error translation, and throws GatewayErrors only.
 */
export interface Provider {
  readonly id: string;
  readonly kind: string;
  /** Where its upstream lives (`https://api.openai.com`), for telemetry. */
  readonly origin: string;
  capabilities(model: CatalogueModel): Capabilities;
  /** One call answered whole. */
  generate(call: GenerationCall): Promise<GenerationResult>;
  /**
   * Resolves once the upstream has accepted the request, so that a refusal still becomes an HTTP
   * error status; the parts then arrive as the upstream produces them.
   */
  stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>>;
  /** Whether this upstream takes the caller's own wire body for `operation` on `model`. */
  relays(operation: WireOperation | TransferOperation, model: CatalogueModel): boolean;
  relay(call: RelayCall): Promise<RelayResponse>;
  /** Vectors for one call's inputs (no more than the capabilities' `maxEmbeddingInputs`), in input order. */
  embed(call: EmbedCall): Promise<EmbeddingResult>;
  /** Resolves once the upstream answered 2xx; the body then arrives as the upstream sends it. */
  transfer(call: TransferCall): Promise<Transferred>;
}

/** An adapter as the gateway keeps one: its calls, and what the operator's tools ask of the upstream and its pool. */
export interface ProviderAdapter extends Provider {
  /**
   * The upstream's own model list, every page followed (discovery, the console's import, `sluice
   * doctor`); its failures are the same GatewayErrors as a generation's.
   */
  listModels(signal: AbortSignal): Promise<UpstreamModel[]>;
  /** Its connection pool's use; null before the first call opened the pool. */
  connections(): ConnectionUse | null;
  close(): Promise<void>;
}

/** Finds the adapter of a provider; the set changes while the gateway runs. The request path needs only its calls. */
export interface ProviderRegistry<P extends Provider = Provider> {
  get(id: string): P | undefined;
}
