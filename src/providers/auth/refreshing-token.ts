/** A bearer token as its issuer gave it: the token, and how long it lives from now. */
export interface IssuedToken {
  readonly token: string;
  readonly lifetimeMs: number;
}

/** Share of a token's lifetime after which a fresh one is asked for, while the held one still serves. */
const REFRESH_AT = 0.75;
/** A token is not sent in the last tenth of its life (at most a minute): a request in flight or a skewed clock must not carry an expired one. */
const MARGIN_SHARE = 0.1;
const MAX_MARGIN_MS = 60_000;
/** After a failed request for a token, this long passes before the next: a token endpoint that is down is not asked once per call. */
const FAILURE_PAUSE_MS = 1_000;
/** The shortest lifetime taken from an issuer: one that says 0 must not cost a token request per call. */
const MIN_LIFETIME_MS = 1_000;

interface Held {
  readonly token: string;
  readonly refreshAt: number;
  readonly usableUntil: number;
}

/**
 * A token shared by every request of one provider in one process: asked for once, used until late
 * in its life, and renewed in the background before that, relative to the lifetime the issuer gave
 * (a five-second token is renewed after about four seconds, an hour's after 45 minutes). So there is
 * one token request per token lifetime, whatever the load, and a request waits for one only when no
 * usable token is held (the first call, or after the issuer was unreachable for a whole lifetime).
 */
export class RefreshingToken {
  private held: Held | undefined;
  private pending: Promise<string> | undefined;
  private failure: { readonly error: unknown; readonly until: number } | undefined;

  constructor(
    private readonly obtain: () => Promise<IssuedToken>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The token to send now: synchronously while one is held, else once it has been obtained. */
  current(): string | Promise<string> {
    const now = this.now();
    const held = this.held;
    if (held !== undefined && now < held.usableUntil) {
      if (now >= held.refreshAt && this.pending === undefined && !this.pausedAt(now)) void this.renew().catch(() => undefined);
      return held.token;
    }
    if (this.pending !== undefined) return this.pending;
    if (this.pausedAt(now)) return Promise.reject(this.failure!.error);
    return this.renew();
  }

  /** The token now held, for redaction. */
  secrets(): readonly string[] {
    return this.held === undefined ? [] : [this.held.token];
  }

  private pausedAt(now: number): boolean {
    return this.failure !== undefined && now < this.failure.until;
  }

  private renew(): Promise<string> {
    const pending = this.obtain().then(
      ({ token, lifetimeMs }) => {
        const issuedAt = this.now();
        const lifetime = Math.max(MIN_LIFETIME_MS, lifetimeMs);
        this.held = { token, refreshAt: issuedAt + lifetime * REFRESH_AT, usableUntil: issuedAt + lifetime - Math.min(lifetime * MARGIN_SHARE, MAX_MARGIN_MS) };
        this.failure = undefined;
        this.pending = undefined;
        return token;
      },
      (error: unknown) => {
        this.failure = { error, until: this.now() + FAILURE_PAUSE_MS };
        this.pending = undefined;
        throw error;
      },
    );
    this.pending = pending;
    return pending;
  }
}
