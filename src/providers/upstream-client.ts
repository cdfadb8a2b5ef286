import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { Dispatcher, Pool } from 'undici';
import { defaultBaseUrl, type ProviderConfig } from '../config/config-file.js';
import { secretValuesOf } from '../config/secret-values.js';
import { GatewayError } from '../core/errors.js';
import type { ConnectionUse, OutgoingBody, Transferred } from '../generation/provider.js';
import { maskBaseUrl, maskUrl } from '../core/masked-url.js';
import { redact, unreadableUpstream, upstreamHttpError, upstreamTransportError, type UpstreamFailure } from '../core/upstream-errors.js';
import { fetchStreamed, type StreamedAnswer } from './streamed-answer.js';
import { fetchWhole, type WholeAnswer } from './whole-answer.js';
import { isObject } from '../wire/json.js';

export type Json = Record<string, unknown>;

/** What an upstream request needs of the call it serves. */
export interface UpstreamCall {
  readonly requestId: string;
  readonly signal: AbortSignal;
  /** Headers an adapter adds for this call (a caller's API version); never credentials, which the client owns. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers that carry the caller's trace context on to the upstream (W3C `traceparent`), when there is one. */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}
export type ResponseBody = AsyncIterable<Buffer>;

/** One request as it will be sent, for credentials that depend on it (a signature over the method, path, headers and body). */
export interface OutgoingRequest {
  readonly method: 'GET' | 'POST';
  /** The whole path sent, the base URL's own path and any query included. */
  readonly path: string;
  /** The headers sent besides the credential's (content type and length, an adapter's own); not the request id or trace headers. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | readonly Uint8Array[] | undefined;
}

/**
 * How a provider proves who it is on each request, when a fixed header cannot: a bearer token that
 * expires and is refreshed (Entra ID, Google service accounts), or a signature over the request
 * (AWS SigV4). Answers synchronously whenever it can (a token still fresh), so the common request
 * pays no extra promise hop.
 */
export interface UpstreamAuth {
  headersFor(request: OutgoingRequest, signal: AbortSignal): Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>;
  /** Values never shown to callers or logs, even inside an upstream's message: configured secrets and any token now held. */
  secrets(): readonly string[];
}

/**
 * A kind's own reading of an upstream's failure, before the generic one by status: AWS says what
 * failed by an error type (`errorType`, the `x-amzn-errortype` header) whose status alone misleads
 * (a model's timeout is 408, its failure 424). Undefined leaves the failure to the generic reading.
 */
export type VendorFailure = (failure: UpstreamFailure, errorType: string | undefined) => GatewayError | undefined;

/** Stateless between calls (no `stream` option), so one serves every body; it drops a byte-order mark as JSON needs. */
const UTF8 = new TextDecoder();

/**
 * undici (imported by upstream-pool) is loaded with the first upstream call rather than at
 * start-up: it is a fifth of an idle gateway's memory, and a gateway with no traffic yet has no use for it.
 */
let pools: Promise<typeof import('./upstream-pool.js')> | undefined;

export interface SseEvent {
  readonly event: string | undefined;
  readonly data: string;
}

/**
 * One keep-alive pool to one upstream, and the plumbing every adapter shares: JSON requests with
 * the provider's credentials, failures turned into GatewayErrors, and server-sent events parsed.
 * Adapters own only their mapping.
 */
export class UpstreamClient {
  readonly providerId: string;
  readonly origin: string;
  private pool: Pool | undefined;
  private readonly poolOptions: Pool.Options;
  private readonly basePath: string;
  private readonly headers: Record<string, string>;
  /** Credentials made per request; undefined when fixed headers (in `headers`) serve. */
  private readonly auth: UpstreamAuth | undefined;
  /**
   * Never passed on to callers or logs, even inside an upstream's own message: every credential of
   * the provider's entry (api_key, the cloud kinds' secrets) and each extra header's value, as any
   * of them may be a credential (an organisation token, a gateway key).
   */
  private readonly configuredSecrets: string[];
  private readonly maxResponseBytes: number;
  /** For the operator's message when the upstream has no such path: the address, and what it usually is for the kind. */
  private readonly maskedBaseUrl: string;
  private readonly usualBaseUrl: string;

