import { setMaxListeners } from 'node:events';
import type { CatalogueModel } from '../catalogue/catalogue.js';
import { randomBase62 } from '../core/ids.js';
import type { EmbeddingRequest, EmbeddingResult } from './embedding.js';
import { addUsage, type GeneratedChoice, type GenerationRequest, type GenerationResult, type StreamPart, type Usage } from './model.js';
import type { GenerationCall, Provider } from './provider.js';

/** Upstream calls in flight at once for one client request. */
const MAX_PARALLEL_CALLS = 8;
/** Parts waiting for a slow client before the upstream reads pause. */
const QUEUE_HIGH_WATER = 256;

/** One upstream call of a request that needs several: its request, and where its choices go. */
export interface SubCall {
  readonly request: GenerationRequest;
  readonly firstChoice: number;
  readonly choices: number;
}

/** What every sub-call shares. */
export interface CallTarget {
  readonly model: CatalogueModel;
  readonly requestId: string;
  readonly signal: AbortSignal;
  /** Headers that carry the caller's trace context on to the upstream (W3C `traceparent`), when there is one. */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** `request.n` choices in as few calls as the upstream's own `n` allows. */
export function splitChoices(request: GenerationRequest, maxChoicesPerCall: number, firstChoice = 0): SubCall[] {
  const calls: SubCall[] = [];
  for (let k = 0; k < request.n; k += maxChoicesPerCall) {
    calls.push({ request, firstChoice: firstChoice + k, choices: Math.min(maxChoicesPerCall, request.n - k) });
  }
  return calls;
}

export function newGenerationId(prefix: string): string {
  return `${prefix}${randomBase62(24)}`;
}

function callOf(sub: SubCall, target: CallTarget, signal: AbortSignal): GenerationCall {
  return { request: sub.request, model: target.model, requestId: target.requestId, signal, choices: sub.choices, traceHeaders: target.traceHeaders };
}

/** A child signal that also aborts when the parent does, so one failure stops every call. */
function linkedAbort(signal: AbortSignal): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  // Every call's request listens on it; undici lets go of a finished one a tick late.
  setMaxListeners(4 * MAX_PARALLEL_CALLS, controller.signal);
  const onAbort = () => controller.abort();
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return { controller, release: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * `call` on every item, at most MAX_PARALLEL_CALLS at once, results in the items' order; the first
 * failure aborts the calls still running (through the signal they are given) and is thrown.
 */
async function callAll<Item, Result>(items: readonly Item[], signal: AbortSignal, call: (item: Item, signal: AbortSignal) => Promise<Result>): Promise<Result[]> {
  const { controller, release } = linkedAbort(signal);
  const results = new Array<Result>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await call(items[i]!, controller.signal);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_CALLS, items.length) }, worker));
  } catch (error) {
    controller.abort();
    throw error;
  } finally {
    release();
  }
  return results;
}

/** Usage summed over calls; known only if every call reported it. */
function totalUsage(usages: readonly (Usage | null)[]): Usage | null {
  let total = usages[0] ?? null;
  for (let i = 1; i < usages.length && total !== null; i++) total = usages[i] === null ? null : addUsage(total, usages[i]!);
  return total;
}

/** Every sub-call answered whole, in parallel (bounded), choices re-indexed, usage summed. */
export async function generateAll(provider: Provider, subCalls: readonly SubCall[], target: CallTarget): Promise<GenerationResult> {
  if (subCalls.length === 1 && subCalls[0]!.firstChoice === 0) return provider.generate(callOf(subCalls[0]!, target, target.signal));
  const results = await callAll(subCalls, target.signal, (sub, signal) => provider.generate(callOf(sub, target, signal)));
  const choices: GeneratedChoice[] = [];
  subCalls.forEach((sub, i) => {
    for (const choice of results[i]!.choices) choices.push({ ...choice, index: sub.firstChoice + choice.index });
  });
  choices.sort((a, b) => a.index - b.index);
  return { id: results[0]!.id, created: results[0]!.created, choices, usage: totalUsage(results.map((result) => result.usage)) };
}

/** Every batch embedded, in parallel (bounded), vectors joined in input order, usage summed. */
export async function embedAll(provider: Provider, batches: readonly EmbeddingRequest[], encoding: 'float' | 'base64', target: CallTarget): Promise<EmbeddingResult> {
  const embed = (request: EmbeddingRequest, signal: AbortSignal) => provider.embed({ request, model: target.model, requestId: target.requestId, signal, encoding, traceHeaders: target.traceHeaders });
  if (batches.length === 1) return embed(batches[0]!, target.signal);
  const results = await callAll(batches, target.signal, embed);
  return { embeddings: results.flatMap((result) => result.embeddings), usage: totalUsage(results.map((result) => result.usage)) };
}

