// Closed-loop point with autocannon, the fallback when `wrk` is not on PATH.
// Its latencies are whole milliseconds only (wrk gives microseconds).
//
//   node bench/autocannon-run.mjs '{"url":..,"connections":32,"seconds":8,"body":"..","key":"sk-..","keysFile":null}'
// Prints one line `RESULT {json}` in the same shape as post.lua's WRKJSON summary.
import fs from 'node:fs';
import autocannon from 'autocannon';

const opts = JSON.parse(process.argv[2]);
const headers = { 'content-type': 'application/json' };
if (opts.key) headers.authorization = `Bearer ${opts.key}`;
const config = {
  url: opts.url,
  connections: opts.connections,
  duration: opts.seconds,
  method: 'POST',
  headers,
  body: opts.body,
  timeout: 10,
};
if (opts.keysFile) {
  const keys = fs.readFileSync(opts.keysFile, 'utf8').split('\n').filter(Boolean);
  config.requests = [
    {
      setupRequest(request) {
        request.headers = { ...request.headers, authorization: `Bearer ${keys[Math.floor(Math.random() * keys.length)]}` };
        return request;
      },
    },
  ];
}
const r = await autocannon(config);
const ms = (x) => Math.round(x * 1000);
const out = {
  requests: r.requests.total,
  duration_us: Math.round(r.duration * 1e6),
  connect_errors: 0,
  read_errors: r.errors - r.timeouts,
  write_errors: 0,
  timeouts: r.timeouts,
  non2xx: r.non2xx,
  p50_us: ms(r.latency.p50),
  p90_us: ms(r.latency.p90),
  p99_us: ms(r.latency.p99),
  p999_us: ms(r.latency.p99_9 ?? r.latency.p99),
  max_us: ms(r.latency.max),
  mean_us: ms(r.latency.mean),
};
process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
