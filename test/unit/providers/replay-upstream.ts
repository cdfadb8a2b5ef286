import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { startFakeServer, type RecordedRequest } from '../../fakes/fake-server.js';

/** An upstream's answer as recorded: status, the headers that matter, and the body byte for byte. */
export interface RecordedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/**
 * Reads a `.http` fixture: a status line, header lines, a blank line, then the body exactly as the
 * vendor frames it (an SSE stream's blank lines and CRLFs included). The head may end its lines
 * with LF or CRLF; the body is never touched.
 */
export function readRecordedResponse(path: string): RecordedResponse {
  const bytes = readFileSync(path);
  const text = bytes.toString('latin1'); // one char per byte, so the body's offset is its byte offset
  const match = /\r?\n\r?\n/.exec(text);
  if (match === null) throw new Error(`${path}: no blank line after the head`);
  const [statusLine, ...headerLines] = text.slice(0, match.index).split(/\r?\n/);
  const status = /^HTTP\/1\.1 (\d{3})\b/.exec(statusLine ?? '');
  if (status === null) throw new Error(`${path}: the first line is not an HTTP/1.1 status line`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon < 1) throw new Error(`${path}: not a header line: ${line}`);
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(status[1]), headers, body: bytes.subarray(match.index + match[0].length) };
}

/** A recorded JSON answer with its body changed (a finish reason swapped), the rest as recorded. */
export function withJsonBody(response: RecordedResponse, change: (body: Record<string, any>) => void): RecordedResponse {
  const body = JSON.parse(response.body.toString('utf8')) as Record<string, any>;
  change(body);
  return { ...response, body: Buffer.from(JSON.stringify(body)) };
}

/**
 * Bytes per write: small and odd, so that SSE events and multi-byte characters are split across
 * reads, as a real network splits them; every write goes out at once (no timers).
 */
const SLICE_BYTES = 61;

/**
 * A real HTTP server on 127.0.0.1 that answers each request with the next recorded response and
 * records what it was sent. A request with nothing left to answer gets a 599, which no adapter maps
 * to anything a case expects.
 */
export interface ReplayUpstream {
  /** The server's origin, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues the answers for the next requests, in order; forgets what the last case left. */
  serve(...responses: RecordedResponse[]): void;
  /** Answers queued but not asked for. */
  unanswered(): number;
  close(): Promise<void>;
}

export async function startReplayUpstream(): Promise<ReplayUpstream> {
  const queue: RecordedResponse[] = [];
  const fake = await startFakeServer('', (_request, res) => {
    const next = queue.shift();
    if (next === undefined) {
      res.writeHead(599, { 'content-type': 'text/plain' });
      res.end('the replay upstream has no recorded response left for this request');
      return;
    }
    write(res, next);
  });
  return {
    url: fake.url,
    requests: fake.requests,
    serve(...responses) {
      queue.length = 0;
      fake.requests.length = 0;
      queue.push(...responses);
    },
    unanswered: () => queue.length,
    close: () => fake.close(),
  };
}

function write(res: ServerResponse, response: RecordedResponse): void {
  res.writeHead(response.status, response.headers);
  for (let at = 0; at < response.body.length; at += SLICE_BYTES) res.write(response.body.subarray(at, at + SLICE_BYTES));
  res.end();
}

/**
 * The JSON payloads of an SSE body, in order, read independently of the adapters' parser (which
 * is eventsource-parser): events split at blank lines (LF or CRLF), `data:` lines joined. Payloads
 * that are not JSON (OpenAI's `[DONE]`) are left out.
 */
export function sseJsonPayloads(body: Buffer): unknown[] {
  const out: unknown[] = [];
  for (const block of body.toString('utf8').split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') continue;
    try {
      out.push(JSON.parse(data));
    } catch {
      // [DONE]
    }
  }
  return out;
}
