import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createParser } from 'eventsource-parser';
import type { ProviderConfig } from '../../../src/config/config-file.js';
import { chatCompletions } from '../../../src/dialects/openai/chat/operation.js';
import { legacyCompletions } from '../../../src/dialects/openai/legacy/operation.js';
import { anthropicMessages } from '../../../src/dialects/anthropic/messages/operation.js';
import type { Usage } from '../../../src/generation/model.js';
import type { AnswerContext, Operation, ParsedRequest, StreamReply, WireRequest } from '../../../src/generation/operation.js';
import { RelayedChunks } from '../../../src/providers/openai-compatible.js';
import { UpstreamClient } from '../../../src/providers/upstream-client.js';
import { unreadableUpstream } from '../../../src/core/upstream-errors.js';
import { writeReply } from '../../../src/pipeline/write.js';
import { usageFromOpenAI } from '../../../src/wire/openai/usage.js';
import { ChatReading, CompletionReading } from '../../../src/wire/openai/reading.js';
import { keepUpstreamText, UPSTREAM_TEXT } from '../../../src/wire/relay-format.js';
import { MemorySink } from '../support/memory-sink.js';

/**
 * A same-dialect OpenAI stream relayed as the upstream's own text (each chunk's `model` rewritten
 * in place) against the parsed relay it replaces (the events read whole by eventsource-parser,
 * each parsed, read and serialised again): the same usage, generated texts and failure for the
 * meter, and the same chunks for the caller, whatever byte boundaries the upstream's reads fall on.
 */

