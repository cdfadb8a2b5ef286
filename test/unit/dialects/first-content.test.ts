import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import type { StreamPart } from '../../../src/generation/model.js';
import type { WireOperation } from '../../../src/generation/provider.js';
import { holdUntilContent, isContentPart } from '../../../src/routing/first-content.js';
import { relayFormat } from '../../../src/wire/relay-format.js';

/** Whether routing holds a relayed stream past `event`: its wire's first content. */
const isRelayedContent = (operation: WireOperation, event: Readonly<Record<string, unknown>>): boolean => relayFormat(operation).isContent(event);
/** The failure routing throws for `event` read before a relayed stream's first content, if it is one. */
const relayedFailure = (operation: WireOperation, event: Readonly<Record<string, unknown>>, providerId: string) => relayFormat(operation).failureIn?.(event, providerId);

/**
 * Which stream items commit an answer: a stream is held until its first content, so an attempt that
 * fails before it can still be retried elsewhere. Each caller wire format's events, as its upstream
 * sends them, on one side of that line or the other.
 */

type Event = Readonly<Record<string, unknown>>;

interface Row {
  readonly event: Event;
  readonly content: boolean;
  readonly why: string;
}

const chunk = (choice: Record<string, unknown>): Event => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }] });
const completion = (choice: Record<string, unknown>): Event => ({ id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }] });
const candidate = (c: Record<string, unknown>): Event => ({ candidates: [{ index: 0, ...c }], modelVersion: 'gemini-2.5-flash' });

