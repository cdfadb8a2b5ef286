/**
 * Fan-out: a request's `n` choices split over the upstream's own `n`, the calls made in parallel
 * (at most eight at once), their answers and streams merged with global choice indexes and summed
 * usage, and what one call's failure does to the others.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { generateAll, splitChoices, streamAll, type CallTarget } from '../../../src/generation/fan-out.js';
import { generationRequest, usageOf, type GenerationRequest, type StreamPart } from '../../../src/generation/model.js';
import type { GenerationCall } from '../../../src/generation/provider.js';
import { catalogueOf } from './router-harness.js';
import { ScriptedProvider, textStream } from './scripted-provider.js';
import { VirtualTime } from './virtual-time.js';

const MODEL = catalogueOf('  - { id: m, provider: a }').get('m')!;

function request(n: number): GenerationRequest {
  return generationRequest({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], n });
}

let time: VirtualTime | undefined;
afterEach(() => time?.uninstall());

function setup(): { time: VirtualTime; provider: ScriptedProvider; caller: AbortController; target: CallTarget } {
  time = new VirtualTime().install();
  const caller = new AbortController();
  return { time, provider: new ScriptedProvider('a', time.read), caller, target: { model: MODEL, requestId: 'req-1', signal: caller.signal } };
}

/** Settles `promise` while moving virtual time on. */
async function within<T>(time: VirtualTime, promise: Promise<T>, ms = 10_000): Promise<T> {
  let result: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => (result = { value }),
    (error: unknown) => (result = { error }),
  );
  for (let waited = 0; result === undefined && waited <= ms; waited++) await time.advance(1);
  if (result === undefined) throw new Error('did not settle');
  if ('error' in result) throw result.error;
  return result.value;
}

async function collect(time: VirtualTime, parts: AsyncIterable<StreamPart>): Promise<StreamPart[]> {
  return within(
    time,
    (async () => {
      const out: StreamPart[] = [];
      for await (const part of parts) out.push(part);
      return out;
    })(),
  );
}

describe('splitting n over calls', () => {
  test('as few calls as the upstream’s own n allows, each taking the next choices', () => {
    const r = request(5);
    assert.deepEqual(
      splitChoices(r, 2).map((call) => [call.firstChoice, call.choices]),
      [[0, 2], [2, 2], [4, 1]],
    );
    assert.ok(splitChoices(r, 2).every((call) => call.request === r));
    assert.deepEqual(splitChoices(request(3), 8).map((call) => [call.firstChoice, call.choices]), [[0, 3]]);
    assert.deepEqual(splitChoices(request(4), 1).map((call) => [call.firstChoice, call.choices]), [[0, 1], [1, 1], [2, 1], [3, 1]]);
    assert.deepEqual(splitChoices(request(3), 2, 10).map((call) => [call.firstChoice, call.choices]), [[10, 2], [12, 1]]);
  });
});

