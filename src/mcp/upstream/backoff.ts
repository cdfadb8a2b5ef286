/**
 * When to try an upstream again after it failed: 1 s, doubling to 60 s; once it has stayed up for
 * a while (60 s), its next failure starts again from 1 s, so a server that crashes rarely is
 * restarted at once and one that crashes in a loop is not restarted in a loop.
 */
export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /** How long it must stay up for its failures to be forgotten. */
  readonly resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 60_000, resetAfterMs: 60_000 };

export class Backoff {
  private failures = 0;
  private upSince: number | undefined;

  constructor(
    private readonly options: BackoffOptions = DEFAULT_BACKOFF,
    private readonly now: () => number = Date.now,
  ) {}

  /** It is up (connected, or its process started and answered). */
  up(): void {
    this.upSince = this.now();
  }

  /** It failed: the delay before the next attempt. */
  failed(): number {
    if (this.upSince !== undefined && this.now() - this.upSince >= this.options.resetAfterMs) this.failures = 0;
    this.upSince = undefined;
    const delay = Math.min(this.options.maxMs, this.options.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return delay;
  }
}
