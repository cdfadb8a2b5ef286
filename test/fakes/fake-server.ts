import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What every fake upstream shares: a real HTTP server on loopback that records what it received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: any;
  /** The body's bytes as they came (a multipart upload's, or the JSON a signature covers); undefined when there was none. */
  readonly rawBody?: Buffer;
}

export interface Behaviour {
  /** Answer every request with this status, body (or the body made from the request) and headers instead of generating. */
  fail?: { status: number; body: string | ((request: RecordedRequest) => string); headers?: Record<string, string> };
  /** Wait before sending the response headers. */
  headerDelayMs?: number;
  /** Wait between stream events. */
  tokenDelayMs?: number;
  /** (OpenAI Responses fake) Wait this long after the last event before ending the stream's body, as a server that closes late. */
  endDelayMs?: number;
  /** Leave usage out of answers (as some servers do). */
  omitUsage?: boolean;
  /** Send the upstream's own in-stream error event after this many events. */
  errorAfterChunks?: number;
  /** The message of that event, made from the request (default: the fake's own). */
  errorMessage?: (request: RecordedRequest) => string;
  /** Answer 200 with a body that is not JSON. */
  garbage?: boolean;
  /** (OpenAI fake) Answer a whole legacy completion of exactly this many bytes, announced by content-length or not. */
  largeAnswer?: { bytes: number; contentLength: boolean };
  /**
   * Drop a connection once it has been idle this long after an answer, as a server past its
   * keep-alive timeout or a load balancer that forgot the flow: reset (a TCP RST) or closed (a FIN),
   * unless a new request began on it meanwhile. Counted in `dropped`.
   */
  dropIdleConnections?: { afterMs: number; how: 'reset' | 'close' };
  /** Read and record the request, then reset the connection having sent nothing, or only a status line. */
  hangUp?: 'after-request' | 'after-status-line';
  /** (Streams) Send the headers, then wait this long before stream event number `beforeEvent` (0: the first). */
  stall?: { beforeEvent: number; ms: number };
  /**
   * (Streams) Answer 200 with one event that never ends, `data: xxx…` with no line end, until this
   * many bytes of it are sent (the test's bound) or the client goes; then end the body as it is.
   */
  endlessEvent?: { bytes: number };
  /** (Streams) Reset the connection (a TCP RST) after this many events, with no error event. */
  resetAfterEvents?: number;
  /**
   * (OpenAI fake) How a path it does not serve is answered: as vLLM's FastAPI does (`{"detail":"Not Found"}`,
   * the default), as Ollama's Go server does (`404 page not found` as text), with a proxy's HTML page, or an empty body.
   */
  unknownPath?: 'fastapi' | 'ollama' | 'html' | 'empty';
  /** (OpenAI fake) How a model it does not serve is answered: vLLM's error (the default), or Ollama's `{"error":"model 'x' not found"}`. */
  unknownModel?: 'vllm' | 'ollama';
  /** Apply this behaviour only to the requests it picks (by the request, and its index in `requests` from 0); the others are answered normally. */
  only?: (request: RecordedRequest, index: number) => boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Requests whose connection closed before the answer was complete. */
  readonly aborted: RecordedRequest[];
  /** TCP connections accepted so far (keep-alive reuse keeps this low). */
  readonly connections: number;
  /** Idle connections the server dropped (`dropIdleConnections`). */
  readonly dropped: number;
  behaviour: Behaviour;
  close(): Promise<void>;
}

/**
 * A fake built around another's server (a cloud's front on a vendor's fake): that server's
 * recording and behaviour seen through as they change, with the fake's own members beside them
 * (getters kept as getters).
 */
export function extendFake<Own extends { close(): Promise<void> }>(upstream: FakeUpstream, own: Own): FakeUpstream & Own {
  const view = {
    get url() {
      return upstream.url;
    },
    get requests() {
      return upstream.requests;
    },
    get aborted() {
      return upstream.aborted;
    },
    get connections() {
      return upstream.connections;
    },
    get dropped() {
      return upstream.dropped;
    },
    get behaviour() {
      return upstream.behaviour;
    },
    set behaviour(value: Behaviour) {
      upstream.behaviour = value;
    },
  };
  return Object.defineProperties(view, Object.getOwnPropertyDescriptors(own)) as unknown as FakeUpstream & Own;
}

export type FakeHandler = (request: RecordedRequest, res: ServerResponse, behaviour: Behaviour, req: IncomingMessage) => Promise<void> | void;