  /**
   * `credentialRejected`: says whether a failure means the upstream refused Sluice's credential,
   * for upstreams that do not say so with 401/403 (Google answers 400 API_KEY_INVALID).
   * `vendorFailure`: the kind's own reading of a failure, tried first.
   */
  constructor(
    config: ProviderConfig,
    credentials: Record<string, string> | UpstreamAuth,
    private readonly credentialRejected: (status: number, body: string) => boolean = () => false,
    private readonly vendorFailure?: VendorFailure,
  ) {
    this.providerId = config.id;
    const url = new URL(config.base_url);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.origin = url.origin;
    this.maskedBaseUrl = maskBaseUrl(config.base_url);
    const vendorDefault = defaultBaseUrl(config);
    this.usualBaseUrl = vendorDefault === undefined ? "an OpenAI-compatible server's usually ends in /v1" : `the vendor's own is ${vendorDefault}`;
    this.poolOptions = {
      connections: config.max_connections ?? null,
      connectTimeout: config.connect_timeout_ms,
      headersTimeout: config.response_timeout_ms,
      bodyTimeout: config.idle_timeout_ms,
      // Also the most a server's Keep-Alive hint may ask for: an operator's limit is a limit.
      keepAliveTimeout: config.keep_alive_timeout_ms,
      keepAliveMaxTimeout: config.keep_alive_timeout_ms,
    };
    const fixed = isUpstreamAuth(credentials) ? {} : credentials;
    this.auth = isUpstreamAuth(credentials) ? credentials : undefined;
    this.headers = { 'content-type': 'application/json', ...config.headers, ...fixed };
    this.configuredSecrets = secretValuesOf(config);
    this.maxResponseBytes = config.max_response_bytes;
  }

  /** POSTs JSON; resolves with a 2xx response, rejects with a GatewayError otherwise. */
  post(path: string, body: unknown, call: UpstreamCall): Promise<StreamedAnswer> {
    // Outside the request: a body Sluice cannot write is Sluice's failure, not the upstream's.
    return this.request('POST', path, JSON.stringify(body), call);
  }

  /**
   * POSTs bytes (a multipart upload, or a request answered in bytes) and resolves with a 2xx answer
   * as its bytes arrive; rejects with a GatewayError otherwise, as `post`. The body's chunks are
   * written as they are (an upload's are the caller's buffers). `whole`: the caller reads the answer
   * whole, so it is cut past max_response_bytes as a whole JSON answer is; else it streams uncapped.
   */
  async postBytes(path: string, body: OutgoingBody, call: UpstreamCall, whole: boolean): Promise<Transferred> {
    const headers = { 'content-type': body.contentType, 'content-length': String(body.length) };
    const response = await this.request('POST', path, body.chunks, call, headers);
    if (whole && response.contentLength > this.maxResponseBytes) {
      await response.body[Symbol.asyncIterator]().return?.();
      throw this.tooLarge();
    }
    const contentLength = Number.isNaN(response.contentLength) ? undefined : response.contentLength;
    return { contentType: response.contentType ?? 'application/octet-stream', contentLength, body: whole ? this.capped(response.body) : this.transportFailures(response.body) };
  }

  /** A whole answer's bytes as they arrive, failing once more than max_response_bytes came (leaving the loop cuts the body). */
  private async *capped(body: ResponseBody): AsyncGenerator<Buffer> {
    let size = 0;
    for await (const chunk of this.transportFailures(body)) {
      size += chunk.length;
      if (size > this.maxResponseBytes) throw this.tooLarge();
      yield chunk;
    }
  }

  /** Every value to redact from what callers and logs see: the configured credentials and those made per request. */
  get secrets(): readonly string[] {
    return this.auth === undefined ? this.configuredSecrets : [...this.configuredSecrets, ...this.auth.secrets()];
  }

  /** A body's chunks, a broken connection becoming a GatewayError. */
  private async *transportFailures(body: ResponseBody): AsyncGenerator<Buffer> {
    try {
      yield* body;
    } catch (error) {
      throw upstreamTransportError(this.providerId, error);
    }
  }

  /** The full address of `path` on this upstream, fit to show: credentials in it masked, the provider's secrets redacted. */
  addressOf(path: string): string {
    return redact(maskUrl(this.origin + this.basePath + path), this.secrets);
  }

  /** GETs a JSON object (a model list); `path` may carry a query. */
  getJson(path: string, call: UpstreamCall): Promise<Json> {
    return this.requestJson('GET', path, undefined, call);
  }

