// A fast fake OpenAI-compatible upstream for the benchmark (node:http, keep-alive).
//
//   node bench/upstream.mjs [--port N] [--latency-ms N] [--tokens-per-second N] [--tokens N] [--fail-every N]
//   env: PORT, UPSTREAM_LATENCY_MS, UPSTREAM_TOKENS_PER_SECOND, UPSTREAM_TOKENS, UPSTREAM_FAIL_EVERY
//
// POST /v1/completions
//   non-streaming: a small JSON completion (~300 bytes) with usage, after --latency-ms.
//   stream: true : vLLM-shaped SSE; the first token after --latency-ms, then one token every
//                  1/--tokens-per-second s; `max_tokens` (when given) is the number of tokens,
//                  otherwise --tokens; a final `choices: []` usage chunk when
//                  stream_options.include_usage; then `data: [DONE]`. A request may set its own
//                  rate with the extra body field `bench_tokens_per_second` (gateways forward
//                  unknown fields untouched).
// POST /v1/chat/completions, the same knobs, shaped as vLLM answers chat:
//   non-streaming: a whole `chat.completion` (about the size of the completion answer) with usage.
//   stream: true : `chat.completion.chunk` events: the role delta (`{"role":"assistant",
//                  "content":""}`) together with the first token, one content delta per token,
//                  a finish_reason chunk with an empty delta, the `choices: []` usage chunk when
//                  stream_options.include_usage, then `data: [DONE]`. `max_completion_tokens`
//                  counts like `max_tokens`.
// --fail-every N (N >= 1; 0, the default, never fails): every Nth request to either POST endpoint
//   (the Nth, the 2Nth, ..., counted over both, whole or stream) is answered at once, before
//   any latency, with HTTP 503 and an OpenAI-style error body, without `retry-after`.
// POST /v1/embeddings: `data` of one vector per input (a string or an array of them), each of
//   --embedding-dimensions (default 384) floats, written as a list or, with `encoding_format:
//   base64`, as the base64 of little-endian float32s; usage counts about 4 characters a token.
// The same chat answers on Azure OpenAI's paths (`/openai/deployments/{name}/chat/completions?api-version=…`
//   and the v1 API's `/openai/v1/chat/completions`), and on Amazon Bedrock's Converse
//   (`POST /model/{id}/converse`, a whole answer only): credentials and signatures are not checked,
//   since only the gateway's cost is measured.
// GET /healthz: 200.
// GET /stats: {"requests":..,"failed":..,"streams":..,"whole":..,"failEvery":N} since start:
//   POST requests to the two endpoints, how many of them got the 503, how many asked a stream.
// Prints `upstream listening on http://127.0.0.1:PORT` once ready.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'latency-ms': { type: 'string' },
    'tokens-per-second': { type: 'string' },
    tokens: { type: 'string' },
    'fail-every': { type: 'string' },
    'embedding-dimensions': { type: 'string' },
  },
});
const PORT = Number(args.port ?? process.env.PORT ?? 9101);
const LATENCY_MS = Number(args['latency-ms'] ?? process.env.UPSTREAM_LATENCY_MS ?? 0);
const TOKENS_PER_SECOND = Number(args['tokens-per-second'] ?? process.env.UPSTREAM_TOKENS_PER_SECOND ?? 20);
const DEFAULT_TOKENS = Number(args.tokens ?? process.env.UPSTREAM_TOKENS ?? 100);
const MAX_TOKENS = 100_000;
const FAIL_EVERY = Number(args['fail-every'] ?? process.env.UPSTREAM_FAIL_EVERY ?? 0);
const FAILURE_BODY = JSON.stringify({
  error: { message: `Bench upstream: one request in ${FAIL_EVERY} is refused (--fail-every ${FAIL_EVERY}).`, type: 'server_error', param: null, code: 'service_unavailable' },
});
const stats = { requests: 0, failed: 0, streams: 0, whole: 0, embeddings: 0, failEvery: FAIL_EVERY };

/** One vector, written once in each encoding: the upstream's own cost stays out of the way. */
const EMBEDDING_DIMENSIONS = Number(args['embedding-dimensions'] ?? process.env.UPSTREAM_EMBEDDING_DIMENSIONS ?? 384);
const VECTOR = Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Math.fround(Math.sin(i + 1) / 10));
const VECTOR_TEXT = { float: JSON.stringify(VECTOR), base64: JSON.stringify(Buffer.from(new Float32Array(VECTOR).buffer).toString('base64')) };

function embeddingsBody(body) {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const vector = body.encoding_format === 'base64' ? VECTOR_TEXT.base64 : VECTOR_TEXT.float;
  let tokens = 0;
  const data = inputs.map((input, index) => {
    tokens += typeof input === 'string' ? Math.max(1, Math.ceil(input.length / 4)) : Array.isArray(input) ? input.length : 1;
    return `{"object":"embedding","index":${index},"embedding":${vector}}`;
  });
  return `{"id":"embd-bench${++counter}","object":"list","created":${created},"model":${JSON.stringify(body.model)},"data":[${data.join(',')}],"usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`;
}

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

