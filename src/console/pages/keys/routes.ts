import { maskSecret } from '../../../auth/key-secret.js';
import { changeKeyStatus, createKey, KeyManagementError, setAccountLimits, setKeyLimits } from '../../../auth/keys-service.js';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { describeLimits, hasLimits, type Limits } from '../../../core/key-limits.js';
import { dayOf } from '../../../store/sql-status.js';
import type { AccountRecord, KeyRecord, KeyStatus, UsageFigures } from '../../../store/store.js';
import { accountFilterForm } from '../../account-filter.js';
import { accountInPath, checkedForm, errorPage, page, requireSession, userOf, type ConsoleDeps } from '../../console-context.js';
import { formatDate, formatInt, formatUsd, html, layout, timeTag, type Html } from '../../html.js';
import {
  anyLimitTyped,
  describeUse,
  emptyLimitValues,
  LIMIT_FIELDS,
  limitsFieldset,
  limitValuesFromForm,
  limitValuesOf,
  parseLimitValues,
  readUses,
  type LimitValues,
  type Uses,
  type UseOrUnavailable,
} from '../../limits-view.js';
import { FormError, redirect, sendHtml } from '../../http.js';
import type { Session } from '../../sessions.js';

/** The usage columns' days: the last 30 UTC days from the daily roll-ups, today's so far included, as on the usage page. */
const USAGE_DAYS = 30;
const MAX_KEY_NAME = 100;
/** Above this many models the key form takes ids typed in one field rather than a checkbox per model. */
const MODEL_CHECKBOXES_MAX = 200;

/** The three changes a key can go through, each confirmed on its own page first. */
const ACTIONS = {
  disable: { status: 'disabled', verb: 'Disable', consequence: 'Requests with this key are refused (403) within a second. You can enable it again later.' },
  enable: { status: 'active', verb: 'Enable', consequence: 'Requests with this key are accepted again within a second.' },
  revoke: { status: 'revoked', verb: 'Revoke', consequence: 'Requests with this key are refused for good, within a second. A revoked key cannot be enabled again.' },
} as const satisfies Record<string, { status: KeyStatus; verb: string; consequence: string }>;
type Action = keyof typeof ACTIONS;

interface CreateValues {
  name: string;
  account: string;
  models: string[];
  expires: string;
  /** Admins only: the new key's limits as typed. */
  limits: LimitValues;
}

type Notice = { kind: 'ok' | 'error'; text: string };