  /** POSTs JSON and reads a whole JSON object back; rejects with a GatewayError otherwise. */
  async postJson(path: string, body: unknown, call: UpstreamCall): Promise<Json> {
    // Outside the request: a body Sluice cannot write is Sluice's failure, not the upstream's.
    return this.requestJson('POST', path, JSON.stringify(body), call);
  }

  private async requestJson(method: 'GET' | 'POST', path: string, json: string | undefined, call: UpstreamCall): Promise<Json> {
    let answer: WholeAnswer;
    try {
      const options = this.dispatchOptions(method, path, json, call);
      answer = await fetchWhole(this.pool ?? (await this.dispatcher()), 'then' in options ? await options : options, { signal: call.signal, limit: this.maxResponseBytes, tooLarge: this.tooLarge });
    } catch (error) {
      throw upstreamTransportError(this.providerId, error);
    }
    const text = UTF8.decode(answer.body);
    if (answer.statusCode < 200 || answer.statusCode >= 300) throw this.failureOf(answer.statusCode, answer.retryAfter, answer.errorType, text, path);
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) return parsed;
    } catch {
      // Reported below.
    }
    throw unreadableUpstream(this.providerId, 'an answer that is not a JSON object');
  }

  private async request(method: 'GET' | 'POST', path: string, body: string | readonly Uint8Array[] | undefined, call: UpstreamCall, bodyHeaders?: Readonly<Record<string, string>>): Promise<StreamedAnswer> {
    let response: StreamedAnswer;
    try {
      const options = this.dispatchOptions(method, path, body, call, bodyHeaders);
      response = await fetchStreamed(this.pool ?? (await this.dispatcher()), 'then' in options ? await options : options, call.signal);
    } catch (error) {
      throw upstreamTransportError(this.providerId, error);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    throw await this.failure(response, path);
  }

  /** The pool, made on the first call. */
  private async dispatcher(): Promise<Pool> {
    if (this.pool === undefined) {
      const { createUpstreamPool } = await (pools ??= import('./upstream-pool.js'));
      this.pool ??= createUpstreamPool(this.origin, this.poolOptions);
    }
    return this.pool;
  }

  /**
   * `bodyHeaders`: the type (and length) of a body that is not JSON. A promise only when the
   * provider's credentials must be awaited (a token being fetched); a fixed key adds no hop.
   */
  private dispatchOptions(
    method: 'GET' | 'POST',
    path: string,
    body: string | readonly Uint8Array[] | undefined,
    call: UpstreamCall,
    bodyHeaders?: Readonly<Record<string, string>>,
  ): Dispatcher.DispatchOptions | Promise<Dispatcher.DispatchOptions> {
    const fullPath = this.basePath + path;
    if (this.auth === undefined) return this.withHeaders(method, fullPath, body, call, bodyHeaders, undefined);
    const request: OutgoingRequest = { method, path: fullPath, headers: { ...this.headers, ...call.headers, ...bodyHeaders }, body };
    const credentials = this.auth.headersFor(request, call.signal);
    return credentials instanceof Promise
      ? credentials.then((made) => this.withHeaders(method, fullPath, body, call, bodyHeaders, made))
      : this.withHeaders(method, fullPath, body, call, bodyHeaders, credentials);
  }

  private withHeaders(
    method: 'GET' | 'POST',
    path: string,
    body: string | readonly Uint8Array[] | undefined,
    call: UpstreamCall,
    bodyHeaders: Readonly<Record<string, string>> | undefined,
    credentials: Readonly<Record<string, string>> | undefined,
  ): Dispatcher.DispatchOptions {
    return {
      method,
      path,
      headers:
        call.headers === undefined && call.traceHeaders === undefined && bodyHeaders === undefined && credentials === undefined
          ? { ...this.headers, 'x-request-id': call.requestId }
          : { ...this.headers, ...call.headers, ...call.traceHeaders, ...bodyHeaders, ...credentials, 'x-request-id': call.requestId },
      // undici writes an iterable of buffers chunk by chunk; an array can be written again on a retry.
      body: body as Dispatcher.DispatchOptions['body'],
    };
  }

  /**
   * The events of a server-sent event stream, as they arrive; transport failures become
   * GatewayErrors. One event is held whole until its blank line, so it may be no larger than a
   * whole answer (max_response_bytes, counted in characters): an event that never ends would
   * otherwise grow without limit. Past that the stream fails as an unreadable upstream, and
   * leaving the loop cuts the connection.
   */
  async *events(body: ResponseBody): AsyncGenerator<SseEvent> {
    const reader = this.sseReader(body);
    let finished = false;
    try {
      for (;;) {
        const event = reader.take();
        if (event !== undefined) yield event;
        else if (!(await reader.fill())) break;
      }
      finished = true;
    } finally {
      // Left before the end (the reader stopped, or a failure): the rest of the body is not wanted.
      if (!finished) reader.cut();
    }
  }

  /**
   * The body's events one by one, read a body chunk at a time: `events` as a generator, or on a
   * relayed stream's per-token path without a generator between the body and its reader.
   */
  sseReader(body: ResponseBody): SseReader {
    return new SseReader(body, this.providerId, this.maxResponseBytes);
  }

  /** Parses one stream event's JSON, or fails as an unreadable upstream. */
  parseEvent(data: string): Json {
    try {
      const parsed: unknown = JSON.parse(data);
      if (isObject(parsed)) return parsed;
    } catch {
      // Reported below.
    }
    throw unreadableUpstream(this.providerId, 'a stream event that is not a JSON object');
  }

  /** A failure the upstream reported inside a stream that had begun; its words are kept, its secrets not. */
  midStreamFailure(message: string | undefined, kind: 'upstream_error' | 'upstream_overloaded' = 'upstream_error', status?: number): GatewayError {
    const detail = message === undefined ? '.' : `: ${redact(message, this.secrets)}`;
    const what = kind === 'upstream_overloaded' ? 'is overloaded' : 'failed mid-stream';
    // Routing reads it as the HTTP status the failure names (Google's in-stream `code`), else the one it would have had
    // before the stream began (Anthropic's overloaded_error is its 529).
    return new GatewayError(kind, `The upstream provider '${this.providerId}' ${what}${detail}`, { upstreamFailure: status ?? (kind === 'upstream_overloaded' ? 529 : 500) });
  }

  connections(): ConnectionUse | null {
    if (this.pool === undefined) return null;
    const { connected, free, pending, running, queued } = this.pool.stats;
    return { connected, free, pending, running, queued };
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }

  /**
   * A whole body, refused beyond max_response_bytes as soon as that is known (undici's text()
   * would hold whatever came): from content-length up front, else by counting while reading. The
   * rest of the body is then not read, and the connection is dropped.
   */
  private async readWhole(response: StreamedAnswer): Promise<string> {
    const limit = this.maxResponseBytes;
    const tooLarge = this.tooLarge;
    if (response.contentLength > limit) {
      // Cut unread.
      await response.body[Symbol.asyncIterator]().return?.();
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        size += chunk.length;
        if (size > limit) throw tooLarge(); // leaving the loop cuts the body
        chunks.push(chunk);
      }
    } catch (error) {
      throw upstreamTransportError(this.providerId, error);
    }
    return UTF8.decode(Buffer.concat(chunks, size));
  }

  private readonly tooLarge = (): GatewayError =>
    new GatewayError('upstream_error', `The answer of the upstream provider '${this.providerId}' exceeded the gateway's limit of ${this.maxResponseBytes} bytes (max_response_bytes).`);

  private async failure(response: StreamedAnswer, path: string): Promise<GatewayError> {
    let text = '';
    try {
      text = await this.readWhole(response);
    } catch {
      // The status alone still says what went wrong.
    }
    return this.failureOf(response.statusCode, response.retryAfter, response.errorType, text, path);
  }

  /** `path`: as the adapter asked for it, under the base URL's own path; a query (Google's `?alt=sse`) is left out. */
  private failureOf(statusCode: number, retryAfter: string | undefined, errorType: string | undefined, text: string, path: string): GatewayError {
    const failure: UpstreamFailure = {
      providerId: this.providerId,
      status: this.credentialRejected(statusCode, text) ? 401 : statusCode,
      retryAfter: retryAfter ?? retryDelayOf(text),
      ...readErrorBody(text),
      secrets: this.secrets,
      body: text,
      baseUrl: this.maskedBaseUrl,
      usualBaseUrl: this.usualBaseUrl,
      path: this.basePath + path.replace(/\?.*$/s, ''),
    };
    return this.vendorFailure?.(failure, errorType) ?? upstreamHttpError(failure);
  }
}

