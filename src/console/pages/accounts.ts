import type { Handler, RequestContext } from '../../http/handler.js';
import { describeLimits, hasLimits } from '../../core/key-limits.js';
import type { AccountRecord } from '../../store/store.js';
import { AccountError, changeAccount, createConsoleAccount, resetPassword, SIGN_IN_LINK_TTL_MS, type AccessGranted, type PasswordChoice } from '../accounts.js';
import { accountInPath, checkedForm, page, requireSession, userOf, type ConsoleDeps } from '../console-context.js';
import { formatInt, html, layout, timeTag, type Html } from '../html.js';
import { FormError, gatewayOrigin, redirect, sendHtml } from '../http.js';
import { MIN_PASSWORD_LENGTH } from '../passwords.js';
import { pathPattern } from '../path-routes.js';
import type { Session } from '../sessions.js';

/** The changes a row's buttons make, and what the page says after each. */
const CHANGES = {
  admin: { change: { isAdmin: true }, done: 'is now an admin' },
  member: { change: { isAdmin: false }, done: 'is no longer an admin' },
  disable: { change: { disabled: true }, done: 'is disabled: it cannot sign in, and its API keys are refused' },
  enable: { change: { disabled: false }, done: 'is enabled again' },
} as const satisfies Record<string, { change: { isAdmin?: boolean; disabled?: boolean }; done: string }>;
type Change = keyof typeof CHANGES;

const ACCOUNT_PAGE = pathPattern('/app/accounts/:name/:action(limits|password|admin|member|disable|enable)');

type Notice = { kind: 'ok' | 'error'; text: string };

interface CreateValues {
  name: string;
  admin: boolean;
  method: 'link' | 'password';
}

/**
 * The password choice of a form (`method` link or password); a mistake is named for its field. A
 * password typed is used even with the link option selected (the page's script selects the option
 * on typing; without script both fields show): it was typed to be used, and is never thrown away.
 */
function choiceOf(form: URLSearchParams): PasswordChoice | { error: string } {
  const password = form.get('password') ?? '';
  const confirm = form.get('confirm') ?? '';
  if (form.get('method') === 'link' && password === '' && confirm === '') return { link: true };
  if (password !== confirm) return { error: 'The two passwords are not the same.' };
  return { password };
}

/** The full link for the admin to pass on, on the address the admin reached the console by. */
function fullLink(ctx: RequestContext, path: string): string {
  return gatewayOrigin(ctx.req) + path;
}

function accessCell(account: AccountRecord, pending: ReadonlySet<string>): Html {
  if (account.hasPassword) return html`yes`;
  if (pending.has(account.id)) return html`<span class="muted">link sent</span>`;
  return html`<span class="muted">no</span>`;
}

function rowActions(session: Session, account: AccountRecord): Html {
  const self = account.id === session.account.id;
  const button = (change: Change, label: string, danger = false) =>
    html`<form method="post" action="/app/accounts/${encodeURIComponent(account.name)}/${change}" class="inline">
      <input type="hidden" name="csrf" value="${session.csrf}">
      <button type="submit" class="btn btn-small ${danger ? 'btn-danger' : 'btn-secondary'}">${label}<span class="visually-hidden"> ${account.name}</span></button>
    </form>`;
  return html`<td class="actions">
    ${account.isAdmin ? (self ? '' : button('member', 'Remove admin')) : button('admin', 'Make admin')}
    ${account.disabled ? button('enable', 'Enable') : self ? '' : button('disable', 'Disable', true)}
    <a class="btn btn-small btn-secondary" href="/app/accounts/${encodeURIComponent(account.name)}/password">Password<span class="visually-hidden"> of ${account.name}</span></a>
    <a class="btn btn-small btn-secondary" href="/app/accounts/${encodeURIComponent(account.name)}/limits">Limits<span class="visually-hidden"> of the account ${account.name}</span></a>
  </td>`;
}

/** The two ways to give a password, as radio buttons (without script both fields show; the chosen one counts). */
function passwordChoiceFields(method: 'link' | 'password', prefix: string): Html {
  return html`<fieldset class="field">
    <legend>Password</legend>
    <label class="check"><input type="radio" name="method" value="link"${method === 'link' ? html` checked` : ''}> A one-time sign-in link, valid ${SIGN_IN_LINK_TTL_MS / 3_600_000} hours: the account chooses its own password</label>
    <label class="check"><input type="radio" name="method" value="password"${method === 'password' ? html` checked` : ''}> A password I type now</label>
    <div class="limit-fields">
      <div class="field">
        <label for="${prefix}-password">Password</label>
        <input id="${prefix}-password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}">
      </div>
      <div class="field">
        <label for="${prefix}-confirm">The same password again</label>
        <input id="${prefix}-confirm" name="confirm" type="password" autocomplete="new-password">
      </div>
    </div>
    <p class="hint">At least ${MIN_PASSWORD_LENGTH} characters. Sluice keeps only a hash of a password or a link.</p>
  </fieldset>`;
}

