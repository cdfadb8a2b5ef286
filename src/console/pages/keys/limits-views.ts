// The limits pages as HTML: a key's and an account's limits forms, each with the use now and every
// refused field summed up above the form.
import { maskSecret } from '../../../auth/key-secret.js';
import { hasLimits } from '../../../core/key-limits.js';
import type { AccountRecord, KeyRecord } from '../../../store/store.js';
import { userOf } from '../../console-context.js';
import { formatInt, html, layout, type Html } from '../../html.js';
import { describeMcp, describeUse, limitsFieldset, type LimitValues, type Uses } from '../../limits-view.js';
import type { Session } from '../../sessions.js';
import { displayStatus } from './views.js';

const FIELD_LABELS: Record<string, string> = {
  rpm: 'Requests per minute',
  tpm: 'Tokens per minute',
  concurrency: 'Requests in flight',
  budget_usd: 'Budget (USD)',
  budget_period: 'Budget period',
  mcp: 'MCP servers and tools',
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

/** A key's limits form, with its use now (`uses`) and its account's. */
export function keyLimitsPage(session: Session, key: KeyRecord, uses: Uses, now: number, values: LimitValues, errors: Record<string, string>): Html {
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
    <dt>MCP</dt><dd data-mcp="key">${describeMcp(key.limits)}${key.accountLimits?.mcp === undefined ? '' : html` <span class="muted">(within the account’s: ${describeMcp(key.accountLimits)})</span>`}</dd>
  </dl>
  <p>The key’s own limits apply to it alone; its account’s apply to all the account’s keys together. A request must be within both. Changes apply within a second.</p>
  ${limitsForm(session, `/app/keys/${encodeURIComponent(key.id)}/limits`, values, errors, 'Limits of this key', 'key-limits')}
</section>`,
  });
}

/** An account's limits form, with its use now (`uses`) and how many of its keys (`keys`) are usable. */
export function accountLimitsPage(session: Session, account: AccountRecord, keys: readonly KeyRecord[], uses: Uses, now: number, values: LimitValues, errors: Record<string, string>): Html {
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
    <dt>MCP</dt><dd data-mcp="account">${account.limits?.mcp === undefined ? html`<span class="muted">no ceiling: each key’s own list</span>` : describeMcp(account.limits)}</dd>
  </dl>
  <p>These limits apply to all the account’s keys together, on top of each key’s own. Changes apply within a second.</p>
  ${limitsForm(session, `/app/accounts/${encodeURIComponent(account.name)}/limits`, values, errors, 'Limits of this account', 'account-limits')}
</section>`,
  });
}
