import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What every fake upstream shares: a real HTTP server on loopback that records what it received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: any;
}

export interface Behaviour {
  /** Answer every request with this status, body and headers instead of generating. */
  fail?: { status: number; body: string; headers?: Record<string, string> };
  /** Wait before sending the response headers. */
  headerDelayMs?: number;
  /** Wait between stream events. */
  tokenDelayMs?: number;
  /** Leave usage out of answers (as some servers do). */
  omitUsage?: boolean;
  /** Send the upstream's own in-stream error event after this many events. */
  errorAfterChunks?: number;
  /** Answer 200 with a body that is not JSON. */
  garbage?: boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Requests whose connection closed before the answer was complete. */
  readonly aborted: RecordedRequest[];
  /** TCP connections accepted so far (keep-alive reuse keeps this low). */
  readonly connections: number;
  behaviour: Behaviour;
  close(): Promise<void>;
}

export type FakeHandler = (request: RecordedRequest, res: ServerResponse, behaviour: Behaviour, req: IncomingMessage) => Promise<void> | void;

/** Starts a fake: recording, failure injection and delays are done here; `handle` speaks the API. */
export async function startFakeServer(pathPrefix: string, handle: FakeHandler): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const aborted: RecordedRequest[] = [];
  const state: { behaviour: Behaviour } = { behaviour: {} };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) aborted.push(record);
    });
    const behaviour = state.behaviour;
    if (behaviour.headerDelayMs) await sleep(behaviour.headerDelayMs);
    if (res.destroyed) return;
    if (behaviour.fail) {
      res.writeHead(behaviour.fail.status, { 'content-type': 'application/json', ...behaviour.fail.headers });
      res.end(behaviour.fail.body);
      return;
    }
    if (behaviour.garbage) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>gateway timeout</html>');
      return;
    }
    await handle(record, res, behaviour, req);
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${pathPrefix}`,
    requests,
    aborted,
    get connections() {
      return connections;
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

/** Writes SSE events with an optional delay between them; false once the client has gone. */
export async function writeEvent(res: ServerResponse, text: string, behaviour: Behaviour): Promise<boolean> {
  if (res.destroyed) return false;
  res.write(text);
  if (behaviour.tokenDelayMs) await sleep(behaviour.tokenDelayMs);
  return !res.destroyed;
}