async function accountsPage(deps: ConsoleDeps, ctx: RequestContext, session: Session, options: { status?: number; notice?: Notice; values?: CreateValues } = {}): Promise<void> {
  const now = Date.now();
  const [accounts, keys, pending] = await Promise.all([deps.store.accounts.list(), deps.store.keys.list(), deps.store.signInLinks.pending(now)]);
  const keyCount = new Map<string, number>();
  for (const key of keys) keyCount.set(key.accountId, (keyCount.get(key.accountId) ?? 0) + 1);
  const values = options.values ?? { name: '', admin: false, method: 'link' };
  const notice = options.notice ?? noticeFromQuery(new URLSearchParams(ctx.query), accounts);
  const body = html`<div class="page-head">
  <h1>Accounts</h1>
  <p class="lead">Who can sign in to this console, and whose API keys are accepted. A disabled account cannot sign in and its keys are refused (403) within a second.</p>
</div>
${notice ? html`<p class="notice notice-${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">${notice.text}</p>` : ''}
<div class="table-scroll" role="region" aria-label="Accounts" tabindex="0">
<table class="data">
  <thead><tr>
    <th scope="col">Name</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Console</th>
    <th scope="col" class="num">Keys</th><th scope="col">Created</th><th scope="col">Limits</th><th scope="col">Actions</th>
  </tr></thead>
  <tbody>
  ${accounts.map((account) => {
    const count = keyCount.get(account.id) ?? 0;
    return html`<tr data-account="${account.name}">
    <th scope="row">${account.name}${account.id === session.account.id ? html` <span class="muted">(you)</span>` : ''}</th>
    <td>${account.isAdmin ? 'admin' : 'member'}</td>
    <td><span class="pill pill-${account.disabled ? 'disabled' : 'active'}">${account.disabled ? 'disabled' : 'active'}</span></td>
    <td>${accessCell(account, pending)}</td>
    <td class="num"><a href="/app/keys?account=${encodeURIComponent(account.name)}">${formatInt(count)}<span class="visually-hidden"> key${count === 1 ? '' : 's'} of ${account.name}</span></a></td>
    <td>${timeTag(account.createdAt, now)}</td>
    <td>${hasLimits(account.limits) ? describeLimits(account.limits) : html`<span class="muted">none</span>`}</td>
    ${rowActions(session, account)}
  </tr>`;
  })}
  </tbody>
</table>
</div>

<section class="card narrow" aria-labelledby="create-heading">
  <h2 id="create-heading">Create an account</h2>
  <form method="post" action="/app/accounts" class="stack">
    <input type="hidden" name="csrf" value="${session.csrf}">
    <div class="field">
      <label for="account-name">Name</label>
      <input id="account-name" name="name" required maxlength="64" autocomplete="off" value="${values.name}">
      <p class="hint">Also the sign-in username. An account that only owns keys so far gets console access here.</p>
    </div>
    <label class="check"><input type="checkbox" name="admin" value="1"${values.admin ? html` checked` : ''}> Admin: sees every account’s keys and usage, manages the catalogue and accounts</label>
    ${passwordChoiceFields(values.method, 'create')}
    <button type="submit" class="btn">Create account</button>
  </form>
</section>`;
  sendHtml(ctx.res, options.status ?? 200, layout({ title: 'Accounts', nav: 'accounts', user: userOf(session), body }));
}

function noticeFromQuery(query: URLSearchParams, accounts: readonly AccountRecord[]): Notice | undefined {
  const account = accounts.find((a) => a.name === query.get('account'));
  const change = query.get('change');
  if (account === undefined || change === null) return undefined;
  // Only an account made with a password comes back here (a link is shown on a page of its own): say so.
  if (change === 'created') return { kind: 'ok', text: `Account “${account.name}” created with the password you typed (no sign-in link): it can sign in with it now.` };
  if (change === 'password') return { kind: 'ok', text: `The password of “${account.name}” is changed to the one you typed (no sign-in link); its sessions are ended.` };
  return Object.hasOwn(CHANGES, change) ? { kind: 'ok', text: `“${account.name}” ${CHANGES[change as Change].done}.` } : undefined;
}