/** A body's server-sent events, taken one by one as they were read (`take`), the body read a chunk at a time (`fill`). */
export class SseReader {
  private readonly chunks: AsyncIterator<Buffer>;
  private readonly parser: EventSourceParser;
  private readonly decoder = new TextDecoder();
  private readonly pending: SseEvent[] = [];
  private taken = 0;
  private eventTooLarge = false;

  constructor(
    body: ResponseBody,
    private readonly providerId: string,
    private readonly maxBufferSize: number,
  ) {
    this.chunks = body[Symbol.asyncIterator]();
    this.parser = createParser({
      onEvent: (event) => this.pending.push({ event: event.event, data: event.data }),
      onError: (error) => (this.eventTooLarge ||= error.type === 'max-buffer-size-exceeded'),
      maxBufferSize,
    });
  }

  /** The next event read so far, or undefined when `fill` must read more. */
  take(): SseEvent | undefined {
    if (this.taken < this.pending.length) return this.pending[this.taken++];
    if (this.taken > 0) {
      this.pending.length = 0;
      this.taken = 0;
    }
    return undefined;
  }

  /** Reads the body's next chunk; false at its end. Transport failures become GatewayErrors; the body is cut on any failure. */
  async fill(): Promise<boolean> {
    let step: IteratorResult<Buffer>;
    try {
      step = await this.chunks.next();
    } catch (error) {
      throw upstreamTransportError(this.providerId, error);
    }
    if (step.done === true) return false;
    this.parser.feed(this.decoder.decode(step.value, { stream: true }));
    if (this.eventTooLarge) {
      this.cut();
      throw unreadableUpstream(this.providerId, `a stream event larger than the gateway's limit of ${this.maxBufferSize} characters (max_response_bytes)`);
    }
    return true;
  }

