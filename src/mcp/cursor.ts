/**
 * Pagination cursors over a merged list: opaque to callers (base64url of a small JSON), naming the
 * list they page and the offset of the next page. A cursor that is not one of ours, or names
 * another list, is refused (JSON-RPC invalid params); one past the end gives an empty page. An
 * offset into the merged list survives a list change as well as any cursor can: the next page may
 * repeat or skip an entry, never fail.
 */
export type ListKind = 'tools' | 'resources' | 'resourceTemplates' | 'prompts';

/** The longest cursor read: ours are a few dozen characters. */
const MAX_CURSOR_LENGTH = 200;

export function encodeCursor(list: ListKind, offset: number): string {
  return Buffer.from(JSON.stringify({ l: list, o: offset }), 'utf8').toString('base64url');
}

/** The offset a cursor names, or undefined when it is no cursor of this list. */
export function decodeCursor(list: ListKind, cursor: unknown): number | undefined {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const { l, o } = parsed as { l?: unknown; o?: unknown };
  if (l !== list || typeof o !== 'number' || !Number.isSafeInteger(o) || o < 0) return undefined;
  return o;
}

/** One page of `items` from `offset`, and the cursor of the next when there is more. */
export function pageOf<T>(list: ListKind, items: readonly T[], offset: number, pageSize: number): { readonly page: readonly T[]; readonly nextCursor: string | undefined } {
  const end = offset + pageSize;
  return { page: items.slice(offset, end), nextCursor: end < items.length ? encodeCursor(list, end) : undefined };
}
