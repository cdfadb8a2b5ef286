import type { AccountRecord } from '../store/store.js';
import { html, type Html } from './html.js';

/**
 * The admins' account picker of a page (a GET form, so it works without script): every account,
 * or one (`?account=NAME`; empty for all). `keep` are the page's other parameters, carried along.
 */
export function accountFilterForm(action: string, accounts: readonly AccountRecord[], chosen: string | null, keep: Readonly<Record<string, string>> = {}): Html {
  return html`<form class="filter" method="get" action="${action}">
  ${Object.entries(keep).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
  <label for="account-filter">Account</label>
  <select id="account-filter" name="account">
    <option value="">All accounts</option>
    ${accounts.map((a) => html`<option value="${a.name}"${chosen === a.name ? html` selected` : ''}>${a.name}</option>`)}
  </select>
  <button type="submit" class="btn btn-secondary btn-small">Show</button>
</form>`;
}