  /** The rest of the body is not wanted: the request is cut, and its connection with it. */
  cut(): void {
    void this.chunks.return?.()?.catch(() => undefined);
  }
}

function isUpstreamAuth(credentials: Record<string, string> | UpstreamAuth): credentials is UpstreamAuth {
  return typeof credentials.headersFor === 'function';
}

/**
 * Message, type and code from the error bodies upstreams send: `{"error":{"message","type","code"}}`
 * (OpenAI, vLLM ≥ 0.10.1, Anthropic inside `{"type":"error"}`, Google with a `status`),
 * `{"object":"error","message"}` (older vLLM), `{"error":"Unauthorized"}`, `{"detail":…}` (FastAPI).
 */
export function readErrorBody(text: string): { message: string | undefined; type: string | undefined; code: string | undefined } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { message: undefined, type: undefined, code: undefined };
  }
  if (!isObject(body)) return { message: undefined, type: undefined, code: undefined };
  const inner = isObject(body.error) ? body.error : body;
  const message =
    typeof inner.message === 'string' ? inner.message : typeof body.error === 'string' ? body.error : typeof body.detail === 'string' ? body.detail : undefined;
  return {
    message,
    type: typeof inner.type === 'string' ? inner.type : undefined,
    code: typeof inner.code === 'string' ? inner.code : undefined,
  };
}

const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';

/**
 * The wait Google asks for in its error body instead of a `Retry-After` header: the `retryDelay` of
 * the `google.rpc.RetryInfo` detail, a protobuf Duration ("17s", "0.5s"), in Retry-After's whole
 * seconds, rounded up so that nobody comes back early. Not capped here, as a header is not: routing
 * caps how long either cools a deployment (retry_after_max_ms).
 */
export function retryDelayOf(text: string): string | undefined {
  if (!text.includes(RETRY_INFO)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const details = isObject(body) && isObject(body.error) && Array.isArray(body.error.details) ? (body.error.details as unknown[]) : [];
  for (const detail of details) {
    if (!isObject(detail) || detail['@type'] !== RETRY_INFO || typeof detail.retryDelay !== 'string') continue;
    // A Duration's JSON form: whole seconds (twelve digits hold its largest, 315,576,000,000), up to nine fractional digits, `s`.
    const duration = /^(\d{1,12}(?:\.\d{1,9})?)s$/.exec(detail.retryDelay);
    if (duration !== null) return String(Math.ceil(Number(duration[1])));
  }
  return undefined;
}
