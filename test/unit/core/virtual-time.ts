/**
 * Virtual time for in-process tests. The router's clock is injectable, but its waits (the backoff
 * before another attempt) and an attempt's deadline and first-token timers use the global
 * `setTimeout`; while installed, those timers run on this clock instead, and `advance` fires them
 * in order, letting the promise chains each one starts settle before the next fires, so that a
 * timer armed by code resumed on the way is honoured too. Nothing waits for real time.
 */
import { setImmediate as realSetImmediate } from 'node:timers';

interface Timer {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
}

/** What `setTimeout` hands back under virtual time: enough of a Node timer for the code under test. */
class VirtualTimeout {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return false;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

/** Lets every pending promise continuation run: each round of a real `setImmediate` drains them (a few rounds, for code that itself waits a turn). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => realSetImmediate(resolve));
}

export class VirtualTime {
  private timers: Timer[] = [];
  private nextId = 1;
  private readonly realSetTimeout = globalThis.setTimeout;
  private readonly realClearTimeout = globalThis.clearTimeout;
  private installed = false;

  /** A Unix time in ms on a whole second, so that an HTTP date (second resolution) names it exactly. */
  constructor(public now = Date.UTC(2026, 10, 25, 12, 0, 0)) {}

  /** The clock to inject. */
  readonly read = (): number => this.now;

  install(): this {
    if (this.installed) return this;
    this.installed = true;
    const schedule = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const id = this.nextId++;
      this.timers.push({ id, due: this.now + Math.max(0, Number(ms) || 0), callback: () => callback(...args) });
      return new VirtualTimeout(id);
    };
    const cancel = (handle: unknown) => {
      if (handle === undefined || handle === null) return;
      const id = handle instanceof VirtualTimeout ? handle.id : Number(handle);
      this.timers = this.timers.filter((timer) => timer.id !== id);
    };
    globalThis.setTimeout = schedule as unknown as typeof globalThis.setTimeout;
    globalThis.clearTimeout = cancel as typeof globalThis.clearTimeout;
    return this;
  }

  uninstall(): void {
    if (!this.installed) return;
    this.installed = false;
    globalThis.setTimeout = this.realSetTimeout;
    globalThis.clearTimeout = this.realClearTimeout;
    this.timers = [];
  }

  /** Timers armed and not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** When the earliest pending timer is due, if any. */
  get nextDue(): number | undefined {
    let due: number | undefined;
    for (const timer of this.timers) if (due === undefined || timer.due < due) due = timer.due;
    return due;
  }

  /** Moves the clock on by `ms`, firing every timer due on the way, earliest first. */
  async advance(ms: number): Promise<void> {
    const until = this.now + ms;
    for (;;) {
      await settle();
      let next: Timer | undefined;
      for (const timer of this.timers) if (timer.due <= until && (next === undefined || timer.due < next.due)) next = timer;
      if (next === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== next);
      this.now = Math.max(this.now, next.due);
      next.callback();
    }
    this.now = until;
    await settle();
  }
}
