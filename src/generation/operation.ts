import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Principal } from '../core/principal.js';
import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { Endpoint } from '../config/config-file.js';
import type { Dialect } from '../dialects/dialect.js';
import type { UpstreamFailureCondition } from '../core/errors.js';
import type { Invoker } from './invoke.js';
import type { Usage } from './model.js';
import type { Provider } from './provider.js';

/**
 * What a caller dialect contributes to the request path for one operation: where the key is, how
 * the body parses, and how the answer is served and written. The stages around it (authenticate,
 * resolve the model, admit, meter) are the same for every operation (see http/routes/generation.ts).
 */
export interface GenerationOperation<Request> {
  /** The catalogue endpoint a model must serve; of several, any one (the first names the operation in errors). */
  readonly endpoint: Endpoint | readonly Endpoint[];
  /** The ledger's name for the caller's operation. */
  readonly operation: string;
  readonly dialect: Dialect;
  credential(wire: WireRequest): string | undefined;
  /** Validates the body (and what the path and headers say); throws a GatewayError naming the parameter at fault. */
  parse(body: unknown, wire: WireRequest): Request;
  modelOf(request: Request): string;
  /** The model the caller named, for the ledger row of a request refused before it parsed; by default the body's `model`. */
  modelNamed?(wire: WireRequest): string | undefined;
  isStream(request: Request): boolean;
  /** The most the answer may hold, for reserving tokens and spend at admission: the request's output cap (undefined: the model's) and its number of choices. */
  outputBound(request: Request): { readonly maxTokens: number | undefined; readonly choices: number };
  /** Invokes the provider through `exchange.invoke` and writes the answer; reports usage on `exchange.meter`. */
  serve(exchange: Exchange<Request>): Promise<void>;
  /** Sluice's own count, for an upstream that reported no usage: the input, and what was generated. */
  countUsage(request: Request, generated: readonly string[]): Promise<Usage>;
}

/** What of the HTTP request a dialect may read besides the body. */
export interface WireRequest {
  readonly headers: IncomingHttpHeaders;
  readonly path: string;
  readonly query: URLSearchParams;
}

/** One admitted request on its way through the invoke stage. */
export interface Exchange<Request> {
  readonly request: Request;
  /** Who is calling: the key and its account (what a dialect that keeps state, such as the Responses API's, keeps it for). */
  readonly principal: Principal;
  readonly model: CatalogueModel;
  readonly provider: Provider;
  readonly requestId: string;
  readonly res: ServerResponse;
  /** Aborted when the caller goes away. */
  readonly signal: AbortSignal;
  readonly invoke: Invoker;
  readonly meter: Meter;
}

/**
 * A token count in the caller's dialect (Anthropic's `count_tokens`, Gemini's `countTokens`): the
 * same keys, model permissions, admission and ledger as generation, but nothing generated, so
 * nothing reserved and nothing billed.
 */
export interface CountTokensOperation<Request> {
  readonly endpoint: Endpoint;
  /** The ledger's name for the caller's operation. */
  readonly operation: string;
  readonly dialect: Dialect;
  credential(wire: WireRequest): string | undefined;
  parse(body: unknown, wire: WireRequest): Request;
  modelOf(request: Request): string;
  /** The model the caller named, for the ledger row of a request refused before it parsed; by default the body's `model`. */
  modelNamed?(wire: WireRequest): string | undefined;
  /** Asks the upstream when it counts in the caller's own wire, else counts with Sluice's tokenizer; writes the answer. */
  serve(exchange: Omit<Exchange<Request>, 'meter'>): Promise<void>;
}

/** What the meter stage records of a request, filled in as it goes. */
export interface Meter {
  usage: Usage | null;
  /** True when Sluice counted the tokens because the upstream reported none. */
  tokensCounted: boolean;
  /** performance.now() when the first byte went to the caller. */
  firstByteAt: number | null;
  /** A failure after the answer began (sent as an error event): the status and kind the ledger records, and routing's reading of it. */
  failure: { readonly status: number; readonly kind: string; readonly upstreamFailure?: UpstreamFailureCondition | undefined } | null;
}
