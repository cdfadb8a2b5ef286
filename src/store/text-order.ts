import type { RawBuilder } from 'kysely';
import { sql } from './kysely.js';

/**
 * A text column to order by, by its bytes on both dialects: SQLite compares text by bytes, while
 * PostgreSQL would follow the database's locale (which, say, ignores case and punctuation), so
 * lists would come out in another order there.
 */
export function byBytes(column: string, dialect: 'sqlite' | 'postgres'): RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`${sql.ref(column)} collate "C"` : sql`${sql.ref(column)}`;
}

/**
 * A total order on text (by UTF-16 code units), the same in every process: writers that take row
 * locks in this order wait for each other instead of deadlocking.
 */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
