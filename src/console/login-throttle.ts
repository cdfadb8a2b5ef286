import type { LoginThrottleRepository } from '../store/store.js';

/** Attempts counted within this window; an older one starts the count again. */
const WINDOW_MS = 15 * 60_000;
/** Attempts allowed before each further one locks the pair out for a growing time. */
const FREE_ATTEMPTS = 2;
const MAX_LOCK_MS = 15 * 60_000;

function lockMsAfter(attempts: number): number {
  return attempts <= FREE_ATTEMPTS ? 0 : Math.min(MAX_LOCK_MS, 1000 * 2 ** (attempts - FREE_ATTEMPTS - 1));
}

export type SignInTurn = { readonly allowed: true; readonly lockMs: number } | { readonly allowed: false; readonly waitMs: number };

/**
 * Slows down password guessing per username and client address. Every attempt is counted before
 * its password is checked, in one atomic step in the store, so parallel guesses (from any process)
 * are counted one by one. After FREE_ATTEMPTS that did not sign in, each further attempt locks the
 * pair out for 1 s, 2 s, 4 s, … up to 15 minutes, during which every attempt, even with the right
 * password, is refused unchecked. A successful sign-in clears the count.
 */
export class LoginThrottle {
  constructor(
    private readonly attempts: LoginThrottleRepository,
    private readonly now: () => number = Date.now,
  ) {}

  static subject(username: string, ip: string): string {
    return `${username.trim().toLowerCase()}|${ip}`;
  }

  /** Counts an attempt: refused with the time left to wait, or allowed with the lock-out it set (0: none). */
  async attempt(subject: string): Promise<SignInTurn> {
    const now = this.now();
    const attempt = await this.attempts.attempt(subject, now, WINDOW_MS, lockMsAfter);
    return attempt.allowed ? { allowed: true, lockMs: lockMsAfter(attempt.attempts) } : { allowed: false, waitMs: attempt.blockedUntil - now };
  }

  async succeeded(subject: string): Promise<void> {
    await this.attempts.clear(subject);
  }
}