const CONFIG = { id: 'up', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', max_response_bytes: 1 << 20, headers: {} } as unknown as ProviderConfig;
const WIRE: WireRequest = { headers: {}, path: '/v1/chat/completions', query: new URLSearchParams() };

const chatHead = (id: string, extra = '') => `{"id":"${id}","object":"chat.completion.chunk","created":1700000000,"model":"up-model"${extra},"choices":[`;
const cmplHead = (id: string, extra = '') => `{"id":"${id}","object":"text_completion","created":1700000000,"model":"up-model"${extra},"choices":[`;

/** Recorded-style streams: vLLM's and OpenAI's shapes, UTF-8 beyond ASCII, CRLF, comments, `usage: null` or not, an error, no usage, n = 2. */
const CHAT_STREAMS: Readonly<Record<string, string>> = {
  openai: [
    `data: ${chatHead('c1', ',"system_fingerprint":"fp_1","service_tier":"default"')}{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
    `data: ${chatHead('c1', ',"system_fingerprint":"fp_1","service_tier":"default"')}{"index":0,"delta":{"content":"Grüße, 世界 🌊"},"logprobs":null,"finish_reason":null}],"usage":null}`,
    `data: ${chatHead('c1', ',"system_fingerprint":"fp_1","service_tier":"default"')}{"index":0,"delta":{"content":" \\"model\\": ok"},"logprobs":null,"finish_reason":null}],"usage":null}`,
    `data: ${chatHead('c1', ',"system_fingerprint":"fp_1","service_tier":"default"')}{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
    `data: ${chatHead('c1', ',"system_fingerprint":"fp_1","service_tier":"default"')}],"usage":{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":0}}}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  vllmCrlfComments: [
    ': keep-alive',
    `data: ${chatHead('c2')}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
    `data: ${chatHead('c2')}{"index":0,"delta":{"reasoning_content":"hmm… ✓"},"logprobs":null,"finish_reason":null}]}`,
    `data: ${chatHead('c2')}{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\\"ä\\":"}}]},"logprobs":null,"finish_reason":null}]}`,
    `data: ${chatHead('c2')}{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}`,
    `data: ${chatHead('c2')}],"usage":{"prompt_tokens":20,"total_tokens":27,"completion_tokens":7}}`,
    'data: [DONE]',
  ].join('\r\n\r\n') + '\r\n\r\n',
  noUsage: [
    `data: ${chatHead('c3')}{"index":0,"delta":{"role":"assistant","content":"ñ"},"logprobs":null,"finish_reason":null}]}`,
    `data: ${chatHead('c3')}{"index":1,"delta":{"role":"assistant","content":"日本"},"logprobs":null,"finish_reason":null}]}`,
    `data: ${chatHead('c3')}{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"},{"index":1,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  spacedAndContinuousUsage: [
    `data: {"id": "c4", "object": "chat.completion.chunk", "created": 1700000000, "model": "up-model", "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}`,
    `data: ${chatHead('c4')}{"index":0,"delta":{"content":"y"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  errorMidStream: [
    `data: ${chatHead('c5')}{"index":0,"delta":{"role":"assistant","content":"Hallo"},"logprobs":null,"finish_reason":null}],"usage":null}`,
    `data: ${chatHead('c5')}{"index":0,"delta":{"content":" Welt"},"logprobs":null,"finish_reason":null}],"usage":null}`,
    'data: {"error":{"message":"The server had an error","type":"server_error","code":null}}',
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  // A key spelled with an escape, and another ending in `\"model`: only a key named model is rewritten, so the upstream's model never shows.
  modelKeyEscaped: [
    `data: {"id":"c7","object":"chat.completion.chunk","created":1700000000,"x\\"model":"up-model","\\u006dodel":"up-model","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":"stop"}]}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  endsBeforeDone: `data: ${chatHead('c6')}{"index":0,"delta":{"content":"über"},"logprobs":null,"finish_reason":null}]}\n\n`,
};

const COMPLETION_STREAMS: Readonly<Record<string, string>> = {
  vllm: [
    `data: ${cmplHead('k1')}{"index":0,"text":" Ça","logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
    `data: ${cmplHead('k1')}{"index":0,"text":" va 🙂","logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
    `data: ${cmplHead('k1')}{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
    `data: ${cmplHead('k1')}],"usage":{"prompt_tokens":2,"total_tokens":5,"completion_tokens":3}}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  openaiUsageNull: [
    `data: ${cmplHead('k2', ',"system_fingerprint":"fp"')}{"text":"a\\u00e9","index":0,"logprobs":null,"finish_reason":null}],"usage":null}`,
    `data: ${cmplHead('k2', ',"system_fingerprint":"fp"')}{"text":"b","index":1,"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
    `data: ${cmplHead('k2', ',"system_fingerprint":"fp"')}{"text":"c","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
    `data: ${cmplHead('k2', ',"system_fingerprint":"fp"')}],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}`,
    'data: [DONE]',
  ].join('\r\n\r\n') + '\r\n\r\n',
  noUsageEcho: [
    `data: ${cmplHead('k3')}{"index":0,"text":"Say","logprobs":null,"finish_reason":null}]}`,
    `data: ${cmplHead('k3')}{"index":0,"text":" hi ✋","logprobs":null,"finish_reason":null}]}`,
    `data: ${cmplHead('k3')}{"index":0,"text":"","finish_reason":"stop"}]}`,
    'data: [DONE]',
  ].join('\n\n') + '\n\n',
  errorMidStream: [
    `data: ${cmplHead('k4')}{"index":0,"text":"x","logprobs":null,"finish_reason":null}]}`,
    'data: {"error":{"message":"boom","type":"server_error"}}',
  ].join('\n\n') + '\n\n',
};

/** What the meter and the caller saw of one relay. */
interface Relayed {
  readonly usage: Usage | null;
  readonly counted: boolean;
  readonly generated: readonly string[];
  readonly failure: string | undefined;
  /** The caller's events, each parsed (`[DONE]` as the string). */
  readonly events: readonly unknown[];
}

function body(chunks: readonly Buffer[]): AsyncIterable<Buffer> {
  return {
    async *[Symbol.asyncIterator]() {
      for (const chunk of chunks) yield chunk;
    },
  };
}

/** The stream's bytes in pieces of `size` (multi-byte characters and CRLFs split where they fall). */
function sliced(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

function callerEvents(sinkBody: string): unknown[] {
  return sinkBody
    .split('\n\n')
    .filter((event) => event !== '')
    .map((event) => {
      assert.ok(event.startsWith('data: '), event);
      const data = event.slice('data: '.length);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

async function relay<Request extends ParsedRequest>(operation: Operation<Request>, requestBody: object, events: AsyncIterable<Readonly<Record<string, unknown>>>): Promise<Relayed> {
  const request = operation.parse(requestBody, WIRE);
  const sink = new MemorySink();
  const context = { provider: { id: 'up' }, sink } as unknown as AnswerContext;
  const reply = operation.answer(request, { kind: 'relaying', events }, context) as StreamReply<Readonly<Record<string, unknown>>>;
  const written = await writeReply(reply, sink, (generated) => operation.countUsage(request, generated));
  return {
    usage: written.usage,
    counted: written.counted,
    generated: reply.generated(),
    failure: (written.failure ?? written.thrown)?.message,
    events: callerEvents(sink.body),
  };
}

/** The relay as it was: the whole stream read by eventsource-parser, each chunk parsed (no upstream text kept), errors and [DONE] as before. */
async function* parsedRelay(text: string): AsyncGenerator<Readonly<Record<string, unknown>>> {
  const data: string[] = [];
  createParser({ onEvent: (event) => data.push(event.data) }).feed(text);
  let done = false;
  for (const item of data) {
    if (item === '[DONE]') {
      done = true;
      break;
    }
    const chunk = JSON.parse(item) as Record<string, unknown>;
    if (chunk.error !== undefined && chunk.error !== null) throw new UpstreamClient(CONFIG, {}).midStreamFailure((chunk.error as { message?: string }).message);
    yield chunk;
  }
  if (!done) throw unreadableUpstream('up', 'a stream that ended before [DONE]');
}

/** The chunks as the new relay reads them, the upstream's text on each where it is kept; counts how many kept it. */
function byteRelay(chunks: readonly Buffer[], seen: { withText: number }): AsyncIterable<Readonly<Record<string, unknown>>> {
  const source = new RelayedChunks(new UpstreamClient(CONFIG, {}), body(chunks));
  return {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        const step = await source.next();
        if (step.done !== true && step.value[UPSTREAM_TEXT] !== undefined) seen.withText++;
        return step;
      },
      return: () => source.return(),
    }),
  };
}

/** The meter's reading of the parsed relay, as the wire's own reading has it (the reference for usage and texts). */
function reading(operation: 'chat' | 'completions', text: string): { reported: Usage | null; texts: string[] } {
  const read = operation === 'chat' ? new ChatReading('up') : new CompletionReading('up');
  const data: string[] = [];
  createParser({ onEvent: (event) => data.push(event.data) }).feed(text);
  for (const item of data) {
    if (item === '[DONE]') break;
    const chunk = JSON.parse(item) as Record<string, unknown>;
    if (chunk.error != null) break;
    read.see(chunk);
  }
  return { reported: read.reported, texts: [...read.generated()] };
}

/** Every key the parsed relay wrote has the same value in what the byte relay wrote; the byte relay adds only the upstream's own fields. */
function assertSameForCaller(bytes: readonly unknown[], parsed: readonly unknown[], name: string): void {
  assert.equal(bytes.length, parsed.length, `${name}: event count`);
  parsed.forEach((event, i) => {
    const mine = bytes[i];
    if (typeof event === 'string' || typeof mine === 'string') return assert.equal(mine, event, `${name}: event ${i}`);
    const theirs = event as Record<string, unknown>;
    const ours = mine as Record<string, unknown>;
    for (const key of Object.keys(theirs)) assert.deepEqual(ours[key], theirs[key], `${name}: event ${i}, ${key}`);
    for (const key of Object.keys(ours)) if (!(key in theirs)) assert.ok(['system_fingerprint', 'service_tier', 'stop_reason'].includes(key) || key in theirs, `${name}: event ${i} adds ${key}`);
    if (Array.isArray(theirs.choices)) {
      (theirs.choices as Record<string, unknown>[]).forEach((choice, c) => {
        for (const key of Object.keys(choice)) assert.deepEqual((ours.choices as Record<string, unknown>[])[c]![key], choice[key], `${name}: event ${i}, choice ${c}, ${key}`);
      });
    }
  });
}

const SIZES = [1, 2, 3, 5, 7, 13, 61, 1 << 16];

function cases(operation: 'chat' | 'completions'): [string, string, object][] {
  const streams = operation === 'chat' ? CHAT_STREAMS : COMPLETION_STREAMS;
  const out: [string, string, object][] = [];
  for (const [name, text] of Object.entries(streams)) {
    for (const includeUsage of [false, true]) {
      const base = operation === 'chat' ? { model: 'public-model', messages: [{ role: 'user', content: 'Say hi' }], stream: true } : { model: 'public-model', prompt: 'Say', stream: true, echo: name === 'noUsageEcho' };
      out.push([`${name}${includeUsage ? ' (include_usage)' : ''}`, text, includeUsage ? { ...base, stream_options: { include_usage: true } } : base]);
    }
  }
  return out;
}

for (const operationName of ['chat', 'completions'] as const) {
  const operation = (operationName === 'chat' ? chatCompletions : legacyCompletions) as Operation<ParsedRequest>;
  describe(`a same-dialect ${operationName} stream relayed as the upstream's text`, () => {
    for (const [name, text, requestBody] of cases(operationName)) {
      test(`${name}: the meter and the caller see what the parsed relay gave them, at any byte boundary`, async () => {
        const parsed = await relay(operation, requestBody, parsedRelay(text));
        const expected = reading(operationName, text);
        let passedOn = 0;
        for (const size of SIZES) {
          const seen = { withText: 0 };
          const bytes = await relay(operation, requestBody, byteRelay(sliced(text, size), seen));
          passedOn += seen.withText;
          assert.deepEqual(bytes.usage, parsed.usage, `usage, ${size}-byte reads`);
          assert.equal(bytes.counted, parsed.counted, `counted, ${size}-byte reads`);
          assert.deepEqual(bytes.generated, parsed.generated, `generated, ${size}-byte reads`);
          assert.equal(bytes.failure, parsed.failure, `failure, ${size}-byte reads`);
          assertSameForCaller(bytes.events, parsed.events, `${size}-byte reads`);
          // Legacy chunks serialised again carry only Sluice's fields: the upstream's own show that its text was passed on.
          if (name.startsWith('openaiUsageNull')) assert.ok(bytes.events.some((event) => (event as { system_fingerprint?: string }).system_fingerprint === 'fp'), 'passed on as it came');
        }
        // The reference reading agrees with both: the upstream's usage when it reported one, else the generated texts counted.
        if (expected.reported !== null && parsed.failure === undefined) assert.deepEqual(parsed.usage, expected.reported);
        if (!name.startsWith('noUsageEcho')) assert.deepEqual([...parsed.generated], expected.texts);
        assert.ok(passedOn > 0 || name.startsWith('endsBeforeDone'), 'the upstream text was kept');
      });
    }
  });
}

