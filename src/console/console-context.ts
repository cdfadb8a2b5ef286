import type { Logger } from 'pino';
import type { SecretHasher } from '../auth/key-secret.js';
import type { CatalogueAdmin } from '../catalogue/catalogue-admin.js';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import type { Handler, RequestContext } from '../http/handler.js';
import type { LimitAdmission } from '../limits/limit-admission.js';
import type { StatusMonitor } from '../status/status-monitor.js';
import type { AccountRecord, Store } from '../store/store.js';
import { html, layout, type LayoutOptions } from './html.js';
import { FormError, readForm, redirect, safeEqual, sameOrigin, sendHtml } from './http.js';
import type { LoginThrottle } from './login-throttle.js';
import { decodeParam } from './path-routes.js';
import type { Session, Sessions } from './sessions.js';
import type { ProviderAdapter, ProviderRegistry } from '../generation/provider.js';
import type { McpServerAdmin } from '../mcp/mcp-server-admin.js';
import type { McpServerList } from '../mcp/mcp-server-list.js';
import type { UpstreamMcpServers } from '../mcp/upstream/upstream-server.js';

export type ConsoleStore = Pick<Store, 'accounts' | 'keys' | 'catalogue' | 'signInLinks' | 'usageDaily'>;

/** What the console's pages need; built once by the gateway. */
export interface ConsoleDeps {
  /** The repositories the pages read and change; sessions, the status history and stored responses are not theirs. */
  readonly store: ConsoleStore;
  readonly hasher: SecretHasher;
  readonly catalogue: LiveCatalogue;
  readonly catalogueAdmin: CatalogueAdmin;
  /** The provider adapters, for the catalogue's "import models" (the upstream's own list). */
  readonly providers: ProviderRegistry<ProviderAdapter>;
  readonly status: StatusMonitor;
  /** What keys and accounts have used of their limits, for the keys page. */
  readonly limits: Pick<LimitAdmission, 'used'>;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly logger: Logger;
  /** The MCP servers: the list in force (file and console), its console admin, and this process's connections to them (state and tools). */
  readonly mcp: {
    readonly servers: McpServerList;
    readonly admin: McpServerAdmin;
    readonly upstreams: Pick<UpstreamMcpServers, 'get'>;
  };
}

export type PageHandler = (ctx: RequestContext) => Promise<void>;

/** Wraps a page so any failure is answered as an HTML page (never with internals), not in an API dialect. */
export function page(deps: ConsoleDeps, handler: PageHandler): Handler {
  return async (ctx) => {
    try {
      await handler(ctx);
    } catch (thrown) {
      if (ctx.res.headersSent) {
        ctx.res.destroy();
        return;
      }
      if (thrown instanceof FormError) {
        sendHtml(ctx.res, thrown.status, errorPage(thrown.status === 403 ? 'Refused' : 'Cannot do that', thrown.message));
        return;
      }
      deps.logger.warn({ requestId: ctx.requestId, err: thrown }, 'console page failed');
      sendHtml(ctx.res, 500, errorPage('Something went wrong', 'The console could not handle this request. Try again shortly.'));
    }
  };
}

export function errorPage(title: string, message: string, user?: LayoutOptions['user']): ReturnType<typeof layout> {
  return layout({ title, user, body: html`<h1>${title}</h1><p class="notice notice-error" role="alert">${message}</p><p><a href="/app/keys">Back to the console</a></p>` });
}

export function userOf(session: Session): NonNullable<LayoutOptions['user']> {
  return { name: session.account.name, isAdmin: session.account.isAdmin, csrf: session.csrf };
}

/**
 * The signed-in session, or undefined after answering: a browser without a (live) session is sent
 * to the sign-in page; a member asking for an admin page is refused.
 */
export async function requireSession(deps: ConsoleDeps, ctx: RequestContext, options: { admin?: boolean } = {}): Promise<Session | undefined> {
  const session = await deps.sessions.current(ctx.req);
  if (session === undefined) {
    const next = ctx.req.method === 'GET' ? `?next=${encodeURIComponent(ctx.path)}` : '';
    const expired = deps.sessions.hadCookie(ctx.req) ? (next ? '&' : '?') + 'expired=1' : '';
    redirect(ctx.res, `/app/login${next}${expired}`, deps.sessions.hadCookie(ctx.req) ? { 'set-cookie': deps.sessions.clearCookie(ctx.req) } : {});
    return undefined;
  }
  if (options.admin && !session.account.isAdmin) {
    sendHtml(ctx.res, 403, errorPage('Admins only', 'This page is for console admins.', userOf(session)));
    return undefined;
  }
  return session;
}

/**
 * Who is looking at a public page: the signed-in account's header, or none. Such a page differs by
 * cookie, so it is never stored by a shared cache, and a signed-in visitor's copy not at all.
 */
export async function visitor(deps: ConsoleDeps, ctx: RequestContext): Promise<{ user?: LayoutOptions['user']; headers: Record<string, string> }> {
  const session = deps.sessions.hadCookie(ctx.req) ? await deps.sessions.current(ctx.req) : undefined;
  if (session === undefined) return { headers: { 'cache-control': 'no-cache', vary: 'Cookie' } };
  return { user: userOf(session), headers: { 'cache-control': 'private, no-store', vary: 'Cookie' } };
}

/** The account a path names (`/app/accounts/<name>/…`, percent-encoded); 404 when there is none. */
export async function accountInPath(deps: ConsoleDeps, encoded: string): Promise<AccountRecord> {
  const account = await deps.store.accounts.byName(decodeParam(encoded, 'There is no such account.'));
  if (account === undefined) throw new FormError(404, 'There is no such account.');
  return account;
}

/** Reads a state-changing form and refuses it (403) without this session's CSRF token or from another origin. */
export async function checkedForm(ctx: RequestContext, session: Session): Promise<URLSearchParams> {
  const form = await readForm(ctx.req);
  if (!sameOrigin(ctx.req) || !safeEqual(form.get('csrf') ?? '', session.csrf)) {
    throw new FormError(403, 'This form is missing its security token or has expired. Reload the page and try again.');
  }
  return form;
}
