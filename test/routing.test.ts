// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { parse as parseYaml } from 'yaml';
import { Catalogue } from '../src/catalogue/catalogue.js';
import { parseConfig, ROUTING_DEFAULTS } from '../src/config/config-file.js';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI, WORDS, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import type { Behaviour, RecordedRequest } from './fakes/fake-server.js';
import { createKey, eventually, startSluice, type LedgerRow, type RunningSluice } from './support/sluice.js';

/**
 * Routing through the real gateway (one process, so that every request sees the same deployment
 * health) over fault-injecting fake upstreams: two OpenAI-compatible servers `a` and `b`, an
 * Anthropic and a Gemini. Each test has models of its own (their upstream model names too), so
 * the health one test leaves behind cannot steer another; a fault is aimed at one upstream model
 * with `only`. Deployments at priority 0 are tried first, which makes the first attempt's target
 * certain wherever a test needs it.
 */

const upstreamModels = [
  'm-split', 'm-lat', 'm-retry', 'm-claude', 'm-gem', 'm-backup', 'm-reset', 'm-stall', 'm-late', 'm-bad', 'm-circ', 'm-cool', 'm-open',
  'm-held', 'm-gone', 'm-drip', 'm-late-deadline', 'm-native', 'm-noretry', 'm-strict', 'm-logprobs', 'm-endless',
];

let a: FakeUpstream;
let b: FakeUpstream;
let anthropicUpstream: FakeUpstream;
let geminiUpstream: FakeUpstream;
let sluice: RunningSluice;
let key: string;
let openai: OpenAI;

/** The circuit test's cooldown, which it waits out: short, yet long past the one request it must skip the deployment for. */
const CIRCUIT_COOLDOWN_MS = 1000;

/** Two deployments on `a` then `b` (priority 0 then 1) of one upstream model, with the model's own routing. */
function pair(id: string, upstreamModel: string, routing = '{}', endpoints = '[chat]'): string {
  return `
  - id: ${id}
    endpoints: ${endpoints}
    routing: ${routing}
    deployments:
      - { provider: a, upstream_model: ${upstreamModel} }
      - { provider: b, upstream_model: ${upstreamModel}, priority: 1 }`;
}