/** Shown once after a link is made: the full link to pass on. */
function linkShownPage(ctx: RequestContext, session: Session, granted: AccessGranted, what: string): Html {
  return layout({
    title: 'Sign-in link',
    nav: 'accounts',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/accounts">Accounts</a> / ${granted.account.name}</p>
<section class="card narrow">
  <h1>${what}</h1>
  <p class="notice notice-ok" role="status">Send this link to “${granted.account.name}” now. It is shown only this once (Sluice keeps only a hash), works once, and expires in ${SIGN_IN_LINK_TTL_MS / 3_600_000} hours.</p>
  <div class="secret">
    <code id="sign-in-link" class="secret-value" tabindex="0">${fullLink(ctx, granted.linkPath!)}</code>
    <button type="button" class="btn" data-copy-target="sign-in-link" hidden>Copy</button>
    <span class="copy-status" role="status" aria-live="polite"></span>
  </div>
  <p><a class="btn btn-secondary" href="/app/accounts">Back to accounts</a></p>
</section>`,
  });
}

function passwordPage(session: Session, account: AccountRecord, error?: string): Html {
  return layout({
    title: `Password of ${account.name}`,
    nav: 'accounts',
    user: userOf(session),
    body: html`<p class="crumbs"><a href="/app/accounts">Accounts</a> / ${account.name}</p>
<section class="card narrow">
  <h1>Reset the password of “${account.name}”</h1>
  ${error ? html`<p class="notice notice-error" role="alert">${error}</p>` : ''}
  <p>Either way the old password stops working and every session of the account ends.</p>
  <form method="post" action="/app/accounts/${encodeURIComponent(account.name)}/password" class="stack">
    <input type="hidden" name="csrf" value="${session.csrf}">
    ${passwordChoiceFields('link', 'reset')}
    <div class="row">
      <button type="submit" class="btn btn-danger">Reset password</button>
      <a class="btn btn-secondary" href="/app/accounts">Cancel</a>
    </div>
  </form>
</section>`,
  });
}

/** `/app/accounts`, admins only: the accounts, creating one, and per account (`/app/accounts/<name>/…`) its role, status, password and limits. */
export function accountsRoutes(deps: ConsoleDeps, accountLimits: Handler): { list: Handler; create: Handler; action: Handler } {
  const list = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx, { admin: true });
    if (session) await accountsPage(deps, ctx, session);
  });

  const create = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    const form = await checkedForm(ctx, session);
    const choice = choiceOf(form);
    const values: CreateValues = { name: (form.get('name') ?? '').trim(), admin: form.get('admin') === '1', method: 'link' in choice ? 'link' : 'password' };
    const refuse = (text: string) => accountsPage(deps, ctx, session, { status: 400, values, notice: { kind: 'error', text: `The account was not created: ${text}` } });
    if ('error' in choice) return refuse(choice.error);
    let granted: AccessGranted;
    try {
      granted = await createConsoleAccount(deps.store, values.name, choice, values.admin);
    } catch (error) {
      if (!(error instanceof AccountError)) throw error;
      return refuse(error.message);
    }
    if (granted.linkPath !== undefined) return sendHtml(ctx.res, 200, linkShownPage(ctx, session, granted, `Account “${granted.account.name}” created`));
    redirect(ctx.res, `/app/accounts?account=${encodeURIComponent(granted.account.name)}&change=created`);
  });

  const action = page(deps, async (ctx) => {
    const params = ACCOUNT_PAGE(ctx.path);
    if (params === undefined) throw new FormError(404, 'There is no such page.');
    if (params.action === 'limits') return accountLimits(ctx);
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    const account = await accountInPath(deps, params.name!);
    const verb = params.action!;
    if (verb === 'password' && ctx.req.method === 'GET') return sendHtml(ctx.res, 200, passwordPage(session, account));
    if (ctx.req.method !== 'POST') throw new FormError(405, 'Use POST here.');
    const form = await checkedForm(ctx, session);
    try {
      if (verb === 'password') {
        const choice = choiceOf(form);
        if ('error' in choice) return sendHtml(ctx.res, 400, passwordPage(session, account, choice.error));
        const granted = await resetPassword(deps.store, account.name, choice);
        if (granted.linkPath !== undefined) return sendHtml(ctx.res, 200, linkShownPage(ctx, session, granted, `New sign-in link for “${account.name}”`));
        return redirect(ctx.res, `/app/accounts?account=${encodeURIComponent(account.name)}&change=password`);
      }
      await changeAccount(deps.store, account.name, CHANGES[verb as Change].change, session.account);
    } catch (error) {
      if (!(error instanceof AccountError)) throw error;
      if (verb === 'password') return sendHtml(ctx.res, 400, passwordPage(session, account, error.message));
      return accountsPage(deps, ctx, session, { status: 409, notice: { kind: 'error', text: `Nothing changed: ${error.message}` } });
    }
    redirect(ctx.res, `/app/accounts?account=${encodeURIComponent(account.name)}&change=${verb}`);
  });

  return { list, create, action };
}
