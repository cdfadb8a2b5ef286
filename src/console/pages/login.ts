import { randomBytes } from 'node:crypto';
import { html, layout } from '../html.js';
import { clientIp, cookie, FormError, parseCookies, readForm, redirect, safeEqual, sameOrigin, sendHtml } from '../http.js';
import { LoginThrottle } from '../login-throttle.js';
import { decoyHash, MIN_PASSWORD_LENGTH, verifyPassword } from '../passwords.js';
import { AccountError, redeemSignInLink, SIGN_IN_LINK_PREFIX } from '../accounts.js';
import { checkedForm, errorPage, page, requireSession, type ConsoleDeps } from '../console-context.js';
import { hashToken, TOKEN_PATTERN } from '../tokens.js';
import type { Handler } from '../../http/handler.js';

/** Double-submit token for the sign-in form, which has no session yet to derive one from. */
const LOGIN_COOKIE = 'sluice_login';

function safeNext(next: string | null): string {
  return next !== null && /^\/app(\/[A-Za-z0-9._~%/-]*)?$/.test(next) && !next.startsWith('//') ? next : '/app/keys';
}

function loginPage(token: string, options: { username?: string; next: string; error?: string; info?: string }) {
  return layout({
    title: 'Sign in',
    nav: 'login',
    body: html`<section class="narrow card">
  <h1>Sign in to the console</h1>
  ${options.info ? html`<p class="notice" role="status">${options.info}</p>` : ''}
  ${options.error ? html`<p class="notice notice-error" role="alert" id="login-error">${options.error}</p>` : ''}
  <form method="post" action="/app/login" class="stack">
    <input type="hidden" name="csrf" value="${token}">
    <input type="hidden" name="next" value="${options.next}">
    <div class="field">
      <label for="username">Username</label>
      <input id="username" name="username" autocomplete="username" required autofocus value="${options.username ?? ''}"${options.error ? html` aria-describedby="login-error"` : ''}>
    </div>
    <div class="field">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required>
    </div>
    <button type="submit" class="btn">Sign in</button>
  </form>
  <p class="muted small">Accounts are created by an operator with <code>sluice accounts create</code>.</p>
</section>`,
  });
}

function freshToken(): string {
  return randomBytes(24).toString('base64url');
}

/** The one-time link's form: the visitor chooses the account's password. The token in the path is the form's secret. */
function linkPage(token: string, name: string, error?: string) {
  return layout({
    title: 'Choose your password',
    nav: 'login',
    body: html`<section class="narrow card">
  <h1>Welcome, ${name}</h1>
  <p>Choose the password you will sign in with. This link works once.</p>
  ${error ? html`<p class="notice notice-error" role="alert" id="link-error">${error}</p>` : ''}
  <form method="post" action="${SIGN_IN_LINK_PREFIX}${token}" class="stack">
    <input type="text" name="username" value="${name}" autocomplete="username" readonly hidden>
    <div class="field">
      <label for="new-password">New password</label>
      <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required autofocus${error ? html` aria-describedby="link-error"` : ''}>
      <p class="hint">At least ${MIN_PASSWORD_LENGTH} characters.</p>
    </div>
    <div class="field">
      <label for="confirm-password">The same password again</label>
      <input id="confirm-password" name="confirm" type="password" autocomplete="new-password" required>
    </div>
    <button type="submit" class="btn">Set password and sign in</button>
  </form>
</section>`,
  });
}

const LINK_GONE = 'This sign-in link has been used, has expired or is not valid. Ask an admin for a new one.';

