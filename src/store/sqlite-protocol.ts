/** The messages between the store and its SQLite thread. */
export interface SqliteThreadOptions {
  readonly file: string;
  /** How long a statement keeps asking for a lock another process holds before it fails. */
  readonly busyTimeoutMs: number;
}

export interface SqliteRequest {
  readonly id: number;
  readonly connection: 'read' | 'write';
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

export type SqliteResponse =
  | { readonly id: number; readonly rows: unknown[]; readonly changes?: bigint; readonly insertId?: bigint }
  | { readonly id: number; readonly error: { readonly message: string; readonly code: string | undefined } };