describe('whole answers', () => {
  test('one call for every choice: the upstream’s answer as it is, on the caller’s own signal', async () => {
    const { time, provider, target } = setup();
    const result = await within(time, generateAll(provider, splitChoices(request(2), 8), target));
    assert.equal(provider.calls.length, 1);
    assert.equal(provider.calls[0]!.signal, target.signal);
    assert.equal(provider.calls[0]!.choices, 2);
    assert.deepEqual(result.choices.map((choice) => choice.index), [0, 1]);
  });

  test('choices of several calls are numbered globally and in order, whichever call answered first', async () => {
    const { time, provider, target } = setup();
    provider.next(
      { answer: 'first', after: 30, usage: usageOf(10, 7, { cachedInput: 4, reasoning: 3 }) },
      { answer: 'second', after: 10, usage: usageOf(10, 6, { cacheWrite: 2 }) },
      { answer: 'third', after: 20, usage: usageOf(10, 2, { reasoning: 1 }) },
    );
    const result = await within(time, generateAll(provider, splitChoices(request(5), 2), target));
    assert.deepEqual(
      result.choices.map((choice) => [choice.index, choice.content[0]!.type === 'text' ? choice.content[0]!.text : '']),
      [[0, 'first #0'], [1, 'first #1'], [2, 'second #0'], [3, 'second #1'], [4, 'third #0']],
    );
    assert.deepEqual(provider.calls.map((call) => call.choices), [2, 2, 1]);
    assert.deepEqual(result.usage, { input: 30, output: 15, cachedInput: 4, cacheWrite: 2, reasoning: 4 }, 'usage summed field by field');
    assert.equal(result.id, 'gen-a-3', "the first call's id (made when all three had been called)");
  });

  test('usage is unknown if any call reported none', async () => {
    const { time, provider, target } = setup();
    provider.next({ answer: 'x' }, { answer: 'y', usage: null }, { answer: 'z' });
    const result = await within(time, generateAll(provider, splitChoices(request(3), 1), target));
    assert.equal(result.usage, null);
  });

  test('at most eight calls at once: twenty calls of 10 ms take three rounds', async () => {
    const { time, provider, target } = setup();
    provider.otherwise = { answer: 'x', after: 10 };
    const started = time.now;
    const result = await within(time, generateAll(provider, splitChoices(request(20), 1), target));
    assert.equal(provider.mostInFlight, 8);
    assert.equal(result.choices.length, 20);
    assert.equal(time.now - started, 30);
  });

  test('one call failing fails the whole, stops the calls in flight and starts no more; the caller’s signal is untouched', async () => {
    const { time, provider, target } = setup();
    provider.otherwise = { answer: 'x', after: 10 };
    const refusal = provider.httpError(503);
    provider.next({ answer: 'x', after: 10 }, { answer: 'x', after: 10 }, { answer: 'x', after: 10 }, { fail: refusal, after: 5 });
    await assert.rejects(within(time, generateAll(provider, splitChoices(request(20), 1), target)), (error) => error === refusal);
    assert.equal(provider.calls.length, 8, 'the first eight, and no more');
    assert.ok(provider.calls.every((call) => call.signal.aborted));
    assert.equal(target.signal.aborted, false);
  });

  test('the caller going away aborts every call', async () => {
    const { time, provider, caller, target } = setup();
    provider.otherwise = 'hang';
    const all = generateAll(provider, splitChoices(request(3), 1), target);
    await time.advance(1);
    caller.abort();
    await assert.rejects(within(time, all), (error) => error instanceof GatewayError);
    assert.equal(provider.calls.length, 3);
    assert.ok(provider.calls.every((call) => call.signal.aborted));
  });
});