/**
 * Starts a fake: recording, failure injection and delays are done here; `handle` speaks the API.
 * `port` 0 (the default) is any free port; a fixed one that is taken rejects with EADDRINUSE.
 */
export async function startFakeServer(pathPrefix: string, handle: FakeHandler, port = 0): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const aborted: RecordedRequest[] = [];
  const state: { behaviour: Behaviour } = { behaviour: {} };
  /** Requests begun on each connection: an idle connection is dropped only if none began since its last answer. */
  const begun = new WeakMap<Socket, number>();
  let dropped = 0;
  const dropWhenIdle = (socket: Socket): void => {
    const drop = state.behaviour.dropIdleConnections;
    if (drop === undefined) return;
    const requestsSoFar = begun.get(socket);
    setTimeout(() => {
      if (socket.destroyed || begun.get(socket) !== requestsSoFar) return;
      dropped++;
      if (drop.how === 'reset') socket.resetAndDestroy();
      else socket.destroy();
    }, drop.afterMs);
  };
  const server = http.createServer(async (req, res) => {
    begun.set(req.socket, (begun.get(req.socket) ?? 0) + 1);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, ...(chunks.length > 0 ? { rawBody: Buffer.concat(chunks) } : {}) };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) aborted.push(record);
    });
    res.on('finish', () => dropWhenIdle(req.socket));
    const behaviour = state.behaviour.only === undefined || state.behaviour.only(record, requests.length - 1) ? state.behaviour : {};
    if (behaviour.hangUp === 'after-request') return void req.socket.resetAndDestroy();
    // Ended with a FIN rather than a reset, which could discard the status line unsent.
    if (behaviour.hangUp === 'after-status-line') return void req.socket.end('HTTP/1.1 200 OK\r\n');
    if (behaviour.headerDelayMs) await sleep(behaviour.headerDelayMs);
    if (res.destroyed) return;
    if (behaviour.fail) {
      res.writeHead(behaviour.fail.status, { 'content-type': 'application/json', ...behaviour.fail.headers });
      const { body } = behaviour.fail;
      res.end(typeof body === 'string' ? body : body(record));
      return;
    }
    if (behaviour.garbage) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>gateway timeout</html>');
      return;
    }
    if (behaviour.endlessEvent) return void (await writeEndlessEvent(res, behaviour.endlessEvent.bytes));
    await handle(record, res, behaviour, req);
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const listening = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${listening}${pathPrefix}`,
    requests,
    aborted,
    get connections() {
      return connections;
    },
    get dropped() {
      return dropped;
    },
    get behaviour() {
      return state.behaviour;
    },
    set behaviour(value: Behaviour) {
      state.behaviour = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ends a stream the way servers often do: the last event flushed, the body's end a moment later. */
export async function endStream(res: ServerResponse, lastEvent: string): Promise<void> {
  if (lastEvent !== '') res.write(lastEvent);
  await sleep(5);
  res.end();
}

/** Writes `data: xxx…` at the pace the client reads it, until `bytes` are sent or the client has gone. */
async function writeEndlessEvent(res: ServerResponse, bytes: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const gone = new Promise<void>((resolve) => res.once('close', resolve));
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let sent = 0;
  res.write('data: ');
  while (sent < bytes && !res.destroyed) {
    if (!res.write(chunk)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), gone]);
    sent += chunk.length;
  }
  if (!res.destroyed) res.end();
}

const eventsWritten = new WeakMap<ServerResponse, number>();

/** Writes SSE events with an optional delay between them; false once the client has gone. */
export async function writeEvent(res: ServerResponse, text: string, behaviour: Behaviour): Promise<boolean> {
  if (res.destroyed) return false;
  const index = eventsWritten.get(res) ?? 0;
  eventsWritten.set(res, index + 1);
  if (behaviour.resetAfterEvents !== undefined && index >= behaviour.resetAfterEvents) {
    // A reset throws away what the peer has not read yet: the headers and events before it are given time to arrive.
    res.flushHeaders();
    await sleep(50);
    res.socket?.resetAndDestroy();
    return false;
  }
  if (behaviour.stall !== undefined && index === behaviour.stall.beforeEvent) {
    res.flushHeaders();
    // Ends early when the caller goes, so that a long stall keeps no timer (and no test process) waiting after it.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, behaviour.stall!.ms);
      res.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (res.destroyed) return false;
  }
  res.write(text);
  if (behaviour.tokenDelayMs) await sleep(behaviour.tokenDelayMs);
  return !res.destroyed;
}
