// The keys pages (`/app/keys`, `/app/keys/<id>/<action>`, `/app/accounts/<name>/limits`): their
// handlers, which read the keys, their use and limits for the session and change them through the keys service.
import { changeKeyStatus, createKey, KeyManagementError, setAccountLimits, setKeyLimits } from '../../../auth/keys-service.js';
import type { Limits } from '../../../core/key-limits.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { dayOf } from '../../../store/sql-status.js';
import type { KeyRecord, KeyStatus, UsageFigures } from '../../../store/store.js';
import { accountInPath, checkedForm, errorPage, page, requireSession, userOf, type ConsoleDeps } from '../../console-context.js';
import type { Html } from '../../html.js';
import { FormError, gatewayOrigin, redirect, sendHtml } from '../../http.js';
import { emptyLimitValues, limitValuesFromForm, limitValuesOf, parseLimitValues, readUses, type LimitValues } from '../../limits-view.js';
import { decodeParam, pathPattern } from '../../path-routes.js';
import type { Session } from '../../sessions.js';
import { readCreateForm, type CreateValues } from './forms.js';
import { accountLimitsPage, keyLimitsPage } from './limits-views.js';
import { unpricedModelIds } from '../../../catalogue/unpriced.js';
import { confirmPage, createdPage, keysPage, noticeFromQuery, type KeyAction, type Notice } from './views.js';

/** The usage columns' days: the last 30 UTC days from the daily roll-ups, today's so far included, as on the usage page. */
const USAGE_DAYS = 30;

/** The status each confirmed change gives the key. */
const STATUS_OF = { disable: 'disabled', enable: 'active', revoke: 'revoked' } as const satisfies Record<KeyAction, KeyStatus>;

const KEY_PAGE = pathPattern('/app/keys/:id/:action(disable|enable|revoke|limits)');
const ACCOUNT_LIMITS_PAGE = pathPattern('/app/accounts/:name/limits');

/** Keys the session may see: an admin every account's (or one, filtered), a member their own. */
async function visibleKeys(deps: ConsoleDeps, session: Session, accountFilter: string | null): Promise<KeyRecord[]> {
  if (!session.account.isAdmin) return deps.store.keys.list({ accountName: session.account.name });
  return deps.store.keys.list(accountFilter ? { accountName: accountFilter } : {});
}

async function keyFor(deps: ConsoleDeps, session: Session, id: string): Promise<KeyRecord> {
  const key = await deps.store.keys.get(id);
  // Another account's key is answered exactly as a missing one, so ids cannot be probed.
  if (key === undefined || (!session.account.isAdmin && key.accountId !== session.account.id)) {
    throw new FormError(404, 'There is no such key in your account.');
  }
  return key;
}

/** Each key's figures over the usage columns' days, read from the roll-ups (never the ledger). */
async function usageByKey(deps: ConsoleDeps, now: number, accountId: string | undefined): Promise<Map<string, UsageFigures>> {
  const toDay = dayOf(now);
  const groups = await deps.store.usageDaily.summary({ fromDay: toDay - USAGE_DAYS + 1, toDay, ...(accountId !== undefined && { accountId }) }, ['key']);
  return new Map(groups.map((group) => [group.keyId!, group]));
}

/** The keys page for the session: its keys, their use and limits, and the creation form (as refused, when it was). */
async function showKeys(
  deps: ConsoleDeps,
  ctx: RequestContext,
  session: Session,
  options: { status?: number; notice?: Notice; errors?: Record<string, string>; values?: CreateValues } = {},
): Promise<void> {
  const query = new URLSearchParams(ctx.query);
  const isAdmin = session.account.isAdmin;
  const accountFilter = isAdmin ? query.get('account') : null;
  const now = Date.now();
  const [keys, usage, accounts] = await Promise.all([
    visibleKeys(deps, session, accountFilter),
    usageByKey(deps, now, isAdmin ? undefined : session.account.id),
    isAdmin ? deps.store.accounts.list() : Promise.resolve([session.account]),
  ]);
  // The accounts whose limits are listed: an admin's all (or the one shown), a member's own.
  const listed = accountFilter ? accounts.filter((a) => a.name === accountFilter) : accounts;
  const uses = await readUses(deps, keys, listed);
  const values: CreateValues = options.values ?? { name: '', account: session.account.name, models: [], expires: '', limits: emptyLimitValues() };
  const notice = options.notice ?? noticeFromQuery(query, keys, accounts, (allowed) => unpricedModelIds(deps.catalogue.current(), allowed));
  const body = keysPage({ session, accountFilter, now, keys, usage, accounts, listed, uses, models: deps.catalogue.current().models, notice, errors: options.errors ?? {}, values });
  sendHtml(ctx.res, options.status ?? 200, body);
}

/** A key's or an account's limits: how to find it, show its form, and save what the form says. */
interface LimitsScope<T> {
  readonly find: () => Promise<T>;
  readonly limitsOf: (target: T) => Limits | null;
  readonly render: (target: T, values: LimitValues, errors: Record<string, string>) => Promise<Html>;
  readonly save: (target: T, limits: Limits | null) => Promise<unknown>;
  /** Where the keys page says what was saved. */
  readonly done: (target: T) => string;
}