before(async () => {
  [a, b, anthropicUpstream, geminiUpstream] = await Promise.all([
    startFakeOpenAI({ apiKey: 'a-credential', models: upstreamModels }),
    startFakeOpenAI({ apiKey: 'b-credential', models: upstreamModels }),
    startFakeAnthropic({ apiKey: 'anthropic-credential', models: ['claude-x', 'claude-y', 'claude-held'] }),
    startFakeGemini({ apiKey: 'gemini-credential', models: ['gemini-x'] }),
  ]);
  const config = `
routing:
  backoff_ms: { initial: 20, max: 100 }
  first_token_timeout_ms: 800
  circuit: { failures: 100, window_ms: 60000, cooldown_ms: 60000 }
providers:
  - { id: a, kind: openai, base_url: '${a.url}', api_key: a-credential, max_response_bytes: 1048576 }
  - { id: b, kind: openai, base_url: '${b.url}', api_key: b-credential }
  - { id: anthropic, kind: anthropic, base_url: '${anthropicUpstream.url}', api_key: anthropic-credential }
  - { id: google, kind: gemini, base_url: '${geminiUpstream.url}', api_key: gemini-credential }
models:
  - id: split
    endpoints: [chat]
    routing: { strategy: weighted }
    deployments:
      - { provider: a, upstream_model: m-split, weight: 3 }
      - { provider: b, upstream_model: m-split, weight: 1 }
  - id: fastest
    endpoints: [chat]
    routing: { strategy: latency }
    deployments:
      - { provider: a, upstream_model: m-lat }
      - { provider: b, upstream_model: m-lat }
${pair('retry', 'm-retry', '{}', '[completions, chat, responses]')}
  - id: claude-pair
    endpoints: [chat]
    deployments:
      - { provider: anthropic, upstream_model: claude-x }
      - { provider: a, upstream_model: m-claude, priority: 1 }
  - id: gemini-pair
    endpoints: [chat]
    deployments:
      - { provider: google, upstream_model: gemini-x }
      - { provider: b, upstream_model: m-gem, priority: 1 }
  - id: claude-primary
    provider: anthropic
    upstream_model: claude-y
    endpoints: [chat]
    fallbacks: [llama-backup]
  - id: llama-backup
    provider: a
    upstream_model: m-backup
    endpoints: [chat]
    pricing: { input_per_mtok: 1, output_per_mtok: 2 }
${pair('reset', 'm-reset')}
${pair('endless', 'm-endless')}
${pair('stall', 'm-stall')}
${pair('late', 'm-late')}
${pair('bad', 'm-bad')}
${pair('circuit', 'm-circ', `{ circuit: { failures: 3, cooldown_ms: ${CIRCUIT_COOLDOWN_MS} } }`)}
${pair('cool', 'm-cool')}
  - id: lonely
    provider: a
    upstream_model: m-open
    endpoints: [chat]
    routing: { retries: 0, circuit: { failures: 2, cooldown_ms: 60000 } }
  - id: held
    endpoints: [chat]
    deployments:
      - { provider: anthropic, upstream_model: claude-held }
      - { provider: b, upstream_model: m-held, priority: 1 }
  - id: gone
    provider: a
    upstream_model: m-gone
    endpoints: [chat]
  - id: drip
    provider: a
    upstream_model: m-drip
    endpoints: [chat]
${pair('deadline', 'm-late-deadline', '{ deadline_ms: 700 }')}
  - id: native
    endpoints: [responses]
    deployments:
      - { provider: a, upstream_model: m-native, upstream_api: responses }
      - { provider: b, upstream_model: m-native, upstream_api: responses, priority: 1 }
  - id: no-retry
    provider: a
    upstream_model: m-noretry
    endpoints: [chat]
    routing: { retry_on: [], circuit: { failures: 2 } }
  - id: needs-logprobs
    provider: a
    upstream_model: m-logprobs
    endpoints: [chat]
    fallbacks: [claude-fallback, llama-logprobs]
  - id: claude-fallback
    provider: anthropic
    upstream_model: claude-x
    endpoints: [chat]
  - id: llama-logprobs
    provider: b
    upstream_model: m-logprobs
    endpoints: [chat]
`;
  sluice = await startSluice({ config, args: ['--workers', '1'] });
  ({ key } = await createKey(sluice.dataDir, 'acme'));
  // The SDKs' own retries would hide what the gateway does.
  openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([a.close(), b.close(), anthropicUpstream.close(), geminiUpstream.close()]);
});

/** A fault on one upstream model only (Gemini's model is in the path, the others' in the body). */
function aimedAt(upstreamModel: string, behaviour: Behaviour, pick: (index: number) => boolean = () => true): Behaviour {
  return { ...behaviour, only: (request, index) => modelOf(request) === upstreamModel && pick(index) };
}

function modelOf(request: RecordedRequest): string | undefined {
  if (typeof request.body?.model === 'string') return request.body.model;
  return /\/models\/([^/:]+):/.exec(request.path)?.[1];
}

function asked(upstream: FakeUpstream, upstreamModel: string): RecordedRequest[] {
  return upstream.requests.filter((request) => modelOf(request) === upstreamModel);
}

const OPENAI_503 = { status: 503, body: JSON.stringify({ error: { message: 'Service Unavailable', type: 'ServiceUnavailableError', param: null, code: 503 } }) };
const THREE_WORDS = WORDS.slice(0, 3).join('');
/** What every fake's chat model answers to 'hello' in three tokens. */
const CHAT_ANSWER = '[hello] The quick';

/** The ledger rows of one public model, once the ledger has written them. */
async function rowsOf(model: string, count: number): Promise<LedgerRow[]> {
  return eventually(async () => {
    const rows = (await sluice.ledger()).filter((row) => row.model === model);
    return rows.length >= count ? rows : undefined;
  }, 5000, `${count} ledger rows of ${model}`);
}

function attemptLog(row: LedgerRow): { deployment: string; status: number; errorKind: string | null; promptTokens: number; model: string }[] {
  return row.attempt_log === null ? [] : JSON.parse(row.attempt_log);
}

async function statusOf(model: string): Promise<{ provider: string; upstream_model: string; state: string; latency_ms: number | null }[]> {
  const status = (await (await fetch(`${sluice.url}/status.json`)).json()) as { providers: { models: { id: string; deployments: any[] }[] }[] };
  for (const provider of status.providers) for (const entry of provider.models) if (entry.id === model) return entry.deployments;
  throw new Error(`${model} is not on /status.json`);
}

