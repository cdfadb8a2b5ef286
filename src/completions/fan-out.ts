import { setMaxListeners } from 'node:events';
import { randomBase62 } from '../ids.js';
import { planTurns, type ChatTurn } from './chat-translation.js';
import type { Completion, CompletionCall, CompletionChoice, CompletionEvent, Usage } from './completion.js';

/** Upstream calls in flight at once for one client request. */
const MAX_PARALLEL_TURNS = 8;
/** Events waiting for a slow client before the upstream reads pause. */
const QUEUE_HIGH_WATER = 256;

export interface TurnResult {
  /** Choices indexed from 0 within the turn. */
  readonly choices: readonly CompletionChoice[];
  readonly usage: Usage | null;
}

/** What a chat-style adapter does for one upstream call; the fan-out does the rest. */
export interface ChatTurnRunner {
  readonly maxChoicesPerCall: number;
  completeTurn(turn: ChatTurn, call: CompletionCall): Promise<TurnResult>;
  /** Resolves once the upstream accepted; yields `choice` events indexed within the turn, and `usage`. */
  streamTurn(turn: ChatTurn, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>>;
}

export function newCompletionId(): string {
  return `cmpl-${randomBase62(24)}`;
}

function addUsage(total: Usage | null, next: Usage | null): Usage | null {
  if (total === null || next === null) return null;
  return { promptTokens: total.promptTokens + next.promptTokens, completionTokens: total.completionTokens + next.completionTokens };
}

/** A child signal that also aborts when the call's own signal does, so one failure stops every turn. */
function linkedAbort(signal: AbortSignal): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  // Every turn's request listens on it; undici lets go of a finished one a tick late.
  setMaxListeners(4 * MAX_PARALLEL_TURNS, controller.signal);
  const onAbort = () => controller.abort();
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return { controller, release: () => signal.removeEventListener('abort', onAbort) };
}

/** Every turn answered whole, in parallel (bounded), reassembled prompt-major; echo prepended. */
export async function completeByTurns(runner: ChatTurnRunner, call: CompletionCall): Promise<Completion> {
  const turns = planTurns(call.request, runner.maxChoicesPerCall);
  const { controller, release } = linkedAbort(call.signal);
  const turnCall = { ...call, signal: controller.signal };
  const results = new Array<TurnResult>(turns.length);
  let next = 0;
  const worker = async () => {
    while (next < turns.length) {
      const i = next++;
      results[i] = await runner.completeTurn(turns[i]!, turnCall);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_TURNS, turns.length) }, worker));
  } catch (error) {
    controller.abort();
    throw error;
  } finally {
    release();
  }
  const choices: CompletionChoice[] = [];
  let usage: Usage | null = { promptTokens: 0, completionTokens: 0 };
  turns.forEach((turn, i) => {
    const result = results[i]!;
    usage = addUsage(usage, result.usage);
    for (const choice of result.choices) {
      choices.push({
        index: turn.firstChoice + choice.index,
        text: call.request.echo ? turn.prompt + choice.text : choice.text,
        logprobs: choice.logprobs,
        finishReason: choice.finishReason,
      });
    }
  });
  choices.sort((a, b) => a.index - b.index);
  return { id: newCompletionId(), created: Math.floor(Date.now() / 1000), choices, usage };
}

/**
 * Every turn streamed, merged into one event stream with global choice indexes. The first wave of
 * turns must be accepted before this resolves, so that a refusal is still an HTTP status; a turn
 * that fails later ends the merged stream with its error, and stops the others.
 */
export async function streamByTurns(runner: ChatTurnRunner, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
  const turns = planTurns(call.request, runner.maxChoicesPerCall);
  const { controller, release } = linkedAbort(call.signal);
  const turnCall = { ...call, signal: controller.signal };
  let firstWave: AsyncIterable<CompletionEvent>[];
  try {
    firstWave = await Promise.all(turns.slice(0, MAX_PARALLEL_TURNS).map((turn) => runner.streamTurn(turn, turnCall)));
  } catch (error) {
    controller.abort();
    release();
    throw error;
  }
  return mergeTurns(runner, turns, firstWave, turnCall, controller, release);
}

async function* mergeTurns(
  runner: ChatTurnRunner,
  turns: readonly ChatTurn[],
  firstWave: readonly AsyncIterable<CompletionEvent>[],
  turnCall: CompletionCall,
  controller: AbortController,
  release: () => void,
): AsyncGenerator<CompletionEvent> {
  const queue = new EventQueue<CompletionEvent>();
  let usage: Usage | null = { promptTokens: 0, completionTokens: 0 };
  let next = firstWave.length;
  let completed = false;

  const consume = async (turn: ChatTurn, events: AsyncIterable<CompletionEvent>) => {
    let turnUsage: Usage | null = null;
    for await (const event of events) {
      if (event.type === 'choice') await queue.push({ ...event, index: turn.firstChoice + event.index });
      else if (event.type === 'usage') turnUsage = event.usage;
    }
    usage = addUsage(usage, turnUsage);
  };
  const worker = async (slot: number) => {
    await consume(turns[slot]!, firstWave[slot]!);
    while (next < turns.length) {
      const turn = turns[next++]!;
      await consume(turn, await runner.streamTurn(turn, turnCall));
    }
  };
  Promise.all(firstWave.map((_, slot) => worker(slot))).then(
    () => queue.close(),
    (error: unknown) => queue.fail(error),
  );

  try {
    yield { type: 'start', id: newCompletionId(), created: Math.floor(Date.now() / 1000) };
    if (turnCall.request.echo) {
      for (const turn of turns) {
        for (let c = 0; c < turn.choices; c++) {
          yield { type: 'choice', index: turn.firstChoice + c, text: turn.prompt, logprobs: null, finishReason: null };
        }
      }
    }
    yield* queue;
    if (usage !== null) yield { type: 'usage', usage };
    completed = true;
  } finally {
    // On a failure or the client leaving, nothing upstream is left running; a normal end leaves
    // the finished connections to the pool.
    if (!completed) controller.abort();
    queue.close();
    release();
  }
}

/**
 * A hand-over from several producers to one consumer. A producer that gets ahead of a slow client
 * by QUEUE_HIGH_WATER events waits, which stops it reading its upstream: back-pressure.
 */
class EventQueue<T> implements AsyncIterable<T> {
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