/** Roughly what a chat template adds: a few tokens per message around its text. */
function chatPromptTokens(messages) {
  if (!Array.isArray(messages)) return 1;
  let n = 0;
  for (const m of messages) n += 4 + (typeof m?.content === 'string' ? Math.ceil(m.content.length / 4) : 1);
  return Math.max(1, n);
}

/** A whole Converse answer, about the size of the chat answer. */
function converseBody(body) {
  const p = chatPromptTokens((body.messages ?? []).map((m) => ({ content: (m.content ?? []).map((c) => c.text ?? '').join('') })));
  return JSON.stringify({
    output: { message: { role: 'assistant', content: [{ text: 'Hello! How can I help you today?' }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: p, outputTokens: 9, totalTokens: p + 9 },
    metrics: { latencyMs: 1 },
  });
}

function chatCompletionBody(model, messages) {
  const p = chatPromptTokens(messages);
  return JSON.stringify({
    id: `chatcmpl-bench${++counter}`,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help you today?' }, logprobs: null, finish_reason: 'stop', stop_reason: null }],
    usage: { prompt_tokens: p, completion_tokens: 9, total_tokens: p + 9 },
  });
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };
const DONE = 'data: [DONE]\n\n';

function tokensOf(body, chat) {
  const asked = chat && Number.isInteger(body.max_completion_tokens) ? body.max_completion_tokens : body.max_tokens;
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, MAX_TOKENS) : DEFAULT_TOKENS;
}

/** The events of one stream, as strings: `first()` goes with the first token, `finish()` after the last. */
function completionEvents(body) {
  const id = `cmpl-bench${++counter}`;
  const head = `data: {"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(body.model)},"choices":[`;
  return {
    first: () => '',
    token: (i, last) => `${head}{"index":0,"text":" tok${i}","logprobs":null,"finish_reason":${last ? '"length"' : 'null'},"stop_reason":null}]}\n\n`,
    usage: (tokens) => {
      const p = promptTokens(body.prompt);
      return `${head}],"usage":{"prompt_tokens":${p},"total_tokens":${p + tokens},"completion_tokens":${tokens}}}\n\n`;
    },
    finish: () => '',
  };
}

function chatEvents(body) {
  const id = `chatcmpl-bench${++counter}`;
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(body.model)},"choices":[`;
  return {
    first: () => `${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`,
    token: (i) => `${head}{"index":0,"delta":{"content":" tok${i}"},"logprobs":null,"finish_reason":null}]}\n\n`,
    finish: () => `${head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"length","stop_reason":null}]}\n\n`,
    usage: (tokens) => {
      const p = chatPromptTokens(body.messages);
      return `${head}],"usage":{"prompt_tokens":${p},"total_tokens":${p + tokens},"completion_tokens":${tokens}}}\n\n`;
    },
  };
}

function stream(req, res, body, chat) {
  const tokens = tokensOf(body, chat);
  const includeUsage = body.stream_options?.include_usage === true;
  const rate = typeof body.bench_tokens_per_second === 'number' && body.bench_tokens_per_second > 0 ? body.bench_tokens_per_second : TOKENS_PER_SECOND;
  const events = chat ? chatEvents(body) : completionEvents(body);
  res.writeHead(200, SSE_HEADERS);
  let sent = 0;
  let timer;
  const send = () => {
    sent += 1;
    const last = sent === tokens;
    res.write((sent === 1 ? events.first() : '') + events.token(sent, last));
    if (!last) return;
    clearInterval(timer);
    timer = undefined;
    const finish = events.finish();
    if (finish !== '') res.write(finish);
    if (includeUsage) res.write(events.usage(tokens));
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
  if (req.method === 'GET' && req.url === '/stats') {
    const text = JSON.stringify(stats);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    return;
  }
  const converse = /^\/model\/[^/]+\/converse$/.test(req.url);
  const chat = req.url.startsWith('/v1/chat/completions') || /^\/openai\/(?:v1|deployments\/[^/]+)\/chat\/completions(?:\?|$)/.test(req.url);
  const embeddings = req.url.startsWith('/v1/embeddings');
  if (req.method !== 'POST' || !(chat || converse || embeddings || req.url.startsWith('/v1/completions'))) {
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
    stats.requests += 1;
    if (body.stream === true) stats.streams += 1;
    else if (embeddings) stats.embeddings += 1;
    else stats.whole += 1;
    if (FAIL_EVERY > 0 && stats.requests % FAIL_EVERY === 0) {
      stats.failed += 1;
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(FAILURE_BODY) }).end(FAILURE_BODY);
      return;
    }
    if (body.stream === true) {
      stream(req, res, body, chat);
      return;
    }
    const answer = () => {
      const text = embeddings ? embeddingsBody(body) : converse ? converseBody(body) : chat ? chatCompletionBody(body.model, body.messages) : completionBody(body.model, body.prompt);
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
