/**
 * The embedding model's pure parts: float32 base64 both ways, a request split into calls of what an
 * upstream takes, the plan's refusals, and batches embedded in parallel and joined in input order.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { base64ToFloats, embeddingInputs, encodedAs, floatsToBase64, splitEmbeddingRequest, type EmbeddingRequest, type EmbeddingResult } from '../../../src/generation/embedding.js';
import { planEmbeddings } from '../../../src/generation/embedding-plan.js';
import { embedAll } from '../../../src/generation/fan-out.js';
import { usageOf } from '../../../src/generation/model.js';
import type { Capabilities, EmbedCall, Provider } from '../../../src/generation/provider.js';
import { catalogueOf } from './router-harness.js';

const MODEL = catalogueOf('  - { id: m, provider: a, endpoints: [embeddings] }').get('m')!;

function texts(count: number, prefix = 't'): EmbeddingRequest {
  return { input: { kind: 'text', texts: Array.from({ length: count }, (_, i) => `${prefix}${i}`) }, extensions: {} };
}

const caps = (maxEmbeddingInputs: number, embedsTokenIds: boolean): Capabilities => ({
  upstream: 'a test upstream',
  maxChoicesPerCall: 1,
  maxTemperature: 2,
  maxStopSequences: null,
  logprobs: false,
  logitBias: false,
  penalties: false,
  topK: false,
  jsonWithoutSchema: false,
  forwardsExtensions: false,
  maxEmbeddingInputs,
  embedsTokenIds,
});

describe('float32 base64', () => {
  test("little-endian float32s, as OpenAI's encoding_format base64 answers", () => {
    assert.equal(floatsToBase64([1, -2.5]), Buffer.from('0000803f000020c0', 'hex').toString('base64'));
    assert.deepEqual(base64ToFloats('AACAPwAAIMA='), [1, -2.5]);
    assert.deepEqual(base64ToFloats(floatsToBase64([0.5, 0.25, -0.125, 3])), [0.5, 0.25, -0.125, 3]);
    assert.deepEqual(base64ToFloats(''), []);
  });

  test('a vector is converted only when the caller asked for the other encoding', () => {
    const floats = { kind: 'float', values: [1, 2] } as const;
    const base64 = { kind: 'base64', data: floatsToBase64([1, 2]) } as const;
    assert.equal(encodedAs(floats, 'float'), floats.values, 'the same array, not a copy');
    assert.equal(encodedAs(base64, 'base64'), base64.data);
    assert.equal(encodedAs(floats, 'base64'), base64.data);
    assert.deepEqual(encodedAs(base64, 'float'), [1, 2]);
    // A double that float32 cannot hold is rounded as OpenAI's own base64 is.
    assert.deepEqual(encodedAs({ kind: 'base64', data: floatsToBase64([0.1]) }, 'float'), [Math.fround(0.1)]);
  });
});

describe('splitting a request', () => {
  test('calls of at most perCall inputs, in order, the rest of the request kept', () => {
    const request: EmbeddingRequest = { ...texts(250), dimensions: 4, taskType: 'RETRIEVAL_QUERY', extensions: { user: 'u' } };
    const calls = splitEmbeddingRequest(request, 100);
    assert.deepEqual(calls.map((call) => embeddingInputs(call.input).length), [100, 100, 50]);
    assert.deepEqual(calls.flatMap((call) => embeddingInputs(call.input)), embeddingInputs(request.input));
    for (const call of calls) assert.deepEqual([call.dimensions, call.taskType, call.extensions], [4, 'RETRIEVAL_QUERY', { user: 'u' }]);
  });

  test('token ids split the same way; a request that fits is left whole', () => {
    const tokens: EmbeddingRequest = { input: { kind: 'tokens', tokens: [[1], [2, 3], [4]] }, extensions: {} };
    assert.deepEqual(splitEmbeddingRequest(tokens, 2).map((call) => call.input), [{ kind: 'tokens', tokens: [[1], [2, 3]] }, { kind: 'tokens', tokens: [[4]] }]);
    const small = texts(3);
    assert.equal(splitEmbeddingRequest(small, 3)[0], small);
  });
});

describe('the plan', () => {
  test('an upstream without embeddings is refused naming the model; token ids to a text-only one naming the input', () => {
    assert.throws(() => planEmbeddings([texts(1)], 'float', MODEL, caps(0, false), 'input'), (error: GatewayError) => {
      assert.equal(error.status, 400);
      assert.equal(error.param, 'model');
      assert.match(error.message, /`m` cannot make embeddings/);
      return true;
    });
    const ids: EmbeddingRequest = { input: { kind: 'tokens', tokens: [[1, 2]] }, extensions: {} };
    assert.throws(() => planEmbeddings([ids], 'float', MODEL, caps(100, false), 'requests'), (error: GatewayError) => error.param === 'requests' && error.status === 400);
    assert.equal(planEmbeddings([ids], 'base64', MODEL, caps(100, true), 'input').encoding, 'base64');
  });

  test('each request split on its own, in order', () => {
    const plan = planEmbeddings([texts(150, 'a'), texts(30, 'b')], 'float', MODEL, caps(100, false), 'requests');
    assert.deepEqual(plan.batches.map((batch) => embeddingInputs(batch.input).length), [100, 50, 30]);
    assert.equal(embeddingInputs(plan.batches[2]!.input)[0], 'b0');
  });
});

/** An upstream at the Provider seam that embeds each text as [its number], answering the calls in reverse order of arrival. */
function reversingUpstream(usage: (call: EmbedCall) => EmbeddingResult['usage']): { provider: Provider; calls: EmbedCall[]; release(): void } {
  const calls: EmbedCall[] = [];
  const pending: (() => void)[] = [];
  const provider = {
    embed(call: EmbedCall): Promise<EmbeddingResult> {
      calls.push(call);
      const input = call.request.input;
      assert.equal(input.kind, 'text');
      return new Promise((resolve, reject) => {
        if (input.texts.includes('fail')) return reject(new GatewayError('upstream_error', 'failed'));
        call.signal.addEventListener('abort', () => reject(new GatewayError('upstream_error', 'aborted')));
        pending.push(() => resolve({ embeddings: input.texts.map((text) => ({ kind: 'float', values: [Number(text.slice(1))] })), usage: usage(call) }));
      });
    },
  } as unknown as Provider;
  return { provider, calls, release: () => pending.splice(0).reverse().forEach((answer) => answer()) };
}