export function loginRoutes(deps: ConsoleDeps): { get: Handler; post: Handler; logout: Handler; link: Handler } {
  const get = page(deps, async (ctx) => {
    const query = new URLSearchParams(ctx.query);
    if (await deps.sessions.current(ctx.req)) return redirect(ctx.res, safeNext(query.get('next')));
    const token = freshToken();
    const info = query.get('expired') ? 'Your session has ended. Sign in again.' : query.get('signedout') ? 'You are signed out.' : undefined;
    sendHtml(ctx.res, 200, loginPage(token, { next: safeNext(query.get('next')), info }), {
      'set-cookie': cookie(ctx.req, LOGIN_COOKIE, token, { maxAgeSeconds: 3600, path: '/app/login' }),
    });
  });

  const post = page(deps, async (ctx) => {
    const form = await readForm(ctx.req);
    const expected = parseCookies(ctx.req).get(LOGIN_COOKIE) ?? '';
    if (!sameOrigin(ctx.req) || expected === '' || !safeEqual(form.get('csrf') ?? '', expected)) {
      throw new FormError(403, 'The sign-in form has expired or did not come from this site. Open /app/login and try again.');
    }
    const username = (form.get('username') ?? '').trim().slice(0, 200);
    const password = (form.get('password') ?? '').slice(0, 2048);
    const next = safeNext(form.get('next'));
    const subject = LoginThrottle.subject(username, clientIp(ctx.req));
    const answer = (status: number, error: string, headers: Record<string, string> = {}) =>
      sendHtml(ctx.res, status, loginPage(expected, { username, next, error }), headers);

    // Counted before the (slow) check, so guesses sent in parallel cannot all be checked.
    const turn = await deps.throttle.attempt(subject);
    if (!turn.allowed) {
      const seconds = Math.ceil(turn.waitMs / 1000);
      return answer(429, `Too many failed sign-ins. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`, { 'retry-after': String(seconds) });
    }
    const credentials = username === '' ? undefined : await deps.store.accounts.passwordHash(username);
    // An unknown name costs the same hash as a known one, so timing does not tell which names exist.
    const ok = await verifyPassword(password, credentials?.passwordHash ?? (await decoyHash()));
    if (credentials === undefined || !ok) {
      const more = turn.lockMs > 0 ? ` Too many failures: wait ${Math.ceil(turn.lockMs / 1000)} s before the next try.` : '';
      return answer(401, `The username or password is not right.${more}`);
    }
    if (credentials.account.disabled) return answer(403, 'This account is disabled. Ask an admin of this gateway.');
    await deps.throttle.succeeded(subject);
    const sessionCookie = await deps.sessions.start(ctx.req, credentials.account);
    redirect(ctx.res, next, { 'set-cookie': [sessionCookie, cookie(ctx.req, LOGIN_COOKIE, '', { maxAgeSeconds: 0, path: '/app/login' })] });
  });

  const logout = page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx);
    if (session === undefined) return;
    await checkedForm(ctx, session);
    await deps.sessions.end(session);
    redirect(ctx.res, '/app/login?signedout=1', { 'set-cookie': deps.sessions.clearCookie(ctx.req) });
  });

  /** `/app/sign-in/<token>`: GET, the form to choose a password; POST, sets it (using the link) and signs in. */
  const link = page(deps, async (ctx) => {
    const token = ctx.path.slice(SIGN_IN_LINK_PREFIX.length);
    const account = TOKEN_PATTERN.test(token) ? await deps.store.signInLinks.find(hashToken(token), Date.now()) : undefined;
    if (account === undefined) return sendHtml(ctx.res, 410, errorPage('Link not valid', LINK_GONE));
    if (ctx.req.method !== 'POST') return sendHtml(ctx.res, 200, linkPage(token, account.name));
    const form = await readForm(ctx.req);
    if (!sameOrigin(ctx.req)) throw new FormError(403, 'This form did not come from this site.');
    const password = (form.get('password') ?? '').slice(0, 2048);
    if (password !== (form.get('confirm') ?? '')) return sendHtml(ctx.res, 400, linkPage(token, account.name, 'The two passwords are not the same.'));
    let redeemed;
    try {
      redeemed = await redeemSignInLink(deps.store, token, password);
    } catch (error) {
      if (!(error instanceof AccountError)) throw error;
      return sendHtml(ctx.res, 400, linkPage(token, account.name, error.message));
    }
    if (redeemed === undefined) return sendHtml(ctx.res, 410, errorPage('Link not valid', LINK_GONE));
    redirect(ctx.res, '/app/keys', { 'set-cookie': await deps.sessions.start(ctx.req, redeemed) });
  });

  return { get, post, logout, link };
}