/** GET: the limits form with the use now; POST: replaces the limits (an empty form removes them). */
async function limitsPage<T>(ctx: RequestContext, session: Session, scope: LimitsScope<T>): Promise<void> {
  if (ctx.req.method === 'GET') {
    const target = await scope.find();
    return sendHtml(ctx.res, 200, await scope.render(target, limitValuesOf(scope.limitsOf(target)), {}));
  }
  if (ctx.req.method !== 'POST') throw new FormError(405, 'Use GET or POST here.');
  const form = await checkedForm(ctx, session);
  const target = await scope.find();
  const values = limitValuesFromForm(form);
  const { limits, errors } = parseLimitValues(values);
  if (Object.keys(errors).length > 0) return sendHtml(ctx.res, 400, await scope.render(target, values, errors));
  try {
    await scope.save(target, limits);
  } catch (error) {
    if (!(error instanceof KeyManagementError)) throw error;
    return sendHtml(ctx.res, 409, errorPage('Cannot change the limits', error.message, userOf(session)));
  }
  redirect(ctx.res, scope.done(target));
}

export function keysRoutes(deps: ConsoleDeps): { list: Handler; create: Handler; action: Handler; accountLimits: Handler } {
  const list = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx);
    if (session) await showKeys(deps, ctx, session);
  });

  const create = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx);
    if (!session) return;
    const form = await checkedForm(ctx, session);
    const { values, errors, expiresAt, limits } = readCreateForm(form, session, deps.catalogue.current());
    if (session.account.isAdmin && (await deps.store.accounts.byName(values.account)) === undefined) errors.account = 'no such account';
    if (Object.keys(errors).length > 0) {
      return showKeys(deps, ctx, session, { status: 400, errors, values, notice: { kind: 'error', text: 'The key was not created: see below.' } });
    }
    try {
      const { key, secret } = await createKey(deps.store, deps.hasher, {
        accountName: values.account,
        name: values.name,
        models: values.models,
        expiresAt,
        limits: limits ?? undefined,
      });
      sendHtml(ctx.res, 200, createdPage(session, key, secret, gatewayOrigin(ctx.req)));
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      await showKeys(deps, ctx, session, { status: 400, errors: { _: error.message }, values });
    }
  });

  /** `/app/keys/<id>/<action>`: disable, enable or revoke (confirmed first), or the key's limits (admins only). */
  const action = page(deps, async (ctx) => {
    const params = KEY_PAGE(ctx.path);
    if (params === undefined) throw new FormError(404, 'There is no such page.');
    // Limits are set by admins only: a member is refused before anything about the key is looked up.
    const session = await requireSession(deps, ctx, { admin: params.action === 'limits' });
    if (!session) return;
    const id = decodeParam(params.id!, 'There is no such key in your account.');
    if (params.action === 'limits') {
      return limitsPage(ctx, session, {
        find: () => keyFor(deps, session, id),
        limitsOf: (key) => key.limits,
        render: async (key, values, errors) => {
          const now = Date.now();
          return keyLimitsPage(session, key, await readUses(deps, [key], []), now, values, errors);
        },
        save: (key, limits) => setKeyLimits(deps.store, key.id, limits),
        done: (key) => `/app/keys?limits=${encodeURIComponent(key.id)}`,
      });
    }
    const verb = params.action as KeyAction;
    if (ctx.req.method === 'GET') {
      const key = await keyFor(deps, session, id);
      return sendHtml(ctx.res, 200, confirmPage(session, key, verb));
    }
    if (ctx.req.method !== 'POST') throw new FormError(405, 'Use GET or POST here.');
    await checkedForm(ctx, session);
    const key = await keyFor(deps, session, id);
    try {
      await changeKeyStatus(deps.store, key.id, STATUS_OF[verb]);
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      return sendHtml(ctx.res, 409, errorPage('Cannot change the key', error.message, userOf(session)));
    }
    redirect(ctx.res, `/app/keys?changed=${encodeURIComponent(key.id)}`);
  });

  /** `/app/accounts/<name>/limits`, admins only. GET: the account's limits form; POST: replaces them. */
  const accountLimits = page(deps, async (ctx) => {
    const params = ACCOUNT_LIMITS_PAGE(ctx.path);
    if (params === undefined) throw new FormError(404, 'There is no such page.');
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    return limitsPage(ctx, session, {
      find: () => accountInPath(deps, params.name!),
      limitsOf: (account) => account.limits,
      render: async (account, values, errors) => {
        const now = Date.now();
        const [uses, keys] = await Promise.all([readUses(deps, [], [account]), deps.store.keys.list({ accountName: account.name })]);
        return accountLimitsPage(session, account, keys, uses, now, values, errors);
      },
      save: (account, limits) => setAccountLimits(deps.store, account.name, limits),
      done: (account) => `/app/keys?account_limits=${encodeURIComponent(account.name)}`,
    });
  });

  return { list, create, action, accountLimits };
}
