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