/**
 * Every sub-call streamed, merged into one stream with global choice indexes. The first wave must
 * be accepted before this resolves, so that a refusal is still an HTTP status; a call that fails
 * later ends the merged stream with its error, and stops the others.
 */
export async function streamAll(provider: Provider, subCalls: readonly SubCall[], target: CallTarget): Promise<AsyncIterable<StreamPart>> {
  if (subCalls.length === 1 && subCalls[0]!.firstChoice === 0) return provider.stream(callOf(subCalls[0]!, target, target.signal));
  const { controller, release } = linkedAbort(target.signal);
  let firstWave: AsyncIterable<StreamPart>[];
  try {
    firstWave = await Promise.all(subCalls.slice(0, MAX_PARALLEL_CALLS).map((sub) => provider.stream(callOf(sub, target, controller.signal))));
  } catch (error) {
    controller.abort();
    release();
    throw error;
  }
  return merge(provider, subCalls, firstWave, target, controller, release);
}

async function* merge(
  provider: Provider,
  subCalls: readonly SubCall[],
  firstWave: readonly AsyncIterable<StreamPart>[],
  target: CallTarget,
  controller: AbortController,
  release: () => void,
): AsyncGenerator<StreamPart> {
  const queue = new PartQueue<StreamPart>();
  let usage: Usage | null = null;
  let usageMissing = false;
  let start: StreamPart | undefined;
  let next = firstWave.length;
  let completed = false;

  const consume = async (sub: SubCall, parts: AsyncIterable<StreamPart>) => {
    let callUsage: Usage | null = null;
    for await (const part of parts) {
      if (part.type === 'usage') callUsage = part.usage;
      else if (part.type === 'start') start ??= part;
      else await queue.push({ ...part, choice: sub.firstChoice + part.choice });
    }
    if (callUsage === null) usageMissing = true;
    else usage = usage === null ? callUsage : addUsage(usage, callUsage);
  };
  const worker = async (slot: number) => {
    await consume(subCalls[slot]!, firstWave[slot]!);
    while (next < subCalls.length) {
      const sub = subCalls[next++]!;
      await consume(sub, await provider.stream(callOf(sub, target, controller.signal)));
    }
  };
  Promise.all(firstWave.map((_, slot) => worker(slot))).then(
    () => queue.close(),
    (error: unknown) => queue.fail(error),
  );

  try {
    let startSent = false;
    for await (const part of queue) {
      if (!startSent) {
        startSent = true;
        yield start ?? { type: 'start', id: '', created: Math.floor(Date.now() / 1000) };
      }
      yield part;
    }
    if (!startSent) yield start ?? { type: 'start', id: '', created: Math.floor(Date.now() / 1000) };
    if (usage !== null && !usageMissing) yield { type: 'usage', usage };
    completed = true;
  } finally {
    // On a failure or the caller leaving, nothing upstream is left running; a normal end leaves
    // the finished connections to the pool.
    if (!completed) controller.abort();
    queue.close();
    release();
  }
}

/**
 * A hand-over from several producers to one consumer. A producer that gets ahead of a slow client
 * by QUEUE_HIGH_WATER parts waits, which stops it reading its upstream: back-pressure.
 */
class PartQueue<T> implements AsyncIterable<T> {
  private buffer: T[] = [];
  private wake: (() => void) | null = null;
  private waitingForRoom: (() => void)[] = [];
  private closed = false;
  private failure: { error: unknown } | null = null;

  async push(item: T): Promise<void> {
    this.buffer.push(item);
    this.notify();
    if (this.buffer.length >= QUEUE_HIGH_WATER && !this.closed) await new Promise<void>((resolve) => this.waitingForRoom.push(resolve));
  }

  close(): void {
    this.closed = true;
    this.notify();
    this.makeRoom();
  }

  fail(error: unknown): void {
    this.failure ??= { error };
    this.notify();
  }

  private makeRoom(): void {
    const waiting = this.waitingForRoom;
    this.waitingForRoom = [];
    for (const resume of waiting) resume();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.buffer.length > 0) {
        const items = this.buffer;
        this.buffer = [];
        this.makeRoom();
        yield* items;
        continue;
      }
      if (this.failure !== null) throw this.failure.error;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