async function chat(model: string, stream: boolean): Promise<{ text: string; attempts: string | null }> {
  const messages = [{ role: 'user' as const, content: 'hello' }];
  if (!stream) {
    const { data, response } = await openai.chat.completions.create({ model, messages, max_tokens: 3 }).withResponse();
    return { text: data.choices[0]!.message.content ?? '', attempts: response.headers.get('x-sluice-attempts') };
  }
  const { data, response } = await openai.chat.completions.create({ model, messages, max_tokens: 3, stream: true }).withResponse();
  let text = '';
  for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
  return { text, attempts: response.headers.get('x-sluice-attempts') };
}

describe('choosing a deployment', () => {
  test('the weighted strategy splits traffic by weight (3:1) within a few percent', async () => {
    const total = 800;
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        assert.equal((await chat('split', false)).text, CHAT_ANSWER);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const share = asked(a, 'm-split').length / total;
    assert.equal(asked(a, 'm-split').length + asked(b, 'm-split').length, total);
    // 3σ of a binomial share over 800 requests is about 0.046.
    assert.ok(Math.abs(share - 0.75) < 0.05, `a's share ${share}`);
  });

  test('the latency strategy moves traffic away from a slow deployment', async () => {
    b.behaviour = aimedAt('m-lat', { headerDelayMs: 150 });
    try {
      const total = 60;
      let next = 0;
      const worker = async () => {
        while (next < total) {
          next++;
          assert.equal((await chat('fastest', false)).text, CHAT_ANSWER);
        }
      };
      await Promise.all(Array.from({ length: 3 }, worker));
      const slow = asked(b, 'm-lat').length;
      assert.equal(asked(a, 'm-lat').length + slow, total);
      // Only a first measurement or two go to the slow one; weighted at random it would take about half.
      assert.ok(slow <= 6, `the slow deployment took ${slow} of ${total}`);
      const states = await eventually(async () => {
        const deployments = await statusOf('fastest');
        return deployments.every((d) => d.latency_ms !== null) ? deployments : undefined;
      });
      const latency = Object.fromEntries(states.map((d) => [d.provider, d.latency_ms!]));
      assert.ok(latency.b! > latency.a!, `live latency on /status.json: ${JSON.stringify(states)}`);
    } finally {
      b.behaviour = {};
    }
  });
});

