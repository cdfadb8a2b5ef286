import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AccountRecord, AccountsRepository, SessionsRepository } from '../store/store.js';
import { cookie, parseCookies } from './http.js';
import { hashToken, newToken, TOKEN_PATTERN } from './tokens.js';

export const SESSION_COOKIE = 'sluice_session';
export const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;
export const DEFAULT_SESSION_IDLE_MS = 2 * 3_600_000;
/** Activity is written at most this often per session (a page view is then rarely a write), or a tenth of a short idle time. */
const TOUCH_EVERY_MS = 60_000;

export interface Session {
  readonly account: AccountRecord;
  readonly tokenHash: string;
  /** The CSRF token every state-changing form of this session must carry. */
  readonly csrf: string;
}

/**
 * The CSRF token is derived from the session token, so it needs no storage and is worthless
 * without the HttpOnly cookie, which another site cannot read.
 */
function csrfFor(token: string): string {
  return createHmac('sha256', token).update('sluice csrf v1').digest('base64url');
}

/**
 * Console sessions: a random 256-bit token in an HttpOnly SameSite cookie; the store keeps only
 * its SHA-256, with a fixed expiry, so any process can check it and a stolen database holds no
 * usable session. A session also ends after `idleMs` without activity; activity is recorded at
 * most once a minute, so the idle time is kept to within that minute.
 */
export class Sessions {
  constructor(
    private readonly sessions: SessionsRepository,
    /** A session's account is read on each request: a disabled one (or one without a password) ends it. */
    private readonly accounts: Pick<AccountsRepository, 'get'>,
    readonly ttlMs: number,
    readonly idleMs: number = DEFAULT_SESSION_IDLE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session and returns the Set-Cookie header value. */
  async start(req: IncomingMessage, account: AccountRecord): Promise<string> {
    const token = newToken();
    const now = this.now();
    await this.sessions.deleteExpired(now, this.idleMs);
    await this.sessions.create({ tokenHash: hashToken(token), accountId: account.id, createdAt: now, expiresAt: now + this.ttlMs, lastSeenAt: now });
    return cookie(req, SESSION_COOKIE, token, { maxAgeSeconds: Math.ceil(this.ttlMs / 1000) });
  }

  async current(req: IncomingMessage): Promise<Session | undefined> {
    const token = parseCookies(req).get(SESSION_COOKIE);
    if (token === undefined || !TOKEN_PATTERN.test(token)) return undefined;
    const tokenHash = hashToken(token);
    const now = this.now();
    const session = await this.sessions.find(tokenHash, now, this.idleMs);
    if (session === undefined) return undefined;
    const account = await this.accounts.get(session.accountId);
    if (account === undefined || !account.hasPassword || account.disabled) return undefined;
    if (now - session.lastSeenAt >= Math.min(TOUCH_EVERY_MS, this.idleMs / 10)) await this.sessions.touch(tokenHash, now);
    return { account, tokenHash, csrf: csrfFor(token) };
  }

  async end(session: Session): Promise<void> {
    await this.sessions.delete(session.tokenHash);
  }

  /** The Set-Cookie value that removes the session cookie. */
  clearCookie(req: IncomingMessage): string {
    return cookie(req, SESSION_COOKIE, '', { maxAgeSeconds: 0 });
  }

  /** Whether a request carried a session cookie at all (to tell "expired" from "never signed in"). */
  hadCookie(req: IncomingMessage): boolean {
    return parseCookies(req).has(SESSION_COOKIE);
  }
}