const TABLE: Readonly<Record<Exclude<WireOperation, 'anthropic.count_tokens' | 'gemini.countTokens' | 'openai.rerank' | 'openai.moderations' | 'openai.images.generations'>, readonly Row[]>> = {
  'openai.chat': [
    { event: chunk({ delta: { role: 'assistant', content: '' } }), content: false, why: 'the role alone, with empty content (the first chunk OpenAI sends)' },
    { event: chunk({ delta: { role: 'assistant', content: null } }), content: false, why: 'the role, content null' },
    { event: chunk({ delta: { role: 'assistant', content: '', tool_calls: [] } }), content: false, why: 'an empty tool_calls list' },
    { event: chunk({ delta: { content: 'Hi' } }), content: true, why: 'text' },
    { event: chunk({ delta: { role: 'assistant', content: 'Hi' } }), content: true, why: 'the role and text together' },
    { event: chunk({ delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] } }), content: true, why: 'a tool call begins' },
    { event: chunk({ delta: { reasoning_content: 'Let me think.' } }), content: true, why: 'reasoning (vLLM, DeepSeek)' },
    { event: chunk({ delta: { reasoning: 'Let me think.' } }), content: true, why: 'reasoning under vLLM’s newer name' },
    { event: chunk({ delta: { refusal: 'I cannot.' } }), content: true, why: 'a refusal' },
    { event: chunk({ delta: {}, finish_reason: 'stop' }), content: true, why: 'the end: an empty answer is an answer' },
    { event: { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 9, completion_tokens: 0, total_tokens: 9 } }, content: false, why: 'the usage chunk (choices empty)' },
    { event: { id: 'chatcmpl-1', object: 'chat.completion.chunk' }, content: false, why: 'no choices at all' },
  ],
  'openai.completions': [
    { event: completion({ text: '' }), content: false, why: 'empty text' },
    { event: completion({ text: 'Once' }), content: true, why: 'text' },
    { event: completion({ text: '', finish_reason: 'length' }), content: true, why: 'the end, with no text' },
    { event: completion({ text: '', finish_reason: null, stop_reason: null }), content: false, why: 'vLLM’s extra fields, nothing said' },
    { event: { id: 'cmpl-1', object: 'text_completion', choices: [], usage: { prompt_tokens: 4, completion_tokens: 0, total_tokens: 4 } }, content: false, why: 'the usage chunk' },
  ],
  'openai.responses': [
    { event: { type: 'response.created', sequence_number: 0, response: { status: 'in_progress' } }, content: false, why: 'the response announced' },
    { event: { type: 'response.in_progress', sequence_number: 1, response: { status: 'in_progress' } }, content: false, why: 'still in progress' },
    { event: { type: 'response.queued', sequence_number: 1, response: { status: 'queued' } }, content: false, why: 'queued' },
    { event: { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { type: 'message', content: [] } }, content: false, why: 'an item announced, empty' },
    { event: { type: 'response.content_part.added', sequence_number: 3, output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } }, content: false, why: 'a content part announced, empty' },
    { event: { type: 'response.reasoning_summary_part.added', sequence_number: 3, output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' } }, content: false, why: 'a summary part announced, empty' },
    { event: { type: 'response.output_text.delta', sequence_number: 4, delta: 'Hi' }, content: true, why: 'text' },
    { event: { type: 'response.reasoning_summary_text.delta', sequence_number: 4, delta: 'Thinking' }, content: true, why: 'reasoning summary text' },
    { event: { type: 'response.function_call_arguments.delta', sequence_number: 4, delta: '{"a"' }, content: true, why: 'a function call’s arguments' },
    { event: { type: 'response.output_item.done', sequence_number: 5, output_index: 0, item: { type: 'reasoning', encrypted_content: 'gAAA' } }, content: true, why: 'an item done (encrypted reasoning comes whole)' },
    { event: { type: 'response.completed', sequence_number: 6, response: { status: 'completed' } }, content: true, why: 'the end' },
    { event: { type: 'response.incomplete', sequence_number: 6, response: { status: 'incomplete' } }, content: true, why: 'the end, cut short' },
    { event: { type: 'response.failed', sequence_number: 2, response: { status: 'failed', error: { code: 'server_error' } } }, content: false, why: 'a failure (see relayedFailure: thrown for a retry)' },
    { event: { type: 'error', sequence_number: 2, code: 'server_error', message: 'boom', param: null }, content: false, why: 'an error event (thrown for a retry)' },
  ],
  'anthropic.messages': [
    { event: { type: 'message_start', message: { id: 'msg_1', content: [], usage: { input_tokens: 25, output_tokens: 1 } } }, content: false, why: 'the message announced' },
    { event: { type: 'ping' }, content: false, why: 'a keep-alive' },
    { event: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, content: false, why: 'a block announced, empty' },
    { event: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} } }, content: false, why: 'a tool block announced, before its input' },
    { event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }, content: true, why: 'text' },
    { event: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm' } }, content: true, why: 'thinking' },
    { event: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } }, content: true, why: 'a tool’s input (even an empty first fragment)' },
    { event: { type: 'content_block_stop', index: 0 }, content: false, why: 'a block closed (its content came before)' },
    { event: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } }, content: true, why: 'the end' },
    { event: { type: 'message_stop' }, content: true, why: 'the end' },
  ],
  'gemini.generateContent': [
    { event: candidate({ content: { parts: [{ text: 'Hi' }], role: 'model' } }), content: true, why: 'text' },
    { event: candidate({ content: { parts: [{ text: 'Hmm', thought: true }], role: 'model' } }), content: true, why: 'a thought' },
    { event: candidate({ content: { parts: [{ functionCall: { name: 'f', args: {} } }], role: 'model' } }), content: true, why: 'a function call' },
    { event: candidate({ content: { parts: [], role: 'model' } }), content: false, why: 'no parts' },
    { event: candidate({ content: { role: 'model' } }), content: false, why: 'a content without parts' },
    { event: candidate({ finishReason: 'SAFETY' }), content: true, why: 'the end, filtered: no content, a finish reason' },
    { event: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 5 } }, content: false, why: 'a blocked prompt: no candidates' },
    { event: { usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 }, modelVersion: 'gemini-2.5-flash' }, content: false, why: 'usage alone' },
  ],
};

describe('relayed events: what counts as first content, per caller wire format', () => {
  for (const [operation, rows] of Object.entries(TABLE) as [WireOperation, readonly Row[]][]) {
    for (const row of rows) {
      const type = typeof row.event.type === 'string' ? `${row.event.type}: ` : '';
      test(`${operation}: ${type}${row.why} → ${row.content ? 'content' : 'not yet'}`, () => {
        assert.equal(isRelayedContent(operation, row.event), row.content);
      });
    }
  }

  test('a token count answers whole: anything it relays is its answer', () => {
    assert.equal(isRelayedContent('anthropic.count_tokens', { input_tokens: 12 }), true);
    assert.equal(isRelayedContent('gemini.countTokens', { totalTokens: 12 }), true);
  });
});

describe('relayed failures before the first content', () => {
  test('a Responses upstream’s response.failed and error events become a retryable upstream error, its own words left out', () => {
    for (const event of TABLE['openai.responses'].filter((row) => row.event.type === 'response.failed' || row.event.type === 'error').map((row) => row.event)) {
      const failure = relayedFailure('openai.responses', event, 'openai-east');
      assert.ok(failure instanceof GatewayError);
      assert.equal(failure.kind, 'upstream_error');
      assert.equal(failure.upstreamFailure, 500);
      assert.equal(failure.message, "The upstream provider 'openai-east' failed before its answer began.");
      assert.doesNotMatch(failure.message, /boom/);
    }
  });

  test('no other event of any format is a failure (the adapters throw their own error events)', () => {
    for (const [operation, rows] of Object.entries(TABLE) as [WireOperation, readonly Row[]][]) {
      for (const row of rows) {
        if (operation === 'openai.responses' && (row.event.type === 'response.failed' || row.event.type === 'error')) continue;
        assert.equal(relayedFailure(operation, row.event, 'p'), undefined, `${operation}: ${row.why}`);
      }
    }
    assert.equal(relayedFailure('anthropic.messages', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'p'), undefined);
  });
});

