// The keys pages as HTML: the list of keys with their use and limits and the creation form, the
// new key's one-time secret and the confirmation of a status change.
import { maskSecret } from '../../../auth/key-secret.js';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { describeLimits, hasLimits, type Limits } from '../../../core/key-limits.js';
import type { AccountRecord, KeyRecord, UsageFigures } from '../../../store/store.js';
import { listOfIds } from '../../../catalogue/unpriced.js';
import { accountFilterForm } from '../../account-filter.js';
import { userOf } from '../../console-context.js';
import { formatInt, formatUsd, html, layout, timeTag, type Html } from '../../html.js';
import { anyLimitTyped, describeMcp, describeUse, LIMIT_FIELDS, limitsFieldset, type Uses, type UseOrUnavailable } from '../../limits-view.js';
import type { Session } from '../../sessions.js';
import { MAX_KEY_NAME, type CreateValues } from './forms.js';

/** Above this many models the key form takes ids typed in one field rather than a checkbox per model. */
const MODEL_CHECKBOXES_MAX = 200;

/** The three changes a key can go through, each confirmed on its own page first: what the page says of each. */
const ACTIONS = {
  disable: { verb: 'Disable', consequence: 'Requests with this key are refused (403) within a second. You can enable it again later.' },
  enable: { verb: 'Enable', consequence: 'Requests with this key are accepted again within a second.' },
  revoke: { verb: 'Revoke', consequence: 'Requests with this key are refused for good, within a second. A revoked key cannot be enabled again.' },
} as const satisfies Record<string, { verb: string; consequence: string }>;
export type KeyAction = keyof typeof ACTIONS;

export type Notice = { kind: 'ok' | 'error'; text: string };

