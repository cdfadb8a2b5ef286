import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { Endpoint } from '../config/config-file.js';
import type { GatewayError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { EmbeddingRequest, EmbeddingResult } from './embedding.js';
import type { SubCall } from './fan-out.js';
import type { BilledUnits, GenerationResult, StreamPart, Usage } from './model.js';
import type { OutgoingBody, Provider, TransferOperation, Transferred, WireOperation } from './provider.js';

/**
 * What a caller dialect contributes to one operation: where its key is, how its body parses, what
 * each attempt asks the provider for, and how the answer is written. The stages around it
 * (authenticate, resolve, admit, invoke with routing, meter) are the pipeline's (src/pipeline).
 */
/** What every parsed request says of itself: the public model it names, and whether it asks for a stream. */
export interface ParsedRequest {
  readonly model: string;
  readonly stream?: boolean;
}

export interface Operation<Request extends ParsedRequest> {
  /** The catalogue endpoint a model must serve; of several, any one (the first names the operation in errors). */
  readonly endpoint: Endpoint | readonly Endpoint[];
  /** The ledger's name for the caller's operation. */
  readonly operation: string;
  /** Whose error bodies and listings the caller reads. */
  readonly dialect: CallerDialect;
  credential(wire: WireRequest): string | undefined;
  /** How the body is read: a JSON object (the default), or a multipart form (an UploadForm, up to the gateway's upload cap). */
  readonly body?: 'json' | 'multipart';
  /** Validates the body (and what the path and headers say); throws a GatewayError naming the parameter at fault. */
  parse(body: unknown, wire: WireRequest): Request;
  /** The model the caller named, for the ledger row of a request refused before it parsed; by default the body's `model`. */
  modelNamed?(wire: WireRequest): string | undefined;
  /** False for an operation that generates nothing (a token count): it is not reported as a generation in metrics, traces or the access log. */
  readonly generates?: false;
  /**
   * What the admit stage reserves against `tpm` and budgets, besides the input `countUsage` counts:
   * the output cap (undefined: the model's `max_output_tokens`, else `limits.default_max_output_tokens`)
   * and the number of choices. An operation that generates no tokens (embeddings, rerank, images,
   * audio, moderations) says `maxTokens: 0`, or it would reserve a chat answer's worth of output.
   * `units`: what it will be billed for besides tokens as far as the request tells (images: `n`;
   * speech: the input's characters; rerank and moderations: one request), reserved against budgets
   * at the model's prices until the meter settles the real cost.
   */
  outputBound(request: Request): OutputBound;
  /** Sluice's own count, for an upstream that reported no usage: the input, and what was generated. */
  countUsage(request: Request, generated: readonly string[]): Promise<Usage>;
  /** State the request carries on from earlier ones (the Responses API's conversation), loaded once it is admitted. */
  prepare?(request: Request, principal: Principal): Promise<Request>;
  /** What one attempt asks its provider for: the caller's body relayed, or the generation model. Throws to refuse what the upstream cannot honour. */
  plan(request: Request, target: AttemptTarget): ProviderCall;
  /** Turns the answer into the caller's wire, written to `sink` by the pipeline's write stage. */
  answer(request: Request, answer: Answer, context: AnswerContext): Reply;
}

/** What the admit stage reserves for one request. */
export interface OutputBound {
  /** The output cap; undefined: the model's. */
  readonly maxTokens: number | undefined;
  readonly choices: number;
  /** Units besides tokens the request will be billed (images asked for, characters to speak, one call). */
  readonly units?: BilledUnits;
}

/** An operation that generates no tokens (an embedding, a rerank, audio): its input alone is reserved. */
export const NO_OUTPUT: OutputBound = { maxTokens: 0, choices: 1 };

/** The families of callers Sluice speaks to, each in its own wire. */
export type CallerDialect = 'openai' | 'anthropic' | 'gemini';

/** What of the HTTP request a dialect may read besides the body. */
export interface WireRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly path: string;
  readonly query: URLSearchParams;
}

/** The deployment one attempt goes to. */
export interface AttemptTarget {
  /** The public model with this deployment's upstream fields. */
  readonly model: CatalogueModel;
  readonly provider: Provider;
}