function displayStatus(key: KeyRecord, now: number): string {
  if (key.status === 'active' && key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return key.status;
}

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

/** A scope's limits and use in a list item, or a muted "none". */
function scopeItem(scope: 'key' | 'account', label: string, limits: Limits | null, use: UseOrUnavailable | undefined, now: number): Html {
  return html`<li data-scope="${scope}"><span class="limit-scope">${label}:</span> ${hasLimits(limits) ? describeUse(limits, use, now) : html`<span class="muted">none</span>`}</li>`;
}

/** The limits cell of a key's row: its own limits and use, and its account's (shared by all the account's keys) where it has any. */
function limitsCell(key: KeyRecord, uses: Uses, now: number): Html {
  if (!hasLimits(key.limits) && !hasLimits(key.accountLimits)) return html`<td class="limits"><span class="muted">none</span></td>`;
  return html`<td class="limits"><ul class="plain">
    ${scopeItem('key', 'Key', key.limits, uses.keys.get(key.id), now)}
    ${hasLimits(key.accountLimits) ? scopeItem('account', 'Account', key.accountLimits, uses.accounts.get(key.accountId), now) : ''}
  </ul></td>`;
}

function keyRow(key: KeyRecord, usage: UsageFigures | undefined, uses: Uses, isAdmin: boolean, now: number): Html {
  const status = displayStatus(key, now);
  const tokens = usage === undefined ? 0 : usage.inputTokens + usage.outputTokens;
  const actions: Html[] = [];
  if (isAdmin && key.status !== 'revoked') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/limits">Limits<span class="visually-hidden"> of ${key.name}</span></a>`);
  if (key.status === 'active') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/disable">Disable<span class="visually-hidden"> ${key.name}</span></a>`);
  if (key.status === 'disabled') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/enable">Enable<span class="visually-hidden"> ${key.name}</span></a>`);
  if (key.status !== 'revoked') actions.push(html`<a class="btn btn-small btn-danger" href="/app/keys/${encodeURIComponent(key.id)}/revoke">Revoke<span class="visually-hidden"> ${key.name}</span></a>`);
  return html`<tr data-key-id="${key.id}">
  <th scope="row">${key.name}</th>
  ${isAdmin ? html`<td>${key.accountName}</td>` : ''}
  <td><code>${maskSecret(key.secretPrefix, key.secretLastFour)}</code></td>
  <td><span class="pill pill-${status}">${status}</span></td>
  <td>${key.models === null ? html`<span class="muted">all models</span>` : key.models.map((m, i) => html`${i > 0 ? ', ' : ''}<code>${m}</code>`)}</td>
  <td class="dates"><span class="muted">created</span> ${timeTag(key.createdAt, false)}<br><span class="muted">used</span> ${timeTag(key.lastUsedAt, false)}${key.expiresAt === null ? '' : html`<br><span class="muted">expires</span> ${timeTag(key.expiresAt)}`}</td>
  <td class="num">${formatInt(usage?.requests ?? 0)}</td>
  <td class="num">${formatInt(tokens)}</td>
  <td class="num">${formatUsd(usage?.costUsd ?? 0)}</td>
  ${limitsCell(key, uses, now)}
  <td class="actions stacked">${actions.length > 0 ? actions : html`<span class="muted">—</span>`}</td>
</tr>`;
}

/** Each key's figures over the usage columns' days, read from the roll-ups (never the ledger). */
async function usageByKey(deps: ConsoleDeps, now: number, accountId: string | undefined): Promise<Map<string, UsageFigures>> {
  const toDay = dayOf(now);
  const groups = await deps.store.usageDaily.summary({ fromDay: toDay - USAGE_DAYS + 1, toDay, ...(accountId !== undefined && { accountId }) }, ['key']);
  return new Map(groups.map((group) => [group.keyId!, group]));
}

async function keysPage(
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
  const errors = options.errors ?? {};
  const values: CreateValues = options.values ?? { name: '', account: session.account.name, models: [], expires: '', limits: emptyLimitValues() };
  const models = deps.catalogue.current().models;
  const notice = options.notice ?? noticeFromQuery(query, keys, accounts);
  const limitErrors = Object.fromEntries(Object.entries(errors).filter(([field]) => (LIMIT_FIELDS as readonly string[]).includes(field)));
  const fieldError = (field: string) => (errors[field] ? html`<p class="field-error" id="err-${field}">${errors[field]}</p>` : '');
  const describedBy = (field: string) => (errors[field] ? html` aria-invalid="true" aria-describedby="err-${field}"` : '');
  const minDate = new Date(now + 86_400_000).toISOString().slice(0, 10);

  const body = html`<div class="page-head">
  <h1>API keys</h1>
  <p class="lead">${isAdmin ? 'Every account’s keys (you are an admin).' : html`Keys of the account <strong>${session.account.name}</strong>.`} Changes take effect on the API within a second. Usage covers the last 30 days (UTC, today so far included); limits show what is used now (requests and tokens in the rolling minute, requests in flight, spend in the budget period).</p>
</div>
${notice ? html`<p class="notice notice-${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${notice.text}</p>` : ''}
${isAdmin ? accountFilterForm('/app/keys', accounts, accountFilter) : ''}
<div class="table-scroll" role="region" aria-label="API keys" tabindex="0">
<table class="data wide">
  <thead><tr>
    <th scope="col">Name</th>${isAdmin ? html`<th scope="col">Account</th>` : ''}<th scope="col">Key</th><th scope="col">Status</th><th scope="col">Models</th>
    <th scope="col">Dates</th>
    <th scope="col" class="num">Requests<br><span class="muted">30 d</span></th><th scope="col" class="num">Tokens<br><span class="muted">30 d</span></th><th scope="col" class="num">Cost<br><span class="muted">30 d</span></th>
    <th scope="col">Limits<br><span class="muted">used now</span></th>
    <th scope="col">Actions</th>
  </tr></thead>
  <tbody>
  ${keys.length === 0 ? html`<tr><td colspan="${isAdmin ? 11 : 10}" class="empty">No keys yet. Create one below.</td></tr>` : keys.map((key) => keyRow(key, usage.get(key.id), uses, isAdmin, now))}
  </tbody>
</table>
</div>

${accountLimitsSection(listed, uses, isAdmin, now)}

<section class="card" aria-labelledby="create-heading">
  <h2 id="create-heading">Create a key</h2>
  ${errors._ ? html`<p class="notice notice-error" role="alert">${errors._}</p>` : ''}
  <form method="post" action="/app/keys" class="stack">
    <input type="hidden" name="csrf" value="${session.csrf}">
    <div class="field">
      <label for="key-name">Name</label>
      <input id="key-name" name="name" maxlength="${MAX_KEY_NAME}" placeholder="e.g. production backend" value="${values.name}"${describedBy('name')}>
      ${fieldError('name')}
    </div>
    ${
      isAdmin
        ? html`<div class="field">
      <label for="key-account">Account</label>
      <select id="key-account" name="account"${describedBy('account')}>
        ${accounts.map((a) => html`<option value="${a.name}"${values.account === a.name ? html` selected` : ''}>${a.name}</option>`)}
      </select>
      ${fieldError('account')}
    </div>`
        : ''
    }
    ${
      models.length > MODEL_CHECKBOXES_MAX
        ? html`<div class="field">
      <label for="key-models">Models <span class="muted">(ids separated by commas or spaces; leave empty to allow every model, including ones added later)</span></label>
      <input id="key-models" name="models" autocomplete="off" placeholder="${models.length} models: see /models" value="${values.models.join(', ')}"${describedBy('models')}>
      ${fieldError('models')}
    </div>`
        : html`<fieldset class="field"${describedBy('models')}>
      <legend>Models <span class="muted">(leave all unticked to allow every model, including ones added later)</span></legend>
      ${models.length === 0 ? html`<p class="muted">The catalogue is empty.</p>` : ''}
      <div class="checks">
      ${models.map(
        (m, i) => html`<label class="check" for="model-${i}"><input type="checkbox" id="model-${i}" name="models" value="${m.id}"${values.models.includes(m.id) ? html` checked` : ''}> <code>${m.id}</code>${m.displayName ? html` <span class="muted">${m.displayName}</span>` : ''}</label>`,
      )}
      </div>
      ${fieldError('models')}
    </fieldset>`
    }
    <div class="field">
      <label for="key-expires">Expires on <span class="muted">(optional; the key stops working at the end of that day, UTC)</span></label>
      <input id="key-expires" name="expires" type="date" min="${minDate}" value="${values.expires}"${describedBy('expires')}>
      ${fieldError('expires')}
    </div>
    ${
      isAdmin
        ? html`<details${anyLimitTyped(values.limits) || Object.keys(limitErrors).length > 0 ? html` open` : ''}>
      <summary>Limits <span class="muted">(optional)</span></summary>
      ${limitsFieldset(values.limits, limitErrors, { prefix: 'new-limits', legend: 'Limits of the new key' })}
    </details>`
        : ''
    }
    <button type="submit" class="btn">Create key</button>
  </form>
</section>`;
  sendHtml(ctx.res, options.status ?? 200, layout({ title: 'API keys', nav: 'keys', user: userOf(session), body }));
}

/** The accounts' limits and use: what every key of an account shares. Admins get a link to change them. */
function accountLimitsSection(accounts: readonly AccountRecord[], uses: Uses, isAdmin: boolean, now: number): Html {
  if (!isAdmin && !accounts.some((a) => hasLimits(a.limits))) return html``;
  return html`<section aria-labelledby="account-limits-heading">
  <h2 id="account-limits-heading">Account limits</h2>
  <p class="lead small">An account’s limits apply to all its keys together, on top of each key’s own.</p>
  <div class="table-scroll" role="region" aria-label="Account limits" tabindex="0">
  <table class="data">
    <thead><tr><th scope="col">Account</th><th scope="col">Limits <span class="muted">used now</span></th>${isAdmin ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
    <tbody>
    ${
      accounts.length === 0
        ? html`<tr><td colspan="${isAdmin ? 3 : 2}" class="empty">No accounts.</td></tr>`
        : accounts.map(
            (account) => html`<tr data-account="${account.name}">
      <th scope="row">${account.name}</th>
      <td class="limits">${hasLimits(account.limits) ? describeUse(account.limits, uses.accounts.get(account.id), now) : html`<span class="muted">none</span>`}</td>
      ${isAdmin ? html`<td class="actions"><a class="btn btn-small btn-secondary" href="/app/accounts/${encodeURIComponent(account.name)}/limits">Limits<span class="visually-hidden"> of the account ${account.name}</span></a></td>` : ''}
    </tr>`,
          )
    }
    </tbody>
  </table>
  </div>
</section>`;
}

function noticeFromQuery(query: URLSearchParams, keys: readonly KeyRecord[], accounts: readonly AccountRecord[]): Notice | undefined {
  const changed = query.get('changed');
  if (changed !== null) {
    const key = keys.find((k) => k.id === changed);
    return key && { kind: 'ok', text: `Key “${key.name}” is now ${key.status}.` };
  }
  const limited = query.get('limits');
  if (limited !== null) {
    const key = keys.find((k) => k.id === limited);
    return key && { kind: 'ok', text: `Limits of the key “${key.name}” saved: ${describeLimits(key.limits)}. They apply within a second.` };
  }
  const accountName = query.get('account_limits');
  if (accountName !== null) {
    const account = accounts.find((a) => a.name === accountName);
    return account && { kind: 'ok', text: `Limits of the account “${account.name}” saved: ${describeLimits(account.limits)}. They apply to all its keys together, within a second.` };
  }
  return undefined;
}

function createdPage(session: Session, key: KeyRecord, secret: string) {
  return layout({
    title: 'Key created',
    nav: 'keys',
    user: userOf(session),
    body: html`<section class="card narrow">
  <h1>Key created</h1>
  <p class="notice notice-ok" role="status">Copy the key now. It is shown only this once: Sluice keeps just a hash of it.</p>
  <div class="secret">
    <code id="new-secret" class="secret-value" tabindex="0">${secret}</code>
    <button type="button" class="btn" data-copy-target="new-secret" hidden>Copy</button>
    <span class="copy-status" role="status" aria-live="polite"></span>
  </div>
  <dl class="facts">
    <dt>Name</dt><dd>${key.name}</dd>
    <dt>Account</dt><dd>${key.accountName}</dd>
    <dt>Models</dt><dd>${key.models === null ? 'all models' : key.models.join(', ')}</dd>
    <dt>Expires</dt><dd>${key.expiresAt === null ? 'never' : formatDate(key.expiresAt, true)}</dd>
    ${key.limits === null ? '' : html`<dt>Limits</dt><dd>${describeLimits(key.limits)}</dd>`}
  </dl>
  <details>
    <summary>How to use it</summary>
    <pre><code>export SLUICE_KEY=…   # the key above
curl -s $SLUICE_URL/v1/models -H "Authorization: Bearer $SLUICE_KEY"</code></pre>
    <p>Any OpenAI client works with its base URL set to this gateway’s <code>/v1</code>.</p>
  </details>
  <p><a class="btn btn-secondary" href="/app/keys">Back to keys</a></p>
</section>`,
  });
}

function confirmPage(session: Session, key: KeyRecord, action: Action) {
  const { verb, consequence } = ACTIONS[action];
  return layout({
    title: `${verb} key`,
    nav: 'keys',
    user: userOf(session),
    body: html`<section class="card narrow">
  <h1>${verb} the key “${key.name}”?</h1>
  <dl class="facts">
    <dt>Key</dt><dd><code>${maskSecret(key.secretPrefix, key.secretLastFour)}</code></dd>
    <dt>Account</dt><dd>${key.accountName}</dd>
    <dt>Status now</dt><dd>${key.status}</dd>
  </dl>
  <p>${consequence}</p>
  <form method="post" action="/app/keys/${encodeURIComponent(key.id)}/${action}" class="row">
    <input type="hidden" name="csrf" value="${session.csrf}">
    <button type="submit" class="btn ${action === 'enable' ? '' : 'btn-danger'}">${verb} key</button>
    <a class="btn btn-secondary" href="/app/keys">Cancel</a>
  </form>
</section>`,
  });
}

/** A date input's YYYY-MM-DD → the end of that day, UTC (the start of the next). */
function parseExpiry(value: string): number | string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return 'must be a date (YYYY-MM-DD)';
  const start = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(start)) return 'must be a real date';
  const end = start + 86_400_000;
  if (end <= Date.now()) return 'is in the past';
  return end;
}

export function keysRoutes(deps: ConsoleDeps): { list: Handler; create: Handler; action: Handler; accountLimits: Handler } {
  const list = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx);
    if (session) await keysPage(deps, ctx, session);
  });

  const create = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx);
    if (!session) return;
    const form = await checkedForm(ctx, session);
    const values: CreateValues = {
      name: (form.get('name') ?? '').trim(),
      account: session.account.isAdmin ? (form.get('account') ?? session.account.name).trim() : session.account.name,
      // Ticked boxes send one id each; the text field of a large catalogue sends them in one value.
      models: [...new Set(form.getAll('models').flatMap((value) => value.split(/[\s,]+/)).filter((id) => id !== ''))],
      expires: (form.get('expires') ?? '').trim(),
      // Limits are the admins' to set; a member's form has none, and fields added to it are ignored.
      limits: session.account.isAdmin ? limitValuesFromForm(form) : emptyLimitValues(),
    };
    const parsedLimits = parseLimitValues(values.limits);
    const errors: Record<string, string> = { ...parsedLimits.errors };
    if (values.name.length > MAX_KEY_NAME) errors.name = `must be at most ${MAX_KEY_NAME} characters`;
    if (/[\u0000-\u001f\u007f]/.test(values.name)) errors.name = 'must not contain control characters';
    const catalogue = deps.catalogue.current();
    const unknown = values.models.filter((id) => catalogue.get(id) === undefined);
    if (unknown.length > 0) errors.models = `not in the catalogue: ${unknown.join(', ')}`;
    let expiresAt: number | undefined;
    if (values.expires !== '') {
      const parsed = parseExpiry(values.expires);
      if (typeof parsed === 'string') errors.expires = parsed;
      else expiresAt = parsed;
    }
    if (session.account.isAdmin && (await deps.store.accounts.byName(values.account)) === undefined) errors.account = 'no such account';
    if (Object.keys(errors).length > 0) {
      return keysPage(deps, ctx, session, { status: 400, errors, values, notice: { kind: 'error', text: 'The key was not created: see below.' } });
    }
    try {
      const { key, secret } = await createKey(deps.store, deps.hasher, {
        accountName: values.account,
        name: values.name,
        models: values.models,
        expiresAt,
        limits: parsedLimits.limits ?? undefined,
      });
      sendHtml(ctx.res, 200, createdPage(session, key, secret));
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      await keysPage(deps, ctx, session, { status: 400, errors: { _: error.message }, values });
    }
  });

  const action = page(deps, async (ctx) => {
    const match = /^\/app\/keys\/([^/]+)\/(disable|enable|revoke|limits)$/.exec(ctx.path);
    if (match === null) throw new FormError(404, 'There is no such page.');
    // Limits are set by admins only: a member is refused before anything about the key is looked up.
    const session = await requireSession(deps, ctx, { admin: match[2] === 'limits' });
    if (!session) return;
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
    } catch {
      throw new FormError(404, 'There is no such key in your account.');
    }
    if (match[2] === 'limits') return keyLimits(ctx, session, id);
    const verb = match[2] as Action;
    if (ctx.req.method === 'GET') {
      const key = await keyFor(deps, session, id);
      return sendHtml(ctx.res, 200, confirmPage(session, key, verb));
    }
    if (ctx.req.method !== 'POST') throw new FormError(405, 'Use GET or POST here.');
    await checkedForm(ctx, session);
    const key = await keyFor(deps, session, id);
    try {
      await changeKeyStatus(deps.store, key.id, ACTIONS[verb].status);
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      return sendHtml(ctx.res, 409, errorPage('Cannot change the key', error.message, userOf(session)));
    }
    redirect(ctx.res, `/app/keys?changed=${encodeURIComponent(key.id)}`);
  });

  /** GET: the key's limits form with its use now; POST: replaces its limits (an empty form removes them). */
  async function keyLimits(ctx: RequestContext, session: Session, id: string): Promise<void> {
    if (ctx.req.method === 'GET') {
      const key = await keyFor(deps, session, id);
      return sendHtml(ctx.res, 200, await keyLimitsPage(deps, session, key, limitValuesOf(key.limits), {}));
    }
    if (ctx.req.method !== 'POST') throw new FormError(405, 'Use GET or POST here.');
    const form = await checkedForm(ctx, session);
    const key = await keyFor(deps, session, id);
    const values = limitValuesFromForm(form);
    const { limits, errors } = parseLimitValues(values);
    if (Object.keys(errors).length > 0) return sendHtml(ctx.res, 400, await keyLimitsPage(deps, session, key, values, errors));
    try {
      await setKeyLimits(deps.store, key.id, limits);
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      return sendHtml(ctx.res, 409, errorPage('Cannot change the limits', error.message, userOf(session)));
    }
    redirect(ctx.res, `/app/keys?limits=${encodeURIComponent(key.id)}`);
  }

  /** `/app/accounts/<name>/limits`, admins only. GET: the account's limits form; POST: replaces them. */
  const accountLimits = page(deps, async (ctx) => {
    const match = /^\/app\/accounts\/([^/]+)\/limits$/.exec(ctx.path);
    if (match === null) throw new FormError(404, 'There is no such page.');
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    const find = () => accountInPath(deps, match[1]!);
    if (ctx.req.method === 'GET') {
      const account = await find();
      return sendHtml(ctx.res, 200, await accountLimitsPage(deps, session, account, limitValuesOf(account.limits), {}));
    }
    if (ctx.req.method !== 'POST') throw new FormError(405, 'Use GET or POST here.');
    const form = await checkedForm(ctx, session);
    const account = await find();
    const values = limitValuesFromForm(form);
    const { limits, errors } = parseLimitValues(values);
    if (Object.keys(errors).length > 0) return sendHtml(ctx.res, 400, await accountLimitsPage(deps, session, account, values, errors));
    try {
      await setAccountLimits(deps.store, account.name, limits);
    } catch (error) {
      if (!(error instanceof KeyManagementError)) throw error;
      return sendHtml(ctx.res, 409, errorPage('Cannot change the limits', error.message, userOf(session)));
    }
    redirect(ctx.res, `/app/keys?account_limits=${encodeURIComponent(account.name)}`);
  });

  return { list, create, action, accountLimits };
}

const FIELD_LABELS: Record<string, string> = {
  rpm: 'Requests per minute',
  tpm: 'Tokens per minute',
  concurrency: 'Requests in flight',
  budget_usd: 'Budget (USD)',
  budget_period: 'Budget period',
};

/** Every refused field, each linked to its input. */
function limitErrorSummary(errors: Record<string, string>, prefix: string): Html {
  const entries = Object.entries(errors);
  if (entries.length === 0) return html``;
  return html`<div class="notice notice-error" role="alert"><p>Nothing was saved:</p><ul>${entries.map(
    ([field, message]) => html`<li>${FIELD_LABELS[field] ? html`<a href="#${prefix}-${field}">${FIELD_LABELS[field]}</a>: ` : ''}${message}</li>`,
  )}</ul></div>`;
}

function limitsForm(session: Session, action: string, values: LimitValues, errors: Record<string, string>, legend: string, prefix: string): Html {
  return html`<form method="post" action="${action}" class="stack">
    <input type="hidden" name="csrf" value="${session.csrf}">
    ${limitsFieldset(values, errors, { prefix, legend })}
    <div class="row">
      <button type="submit" class="btn">Save limits</button>
      <a class="btn btn-secondary" href="/app/keys">Cancel</a>
    </div>
  </form>`;
}

async function keyLimitsPage(deps: ConsoleDeps, session: Session, key: KeyRecord, values: LimitValues, errors: Record<string, string>): Promise<Html> {
  const now = Date.now();
  const uses = await readUses(deps, [key], []);
  return layout({
    title: `Limits of ${key.name}`,
    nav: 'keys',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/keys">API keys</a> / ${key.name}</p>
<section class="card narrow">
  <h1>Limits of the key “${key.name}”</h1>
  ${limitErrorSummary(errors, 'key-limits')}
  <dl class="facts">
    <dt>Key</dt><dd><code>${maskSecret(key.secretPrefix, key.secretLastFour)}</code></dd>
    <dt>Account</dt><dd>${key.accountName}</dd>
    <dt>Status</dt><dd>${displayStatus(key, now)}</dd>
    <dt>Limits now</dt><dd>${hasLimits(key.limits) ? describeUse(key.limits, uses.keys.get(key.id), now) : html`<span class="muted">none</span>`}</dd>
    <dt>Account’s limits</dt><dd>${hasLimits(key.accountLimits) ? describeUse(key.accountLimits, uses.accounts.get(key.accountId), now) : html`<span class="muted">none</span>`} <a href="/app/accounts/${encodeURIComponent(key.accountName)}/limits">change<span class="visually-hidden"> the account’s limits</span></a></dd>
  </dl>
  <p>The key’s own limits apply to it alone; its account’s apply to all the account’s keys together. A request must be within both. Changes apply within a second.</p>
  ${limitsForm(session, `/app/keys/${encodeURIComponent(key.id)}/limits`, values, errors, 'Limits of this key', 'key-limits')}
</section>`,
  });
}

