import { createHash } from 'node:crypto';

/**
 * Keyset pagination over a merged list. The list is in one stable order, by the key the caller
 * sees (a tool's or prompt's name, a resource's URI, a template's URI template, each unique in
 * its list), and a cursor names the last key it returned: the next page starts after it. So a
 * list that changes between pages never repeats an entry, and loses only the entries that left
 * it (a server gone down between pages takes its own entries alone); an entry added behind the
 * cursor is seen on the next walk.
 *
 * Cursors are opaque to callers: base64url of a small JSON, then a check of it, so that a cursor
 * that is not one of ours, was edited, or names another list is refused (JSON-RPC invalid params).
 * The check is a hash, not a secret: a cursor only ever pages the caller's own list, so a forged
 * one gains nothing; the check makes a damaged one an error rather than a silent jump.
 */
export type ListKind = 'tools' | 'resources' | 'resourceTemplates' | 'prompts';

/** One entry of a list and the key it is ordered by. */
export interface Keyed<T> {
  readonly key: string;
  readonly item: T;
}

/** The longest cursor read: ours are the length of a name or a URI and a few dozen characters. */
const MAX_CURSOR_LENGTH = 16 * 1024;
const CHECK_LENGTH = 16;

export function encodeCursor(list: ListKind, after: string): string {
  const body = Buffer.from(JSON.stringify({ l: list, a: after }), 'utf8').toString('base64url');
  return `${body}.${checkOf(body)}`;
}

/** The key a cursor of this list names (the next page starts after it), or undefined when it is no cursor of this list. */
export function decodeCursor(list: ListKind, cursor: unknown): string | undefined {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const [body, check] = cursor.split('.') as [string, string];
  if (check !== checkOf(body)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const { l, a } = parsed as { l?: unknown; a?: unknown };
  return l === list && typeof a === 'string' ? a : undefined;
}

/** Entries in cursor order, a key kept once (the first: configuration order decides a clash). */
export function sortedByKey<T>(entries: Iterable<Keyed<T>>): Keyed<T>[] {
  const seen = new Set<string>();
  const unique: Keyed<T>[] = [];
  for (const entry of entries) {
    if (seen.has(entry.key)) continue;
    seen.add(entry.key);
    unique.push(entry);
  }
  return unique.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** One page of a sorted list: the entries after `after` (from the start without one), and the next cursor when there is more. */
export function pageAfter<T>(list: ListKind, sorted: readonly Keyed<T>[], after: string | undefined, pageSize: number): { readonly page: readonly T[]; readonly nextCursor: string | undefined } {
  const start = after === undefined ? 0 : firstAfter(sorted, after);
  const end = Math.min(sorted.length, start + Math.max(1, pageSize));
  const page = sorted.slice(start, end).map((entry) => entry.item);
  return { page, nextCursor: end < sorted.length ? encodeCursor(list, sorted[end - 1]!.key) : undefined };
}

/** The index of the first entry whose key is greater than `after` (binary search). */
function firstAfter<T>(sorted: readonly Keyed<T>[], after: string): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]!.key <= after) low = middle + 1;
    else high = middle;
  }
  return low;
}

function checkOf(body: string): string {
  return createHash('sha256').update(`sluice-mcp-cursor\u0000${body}`).digest('base64url').slice(0, CHECK_LENGTH);
}