/** What an attempt asks of its provider. */
export type ProviderCall =
  | {
      readonly kind: 'generate';
      readonly subCalls: readonly SubCall[];
      readonly stream: boolean;
      /** Headers the caller's reply carries about the translation (what of the request it left out). */
      readonly replyHeaders?: Readonly<Record<string, string>>;
    }
  | {
      readonly kind: 'relay';
      readonly operation: WireOperation;
      readonly body: Readonly<Record<string, unknown>>;
      readonly stream: boolean;
      /** Caller headers the upstream's own API reads (Anthropic's `anthropic-beta`), passed on as they came. */
      readonly headers?: Readonly<Record<string, string>>;
    }
  /** Vectors for the inputs, in as many calls as the upstream takes inputs (in order). */
  | { readonly kind: 'embed'; readonly batches: readonly EmbeddingRequest[]; readonly encoding: 'float' | 'base64' }
  /** The caller's request as bytes (an upload, or a call answered in audio), `model` already rewritten. */
  | { readonly kind: 'transfer'; readonly operation: TransferOperation; readonly body: OutgoingBody; readonly stream: boolean }
  /** Sluice answers itself (a token count on an upstream that has none in the caller's wire). */
  | { readonly kind: 'none' };

type Json = Readonly<Record<string, unknown>>;

/** What the invoke stage brings back, a stream already holding its first content. */
export type Answer =
  | { readonly kind: 'generated'; readonly result: GenerationResult }
  | { readonly kind: 'generating'; readonly parts: AsyncIterable<StreamPart> }
  | { readonly kind: 'relayed'; readonly body: Json }
  | { readonly kind: 'relaying'; readonly events: AsyncIterable<Json> }
  | { readonly kind: 'embedded'; readonly result: EmbeddingResult }
  | { readonly kind: 'transferred'; readonly transferred: Transferred }
  | { readonly kind: 'none' };

/** What a dialect knows of the attempt that answered when it writes. */
export interface AnswerContext extends AttemptTarget {
  /** What the attempt asked of its provider (the operation's plan). */
  readonly call: ProviderCall;
  readonly sink: AnswerSink;
}

/** A reply is written whole or streamed; the pipeline's write stage runs either to its end. */
export type Reply = WholeReply | StreamReply<StreamPart> | StreamReply<Json> | StreamReply<Uint8Array>;

/** An answer written at once. */
export interface WholeReply {
  readonly kind: 'whole';
  /** The upstream's usage; null when it reported none (Sluice then counts `generated`). */
  readonly reported: Usage | null;
  /**
   * What the answer says was sold besides tokens (the images in it, a rerank's search units), set
   * on the usage that stands whether the upstream reported its tokens or Sluice counted them.
   */
  readonly units?: BilledUnits;
  /** What was generated, for Sluice's own count. */
  generated(): readonly string[];
  /** The caller's body and headers, given the usage that stands (`counted`: Sluice's own). */
  render(usage: Usage, counted: boolean): Promise<Rendered> | Rendered;
}

export interface Rendered {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** An answer written item by item as the upstream produces it. */
export interface StreamReply<Item> {
  readonly kind: 'stream';
  /** The upstream's items: stream parts, or the events of a relayed stream. */
  readonly items: AsyncIterable<Item>;
  /** Writes one item in the caller's wire; resolves once the caller can take more. */
  write(item: Item): Promise<void>;
  /** Whether the caller has had the head. */
  readonly started: boolean;
  /** Sends the head (translated streams open at once; relays on their first event). */
  open?(): Promise<void> | void;
  /** The head alone, for an upstream that ended before producing anything. */
  openEmpty(): void;
  /** The upstream's usage so far; null while it reported none. */
  readonly reported: Usage | null;
  generated(): readonly string[];
  /** A failure the upstream sent as an event and the stream passed on: what the ledger records of it. */
  readonly upstreamFailure?: GatewayError | undefined;
  /** The usage that stands (where the dialect reports it at the end) and the end of the stream. */
  close(usage: Usage): Promise<void>;
  /** An error after the stream began, framed as the dialect's clients expect one. */
  fail(error: GatewayError): Promise<void>;
}

/**
 * Where a reply goes: the HTTP layer gives the write stage one per request, so that nothing below it
 * knows `node:http`.
 */
export interface AnswerSink {
  /** Aborted when the caller goes away. */
  readonly signal: AbortSignal;
  /** Whether the reply was ended (what a relay sends after its last event is not the caller's). */
  readonly ended: boolean;
  setHeader(name: string, value: string): void;
  head(status: number, headers: Readonly<Record<string, string>>): void;
  /** Resolves once the caller can take more (the socket drained). */
  write(chunk: string | Uint8Array): Promise<void>;
  end(chunk?: string | Uint8Array): void;
  /** Ends the answer as broken (the connection cut): what a byte stream, which has no error event, does on a failure once it has begun. */
  cut(): void;
}
