import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NOT_PLAIN } from '../../../src/dialects/openai/plain-body.js';
import { chatBodySchema, plainChatBody } from '../../../src/dialects/openai/chat/request.js';
import { completionBodySchema, plainCompletionBody } from '../../../src/dialects/openai/legacy/request.js';
import { loadJsonFixtures, type RequestFixture } from './support/fixtures.js';

/**
 * The hand-written checks of the common chat and completion bodies stand in for their zod schemas:
 * whatever a check takes, the schema takes too and makes the very same object (keys in the same
 * order, so a relayed body is the same bytes); what it does not take, the schema decides.
 */

type Check = (body: unknown) => unknown;
interface Schema {
  safeParse(body: unknown): { success: boolean; data?: unknown };
}

function assertStandsIn(check: Check, schema: Schema, body: unknown, expectTaken: boolean | undefined): void {
  const input = structuredClone(body);
  const fast = check(input);
  assert.deepEqual(input, body, 'the check left its input as it was');
  if (expectTaken !== undefined) assert.equal(fast !== NOT_PLAIN, expectTaken, `taken: ${JSON.stringify(body)}`);
  if (fast === NOT_PLAIN) return;
  const slow = schema.safeParse(structuredClone(body));
  assert.ok(slow.success, `the schema refuses what the check took: ${JSON.stringify(body)}`);
  assert.deepEqual(fast, slow.data);
  assert.equal(JSON.stringify(fast), JSON.stringify(slow.data), 'the same keys in the same order');
}

const SYSTEM = { role: 'system', content: 'You are a helpful assistant.' };
const USER = { role: 'user', content: 'Say hi' };

describe('plain chat bodies', () => {
  const taken: unknown[] = [
    { model: 'm', messages: [SYSTEM, USER], max_tokens: 16 },
    { max_tokens: 16, messages: [{ content: 'Say hi', role: 'user', extra: { a: 1 } }], vendor_field: [1, 2], model: 'm' },
    { model: 'm', messages: [USER], stream: true, stream_options: { include_usage: true, other: 1 }, temperature: 0.5, top_p: 1, n: 2, stop: ['x', 'y'], seed: -3, user: 'u' },
    { model: 'm', messages: [{ role: 'developer', content: [{ type: 'text', text: 'be brief', cache: true }] }, USER], response_format: { type: 'json_object' }, reasoning_effort: 'low' },
    {
      model: 'm',
      messages: [
        USER,
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }], refusal: null, annotations: [] },
        { role: 'tool', tool_call_id: 'c1', content: 'result' },
      ],
      tool_choice: 'none',
      max_completion_tokens: 100,
      logprobs: true,
      top_logprobs: 3,
      temperature: null,
    },
  ];
  const left: unknown[] = [
    { model: 'm', messages: [] },
    { model: '', messages: [USER] },
    { model: 'm', messages: [USER], max_tokens: 0 },
    { model: 'm', messages: [USER], temperature: 3 },
    { model: 'm', messages: [USER], n: 1.5 },
    { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] },
    { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
    { model: 'm', messages: [USER], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'auto' },
    { model: 'm', messages: [USER], metadata: { a: 'b' } },
    { model: 'm', messages: [USER], stream: 'yes' },
    { model: 'm', messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: null, function: { name: 'f', arguments: '' } }] }] },
    JSON.parse('{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":{"a":1}}'),
    JSON.parse('{"model":"m","messages":[{"role":"user","content":"x","__proto__":1}]}'),
  ];
  test('common bodies are taken, as the schema makes them', () => {
    for (const body of taken) assertStandsIn(plainChatBody, chatBodySchema, body, true);
  });
  test('anything unusual or wrong is left to the schema', () => {
    for (const body of left) assertStandsIn(plainChatBody, chatBodySchema, body, false);
  });
  test('every recorded request: the check stands in for the schema', () => {
    for (const { fixture } of loadJsonFixtures<RequestFixture>('requests/openai-chat')) assertStandsIn(plainChatBody, chatBodySchema, fixture.request.body, undefined);
  });
});

describe('plain completion bodies', () => {
  const taken: unknown[] = [
    { model: 'm', prompt: 'Say hi', max_tokens: 16 },
    { prompt: ['a', 'b'], model: 'm', best_of: 2, n: 1, echo: false, suffix: null, logprobs: 0, vendor: { x: 1 } },
    { model: 'm', prompt: 'x', stream: true, stream_options: { include_usage: false }, stop: 'END', presence_penalty: -2, frequency_penalty: 2, seed: 7, user: 'u', max_tokens: 0 },
  ];
  const left: unknown[] = [
    { model: 'm' },
    { model: 'm', prompt: [] },
    { model: 'm', prompt: [1, 2, 3] },
    { model: 'm', prompt: 'x', max_tokens: -1 },
    { model: 'm', prompt: 'x', logit_bias: { '50256': -100 } },
    { model: 'm', prompt: 'x', stream_options: null, top_p: 2 },
    { model: 7, prompt: 'x' },
    JSON.parse('{"model":"m","prompt":"x","__proto__":{"a":1}}'),
  ];
  test('common bodies are taken, as the schema makes them', () => {
    for (const body of taken) assertStandsIn(plainCompletionBody, completionBodySchema, body, true);
  });
  test('anything unusual or wrong is left to the schema', () => {
    for (const body of left) assertStandsIn(plainCompletionBody, completionBodySchema, body, false);
  });
  test('every recorded request: the check stands in for the schema', () => {
    for (const { fixture } of loadJsonFixtures<RequestFixture>('requests/openai-completions')) assertStandsIn(plainCompletionBody, completionBodySchema, fixture.request.body, undefined);
  });
});
