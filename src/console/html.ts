/**
 * HTML built with a tagged template that escapes every interpolated value unless it is already
 * Html. Pages are written only through `html`, so user-controlled text (key names, account names,
 * model fields) cannot become markup.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(value: Part): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!));
  return new Html(out);
}

/** Markup written by us, not derived from input. */
export function trusted(markup: string): Html {
  return new Html(markup);
}

export interface LayoutOptions {
  readonly title: string;
  readonly body: Html;
  /** Which nav item is current. */
  readonly nav?: 'models' | 'status' | 'keys' | 'usage' | 'catalogue' | 'mcp' | 'accounts' | 'login';
  /** The signed-in account; public pages leave it out so they never carry account data. */
  readonly user?: { readonly name: string; readonly isAdmin: boolean; readonly csrf: string };
  /** Seconds between live refreshes of <main> (with JavaScript). */
  readonly refreshSeconds?: number;
}

export function layout(options: LayoutOptions): Html {
  const { user } = options;
  const item = (key: LayoutOptions['nav'], href: string, label: string) =>
    html`<li><a href="${href}"${options.nav === key ? trusted(' aria-current="page"') : ''}>${label}</a></li>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Sluice</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/assets/console.css">
<script src="/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <nav aria-label="Main">
    <a class="brand" href="/models"><span aria-hidden="true">◆</span> Sluice</a>
    <ul>
      ${item('models', '/models', 'Models')}
      ${item('status', '/status', 'Status')}
      ${item('keys', '/app/keys', 'API keys')}
      ${item('usage', '/app/usage', 'Usage')}
      ${user?.isAdmin ? item('catalogue', '/app/catalogue', 'Catalogue') : ''}
      ${user?.isAdmin ? item('mcp', '/app/mcp', 'MCP servers') : ''}
      ${user?.isAdmin ? item('accounts', '/app/accounts', 'Accounts') : ''}
    </ul>
    ${
      user
        ? html`<form class="signout" method="post" action="/app/logout">
      <input type="hidden" name="csrf" value="${user.csrf}">
      <span class="who">Signed in as <strong>${user.name}</strong>${user.isAdmin ? ' (admin)' : ''}</span>
      ${options.nav === 'models' || options.nav === 'status' ? html`<a href="/app/keys">Console</a>` : ''}
      <button type="submit" class="btn btn-quiet">Sign out</button>
    </form>`
        : options.nav === 'login'
          ? ''
          : html`<a class="signin" href="/app/login">Sign in</a>`
    }
  </nav>
</header>
<main id="main" tabindex="-1"${options.refreshSeconds ? html` data-refresh="${options.refreshSeconds}"` : ''}>
${options.body}
</main>
<footer class="foot"><p>Sluice LLM gateway · <a href="/models.json">models.json</a> · <a href="/status.json">status.json</a></p></footer>
</body>
</html>
`;
}

export function formatUsd(value: number): string {
  if (value === 0) return '$0';
  if (value < 0.0001) return '<$0.0001';
  if (value < 0.01) return `$${value.toFixed(4)}`;
  return `$${value.toFixed(2)}`;
}

/** Per-million-token prices keep the precision they were given (0.2 → $0.20, 0.075 → $0.075). */
export function formatPrice(value: number): string {
  const text = value.toFixed(value * 100 === Math.round(value * 100) ? 2 : 4).replace(/(\.\d\d\d*?)0+$/, '$1');
  return `$${text}`;
}

export function formatInt(value: number): string {
  return value.toLocaleString('en-US');
}

/** Month names as the console writes them in dates. */
export const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
export const DAY_MS = 86_400_000;

/** A UTC day as people read it: `25 Nov 2026`. */
export function humanDay(at: number): string {
  const date = new Date(at);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/**
 * A moment as people read it, always in UTC (the page is drawn on the server, which cannot know
 * the reader's zone): `today 18:02 UTC`, `yesterday 18:02 UTC` (by the UTC day of `now`), else
 * `25 Nov 2026, 18:02 UTC`. Words like "3 minutes ago" are left out: a page stays open, and they would go stale.
 */
export function humanDate(at: number, now: number): string {
  const date = new Date(at);
  const time = `${String(date.getUTCHours()).padStart(2, '0')}:${String(date.getUTCMinutes()).padStart(2, '0')} UTC`;
  const daysAgo = Math.floor(now / DAY_MS) - Math.floor(at / DAY_MS);
  if (daysAgo === 0) return `today ${time}`;
  if (daysAgo === 1) return `yesterday ${time}`;
  return `${humanDay(at)}, ${time}`;
}

/** Shown as `text`, the exact ISO time in `datetime` for programs and in `title` for a hover. */
function isoTagged(at: number, text: string): Html {
  const iso = new Date(at).toISOString();
  return html`<time datetime="${iso}" title="${iso}">${text}</time>`;
}

/** Every moment the console shows (humanDate), with its exact time on hover; `null` is "never" (a key not used yet). */
export function timeTag(at: number | null, now: number): Html {
  return at === null ? html`<span class="muted">never</span>` : isoTagged(at, humanDate(at, now));
}

/** A date the console shows as a day alone (a model's release, a range's ends): humanDay, the exact time on hover. */
export function dayTag(at: number): Html {
  return isoTagged(at, humanDay(at));
}