describe('another attempt when the first fails before anything reached the caller', () => {
  before(() => {
    a.behaviour = aimedAt('m-retry', { fail: OPENAI_503 });
  });
  after(() => {
    a.behaviour = {};
  });

  for (const stream of [false, true]) {
    const how = stream ? 'streamed' : 'whole';
    test(`legacy completions, ${how}: answered by the second deployment`, async () => {
      const { data, response } = await openai.completions.create({ model: 'retry', prompt: 'x', max_tokens: 3, stream: stream as false }).withResponse();
      let text: string;
      if (stream) {
        text = '';
        for await (const chunk of data as unknown as AsyncIterable<OpenAI.Completions.Completion>) text += chunk.choices[0]?.text ?? '';
      } else text = data.choices[0]!.text;
      assert.equal(text, THREE_WORDS);
      assert.equal(response.headers.get('x-sluice-attempts'), '2');
    });

    test(`chat, ${how}: answered by the second deployment`, async () => {
      assert.deepEqual(await chat('retry', stream), { text: CHAT_ANSWER, attempts: '2' });
    });

    test(`responses, ${how}: answered by the second deployment`, async () => {
      if (!stream) {
        const { data, response } = await openai.responses.create({ model: 'retry', input: 'hello', max_output_tokens: 16, store: false }).withResponse();
        assert.ok(data.output_text.length > 0);
        assert.equal(response.headers.get('x-sluice-attempts'), '2');
        return;
      }
      const { data, response } = await openai.responses.create({ model: 'retry', input: 'hello', max_output_tokens: 16, store: false, stream: true }).withResponse();
      const types: string[] = [];
      for await (const event of data) types.push(event.type);
      assert.equal(types.filter((type) => type === 'response.created').length, 1);
      assert.equal(types.at(-1), 'response.completed');
      assert.equal(response.headers.get('x-sluice-attempts'), '2');
    });
  }

  test('the ledger: one row per request, billed for the answer, with both attempts and the abandoned one free of tokens', async () => {
    const rows = await rowsOf('retry', 6);
    assert.equal(rows.length, 6);
    for (const row of rows) {
      assert.equal(row.status, 200);
      assert.equal(row.attempts, 2);
      assert.equal(row.deployment, 'b/m-retry');
      assert.equal(row.provider_id, 'b');
      assert.ok(row.completion_tokens > 0);
      const log = attemptLog(row);
      assert.deepEqual(log.map((entry) => [entry.deployment, entry.status, entry.errorKind, entry.promptTokens]), [
        ['a/m-retry', 503, 'upstream_overloaded', 0],
        ['b/m-retry', 200, null, row.prompt_tokens],
      ]);
    }
    assert.equal(asked(a, 'm-retry').length, 6);
    assert.equal(asked(b, 'm-retry').length, 6);
  });

  test('the Anthropic dialect: an overloaded Anthropic deployment (529), then a translated one, streamed and whole', async () => {
    anthropicUpstream.behaviour = aimedAt('claude-x', {
      fail: { status: 529, body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) },
    });
    try {
      const client = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
      const whole = await client.messages.create({ model: 'claude-pair', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(whole.content[0]!.type === 'text' ? whole.content[0]!.text : '', CHAT_ANSWER);
      const stream = client.messages.stream({ model: 'claude-pair', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
      const events: string[] = [];
      stream.on('streamEvent', (event) => events.push(event.type));
      const message = await stream.finalMessage();
      assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', CHAT_ANSWER);
      assert.equal(events.filter((type) => type === 'message_start').length, 1);
      assert.equal(asked(anthropicUpstream, 'claude-x').length, 2);
      assert.equal(asked(a, 'm-claude').length, 2);
    } finally {
      anthropicUpstream.behaviour = {};
    }
  });

  test('the Gemini dialect: an unavailable Gemini deployment (503), then a translated one, streamed and whole', async () => {
    geminiUpstream.behaviour = aimedAt('gemini-x', {
      fail: { status: 503, body: JSON.stringify({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }) },
    });
    try {
      const client = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url, retryOptions: { attempts: 1 } } });
      const whole = await client.models.generateContent({ model: 'gemini-pair', contents: 'hello', config: { maxOutputTokens: 3 } });
      assert.equal(whole.text, CHAT_ANSWER);
      let text = '';
      for await (const chunk of await client.models.generateContentStream({ model: 'gemini-pair', contents: 'hello', config: { maxOutputTokens: 3 } })) text += chunk.text ?? '';
      assert.equal(text, CHAT_ANSWER);
      assert.equal(asked(geminiUpstream, 'gemini-x').length, 2);
      assert.equal(asked(b, 'm-gem').length, 2);
    } finally {
      geminiUpstream.behaviour = {};
    }
  });

  test('a fallback model answers when every deployment failed; the ledger bills the model that answered', async () => {
    anthropicUpstream.behaviour = aimedAt('claude-y', {
      fail: { status: 529, body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) },
    });
    try {
      const client = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
      const stream = client.messages.stream({ model: 'claude-primary', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
      const message = await stream.finalMessage();
      assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', CHAT_ANSWER);
      assert.equal(message.model, 'claude-primary', 'the caller still sees the model it asked for');
      assert.deepEqual(await chat('claude-primary', false), { text: CHAT_ANSWER, attempts: '2' });
      const rows = await rowsOf('llama-backup', 2);
      for (const row of rows) {
        assert.equal(row.attempts, 2);
        assert.equal(row.deployment, 'a/m-backup');
        assert.ok(row.cost_usd > 0, 'priced as the fallback');
        assert.deepEqual(attemptLog(row).map((entry) => entry.model), ['claude-primary', 'llama-backup']);
      }
    } finally {
      anthropicUpstream.behaviour = {};
    }
  });
});

describe('faults before the first content', () => {
  test("a relayed Responses stream whose upstream fails before any content (response.failed) is retried", async () => {
    a.behaviour = aimedAt('m-native', { errorAfterChunks: 1 });
    try {
      const { data, response } = await openai.responses.create({ model: 'native', input: 'hello', max_output_tokens: 16, store: false, stream: true }).withResponse();
      const types: string[] = [];
      for await (const event of data) types.push(event.type);
      assert.equal(types.at(-1), 'response.completed');
      assert.ok(!types.includes('response.failed'), types.join(' '));
      assert.equal(response.headers.get('x-sluice-attempts'), '2');
      assert.equal(asked(b, 'm-native').length, 1);
    } finally {
      a.behaviour = {};
    }
  });

  test('a connection reset before the headers, and one after them before any event: both retried', async () => {
    // Answered first, so that the failing request goes on a reused keep-alive connection.
    assert.deepEqual(await chat('reset', false), { text: CHAT_ANSWER, attempts: null });
    a.behaviour = aimedAt('m-reset', { hangUp: 'after-request' });
    assert.deepEqual(await chat('reset', false), { text: CHAT_ANSWER, attempts: '2' });
    // The upstream read the request: the connection pool does not send it again, routing moves on.
    assert.equal(asked(a, 'm-reset').length, 2, 'the first upstream saw the failing request once');
    assert.equal(asked(b, 'm-reset').length, 1, 'the second upstream answered it');
    a.behaviour = aimedAt('m-reset', { resetAfterEvents: 0 });
    assert.deepEqual(await chat('reset', true), { text: CHAT_ANSWER, attempts: '2' });
    a.behaviour = {};
    assert.equal(asked(a, 'm-reset').length, 3);
    assert.equal(asked(b, 'm-reset').length, 2);
  });

  test('a stream event larger than max_response_bytes before any content: the attempt fails as an upstream error and the next deployment answers', async () => {
    // Bounded by the test, far past a's 1 MiB limit.
    a.behaviour = aimedAt('m-endless', { endlessEvent: { bytes: 16 * 1024 * 1024 } });
    try {
      assert.deepEqual(await chat('endless', true), { text: CHAT_ANSWER, attempts: '2' });
      assert.equal(asked(a, 'm-endless').length, 1);
      await eventually(() => (a.aborted.includes(asked(a, 'm-endless')[0]!) ? true : undefined), 2000, "a's stream to be cut");
      assert.equal(asked(b, 'm-endless').length, 1);
      const [row] = await rowsOf('endless', 1);
      assert.deepEqual(attemptLog(row!).map(({ deployment, status, errorKind }) => ({ deployment, status, errorKind })), [
        { deployment: 'a/m-endless', status: 502, errorKind: 'upstream_error' },
        { deployment: 'b/m-endless', status: 200, errorKind: null },
      ]);
    } finally {
      a.behaviour = {};
    }
  });

  test('a stall before the first token: the attempt is abandoned at first_token_timeout_ms and its prompt recorded', async () => {
    a.behaviour = aimedAt('m-stall', { stall: { beforeEvent: 0, ms: 10_000 } });
    try {
      const started = Date.now();
      assert.deepEqual(await chat('stall', true), { text: CHAT_ANSWER, attempts: '2' });
      assert.ok(Date.now() - started >= 800, 'not before the timeout');
      // The abandoned upstream request was cancelled, not left to run.
      await eventually(() => (a.aborted.some((request) => modelOf(request) === 'm-stall') ? true : undefined));
      const [row] = await rowsOf('stall', 1);
      const [abandoned] = attemptLog(row!);
      assert.equal(abandoned!.deployment, 'a/m-stall');
      assert.equal(abandoned!.errorKind, 'upstream_timeout');
      assert.ok(abandoned!.promptTokens > 0, 'the upstream had the prompt');
    } finally {
      a.behaviour = {};
    }
  });

  test('a stream is held until its first content: an Anthropic stream that stalls after message_start is retried and the caller sees one clean stream', async () => {
    anthropicUpstream.behaviour = aimedAt('claude-held', { stall: { beforeEvent: 2, ms: 10_000 } });
    try {
      const client = new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 });
      const stream = client.messages.stream({ model: 'held', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
      const events: string[] = [];
      stream.on('streamEvent', (event) => events.push(event.type));
      const message = await stream.finalMessage();
      assert.equal(message.content[0]!.type === 'text' ? message.content[0]!.text : '', CHAT_ANSWER);
      assert.equal(events.filter((type) => type === 'message_start').length, 1);
      assert.equal(asked(b, 'm-held').length, 1);
    } finally {
      anthropicUpstream.behaviour = {};
    }
  });
});

describe('deadlines', () => {
  test('a slow drip after the first token is not cut by first_token_timeout_ms', async () => {
    a.behaviour = aimedAt('m-drip', { tokenDelayMs: 400 });
    try {
      // Three tokens 400 ms apart: 1.2 s in all, past the 800 ms first-token timeout.
      assert.deepEqual(await chat('drip', true), { text: CHAT_ANSWER, attempts: null });
      assert.equal(asked(a, 'm-drip').length, 1);
    } finally {
      a.behaviour = {};
    }
  });

  test('deadline_ms bounds all the attempts of a request together', async () => {
    a.behaviour = aimedAt('m-late-deadline', { headerDelayMs: 5_000 });
    b.behaviour = aimedAt('m-late-deadline', { headerDelayMs: 5_000 });
    try {
      const started = Date.now();
      await assert.rejects(chat('deadline', false), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 504 && /routing deadline of 700 ms/.test(error.message));
      const seconds = (Date.now() - started) / 1000;
      assert.ok(seconds < 4, `gave up after ${seconds} s`);
      // The whole answer has no first-token timeout: the first attempt ran into the deadline, and no other was made.
      assert.equal(asked(a, 'm-late-deadline').length + asked(b, 'm-late-deadline').length, 1);
    } finally {
      a.behaviour = {};
      b.behaviour = {};
    }
  });
});

describe('no second attempt', () => {
  test('once content reached the caller, a failure is an error event in its dialect, not a retry', async () => {
    a.behaviour = aimedAt('m-late', { resetAfterEvents: 2 });
    try {
      let text = '';
      await assert.rejects(async () => {
        for await (const chunk of await openai.chat.completions.create({ model: 'late', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5, stream: true })) {
          text += chunk.choices[0]?.delta.content ?? '';
        }
      });
      assert.ok(text.length > 0, 'content had flowed');
      assert.equal(asked(b, 'm-late').length, 0);
      const [row] = await rowsOf('late', 1);
      assert.equal(row!.attempts, 1);
      assert.equal(row!.status, 502);
    } finally {
      a.behaviour = {};
    }
  });

  test("a 400 the upstream gave for the request itself goes back at once", async () => {
    a.behaviour = aimedAt('m-bad', { fail: { status: 400, body: JSON.stringify({ error: { message: 'bad prompt', type: 'BadRequestError', param: null, code: 400 } }) } });
    try {
      await assert.rejects(chat('bad', false), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 400 && /bad prompt/.test(error.message));
      assert.equal(asked(b, 'm-bad').length, 0);
      const [row] = await rowsOf('bad', 1);
      assert.equal(row!.attempts, 1);
    } finally {
      a.behaviour = {};
    }
  });

  test('the caller going away cancels the attempt in flight and makes no other', async () => {
    a.behaviour = aimedAt('m-gone', { headerDelayMs: 5_000 });
    try {
      const controller = new AbortController();
      const pending = openai.chat.completions.create({ model: 'gone', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 }, { signal: controller.signal });
      await eventually(() => (asked(a, 'm-gone').length > 0 ? true : undefined));
      controller.abort();
      await assert.rejects(pending);
      await eventually(() => (a.aborted.some((request) => modelOf(request) === 'm-gone') ? true : undefined));
      const [row] = await rowsOf('gone', 1);
      assert.equal(row!.status, 499);
      assert.equal(row!.attempts, 1);
    } finally {
      a.behaviour = {};
    }
  });
});

describe('deployment health', () => {
  test('the circuit opens after its failures, skips the deployment, then one trial after the cooldown closes it', async () => {
    a.behaviour = aimedAt('m-circ', { fail: { status: 500, body: JSON.stringify({ error: { message: 'boom', type: 'InternalServerError', param: null, code: 500 } }) } });
    for (let i = 0; i < 3; i++) assert.deepEqual(await chat('circuit', false), { text: CHAT_ANSWER, attempts: '2' });
    // The circuit opened on the third failure, before its answer came back.
    const openedBy = Date.now();
    assert.equal(asked(a, 'm-circ').length, 3);
    // Open: the failing deployment is not asked at all.
    assert.deepEqual(await chat('circuit', false), { text: CHAT_ANSWER, attempts: null });
    assert.equal(asked(a, 'm-circ').length, 3);
    const open = await eventually(async () => {
      const deployments = await statusOf('circuit');
      return deployments.find((d) => d.provider === 'a')?.state === 'open' ? deployments : undefined;
    });
    assert.equal(open.find((d) => d.provider === 'b')!.state, 'up');
    a.behaviour = {};
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, openedBy + CIRCUIT_COOLDOWN_MS + 100 - Date.now())));
    // The trial: the recovered deployment answers, and takes the traffic of its priority again.
    assert.deepEqual(await chat('circuit', false), { text: CHAT_ANSWER, attempts: null });
    assert.deepEqual(await chat('circuit', false), { text: CHAT_ANSWER, attempts: null });
    assert.equal(asked(a, 'm-circ').length, 5);
    await eventually(async () => ((await statusOf('circuit')).find((d) => d.provider === 'a')?.state === 'up' ? true : undefined));
  });

  test("Retry-After cools the deployment: it is skipped until then, shown as cooling, and used again after", async () => {
    a.behaviour = aimedAt(
      'm-cool',
      { fail: { status: 429, headers: { 'retry-after': '1' }, body: JSON.stringify({ error: { message: 'slow down', type: 'RateLimitError', param: null, code: 429 } }) } },
      (index) => index === a.requests.length - 1 && asked(a, 'm-cool').length === 1,
    );
    assert.deepEqual(await chat('cool', false), { text: CHAT_ANSWER, attempts: '2' });
    // Retry-After's whole second is the shortest cooling there is; it began before that answer came back.
    const cooledBy = Date.now();
    assert.deepEqual(await chat('cool', false), { text: CHAT_ANSWER, attempts: null });
    assert.equal(asked(a, 'm-cool').length, 1);
    assert.equal((await statusOf('cool')).find((d) => d.provider === 'a')!.state, 'cooling');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, cooledBy + 1100 - Date.now())));
    assert.deepEqual(await chat('cool', false), { text: CHAT_ANSWER, attempts: null });
    assert.equal(asked(a, 'm-cool').length, 2);
    a.behaviour = {};
  });

  test('the circuit counts a deployment failure even where retry_on says not to retry it', async () => {
    a.behaviour = aimedAt('m-noretry', { fail: OPENAI_503 });
    try {
      for (let i = 0; i < 2; i++) await assert.rejects(chat('no-retry', false), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 503);
      assert.equal(asked(a, 'm-noretry').length, 2, 'no retries');
      await eventually(async () => ((await statusOf('no-retry'))[0]!.state === 'open' ? true : undefined));
    } finally {
      a.behaviour = {};
    }
  });

  test('a fallback that cannot take the request (no log-probabilities on Anthropic) is passed over for the next', async () => {
    a.behaviour = aimedAt('m-logprobs', { fail: OPENAI_503 });
    const anthropicBefore = asked(anthropicUpstream, 'claude-x').length;
    try {
      const { data, response } = await openai.chat.completions
        .create({ model: 'needs-logprobs', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3, logprobs: true })
        .withResponse();
      assert.equal(data.choices[0]!.message.content, CHAT_ANSWER);
      assert.ok(data.choices[0]!.logprobs, 'answered with log-probabilities');
      assert.equal(response.headers.get('x-sluice-attempts'), '2', 'the passed-over fallback made no attempt');
      assert.equal(asked(b, 'm-logprobs').length, 1);
      assert.equal(asked(anthropicUpstream, 'claude-x').length, anthropicBefore, 'Anthropic was not asked');
    } finally {
      a.behaviour = {};
    }
  });

  test('when every circuit is open the request still goes to the least recently failed deployment', async () => {
    a.behaviour = aimedAt('m-open', { fail: OPENAI_503 });
    for (let i = 0; i < 2; i++) await assert.rejects(chat('lonely', false), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 503);
    await eventually(async () => ((await statusOf('lonely'))[0]!.state === 'open' ? true : undefined));
    a.behaviour = {};
    assert.deepEqual(await chat('lonely', false), { text: CHAT_ANSWER, attempts: null });
    assert.equal(asked(a, 'm-open').length, 3);
  });
});

