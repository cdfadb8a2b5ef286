import { randomBytes } from 'node:crypto';
import { html, layout } from '../html.js';
import { clientIp, cookie, FormError, parseCookies, readForm, redirect, safeEqual, sameOrigin, sendHtml } from '../http.js';
import { LoginThrottle } from '../login-throttle.js';
import { decoyHash, verifyPassword } from '../passwords.js';
import { checkedForm, page, requireSession, type ConsoleDeps } from '../console-context.js';
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

export function loginRoutes(deps: ConsoleDeps): { get: Handler; post: Handler; logout: Handler } {
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

  return { get, post, logout };
}