describe('embedding every batch', () => {
  test('answers that come back out of order are joined in input order, usage summed', async () => {
    const upstream = reversingUpstream((call) => usageOf(embeddingInputs(call.request.input).length, 0));
    const batches = splitEmbeddingRequest(texts(25), 10);
    const target = { model: MODEL, requestId: 'r', signal: new AbortController().signal };
    const result = embedAll(upstream.provider, batches, 'base64', target);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(upstream.calls.length, 3, 'the calls run in parallel');
    assert.ok(upstream.calls.every((call) => call.encoding === 'base64'), 'the caller’s encoding is asked of every call');
    upstream.release();
    const { embeddings, usage } = await result;
    assert.deepEqual(embeddings.map((e) => (e.kind === 'float' ? e.values[0] : NaN)), Array.from({ length: 25 }, (_, i) => i));
    assert.equal(usage?.input, 25);
  });

  test('usage is unknown when any call reported none; one failure fails the request and aborts the rest', async () => {
    let n = 0;
    const upstream = reversingUpstream(() => (n++ === 1 ? null : usageOf(1, 0)));
    const target = { model: MODEL, requestId: 'r', signal: new AbortController().signal };
    const result = embedAll(upstream.provider, splitEmbeddingRequest(texts(3), 1), 'float', target);
    await new Promise((resolve) => setImmediate(resolve));
    upstream.release();
    assert.equal((await result).usage, null);

    const failing = reversingUpstream(() => null);
    const request: EmbeddingRequest = { input: { kind: 'text', texts: ['t0', 't1', 'fail'] }, extensions: {} };
    await assert.rejects(embedAll(failing.provider, splitEmbeddingRequest(request, 1), 'float', target), /failed/);
    assert.equal(failing.calls.length, 3);
    assert.ok(failing.calls.every((call) => call.signal.aborted), 'the calls still running are aborted');
  });
});
