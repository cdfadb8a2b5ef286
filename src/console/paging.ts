import { html, type Html } from './html.js';
import { FormError } from './http.js';

/** Rows per page of a console or public list: `limit` defaults to this and may not exceed the max. */
export const PAGE_SIZE = { default: 100, max: 500 } as const;

/** A page number (from 1) and its size, as asked for in the query. */
export interface PageSpec {
  readonly page: number;
  readonly limit: number;
}

/** A 400 about one paging parameter; JSON answers name it in `param`. */
export class PagingError extends FormError {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(400, message);
  }
}

function positiveInt(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d{1,15}$/.test(raw) || value < 1 || value > max) {
    throw new PagingError(name, `Invalid '${name}': expected a whole number from 1 to ${max}, got '${raw.slice(0, 40)}'.`);
  }
  return value;
}

/** `page` and `limit` from a query; a malformed or out-of-bounds one is a 400 naming it. */
export function pageSpec(query: URLSearchParams): PageSpec {
  return { page: positiveInt(query, 'page', 1, Number.MAX_SAFE_INTEGER), limit: positiveInt(query, 'limit', PAGE_SIZE.default, PAGE_SIZE.max) };
}

/** One page of a list and where it stands; a page past the end is empty. */
export interface Paged<T> {
  readonly items: readonly T[];
  readonly page: number;
  readonly limit: number;
  readonly total: number;
  readonly pages: number;
  readonly hasMore: boolean;
}

export function paged<T>(items: readonly T[], total: number, spec: PageSpec): Paged<T> {
  const pages = Math.max(1, Math.ceil(total / spec.limit));
  return { items, page: spec.page, limit: spec.limit, total, pages, hasMore: spec.page < pages };
}

/** The page of an already ordered list: a slice, so the cost is the page's. */
export function pageOf<T>(all: readonly T[], spec: PageSpec): Paged<T> {
  const start = (spec.page - 1) * spec.limit;
  return paged(start >= all.length ? [] : all.slice(start, start + spec.limit), all.length, spec);
}

/** `path?query` with `page` set to `page` (dropped for the first) and everything else kept. */
export function pageHref(path: string, query: URLSearchParams, page: number): string {
  const params = new URLSearchParams(query);
  if (page <= 1) params.delete('page');
  else params.set('page', String(page));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** Previous and next links under a paged table, with where this page stands; nothing when one page holds all. */
export function pager(path: string, query: URLSearchParams, list: Paged<unknown>, label: string): Html {
  if (list.pages <= 1 && list.page === 1) return html``;
  const first = (list.page - 1) * list.limit + 1;
  const shown = list.items.length === 0 ? `none (page ${list.page} is past the last, ${list.pages})` : `${first}–${first + list.items.length - 1} of ${list.total}`;
  const previous = list.page > 1 ? html`<a class="btn btn-small btn-secondary" rel="prev" href="${pageHref(path, query, Math.min(list.page - 1, list.pages))}">← Previous page</a>` : '';
  const next = list.hasMore ? html`<a class="btn btn-small btn-secondary" rel="next" href="${pageHref(path, query, list.page + 1)}">Next page →</a>` : '';
  return html`<nav class="pager row" aria-label="${label} pages">${previous}<span class="muted small">${shown}</span>${next}</nav>`;
}