test("the ledger and the upstreams' records agree on every attempt", async () => {
  const fakes: Record<string, FakeUpstream> = { a, b, anthropic: anthropicUpstream, google: geminiUpstream };
  const upstreamCounts = new Map<string, number>();
  for (const [provider, fake] of Object.entries(fakes)) {
    for (const request of fake.requests) {
      const name = `${provider}/${modelOf(request)}`;
      upstreamCounts.set(name, (upstreamCounts.get(name) ?? 0) + 1);
    }
  }
  const total = [...upstreamCounts.values()].reduce((sum, n) => sum + n, 0);
  const ledgerCounts = async () => {
    const counts = new Map<string, number>();
    for (const row of (await sluice.ledger())) {
      const log = attemptLog(row);
      if (log.length > 0) for (const entry of log) counts.set(entry.deployment, (counts.get(entry.deployment) ?? 0) + 1);
      else if (row.attempts === 1) counts.set(row.deployment!, (counts.get(row.deployment!) ?? 0) + 1);
    }
    return new Map([...counts].sort());
  };
  await eventually(async () => ([...(await ledgerCounts()).values()].reduce((sum, n) => sum + n, 0) >= total ? true : undefined)).catch(() => undefined);
  assert.deepEqual(await ledgerCounts(), new Map([...upstreamCounts].sort()));
});

