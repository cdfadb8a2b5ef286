import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AccountRecord, Store } from '../store/store.js';
import { cookie, parseCookies } from './http.js';

export const SESSION_COOKIE = 'sluice_session';
export const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;

export interface Session {
  readonly account: AccountRecord;
  readonly tokenHash: string;
  /** The CSRF token every state-changing form of this session must carry. */
  readonly csrf: string;
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
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
 * usable session.
 */
export class Sessions {
  constructor(
    private readonly store: Store,
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session and returns the Set-Cookie header value. */
  async start(req: IncomingMessage, account: AccountRecord): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const now = this.now();
    await this.store.sessions.deleteExpired(now);
    await this.store.sessions.create({ tokenHash: hashToken(token), accountId: account.id, createdAt: now, expiresAt: now + this.ttlMs });
    return cookie(req, SESSION_COOKIE, token, { maxAgeSeconds: Math.ceil(this.ttlMs / 1000) });
  }

  async current(req: IncomingMessage): Promise<Session | undefined> {
    const token = parseCookies(req).get(SESSION_COOKIE);
    if (token === undefined || !/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
    const tokenHash = hashToken(token);
    const session = await this.store.sessions.find(tokenHash, this.now());
    if (session === undefined) return undefined;
    const account = await this.store.accounts.get(session.accountId);
    if (account === undefined || !account.hasPassword) return undefined;
    return { account, tokenHash, csrf: csrfFor(token) };
  }

  async end(session: Session): Promise<void> {
    await this.store.sessions.delete(session.tokenHash);
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