describe('streams', () => {
  const finish = (choice: number): StreamPart => ({ type: 'finish', choice, finish: { reason: 'stop', raw: 'stop' } });

  test('one call for every choice: the upstream’s own stream, on the caller’s signal', async () => {
    const { time, provider, target } = setup();
    const parts = await within(time, streamAll(provider, splitChoices(request(1), 1), target));
    assert.equal(provider.calls[0]!.signal, target.signal);
    assert.deepEqual(await collect(time, parts), textStream('answer from a', 1, usageOf(10, 5)));
  });

  test('merged: one start first, every part at its global choice, one usage summed at the end', async () => {
    const { time, provider, target } = setup();
    provider.next(
      { stream: [{ wait: 5 }, { type: 'start', id: 'late', created: 2 }, { type: 'text', choice: 0, text: 'x0' }, { type: 'text', choice: 1, text: 'x1' }, finish(0), finish(1), { type: 'usage', usage: usageOf(5, 4, { cachedInput: 1 }) }] },
      { stream: [{ type: 'start', id: 'early', created: 1 }, { type: 'text', choice: 0, text: 'y0' }, { wait: 10 }, { type: 'tool_call_start', choice: 0, index: 0, id: 't', name: 'f' }, finish(0), { type: 'usage', usage: usageOf(5, 3, { reasoning: 2 }) }] },
    );
    const parts = await collect(time, await within(time, streamAll(provider, splitChoices(request(3), 2), target)));
    assert.deepEqual(parts[0], { type: 'start', id: 'early', created: 1 }, 'the first start to arrive, once');
    assert.equal(parts.filter((part) => part.type === 'start').length, 1);
    const placed = parts.filter((part) => part.type !== 'start' && part.type !== 'usage').map((part) => `${part.type}@${(part as { choice: number }).choice}`);
    assert.deepEqual(placed.sort(), ['finish@0', 'finish@1', 'finish@2', 'text@0', 'text@1', 'text@2', 'tool_call_start@2'].sort());
    assert.deepEqual(parts.at(-1), { type: 'usage', usage: { input: 10, output: 7, cachedInput: 1, cacheWrite: 0, reasoning: 2 } });
    assert.equal(parts.filter((part) => part.type === 'usage').length, 1);
  });

  test('no usage part when any call reported none; a start made up when none came', async () => {
    const { time, provider, target } = setup();
    provider.next({ stream: [{ type: 'text', choice: 0, text: 'a' }, finish(0), { type: 'usage', usage: usageOf(1, 1) }] }, { stream: [{ type: 'text', choice: 0, text: 'b' }, finish(0)] });
    const parts = await collect(time, await within(time, streamAll(provider, splitChoices(request(2), 1), target)));
    assert.equal(parts[0]!.type, 'start');
    assert.equal((parts[0] as { id: string }).id, '');
    assert.equal(parts.some((part) => part.type === 'usage'), false);
  });

  test('a refusal of any first-wave call is the whole stream’s refusal, before anything is read; the others are stopped', async () => {
    const { time, provider, target } = setup();
    const refusal = provider.httpError(429);
    provider.next({ stream: textStream('x') }, { fail: refusal }, { stream: textStream('z') });
    await assert.rejects(within(time, streamAll(provider, splitChoices(request(3), 1), target)), (error) => error === refusal);
    assert.ok(provider.calls.every((call) => call.signal.aborted));
  });

  test('a call failing mid-stream ends the merged stream with its error and stops the others', async () => {
    const { time, provider, target } = setup();
    const broken = provider.connectError();
    provider.next({ stream: [{ type: 'start', id: 's', created: 1 }, { type: 'text', choice: 0, text: 'a' }, { wait: 100 }, finish(0)] }, { stream: [{ type: 'text', choice: 0, text: 'b' }, { wait: 5 }, { fail: broken }] });
    const merged = await within(time, streamAll(provider, splitChoices(request(2), 1), target));
    const seen: StreamPart[] = [];
    await assert.rejects(
      within(
        time,
        (async () => {
          for await (const part of merged) seen.push(part);
        })(),
      ),
      (error) => error === broken,
    );
    assert.deepEqual(seen.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text).sort(), ['a', 'b'], 'what came before the failure was passed on');
    assert.ok(provider.calls[0]!.signal.aborted, 'the healthy call was stopped');
  });

  test('the reader stopping early stops every call', async () => {
    const { time, provider, target } = setup();
    provider.otherwise = { stream: [{ type: 'text', choice: 0, text: 'x' }, 'hang'] };
    const merged = await within(time, streamAll(provider, splitChoices(request(3), 1), target));
    await within(
      time,
      (async () => {
        for await (const part of merged) if (part.type === 'text') break;
      })(),
    );
    assert.ok(provider.calls.every((call) => call.signal.aborted));
    assert.equal(target.signal.aborted, false);
  });

  test('more than eight calls: the first eight are accepted up front, the rest start as slots free', async () => {
    const { time, provider, target } = setup();
    provider.otherwise = { stream: [{ type: 'text', choice: 0, text: 'x' }, { wait: 10 }, finish(0)] };
    const merged = await within(time, streamAll(provider, splitChoices(request(10), 1), target));
    assert.equal(provider.calls.length, 8);
    const parts = await collect(time, merged);
    assert.equal(provider.calls.length, 10);
    assert.deepEqual(
      parts.filter((part) => part.type === 'text').map((part) => (part as { choice: number }).choice).sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
  });

  test('back-pressure: a call that gets 256 parts ahead of a reader who stopped reading waits', async () => {
    const { time, target } = setup();
    let produced = 0;
    /** An upstream that would send 10,000 parts as fast as it is read. */
    class Firehose extends ScriptedProvider {
      override async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
        void call;
        return (async function* () {
          for (let i = 0; i < 10_000; i++) {
            produced++;
            yield { type: 'text', choice: 0, text: String(i) } as StreamPart;
          }
        })();
      }
    }
    const merged = await within(time, streamAll(new Firehose('f'), splitChoices(request(2), 1), target));
    const reader = merged[Symbol.asyncIterator]();
    await reader.next();
    await time.advance(10);
    assert.ok(produced >= 256 && produced <= 2 * 256 + 2, `the producers paused at the high-water mark: ${produced} produced`);
    await reader.return?.();
  });
});