describe('routing configuration', () => {
  const base = `
providers:
  - { id: a, kind: openai, base_url: 'http://127.0.0.1:1/v1' }
  - { id: c, kind: anthropic }
models:
`;
  const cases: [string, string, RegExp][] = [
    ['both forms', `  - { id: m, provider: a, deployments: [{ provider: a }] }`, /models\[0\] \(id: m\): field 'provider': give either 'provider' \(one deployment\) or 'deployments', not both/],
    ['neither form', `  - { id: m }`, /field 'provider': give either/],
    ['an unknown provider in a deployment', `  - { id: m, deployments: [{ provider: a }, { provider: nope }] }`, /field 'deployments\.1\.provider': no provider has the id 'nope'/],
    ['upstream_api on an Anthropic deployment', `  - { id: m, deployments: [{ provider: c, upstream_api: chat }] }`, /field 'deployments\.0\.upstream_api': applies to 'openai' providers only/],
    ['an unknown fallback', `  - { id: m, provider: a, fallbacks: [ghost] }`, /field 'fallbacks': no model has the id 'ghost'/],
    ['a model falling back to itself', `  - { id: m, provider: a, fallbacks: [m] }`, /field 'fallbacks': a model cannot fall back to itself/],
    ['a bad retry condition', `  - { id: m, provider: a, routing: { retry_on: [503, sometimes] } }`, /field 'routing\.retry_on\.1'/],
    ['a zero weight', `  - { id: m, deployments: [{ provider: a, weight: 0 }] }`, /field 'deployments\.0\.weight'/],
    ['an unknown strategy', `  - { id: m, provider: a, routing: { strategy: random } }`, /field 'routing\.strategy'/],
  ];
  for (const [what, model, message] of cases) {
    test(`refused: ${what}`, () => {
      assert.throws(() => parseConfig(base + model, 'sluice.yaml'), message);
    });
  }

  test('a model block beats its provider block, which beats the top level', () => {
    const config = parseConfig(
      `
routing: { retries: 5, first_token_timeout_ms: 1000, circuit: { failures: 9 } }
providers:
  - { id: a, kind: openai, base_url: 'http://127.0.0.1:1/v1', routing: { retries: 4, first_token_timeout_ms: 2000 } }
  - { id: b, kind: openai, base_url: 'http://127.0.0.1:2/v1' }
models:
  - { id: m, deployments: [{ provider: a }, { provider: b }], routing: { retries: 1 } }
`,
      'sluice.yaml',
    );
    const model = Catalogue.fromConfig(config).get('m')!;
    assert.equal(model.routing.retries, 1);
    const [onA, onB] = model.deployments;
    assert.equal(onA!.routing.firstTokenTimeoutMs, 2000);
    assert.equal(onB!.routing.firstTokenTimeoutMs, 1000);
    assert.equal(onB!.routing.circuit.failures, 9);
    assert.equal(onB!.routing.circuit.cooldownMs, ROUTING_DEFAULTS.circuit.cooldown_ms);
  });
});

test("docs/routing.md's and sluice.example.yaml's routing defaults are the code's", () => {
  const page = readFileSync(new URL('../docs/routing.md', import.meta.url), 'utf8');
  const block = /# Routing[\s\S]*?```yaml\n([\s\S]*?)```/.exec(page)![1]!;
  const documented = parseYaml(block.replace(/^models:[\s\S]*/m, '')) as { routing: Record<string, unknown> };
  assert.deepEqual(documented.routing, ROUTING_DEFAULTS);
  const example = readFileSync(new URL('../sluice.example.yaml', import.meta.url), 'utf8');
  const commented = /^# routing:.*\n((?:#   .*\n)+)/m.exec(example)![0]!.replace(/^# ?/gm, '');
  assert.deepEqual((parseYaml(commented) as { routing: unknown }).routing, ROUTING_DEFAULTS);
});
