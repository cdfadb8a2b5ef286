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
/** 32 bytes in unpadded base64url. */
const CANONICAL_MAC = /^[A-Za-z0-9_-]{43}$/;

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
    const written = token.slice(dot + 1);
    // Strictly the canonical form (as issued): Buffer's lenient decoding would take padding, stray characters and other spellings of the same bytes.
    if (!CANONICAL_MAC.test(written)) return { ok: false, reason: 'forged' };
    const mac = Buffer.from(written, 'base64url');
    if (mac.length !== MAC_LENGTH || mac.toString('base64url') !== written || !timingSafeEqual(mac, this.mac(payload))) return { ok: false, reason: 'forged' };
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

/** How long ended sessions are grouped together: the set drops a whole group once all of it has expired. */
const BUCKET_MS = 60 * 60 * 1000;
/**
 * The most ended sessions one process remembers. One key looping initialize → DELETE must not grow
 * every worker's memory for a day: past the cap, the sessions that expire soonest are forgotten early.
 * A forgotten session answers again until its own expiry, which gives nothing away: a session only
 * ever works with the key that opened it, and that key may open another at will.
 */
export const MAX_ENDED_SESSIONS = 100_000;

/**
 * Sessions ended before their time (DELETE), by id until they would have expired anyway, grouped by
 * the hour they expire in so that expired ones go a whole group at a time (constant work per
 * DELETE, about 25 groups at most), and never more than MAX_ENDED_SESSIONS of them.
 */
export class EndedSessions {
  /** Expiry hour → the ids ending in it; kept in ascending hour order (see add). */
  private readonly buckets = new Map<number, Set<string>>();
  private count = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = MAX_ENDED_SESSIONS,
  ) {}

  add(id: string, issuedAt: number): void {
    this.dropExpired();
    // A session's group is the hour after the one it expires in, so a group is dropped only once all of it has expired.
    const hour = Math.floor((issuedAt + SESSION_LIFETIME_MS) / BUCKET_MS) + 1;
    if (hour * BUCKET_MS <= this.now() || this.has(id)) return;
    while (this.count >= this.max && this.buckets.size > 0) this.forgetOne();
    let bucket = this.buckets.get(hour);
    if (bucket === undefined) {
      // Sessions end in about the order they were issued: a group out of order (rare, 25 groups at most) puts them back in order.
      const outOfOrder = [...this.buckets.keys()].some((key) => key > hour);
      bucket = new Set();
      this.buckets.set(hour, bucket);
      if (outOfOrder) this.reorder();
    }
    bucket.add(id);
    this.count++;
  }

  has(id: string): boolean {
    for (const bucket of this.buckets.values()) if (bucket.has(id)) return true;
    return false;
  }

  get size(): number {
    return this.count;
  }

  private dropExpired(): void {
    const now = this.now();
    for (const hour of this.buckets.keys()) {
      if (hour * BUCKET_MS > now) break;
      this.dropOldest();
    }
  }

  /** The longest-ended session of the group expiring soonest. */
  private forgetOne(): void {
    const first = this.buckets.entries().next();
    if (first.done === true) return;
    const [hour, bucket] = first.value;
    const id = bucket.values().next();
    if (id.done !== true) bucket.delete(id.value);
    if (bucket.size === 0) this.buckets.delete(hour);
    this.count--;
  }

  private dropOldest(): void {
    const first = this.buckets.keys().next();
    if (first.done === true) return;
    this.count -= this.buckets.get(first.value)!.size;
    this.buckets.delete(first.value);
  }

  private reorder(): void {
    const sorted = [...this.buckets.entries()].sort(([a], [b]) => a - b);
    this.buckets.clear();
    for (const [key, bucket] of sorted) this.buckets.set(key, bucket);
  }
}