describe('translated stream parts', () => {
  const PARTS: readonly [StreamPart, boolean][] = [
    [{ type: 'start', id: 'x', created: 1 }, false],
    [{ type: 'usage', usage: { input: 1, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 } }, false],
    [{ type: 'text', choice: 0, text: 'Hi' }, true],
    [{ type: 'text', choice: 0, text: '' }, true],
    [{ type: 'reasoning', choice: 0, text: 'Hmm' }, true],
    [{ type: 'reasoning_signature', choice: 0, signature: 'sig' }, true],
    [{ type: 'redacted_reasoning', choice: 0, data: 'x' }, true],
    [{ type: 'tool_call_start', choice: 0, index: 0, id: 'call_1', name: 'f' }, true],
    [{ type: 'tool_call_delta', choice: 0, index: 0, arguments: '{}' }, true],
    [{ type: 'tool_call_end', choice: 0, index: 0 }, true],
    [{ type: 'finish', choice: 0, finish: { reason: 'stop', raw: undefined } }, true],
  ];
  for (const [part, content] of PARTS) {
    test(`${part.type}${part.type === 'text' && part.text === '' ? ' (empty)' : ''} → ${content ? 'content' : 'not yet'}`, () => {
      assert.equal(isContentPart(part), content);
    });
  }
});

/** A source that says what was read of it and whether it was closed. */
function source<T>(items: readonly T[], failAt?: { index: number; error: Error }) {
  const state = { read: 0, closed: false };
  const iterable: AsyncIterable<T> = {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        async next() {
          if (failAt !== undefined && i === failAt.index) throw failAt.error;
          if (i >= items.length) return { done: true, value: undefined };
          state.read++;
          return { done: false, value: items[i++]! };
        },
        async return() {
          state.closed = true;
          return { done: true, value: undefined };
        },
      };
    },
  };
  return { iterable, state };
}

async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('holding a stream until its first content', () => {
  const isContent = (item: string) => item.startsWith('content');

  test('reads up to the first content only, then replays what it held and goes on with the rest', async () => {
    const { iterable, state } = source(['start', 'role', 'content 1', 'content 2', 'end']);
    const held = await holdUntilContent(iterable, isContent);
    assert.equal(state.read, 3, 'nothing read past the first content before the caller asks');
    assert.deepEqual(await drain(held), ['start', 'role', 'content 1', 'content 2', 'end']);
  });

  test('a stream that ends before any content is replayed whole', async () => {
    const { iterable } = source(['start', 'usage']);
    assert.deepEqual(await drain(await holdUntilContent(iterable, isContent)), ['start', 'usage']);
  });

  test('a failure item before the first content is thrown, and the source closed', async () => {
    const { iterable, state } = source(['start', 'failed', 'content']);
    const failure = new GatewayError('upstream_error', 'failed early', { upstreamFailure: 500 });
    await assert.rejects(holdUntilContent(iterable, isContent, (item) => (item === 'failed' ? failure : undefined)), (thrown) => thrown === failure);
    assert.equal(state.closed, true);
    assert.equal(state.read, 2);
  });

  test('a failure item after the first content is passed on: the answer has begun', async () => {
    const { iterable } = source(['content', 'failed']);
    const held = await holdUntilContent(iterable, isContent, (item) => (item === 'failed' ? new GatewayError('upstream_error', 'late') : undefined));
    assert.deepEqual(await drain(held), ['content', 'failed']);
  });

  test('a source that throws before its first content rejects, so that the attempt can be retried', async () => {
    const error = new GatewayError('upstream_unreachable', 'reset');
    const { iterable } = source(['start', 'content'], { index: 1, error });
    await assert.rejects(holdUntilContent(iterable, isContent), (thrown) => thrown === error);
  });

  test('a caller that stops reading the replay closes the source', async () => {
    const { iterable, state } = source(['start', 'content 1', 'content 2']);
    const held = await holdUntilContent(iterable, isContent);
    for await (const item of held) if (item === 'content 1') break;
    assert.equal(state.closed, true);
  });
});