/** A key's status as shown: an active key past its expiry is `expired`. */
export function displayStatus(key: KeyRecord, now: number): string {
  if (key.status === 'active' && key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return key.status;
}


/** A scope's limits and use in a list item, or a muted "none". */
function scopeItem(scope: 'key' | 'account', label: string, limits: Limits | null, use: UseOrUnavailable | undefined, now: number): Html {
  return html`<li data-scope="${scope}"><span class="limit-scope">${label}:</span> ${hasLimits(limits) ? describeUse(limits, use, now) : html`<span class="muted">none</span>`}</li>`;
}

/** The MCP servers and tools a key may use (its list, within its account's where that has one); shown only where some list is set. */
function mcpItem(key: KeyRecord): Html | string {
  if (key.limits?.mcp === undefined && key.accountLimits?.mcp === undefined) return '';
  return html`<li data-scope="mcp"><span class="limit-scope">MCP:</span> ${describeMcp(key.limits)}${key.accountLimits?.mcp === undefined ? '' : html` <span class="muted small">(account: ${describeMcp(key.accountLimits)})</span>`}</li>`;
}

/** The limits cell of a key's row: its own limits and use, its account's (shared by all the account's keys) where it has any, and its MCP allow-list. */
function limitsCell(key: KeyRecord, uses: Uses, now: number): Html {
  const mcp = mcpItem(key);
  if (!hasLimits(key.limits) && !hasLimits(key.accountLimits) && mcp === '') return html`<td class="limits"><span class="muted">none</span></td>`;
  return html`<td class="limits"><ul class="plain">
    ${scopeItem('key', 'Key', key.limits, uses.keys.get(key.id), now)}
    ${hasLimits(key.accountLimits) ? scopeItem('account', 'Account', key.accountLimits, uses.accounts.get(key.accountId), now) : ''}
    ${mcp}
  </ul></td>`;
}

/** The 30 days' spend; requests to a model without a price are unknown spend, not $0 (on a line of its own, for the width). */
function spendCell(usage: UsageFigures | undefined): Html | string {
  if (usage === undefined || usage.unpricedRequests === 0) return formatUsd(usage?.costUsd ?? 0);
  return usage.costUsd === 0 ? 'unpriced' : html`${formatUsd(usage.costUsd)}<br><span class="muted">+ unpriced</span>`;
}

function keyRow(key: KeyRecord, usage: UsageFigures | undefined, uses: Uses, isAdmin: boolean, now: number): Html {
  const status = displayStatus(key, now);
  const tokens = usage === undefined ? 0 : usage.inputTokens + usage.outputTokens;
  const actions: Html[] = [];
  if (isAdmin && key.status !== 'revoked') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/limits">Limits<span class="visually-hidden"> of ${key.name}</span></a>`);
  if (key.status === 'active') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/disable">Disable<span class="visually-hidden"> ${key.name}</span></a>`);
  if (key.status === 'disabled') actions.push(html`<a class="btn btn-small btn-secondary" href="/app/keys/${encodeURIComponent(key.id)}/enable">Enable<span class="visually-hidden"> ${key.name}</span></a>`);
  if (key.status !== 'revoked') actions.push(html`<a class="btn btn-small btn-danger" href="/app/keys/${encodeURIComponent(key.id)}/revoke">Revoke<span class="visually-hidden"> ${key.name}</span></a>`);
  // The name, account, secret and status share the first cell, and models go one a line, so that the actions stay in a 1,280 px window.
  return html`<tr data-key-id="${key.id}">
  <th scope="row">${key.name}${isAdmin ? html`<span class="sub muted"><span class="visually-hidden">account </span>${key.accountName}</span>` : ''}<span class="sub"><code>${maskSecret(key.secretPrefix, key.secretLastFour)}</code> <span class="pill pill-${status}">${status}</span></span></th>
  <td class="models">${key.models === null ? html`<span class="muted">all models</span>` : html`<ul class="plain">${key.models.map((m) => html`<li><code>${m}</code></li>`)}</ul>`}</td>
  <td class="dates"><span class="muted">created</span> ${timeTag(key.createdAt, now)}<br><span class="muted">used</span> ${timeTag(key.lastUsedAt, now)}${key.expiresAt === null ? '' : html`<br><span class="muted">expires</span> ${timeTag(key.expiresAt, now)}`}</td>
  <td class="num">${formatInt(usage?.requests ?? 0)}</td>
  <td class="num">${formatInt(tokens)}</td>
  <td class="num">${spendCell(usage)}</td>
  ${limitsCell(key, uses, now)}
  <td class="actions stacked">${actions.length > 0 ? actions : html`<span class="muted">—</span>`}</td>
</tr>`;
}


/** What the keys page shows, read for the session: its keys with their use, the accounts, and the creation form. */
export interface KeysPageInput {
  readonly session: Session;
  /** An admin's choice of account by name; null for all (always null for a member). */
  readonly accountFilter: string | null;
  readonly now: number;
  readonly keys: readonly KeyRecord[];
  /** Each key's figures over the usage columns' days, by key id. */
  readonly usage: ReadonlyMap<string, UsageFigures>;
  /** The accounts of the filter: an admin's all, a member's own. */
  readonly accounts: readonly AccountRecord[];
  /** The accounts whose limits are listed: an admin's all (or the one shown), a member's own. */
  readonly listed: readonly AccountRecord[];
  readonly uses: Uses;
  /** The catalogue's models, offered to the new key. */
  readonly models: readonly CatalogueModel[];
  readonly notice: Notice | undefined;
  readonly errors: Record<string, string>;
  readonly values: CreateValues;
}

export function keysPage({ session, accountFilter, now, keys, usage, accounts, listed, uses, models, notice, errors, values }: KeysPageInput): Html {
  const isAdmin = session.account.isAdmin;
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
<table class="data wide keys">
  <thead><tr>
    <th scope="col">Key<br><span class="muted">${isAdmin ? 'account, ' : ''}secret, status</span></th><th scope="col">Models</th>
    <th scope="col">Dates</th>
    <th scope="col" class="num">Requests<br><span class="muted">30 d</span></th><th scope="col" class="num">Tokens<br><span class="muted">30 d</span></th><th scope="col" class="num">Cost<br><span class="muted">30 d</span></th>
    <th scope="col">Limits<br><span class="muted">used now</span></th>
    <th scope="col">Actions</th>
  </tr></thead>
  <tbody>
  ${keys.length === 0 ? html`<tr><td colspan="8" class="empty">No keys yet. Create one below.</td></tr>` : keys.map((key) => keyRow(key, usage.get(key.id), uses, isAdmin, now))}
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
  return layout({ title: 'API keys', nav: 'keys', user: userOf(session), body });
}

/** The accounts' limits and use: what every key of an account shares. Admins get a link to change them. */
function accountLimitsSection(accounts: readonly AccountRecord[], uses: Uses, isAdmin: boolean, now: number): Html {
  if (!isAdmin && !accounts.some((a) => a.limits?.mcp !== undefined || hasLimits(a.limits))) return html``;
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
      <td class="limits">${hasLimits(account.limits) ? describeUse(account.limits, uses.accounts.get(account.id), now) : html`<span class="muted">none</span>`}${account.limits?.mcp === undefined ? '' : html`<br><span class="limit-scope">MCP:</span> ${describeMcp(account.limits)}`}</td>
      ${isAdmin ? html`<td class="actions"><a class="btn btn-small btn-secondary" href="/app/accounts/${encodeURIComponent(account.name)}/limits">Limits<span class="visually-hidden"> of the account ${account.name}</span></a></td>` : ''}
    </tr>`,
          )
    }
    </tbody>
  </table>
  </div>
</section>`;
}

/**
 * What a saved budget cannot bind on, for the notice after limits are saved: the unpriced models the
 * key may use (its allow-list; null: every model), refused to it while it has a budget.
 */
export type UnpricedOf = (allowed: readonly string[] | null) => readonly string[];

/** Said after limits with a budget are saved when some of the models they cover have no price. */
function unpricedWarning(limits: Limits | null, unpriced: readonly string[]): string {
  if (limits?.budgetUsd === undefined || unpriced.length === 0) return '';
  return ` A budget cannot be kept on a model without a price, so these are refused until they are priced (a price of 0 makes a model free): ${listOfIds(unpriced)}.`;
}

/** The notice after a change, named in the query (`changed`, `limits`, `account_limits`) by what it changed. */
export function noticeFromQuery(query: URLSearchParams, keys: readonly KeyRecord[], accounts: readonly AccountRecord[], unpricedOf: UnpricedOf): Notice | undefined {
  const changed = query.get('changed');
  if (changed !== null) {
    const key = keys.find((k) => k.id === changed);
    return key && { kind: 'ok', text: `Key “${key.name}” is now ${key.status}.` };
  }
  const limited = query.get('limits');
  if (limited !== null) {
    const key = keys.find((k) => k.id === limited);
    return key && { kind: 'ok', text: `Limits of the key “${key.name}” saved: ${describeLimits(key.limits)}. They apply within a second.${unpricedWarning(key.limits, unpricedOf(key.models))}` };
  }
  const accountName = query.get('account_limits');
  if (accountName !== null) {
    const account = accounts.find((a) => a.name === accountName);
    return account && { kind: 'ok', text: `Limits of the account “${account.name}” saved: ${describeLimits(account.limits)}. They apply to all its keys together, within a second.${unpricedWarning(account.limits, unpricedOf(null))}` };
  }
  return undefined;
}

/** The new key's secret, shown this once (in the example too); `origin` is this gateway as the browser reached it, for the example. */
export function createdPage(session: Session, key: KeyRecord, secret: string, origin: string): Html {
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
    <dt>Expires</dt><dd>${key.expiresAt === null ? 'never' : timeTag(key.expiresAt, Date.now())}</dd>
    ${key.limits === null ? '' : html`<dt>Limits</dt><dd>${describeLimits(key.limits)}</dd>`}
  </dl>
  <details>
    <summary>How to use it</summary>
    <pre><code>SLUICE_URL='${origin}'
SLUICE_KEY='${secret}'
curl -sS "$SLUICE_URL/v1/models" -H "Authorization: Bearer $SLUICE_KEY"</code></pre>
    <p>Any OpenAI client works with its base URL set to this gateway’s <code>/v1</code> (<code>${origin}/v1</code>). Each model’s page on <a href="/models">Models</a> has an example of its own.</p>
  </details>
  <p><a class="btn btn-secondary" href="/app/keys">Back to keys</a></p>
</section>`,
  });
}

export function confirmPage(session: Session, key: KeyRecord, action: KeyAction): Html {
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
