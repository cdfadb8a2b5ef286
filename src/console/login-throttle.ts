import type { Store } from '../store/store.js';

/** Failures counted within this window; an older failure starts the count again. */
const WINDOW_MS = 15 * 60_000;
/** Failures allowed before each further one locks the pair out for a growing time. */
const FREE_FAILURES = 2;
const MAX_LOCK_MS = 15 * 60_000;

/**
 * Slows down password guessing per username and client address: after FREE_FAILURES failed
 * sign-ins, each further failure locks that pair out for 1 s, 2 s, 4 s, … up to 15 minutes, during
 * which even the right password is refused. State lives in the store so every process counts alike.
 */
export class LoginThrottle {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  static subject(username: string, ip: string): string {
    return `${username.trim().toLowerCase()}|${ip}`;
  }

  /** Milliseconds the pair must still wait, or 0. */
  async waitMs(subject: string): Promise<number> {
    const record = await this.store.loginThrottle.get(subject);
    return record === undefined ? 0 : Math.max(0, record.blockedUntil - this.now());
  }

  /** Records a failure; returns how long the pair is now locked out (0 when not). */
  async failed(subject: string): Promise<number> {
    const now = this.now();
    const failures = await this.store.loginThrottle.recordFailure(subject, now, WINDOW_MS);
    if (failures <= FREE_FAILURES) return 0;
    const lockMs = Math.min(MAX_LOCK_MS, 1000 * 2 ** (failures - FREE_FAILURES - 1));
    await this.store.loginThrottle.block(subject, now + lockMs);
    return lockMs;
  }

  async succeeded(subject: string): Promise<void> {
    await this.store.loginThrottle.clear(subject);
  }
}