async function accountLimitsPage(deps: ConsoleDeps, session: Session, account: AccountRecord, values: LimitValues, errors: Record<string, string>): Promise<Html> {
  const now = Date.now();
  const [uses, keys] = await Promise.all([readUses(deps, [], [account]), deps.store.keys.list({ accountName: account.name })]);
  const usable = keys.filter((key) => displayStatus(key, now) === 'active').length;
  return layout({
    title: `Limits of ${account.name}`,
    nav: 'keys',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/keys">API keys</a> / account ${account.name}</p>
<section class="card narrow">
  <h1>Limits of the account “${account.name}”</h1>
  ${limitErrorSummary(errors, 'account-limits')}
  <dl class="facts">
    <dt>Keys</dt><dd>${formatInt(usable)} active of ${formatInt(keys.length)} <a href="/app/keys?account=${encodeURIComponent(account.name)}">show<span class="visually-hidden"> the account’s keys</span></a></dd>
    <dt>Limits now</dt><dd>${hasLimits(account.limits) ? describeUse(account.limits, uses.accounts.get(account.id), now) : html`<span class="muted">none</span>`}</dd>
  </dl>
  <p>These limits apply to all the account’s keys together, on top of each key’s own. Changes apply within a second.</p>
  ${limitsForm(session, `/app/accounts/${encodeURIComponent(account.name)}/limits`, values, errors, 'Limits of this account', 'account-limits')}
</section>`,
  });
}
