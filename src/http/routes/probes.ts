import type { Handler } from '../handler.js';

/**
 * `/livez` and `/readyz`, for a load balancer or Kubernetes: unauthenticated, cheap, and the same
 * in every process (with `--workers`, each worker answers for itself).
 *
 * - `/livez`: 200 while the process serves at all (its event loop answered), during start-up and
 *   drain too: a failing liveness probe restarts the process, which would cut a long migration or
 *   the requests a drain is finishing.
 * - `/readyz`: 200 once start-up is done (the store opened and migrated, keys and the catalogue
 *   loaded; upstreams are not waited for: discovery runs in the background, and an upstream down
 *   is routing's business, not a reason to take the whole gateway out) and while the store
 *   answers; 503 with the reasons otherwise, and during a drain.
 */
export const LIVEZ_PATH = '/livez';
export const READYZ_PATH = '/readyz';

const LIVE = JSON.stringify({ status: 'ok' });

export function livezRoute(): Handler {
  return async ({ res }) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(LIVE);
  };
}

/** Why this process should not take traffic now: none when it is ready. */
export type Unreadiness = () => Promise<readonly string[]>;

export function readyzRoute(unreadiness: Unreadiness): Handler {
  return async ({ res }) => {
    const reasons = await unreadiness();
    const body = reasons.length === 0 ? { status: 'ready' } : { status: 'unready', reasons };
    res.writeHead(reasons.length === 0 ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
  };
}

/**
 * A dependency's check for `/readyz`, made cheap for a storm of probes: one check runs at a time
 * (every probe meanwhile shares it), its result is kept for `ttlMs`, and a probe waits at most
 * `timeoutMs` for it (a check still running then is "no answer", and is not started again until it
 * ends). The reason names the dependency and what failed, in words that hold no secret: the
 * failure's code, never its message (a driver's message may quote a host or a user).
 */
export function cachedCheck(name: string, check: () => Promise<void>, options: { readonly ttlMs: number; readonly timeoutMs: number; readonly now?: () => number }): () => Promise<string | null> {
  const now = options.now ?? Date.now;
  let last: { readonly at: number; readonly reason: string | null } | undefined;
  let running: Promise<string | null> | undefined;
  const run = (): Promise<string | null> =>
    (running ??= check().then(
      () => null,
      (error: unknown) => `${name}: the check failed${codeOf(error)}`,
    ).then((reason) => {
      last = { at: now(), reason };
      running = undefined;
      return reason;
    }));
  return async () => {
    if (last !== undefined && now() - last.at < options.ttlMs) return last.reason;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`${name}: no answer within ${options.timeoutMs} ms`), options.timeoutMs)));
    try {
      return await Promise.race([run(), late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** ` (ECONNREFUSED)`, ` (57P01)`: a driver's error code, when it has a short one. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Za-z0-9_]{1,32}$/.test(code) ? ` (${code})` : '';
}
