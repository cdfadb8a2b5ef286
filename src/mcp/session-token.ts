import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * `Mcp-Session-Id`s that carry their own session: which key opened it, on which endpoint, at which
 * protocol revision and when, signed with a key every process of the deployment derives from the
 * same data-directory secret. Any worker or replica can then take any request of the session
 * without shared state; only an ended session (DELETE) must be told to the others (SessionEnds).
 *
 * Form: `{payload}.{mac}`, both base64url (visible ASCII, as the transport requires); the payload
 * is JSON `{v, r, k, e, p, t}`: version, random id, key id, endpoint (`''` for `/mcp`, else the
 * server id), protocol revision, issued-at (Unix seconds).
 */
export interface McpSession {
  /** Random, unique per session: what ended sessions and in-flight requests are keyed by. */
  readonly id: string;
  readonly keyId: string;
  /** `''` for `/mcp`, else the lower-cased server id of `/mcp/{server}`. */
  readonly endpoint: string;
  readonly protocolVersion: string;
  /** Unix ms. */
  readonly issuedAt: number;
}

/** How long a session lasts from its `initialize`; a client then starts another (the transport's 404). */
export const SESSION_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** Far beyond ours (about 150 characters): a longer header is not read. */
const MAX_TOKEN_LENGTH = 1024;
const MAC_LENGTH = 32;

export type SessionCheck = { readonly ok: true; readonly session: McpSession } | { readonly ok: false; readonly reason: 'malformed' | 'forged' | 'expired' | 'other_key' | 'other_endpoint' };

export class SessionTokens {
  constructor(
    /** The signing key (32 bytes or more), the same in every process of the deployment. */
    private readonly key: Buffer,
    private readonly now: () => number = Date.now,
  ) {}

  issue(keyId: string, endpoint: string, protocolVersion: string): { readonly token: string; readonly session: McpSession } {
    const session: McpSession = { id: randomBytes(16).toString('base64url'), keyId, endpoint, protocolVersion, issuedAt: Math.floor(this.now() / 1000) * 1000 };
    const payload = Buffer.from(JSON.stringify({ v: 1, r: session.id, k: keyId, e: endpoint, p: protocolVersion, t: session.issuedAt / 1000 }), 'utf8').toString('base64url');
    return { token: `${payload}.${this.mac(payload).toString('base64url')}`, session };
  }

  /** The session a token carries, if it was issued here (by any process of the deployment), is still valid, and belongs to this key on this endpoint. */
  check(token: string, keyId: string, endpoint: string): SessionCheck {
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: 'malformed' };
    const dot = token.indexOf('.');
    if (dot <= 0) return { ok: false, reason: 'malformed' };
    const payload = token.slice(0, dot);
    const mac = Buffer.from(token.slice(dot + 1), 'base64url');
    if (mac.length !== MAC_LENGTH || !timingSafeEqual(mac, this.mac(payload))) return { ok: false, reason: 'forged' };
    let fields: { v?: unknown; r?: unknown; k?: unknown; e?: unknown; p?: unknown; t?: unknown };
    try {
      fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof fields;
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    const { v, r, k, e, p, t } = fields ?? {};
    if (v !== 1 || typeof r !== 'string' || typeof k !== 'string' || typeof e !== 'string' || typeof p !== 'string' || typeof t !== 'number') return { ok: false, reason: 'malformed' };
    const issuedAt = t * 1000;
    if (this.now() - issuedAt > SESSION_LIFETIME_MS) return { ok: false, reason: 'expired' };
    if (k !== keyId) return { ok: false, reason: 'other_key' };
    if (e !== endpoint) return { ok: false, reason: 'other_endpoint' };
    return { ok: true, session: { id: r, keyId: k, endpoint: e, protocolVersion: p, issuedAt } };
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

/**
 * Sessions ended before their time (DELETE), by id until they would have expired anyway, so the
 * set stays bounded by the sessions of one lifetime.
 */
export class EndedSessions {
  private readonly ended = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  add(id: string, issuedAt: number): void {
    this.sweep();
    this.ended.set(id, issuedAt + SESSION_LIFETIME_MS);
  }

  has(id: string): boolean {
    return this.ended.has(id);
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, until] of this.ended) if (until <= now) this.ended.delete(id);
  }
}