describe('every two-way split of a stream', () => {
  test('each boundary, multi-byte characters and CRLFs included, relays the same', async () => {
    const text = CHAT_STREAMS.vllmCrlfComments!;
    const requestBody = { model: 'public-model', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } };
    const parsed = await relay(chatCompletions as Operation<ParsedRequest>, requestBody, parsedRelay(text));
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 1; at < bytes.length; at++) {
      const relayed = await relay(chatCompletions as Operation<ParsedRequest>, requestBody, byteRelay([bytes.subarray(0, at), bytes.subarray(at)], { withText: 0 }));
      assert.deepEqual(relayed.usage, parsed.usage, `split at ${at}`);
      assert.deepEqual(relayed.generated, parsed.generated, `split at ${at}`);
      assert.deepEqual(relayed.events, parsed.events, `split at ${at}`);
    }
    assert.deepEqual(parsed.usage, usageFromOpenAI({ prompt_tokens: 20, total_tokens: 27, completion_tokens: 7 }));
  });
});

describe("a same-dialect Anthropic Messages stream relayed as the upstream's text", () => {
  const events: [string, object][] = [
    ['message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-up', content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } }],
    ['ping', { type: 'ping' }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Grüße 🌊' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
  const text = events.map(([type, data]) => `event: ${type}\r\ndata: ${JSON.stringify(data)}\r\n\r\n`).join('');

  test('the caller and the meter see what the parsed relay gave them, at any byte boundary', async () => {
    const requestBody = { model: 'public-claude', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'Hi' }] };
    const asWritten = async (source: AsyncIterable<Readonly<Record<string, unknown>>>) => {
      const operation = anthropicMessages as unknown as Operation<ParsedRequest>;
      const request = operation.parse(requestBody, { headers: {}, path: '/v1/messages', query: new URLSearchParams() });
      const sink = new MemorySink();
      const reply = operation.answer(request, { kind: 'relaying', events: source }, { provider: { id: 'up' }, sink } as unknown as AnswerContext) as StreamReply<Readonly<Record<string, unknown>>>;
      const written = await writeReply(reply, sink, (generated) => operation.countUsage(request, generated));
      return { usage: written.usage, generated: reply.generated(), body: sink.body };
    };
    const parsed = await asWritten(
      (async function* () {
        for (const [, data] of events) yield JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
      })(),
    );
    for (const size of SIZES) {
      const client = new UpstreamClient(CONFIG, {});
      const relayed = await asWritten(
        (async function* () {
          for await (const { data } of client.events(body(sliced(text, size)))) {
            yield keepUpstreamText(client.parseEvent(data), data);
          }
        })(),
      );
      assert.deepEqual(relayed.usage, parsed.usage, `${size}-byte reads`);
      assert.deepEqual(relayed.generated, parsed.generated, `${size}-byte reads`);
      const framed = (body: string) => body.split('\n\n').filter(Boolean).map((event) => { const [head, data] = event.split('\ndata: '); return [head, JSON.parse(data!)]; });
      assert.deepEqual(framed(relayed.body), framed(parsed.body), `${size}-byte reads`);
      assert.ok(relayed.body.includes('"model":"public-claude"') && !relayed.body.includes('claude-up'));
    }
  });
});
