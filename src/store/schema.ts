import type { Generated } from 'kysely';

/** Table shapes as Kysely sees them. Booleans are stored as 0/1 so both dialects read them alike. */
export interface Database {
  meta: { name: string; value: number };
  accounts: { id: string; name: string; created_at: number };
  api_keys: {
    id: string;
    account_id: string;
    name: string;
    secret_hash: string;
    secret_prefix: string;
    secret_last_four: string;
    status: string;
    models: string | null; // JSON array of model ids
    expires_at: number | null;
    created_at: number;
    updated_at: number;
    last_used_at: number | null;
  };
  usage_ledger: {
    id: Generated<number>;
    at: number;
    request_id: string;
    account_id: string;
    key_id: string;
    operation: string;
    model: string;
    provider_id: string | null;
    status: number;
    error_kind: string | null;
    stream: number;
    prompt_tokens: number;
    completion_tokens: number;
    tokens_counted: number;
    latency_ms: number;
    ttfb_ms: number | null;
    cost_usd: number;
  };
}
