import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a caller received: the status, the headers the dialect set, and the body's exact bytes. */
export interface Received {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** What the job threw, if it did (before its first byte, the route would render it; after, it is a bug). */
  readonly thrown: unknown;
}

export type Job = (res: ServerResponse, signal: AbortSignal) => Promise<void>;

/**
 * A real HTTP server on loopback inside the test process: each job gets a real ServerResponse to
 * write to, and `run` reads what a client receives, with fetch. Writers write to sockets; this is
 * how their bytes are seen as a caller sees them.
 */
export interface Wire {
  run(job: Job): Promise<Received>;
  close(): Promise<void>;
}

/** The response headers a dialect sets (not Node's own: date, connection, transfer-encoding, …). */
const DIALECT_HEADERS = ['content-type', 'cache-control', 'x-accel-buffering'];

export async function startWire(): Promise<Wire> {
  const jobs = new Map<string, { job: Job; settle: (thrown: unknown) => void }>();
  let next = 0;
  const server = http.createServer((req, res) => {
    const entry = jobs.get(req.url ?? '');
    if (entry === undefined) return void res.writeHead(404).end();
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    entry.job(res, controller.signal).then(
      () => {
        // A job that forgot to end its response would hang the caller: end it, and say so.
        if (!res.writableEnded) {
          res.end();
          entry.settle(new Error('the response was not ended'));
        } else entry.settle(undefined);
      },
      (thrown: unknown) => {
        if (!res.headersSent) res.writeHead(599);
        res.end();
        entry.settle(thrown ?? new Error('threw undefined'));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    async run(job) {
      const path = `/${next++}`;
      let settle!: (thrown: unknown) => void;
      const done = new Promise<unknown>((resolve) => (settle = resolve));
      jobs.set(path, { job, settle });
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        const body = Buffer.from(await response.arrayBuffer()).toString('utf8');
        const headers: Record<string, string> = {};
        for (const name of DIALECT_HEADERS) {
          const value = response.headers.get(name);
          if (value !== null) headers[name] = value;
        }
        for (const [name, value] of response.headers) if (name.startsWith('x-sluice-')) headers[name] = value;
        return { status: response.status, headers, body, thrown: await done };
      } finally {
        jobs.delete(path);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
