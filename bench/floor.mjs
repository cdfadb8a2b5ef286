// The "floor" target of bench/ (issue 31): the least a Node proxy in front of an OpenAI-compatible
// upstream does, on the gateway's runtime and with its workers (node:cluster, each worker listening
// with reusePort, as Sluice does by default). node:http in, an undici Pool (keep-alive) out; the JSON
// body parsed, `model` rewritten, the answer parsed and `model` written back. A stream is relayed as
// it arrives, only the model's quoted value replaced in the text: no parse per event. No auth, no
// metering, no limits: what is left is the runtime's cost of relaying one request.
//   node bench/floor.mjs --port N --upstream http://127.0.0.1:P [--workers 2] [--upstream-model upstream-model]
import cluster from 'node:cluster';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

const { values: a } = parseArgs({ options: { port: { type: 'string' }, upstream: { type: 'string' }, workers: { type: 'string', default: '2' }, 'upstream-model': { type: 'string', default: 'upstream-model' } } });
if (cluster.isPrimary) {
  for (let i = 0; i < Number(a.workers); i++) cluster.fork();
  let stopping = false;
  cluster.on('exit', () => {
    if (!stopping) process.exit(1); // a worker lost is a broken target, not one to hide
    if (Object.keys(cluster.workers).length === 0) process.exit(0);
  });
  // Gone only once every worker is, so that a restart on the same port never shares it with the old ones.
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.kill();
  };
  process.on('SIGTERM', stop).on('SIGINT', stop);
} else {
  const upstreamModel = a['upstream-model'];
  const quotedUpstream = JSON.stringify(upstreamModel);
  const pool = new Pool(a.upstream, { connections: 16384, keepAliveTimeout: 120_000 });
  const fail = (res, status) => res.headersSent ? res.destroy() : res.writeHead(status).end();
  const relay = async (req, res, text) => {
    const body = JSON.parse(text);
    const model = body.model;
    body.model = upstreamModel;
    const up = await pool.request({ method: 'POST', path: req.url, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (body.stream === true && up.statusCode === 200) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const quoted = JSON.stringify(model);
      let pending = ''; // an event's start, until its blank line: the model's value never straddles a write
      for await (const text of up.body.setEncoding('utf8')) {
        pending += text;
        const end = pending.lastIndexOf('\n\n') + 2;
        if (end < 2) continue;
        res.write(pending.slice(0, end).replaceAll(quotedUpstream, quoted));
        pending = pending.slice(end);
      }
      return res.end(pending);
    }
    const answer = await up.body.json();
    if (answer && typeof answer === 'object' && 'model' in answer) answer.model = model;
    const out = JSON.stringify(answer);
    res.writeHead(up.statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) }).end(out);
  };
  http
    .createServer({ keepAliveTimeout: 120_000 }, (req, res) => {
      if (req.method === 'GET' && req.url === '/healthz') return res.end('ok');
      const parts = [];
      req.on('data', (d) => parts.push(d));
      req.on('end', () => relay(req, res, Buffer.concat(parts).toString()).catch(() => fail(res, 502)));
    })
    .listen({ host: '127.0.0.1', port: Number(a.port), exclusive: true, reusePort: true, backlog: 4096 }); // Sluice's listen options
}
