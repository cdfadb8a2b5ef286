// A fast fake OpenAI-compatible upstream for the benchmark (node:http, keep-alive).
//
//   node bench/upstream.mjs [--port N] [--latency-ms N] [--tokens-per-second N] [--tokens N]
//   env: PORT, UPSTREAM_LATENCY_MS, UPSTREAM_TOKENS_PER_SECOND, UPSTREAM_TOKENS
//
// POST /v1/completions
//   non-streaming: a small JSON completion (~300 bytes) with usage, after --latency-ms.
//   stream: true : vLLM-shaped SSE; the first token after --latency-ms, then one token every
//                  1/--tokens-per-second s; `max_tokens` (when given) is the number of tokens,
//                  otherwise --tokens; a final `choices: []` usage chunk when
//                  stream_options.include_usage; then `data: [DONE]`. A request may set its own
//                  rate with the extra body field `bench_tokens_per_second` (gateways forward
//                  unknown fields untouched).
// GET /healthz: 200.
// Prints `upstream listening on http://127.0.0.1:PORT` once ready.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'latency-ms': { type: 'string' },
    'tokens-per-second': { type: 'string' },
    tokens: { type: 'string' },
  },
});
const PORT = Number(args.port ?? process.env.PORT ?? 9101);
const LATENCY_MS = Number(args['latency-ms'] ?? process.env.UPSTREAM_LATENCY_MS ?? 0);
const TOKENS_PER_SECOND = Number(args['tokens-per-second'] ?? process.env.UPSTREAM_TOKENS_PER_SECOND ?? 20);
const DEFAULT_TOKENS = Number(args.tokens ?? process.env.UPSTREAM_TOKENS ?? 100);
const MAX_TOKENS = 100_000;

let counter = 0;
const created = Math.floor(Date.now() / 1000);

function completionBody(model, prompt) {
  return JSON.stringify({
    id: `cmpl-bench${++counter}`,
    object: 'text_completion',
    created,
    model,
    choices: [{ index: 0, text: ' Hello! How can I help you today?', logprobs: null, finish_reason: 'stop', stop_reason: null }],
    usage: { prompt_tokens: promptTokens(prompt), completion_tokens: 9, total_tokens: promptTokens(prompt) + 9 },
  });
}

function promptTokens(prompt) {
  return typeof prompt === 'string' ? Math.max(1, Math.ceil(prompt.length / 4)) : 1;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };
const DONE = 'data: [DONE]\n\n';

function stream(req, res, body) {
  const id = `cmpl-bench${++counter}`;
  const model = body.model;
  const tokens = Number.isInteger(body.max_tokens) && body.max_tokens > 0 ? Math.min(body.max_tokens, MAX_TOKENS) : DEFAULT_TOKENS;
  const includeUsage = body.stream_options?.include_usage === true;
  const rate = typeof body.bench_tokens_per_second === 'number' && body.bench_tokens_per_second > 0 ? body.bench_tokens_per_second : TOKENS_PER_SECOND;
  const head = `data: {"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"text":"`;
  res.writeHead(200, SSE_HEADERS);
  let sent = 0;
  let timer;
  const send = () => {
    sent += 1;
    const last = sent === tokens;
    res.write(`${head} tok${sent}","logprobs":null,"finish_reason":${last ? '"length"' : 'null'},"stop_reason":null}]}\n\n`);
    if (!last) return;
    clearInterval(timer);
    timer = undefined;
    if (includeUsage) {
      const p = promptTokens(body.prompt);
      res.write(`data: {"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[],"usage":{"prompt_tokens":${p},"total_tokens":${p + tokens},"completion_tokens":${tokens}}}\n\n`);
    }
    res.end(DONE);
  };
  const begin = () => {
    if (res.destroyed) return;
    send();
    // setInterval timers of one duration share one list in Node: cheap for 10,000 streams.
    if (sent < tokens) timer = setInterval(send, 1000 / rate);
  };
  res.on('close', () => {
    if (timer !== undefined) clearInterval(timer);
  });
  if (LATENCY_MS > 0) setTimeout(begin, LATENCY_MS);
  else begin();
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 }).end('ok');
    return;
  }
  if (req.method !== 'POST' || !req.url.startsWith('/v1/completions')) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
    req.resume();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
      return;
    }
    if (body.stream === true) {
      stream(req, res, body);
      return;
    }
    const answer = () => {
      const text = completionBody(body.model, body.prompt);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    };
    if (LATENCY_MS > 0) setTimeout(answer, LATENCY_MS);
    else answer();
  });
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 130_000;
server.requestTimeout = 0;
server.maxHeadersCount = 100;
server.listen(PORT, '127.0.0.1', 4096, () => {
  console.log(`upstream listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
