// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
/**
 * What an operator sees: Prometheus metrics (one view of every worker, OpenTelemetry's GenAI names,
 * exact counts after known traffic), `Server-Timing`, the access log, and OpenTelemetry traces sent
 * over OTLP to a receiver running here (the caller's trace continued, passed on to the upstream).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startPrometheus } from './support/prometheus.js';
import { closedPort } from './support/redis.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

let upstreams: ThreeUpstreams;

before(async () => {
  upstreams = await startThreeUpstreams();
});

after(async () => {
  await upstreams.close();
});

const TOKEN = 'metrics-token-0123456789';

const config = (providers: string) => `${providers}
routing:
  backoff_ms: { initial: 10, max: 20 }
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions], pricing: { input_per_mtok: 1, output_per_mtok: 2 } }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 3, output_per_mtok: 15 } }
`;

/** A request on a connection of its own, so that the cluster hands successive ones to different workers. */
async function chatOnNewConnection(sluice: RunningSluice, key: string, model = 'llama'): Promise<Response> {
  return fetch(`${sluice.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 }),
  });
}

test('metrics: after known traffic through two workers, a real Prometheus scrape counts all of it, under the GenAI names', async () => {
  upstreams.reset();
  const listen = await closedPort();
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: ['--workers', '2', '--metrics-listen', `127.0.0.1:${listen}`, '--metrics-token', TOKEN] });
  const gateway = new URL(sluice.url).host;
  const prometheus = await startPrometheus([
    { job: 'listener', target: `127.0.0.1:${listen}` },
    { job: 'gateway', target: gateway, bearer: TOKEN },
    { job: 'wrong-token', target: gateway, bearer: 'not-the-metrics-token' },
  ]);
  try {
    const { key, id: keyId } = await createKey(sluice.dataDir, 'metrics-co');
    const { key: limited } = await createKey(sluice.dataDir, 'limited-co', ['--rpm', '1']);
    for (let i = 0; i < 6; i++) assert.equal((await chatOnNewConnection(sluice, key)).status, 200, 'a chat is served');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      const stream = await openai.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'stream please' }], max_tokens: 6, stream: true });
      for await (const _chunk of stream) void _chunk;
    }
    await openai.completions.create({ model: 'llama', prompt: 'once upon', max_tokens: 4 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
    await anthropic.messages.create({ model: 'claude', max_tokens: 7, messages: [{ role: 'user', content: 'hi' }] });
    // The first attempt fails (a 500 the routing retries), the second answers.
    const callsSoFar = upstreams.vllm.requests.length;
    upstreams.vllm.behaviour = { fail: { status: 500, body: '{"error":{"message":"boom"}}' }, only: (_request, index) => index === callsSoFar };
    assert.equal((await chatOnNewConnection(sluice, key)).status, 200, 'served after a retry');
    upstreams.vllm.behaviour = {};
    assert.equal((await chatOnNewConnection(sluice, limited)).status, 200, "the limited key's first request");
    assert.equal((await chatOnNewConnection(sluice, limited)).status, 429, 'its second is over its rpm');
    assert.equal((await fetch(`${sluice.url}/v1/nowhere`)).status, 404, 'an unknown route');
    await eventually(async () => ((await sluice.ledger()).length === 13 ? true : undefined), 5000, 'every ledger row to be written');
    // The ledger is written last: once a scrape has every row, it has everything else.
    await eventually(async () => ((await prometheus.value('sum(sluice_ledger_rows_written_total{job="listener"})')) === 13 ? true : undefined), 10_000, 'Prometheus to scrape the written rows');

    const count = async (promql: string) => (await prometheus.value(`sum(${promql})`)) ?? 0;
    const chats = 'job="listener",route="POST /v1/chat/completions",dialect="openai"';
    assert.equal(await count(`sluice_http_requests_total{${chats},status="200"}`), 10, 'every chat served, whichever worker served it');
    assert.equal(await count(`sluice_http_requests_total{${chats},status="429"}`), 1, 'the refused one');
    assert.equal(await count('sluice_http_requests_total{job="listener",route="POST /v1/completions",status="200"}'), 1, 'the legacy completion');
    assert.equal(await count('sluice_http_requests_total{job="listener",route="POST /v1/messages",dialect="anthropic",status="200"}'), 1, "Anthropic's dialect");
    assert.equal(await count('sluice_http_requests_total{job="listener",route="unmatched",status="404"}'), 1, 'an unknown path is one bounded label');

    const chatServer = 'job="listener",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="llama",gen_ai_response_model="llama"';
    assert.equal(await count(`gen_ai_server_request_duration_seconds_count{${chatServer}}`), 11, 'gen_ai.server.request.duration: the chats, the refused one included');
    assert.equal(await count(`gen_ai_server_request_duration_seconds_count{${chatServer},error_type="rate_limited"}`), 1, 'the refusal, with its error.type');
    assert.equal(await count('gen_ai_server_request_duration_seconds_count{job="listener",gen_ai_operation_name="text_completion"}'), 1, 'the legacy completion is a text_completion');
    assert.equal(await count('gen_ai_server_request_duration_seconds_count{job="listener",gen_ai_provider_name="anthropic",gen_ai_response_model="claude"}'), 1, "Anthropic's call");
    assert.equal(await count(`gen_ai_server_time_to_first_token_seconds_count{${chatServer}}`), 2, 'time to first token: the two streams');
    assert.equal(await count(`gen_ai_server_time_per_output_token_seconds_count{${chatServer}}`), 2, 'time per output token: the two streams');

    const vllmCalls = 'job="listener",gen_ai_provider_name="openai",gen_ai_request_model="upstream-model",sluice_deployment="vllm/upstream-model",server_address="127.0.0.1"';
    assert.equal(await count(`gen_ai_client_operation_duration_seconds_count{${vllmCalls}}`), upstreams.vllm.requests.length, 'gen_ai.client.operation.duration: one per call the upstream received');
    assert.equal(await count(`gen_ai_client_operation_duration_seconds_count{${vllmCalls},error_type!=""}`), 1, 'the failed attempt, with its error.type');
    const ledger = await sluice.ledger();
    assert.equal(await count('gen_ai_client_token_usage_sum{job="listener",gen_ai_token_type="input"}'), ledger.reduce((sum, row) => sum + row.prompt_tokens, 0), 'gen_ai.client.token.usage input: the ledger’s prompt tokens');
    assert.equal(await count('gen_ai_client_token_usage_sum{job="listener",gen_ai_token_type="output"}'), ledger.reduce((sum, row) => sum + row.completion_tokens, 0), 'gen_ai.client.token.usage output: the ledger’s completion tokens');
    const cost = await count('sluice_cost_usd_total{job="listener"}');
    const ledgerCost = ledger.reduce((sum, row) => sum + row.cost_usd, 0);
    assert.ok(ledgerCost > 0 && Math.abs(cost - ledgerCost) < 1e-9, `the cost counters add up to the ledger's ${ledgerCost} (got ${cost})`);
    assert.equal(await count('sluice_routing_retries_total{job="listener",model="llama"}'), 1, 'the retry');
    assert.equal(await count('sluice_limit_refusals_total{job="listener",scope="key",reason="rpm"}'), 1, 'the rpm refusal');
    assert.equal(await count('sluice_overhead_seconds_count{job="listener",route="POST /v1/chat/completions"}'), 10, "Sluice's overhead, for each chat that reached an upstream");
    assert.equal(await count('sluice_deployment_state{job="listener",deployment="vllm/upstream-model"}'), 2, 'each of the two workers reports its view of the deployment');
    assert.ok((await count('sluice_cache_lookups_total{job="listener",cache="keys",result="hit"}')) > 0, 'key cache hits are counted');
    assert.equal(await prometheus.value('count(sluice_upstream_connections{job="listener",provider="vllm"})'), 5, 'the pool to vllm is reported in its five states');

    // The same whole-machine view through the gateway's port and its token, whichever worker answered
    // (each job is scraped on a schedule of its own: wait for one after the traffic).
    await eventually(async () => ((await prometheus.value('sum(sluice_ledger_rows_written_total{job="gateway"})')) === 13 ? true : undefined), 10_000, 'a scrape through the gateway port');
    assert.equal(await count(`sluice_http_requests_total{job="gateway",route="POST /v1/chat/completions",dialect="openai",status="200"}`), 10, 'a scrape through the gateway port sees every worker');
    assert.equal(await prometheus.value('sum(up{job="gateway"})'), 1, 'the token is accepted');
    const wrongToken = await eventually(() => prometheus.value('sum(up{job="wrong-token"})'), 10_000, 'a scrape with the wrong token');
    assert.equal(wrongToken, 0, 'a wrong token is refused');
    const names = await prometheus.names();
    for (const name of [
      'gen_ai_server_request_duration_seconds_bucket',
      'gen_ai_server_time_to_first_token_seconds_bucket',
      'gen_ai_server_time_per_output_token_seconds_bucket',
      'gen_ai_client_operation_duration_seconds_bucket',
      'gen_ai_client_token_usage_bucket',
      'sluice_http_requests_in_flight',
      'sluice_ledger_rows_buffered',
      'sluice_ledger_write_failures_total',
      'process_resident_memory_bytes',
    ]) {
      assert.ok(names.includes(name), `${name} is stored by Prometheus`);
    }

    const missing = await fetch(`${sluice.url}/metrics`);
    assert.equal(missing.status, 401, 'no token: refused');
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer', 'with the scheme to use');
    const text = await (await fetch(`http://127.0.0.1:${listen}/metrics`)).text();
    assert.ok(!text.includes(keyId) && !text.includes(key), 'no key id or key in any label');
    assert.ok(!sluice.stderr().includes(TOKEN), 'the token is never logged');
  } finally {
    await prometheus.close();
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('without a metrics token the gateway port has no /metrics; Server-Timing on every answer; one access-log line per request', async () => {
  upstreams.reset();
  // The access log is written at the info level (the tests' default is warn).
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: ['--workers', '1'], env: { SLUICE_LOG_LEVEL: 'info' } });
  try {
    const { key } = await createKey(sluice.dataDir, 'timing-co');
    assert.equal((await fetch(`${sluice.url}/metrics`)).status, 404, 'not served on the gateway port without a token');
    upstreams.vllm.behaviour = { headerDelayMs: 60 };
    const whole = await chatOnNewConnection(sluice, key);
    assert.equal(whole.status, 200, 'served');
    const timing = parseServerTiming(whole.headers.get('server-timing'));
    assert.ok(timing.upstream !== undefined && timing.upstream >= 55, `the upstream's time is at least its delay: ${whole.headers.get('server-timing')}`);
    assert.ok(timing.sluice !== undefined && timing.sluice >= 0 && timing.sluice < timing.upstream, `and Sluice's own is the rest: ${whole.headers.get('server-timing')}`);
    upstreams.vllm.behaviour = {};
    const stream = await fetch(`${sluice.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: true }),
    });
    assert.ok(parseServerTiming(stream.headers.get('server-timing')).upstream !== undefined, 'a stream tells the upstream time until its first content');
    await stream.text();
    const models = await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    assert.deepEqual(Object.keys(parseServerTiming(models.headers.get('server-timing'))), ['sluice'], 'no upstream was called for the model list');
    const refused = await fetch(`${sluice.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(refused.status, 401, 'no key');
    assert.ok(refused.headers.get('server-timing')?.startsWith('sluice;dur='), 'even an error carries it');

    const requestId = whole.headers.get('x-request-id');
    const line = await eventually(() => accessLines(sluice).find((entry) => entry.requestId === requestId), 3000, 'the access-log line of the chat');
    assert.equal(line.route, 'POST /v1/chat/completions', 'its route');
    assert.equal(line.status, 200, 'its status');
    assert.equal(line.model, 'llama', 'its model');
    assert.equal(line.attempts, 1, 'its attempts');
    const row = await eventually(async () => (await sluice.ledger()).find((entry) => entry.request_id === requestId), 3000, 'the ledger row');
    assert.equal(line.keyId, row.key_id, "its key's id (never the key)");
    assert.equal(line.inputTokens, row.prompt_tokens, 'its input tokens, as the ledger');
    assert.equal(line.outputTokens, row.completion_tokens, 'its output tokens, as the ledger');
    assert.equal(line.costUsd, row.cost_usd, 'its cost, as the ledger');
    assert.ok(typeof line.latencyMs === 'number' && line.latencyMs > 0, 'its latency');
    await eventually(() => (accessLines(sluice).some((entry) => entry.route === 'GET /v1/models' && entry.status === 200) ? true : undefined), 3000, 'the model list has its line too');
    // Its line may come after the model list's (each is written once its answer has gone); the assertion follows the wait.
    await eventually(() => (accessLines(sluice).some((entry) => entry.status === 401) ? true : undefined), 3000, 'the refused request to have its line').catch(() => undefined);
    assert.ok(accessLines(sluice).some((entry) => entry.status === 401), 'and the refused request');
    assert.ok(!sluice.stderr().includes(key), 'no key in the log');
    assert.ok(!sluice.stderr().includes('vllm-credential'), 'no upstream credential in the log');
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

function parseServerTiming(header: string | null): Record<string, number> {
  assert.ok(header !== null, 'a Server-Timing header');
  const out: Record<string, number> = {};
  for (const metric of header.split(',')) {
    const [name, ...params] = metric.trim().split(';');
    const dur = params.find((p) => p.startsWith('dur='));
    out[name!] = Number(dur?.slice(4));
  }
  return out;
}

interface AccessLine {
  readonly msg: string;
  readonly requestId: string;
  readonly route: string;
  readonly status: number;
  readonly latencyMs: number;
  readonly keyId?: string;
  readonly model?: string;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly costUsd?: number;
  readonly attempts?: number;
}

function accessLines(sluice: RunningSluice): AccessLine[] {
  return sluice
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as AccessLine)
    .filter((entry) => entry.msg === 'request');
}

/** An OTLP/HTTP trace receiver: what the collector would be sent, kept for the test. */
interface Receiver {
  readonly url: string;
  readonly posts: { contentType: string; body: Buffer }[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const posts: Receiver['posts'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') posts.push({ contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
      // An empty ExportTraceServiceResponse, in the encoding that was sent.
      const json = (req.headers['content-type'] ?? '').includes('json');
      res.writeHead(req.url === '/v1/traces' ? 200 : 404, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: { key: string; value: Record<string, unknown> }[];
  readonly status?: { code?: number };
}

function jsonSpans(receiver: Receiver): OtlpSpan[] {
  return receiver.posts
    .filter((post) => post.contentType.includes('json'))
    .flatMap((post) => (JSON.parse(post.body.toString()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans)
    .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
}

/**
 * OTLP/HTTP protobuf exports decoded by the OpenTelemetry JS packages' own generated protobuf code
 * (an older `@opentelemetry/otlp-transformer`, installed under an alias, ships the decoder that
 * the current one no longer does), into the same shape as the JSON encoding.
 */
function protobufSpans(receiver: Receiver): OtlpSpan[] {
  const root = createRequire(import.meta.url)('otlp-proto-decoder/build/src/generated/root.js');
  const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const hex = (bytes: Uint8Array | undefined) => (bytes === undefined || bytes.length === 0 ? undefined : Buffer.from(bytes).toString('hex'));
  return receiver.posts
    .filter((post) => post.contentType === 'application/x-protobuf')
    .flatMap((post) => Request.decode(post.body).resourceSpans as { scopeSpans: { spans: any[] }[] }[])
    .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
    .map((span) => ({ ...span, traceId: hex(span.traceId)!, spanId: hex(span.spanId)!, parentSpanId: hex(span.parentSpanId) }));
}

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

test('traces over OTLP: a server span continuing the caller’s trace, a client span per attempt, its context sent upstream', async () => {
  upstreams.reset();
  const receiver = await startReceiver();
  const sluice = await startSluice({
    config: config(upstreams.providersYaml),
    args: ['--workers', '1'],
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'sluice-under-test' },
  });
  try {
    const { key } = await createKey(sluice.dataDir, 'trace-co');
    // The first call fails and is retried: two attempts, two client spans.
    upstreams.vllm.behaviour = { fail: { status: 503, body: '{"error":{"message":"busy"}}' }, only: (_request, index) => index === 0 };
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0, defaultHeaders: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } });
    const answer = await openai.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'trace me' }], max_tokens: 5 }).withResponse();
    const requestId = answer.response.headers.get('x-request-id');
    const spans = await eventually(() => {
      const all = jsonSpans(receiver).filter((span) => span.traceId === CALLER_TRACE);
      return all.length >= 3 ? all : undefined;
    }, 5000, 'three spans of the caller’s trace');
    const server = spans.find((span) => span.kind === 2);
    assert.ok(server !== undefined, 'a SERVER span');
    assert.equal(server.parentSpanId, CALLER_SPAN, "its parent is the caller's span");
    assert.equal(server.name, 'chat llama', 'named as the conventions say: operation and model');
    assert.equal(attribute(server, 'gen_ai.operation.name'), 'chat', 'gen_ai.operation.name');
    assert.equal(attribute(server, 'gen_ai.request.model'), 'llama', 'gen_ai.request.model');
    assert.equal(attribute(server, 'gen_ai.provider.name'), 'openai', 'gen_ai.provider.name');
    assert.equal(attribute(server, 'sluice.request_id'), requestId, 'the request id, to find the ledger row');
    assert.equal(Number(attribute(server, 'sluice.attempts')), 2, 'two attempts');
    const row = await eventually(async () => (await sluice.ledger()).find((entry) => entry.request_id === requestId), 3000, 'the ledger row');
    assert.equal(Number(attribute(server, 'gen_ai.usage.output_tokens')), row.completion_tokens, 'output tokens, as the ledger');
    const clients = spans.filter((span) => span.kind === 3);
    assert.equal(clients.length, 2, 'a CLIENT span per attempt');
    for (const client of clients) {
      assert.equal(client.parentSpanId, server.spanId, 'children of the server span');
      assert.equal(client.name, 'chat upstream-model', 'named by the upstream operation and model');
      assert.equal(attribute(client, 'server.address'), '127.0.0.1', 'server.address');
      assert.equal(attribute(client, 'gen_ai.provider.name'), 'openai', 'gen_ai.provider.name');
    }
    const failed = clients.find((span) => attribute(span, 'error.type') !== undefined);
    assert.ok(failed !== undefined && failed.status?.code === 2, 'the failed attempt is in error');
    // Each upstream call carried its own attempt's span as the parent.
    const sent = upstreams.vllm.requests.map((request) => String(request.headers.traceparent));
    assert.deepEqual(
      sent.map((traceparent) => traceparent.split('-')[1]),
      [CALLER_TRACE, CALLER_TRACE],
      'the trace id went upstream',
    );
    assert.deepEqual(new Set(sent.map((traceparent) => traceparent.split('-')[2])), new Set(clients.map((span) => span.spanId)), 'as the parent, each attempt’s own span');
    const resource = JSON.parse(receiver.posts[0]!.body.toString()).resourceSpans[0].resource.attributes as { key: string; value: { stringValue: string } }[];
    assert.equal(resource.find((a) => a.key === 'service.name')?.value.stringValue, 'sluice-under-test', 'OTEL_SERVICE_NAME is honoured');
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
    await receiver.close();
  }
});

test('traces in the default encoding (protobuf); without tracing the caller’s traceparent still reaches the upstream', async () => {
  upstreams.reset();
  const receiver = await startReceiver();
  const traced = await startSluice({ config: config(upstreams.providersYaml), args: ['--workers', '1'], env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' } });
  try {
    const { key } = await createKey(traced.dataDir, 'proto-co');
    const response = await fetch(`${traced.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ model: 'claude', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    assert.equal(response.status, 200, 'served');
    const spans = await eventually(() => {
      const all = protobufSpans(receiver).filter((span) => span.traceId === CALLER_TRACE);
      return all.length >= 2 ? all : undefined;
    }, 5000, 'the request’s two spans, in OTLP/HTTP protobuf (the default encoding)');
    const server = spans.find((span) => span.name === 'chat claude');
    assert.ok(server !== undefined && server.kind === 2, 'the SERVER span');
    assert.equal(server.parentSpanId, CALLER_SPAN, "continuing the caller's trace");
    assert.equal(attribute(server, 'gen_ai.provider.name'), 'anthropic', 'gen_ai.provider.name anthropic');
    const client = spans.find((span) => span.kind === 3);
    assert.ok(client !== undefined && client.parentSpanId === server.spanId && client.name === 'chat claude-test', 'the attempt’s CLIENT span beneath it');
    assert.equal(String(upstreams.anthropic.requests.at(-1)?.headers.traceparent).split('-')[2], client.spanId, 'the trace went on to Anthropic, the attempt as its parent');
  } finally {
    assert.equal(await traced.stop(), 0, 'the gateway stops cleanly');
    await receiver.close();
  }

  upstreams.reset();
  const untraced = await startSluice({ config: config(upstreams.providersYaml), args: ['--workers', '1'] });
  try {
    const { key } = await createKey(untraced.dataDir, 'plain-co');
    const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
    await fetch(`${untraced.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent, tracestate: 'vendor=value' },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    const sent = upstreams.vllm.requests.at(-1)!.headers;
    assert.equal(sent.traceparent, traceparent, "the caller's traceparent, as it came");
    assert.equal(sent.tracestate, 'vendor=value', 'and its tracestate');
    await fetch(`${untraced.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: 'not a trace context' },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    assert.equal(upstreams.vllm.requests.at(-1)!.headers.traceparent, undefined, 'a malformed one is not passed on');
  } finally {
    assert.equal(await untraced.stop(), 0, 'the gateway stops cleanly');
  }
});

/** The series of Sluice's own and the GenAI metrics in an exposition (prom-client's process figures vary on their own). */
function gatewaySeries(exposition: string): string[] {
  return exposition.split('\n').filter((line) => line.startsWith('gen_ai_') || line.startsWith('sluice_'));
}

test('metrics: model names the catalogue lacks are one label value, whatever a caller sends; a known model keeps its own', async () => {
  upstreams.reset();
  const listen = await closedPort();
  const sluice = await startSluice({ config: config(upstreams.providersYaml), args: ['--workers', '1', '--metrics-listen', `127.0.0.1:${listen}`] });
  const scrape = async () => (await fetch(`http://127.0.0.1:${listen}/metrics`)).text();
  try {
    const { key } = await createKey(sluice.dataDir, 'label-co');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
    await openai.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    const ask = async (model: string, index: number) => {
      // Both dialects, each refused as its own API refuses an unknown model.
      const refused = index % 2 === 0
        ? openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 })
        : anthropic.messages.create({ model, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] });
      await assert.rejects(refused, (error: { status?: number }) => error.status === 404, `${model} is no model`);
    };
    await ask('ghost-first', 0);
    await ask('ghost-second', 1);
    // The ledger is written last: once it is there, the metrics of both refusals are too.
    await eventually(async () => ((await sluice.ledger()).length === 3 ? true : undefined), 5000, 'the first three ledger rows');
    const before = gatewaySeries(await scrape());

    const names = Array.from({ length: 200 }, (_, i) => `ghost-${i}-${Math.random().toString(36).slice(2)}`);
    for (const [index, name] of names.entries()) await ask(name, index);
    await eventually(async () => ((await sluice.ledger()).length === 203 ? true : undefined), 10_000, 'every ledger row');
    const text = await scrape();
    const after = gatewaySeries(text);
    for (const name of [...names, 'ghost-first', 'ghost-second']) assert.ok(!text.includes(name), `${name} is in no label`);
    // Only counts moved: not one series more for 200 more names.
    assert.equal(after.length, before.length, 'the series are as many as after the first two unknown names');
    const count = (pattern: RegExp) =>
      after.filter((line) => pattern.test(line)).reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    assert.equal(count(/^gen_ai_server_request_duration_seconds_count\{.*gen_ai_request_model="\(unresolved\)".*error_type="model_not_found"/), 202, 'every unknown name is counted under (unresolved)');
    assert.equal(count(/^gen_ai_server_request_duration_seconds_count\{.*gen_ai_request_model="llama",gen_ai_response_model="llama"/), 1, 'a known model keeps its own label');
    assert.equal(count(/^sluice_cost_usd_total\{model="llama"\}/) > 0, true, "the known model's cost under its own label");
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('traces: an attempt passed over before any upstream call still ends its span', async () => {
  upstreams.reset();
  const receiver = await startReceiver();
  // llama's only deployment fails and routing falls back to claude, whose upstream cannot take logprobs: that attempt is skipped.
  const sluice = await startSluice({
    config: `${upstreams.providersYaml}
routing:
  retries: 0
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat], fallbacks: [claude] }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat] }
`,
    args: ['--workers', '1'],
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' },
  });
  try {
    const { key } = await createKey(sluice.dataDir, 'skip-co');
    upstreams.vllm.behaviour = { fail: { status: 503, body: '{"error":{"message":"busy"}}' } };
    const response = await fetch(`${sluice.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, logprobs: true }),
    });
    assert.equal(response.status, 503, "the failure of the attempt that was made reaches the caller");
    assert.equal(upstreams.anthropic.requests.length, 0, 'Anthropic was never called');
    const spans = await eventually(() => {
      const all = jsonSpans(receiver).filter((span) => span.traceId === CALLER_TRACE);
      return all.some((span) => span.kind === 2) && all.filter((span) => span.kind === 3).length >= 2 ? all : undefined;
    }, 5000, 'the server span and both attempt spans');
    const server = spans.find((span) => span.kind === 2)!;
    assert.equal(Number(attribute(server, 'sluice.attempts')), 1, 'one attempt reached an upstream');
    const clients = spans.filter((span) => span.kind === 3);
    assert.equal(clients.length, 2, 'the failed attempt and the skipped one');
    const skipped = clients.find((span) => span.name === 'claude-test');
    assert.ok(skipped !== undefined, `the skipped attempt's span, under its upstream model: ${clients.map((span) => span.name).join(', ')}`);
    assert.equal(skipped.parentSpanId, server.spanId, 'under the request');
    assert.equal(attribute(skipped, 'sluice.skipped'), 'unsupported_parameter', 'saying why it was passed over');
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
    await receiver.close();
  }
});
