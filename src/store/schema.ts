import type { Generated } from 'kysely';

/** Table shapes as Kysely sees them. Booleans are stored as 0/1 so both dialects read them alike. */
export interface Database {
  meta: { name: string; value: number };
  accounts: {
    id: string;
    name: string;
    created_at: number;
    /** Console sign-in: an encoded scrypt hash (see console/passwords.ts); null for accounts without console access. */
    password_hash: Generated<string | null>;
    is_admin: Generated<number>;
    /** JSON limits (core/key-limits.ts), null for none. */
    limits: Generated<string | null>;
    /** 1: cannot sign in, and its keys are refused. */
    disabled: Generated<number>;
  };
  /** Console sessions; only a SHA-256 of the session token is kept. */
  console_sessions: { token_hash: string; account_id: string; created_at: number; expires_at: number; last_seen_at: number };
  /** One-time sign-in links; only a SHA-256 of the token is kept. `used_at` null: not used yet. */
  sign_in_links: { token_hash: string; account_id: string; created_at: number; expires_at: number; used_at: number | null };
  /**
   * Console sign-in attempts per `username|ip`, so every process slows the same guesser down:
   * `failures` counts attempts since the last success (each is counted before its check), `last_failure_at` is the latest.
   */
  login_throttle: { subject: string; failures: number; last_failure_at: number; blocked_until: number };
  /** Providers and models registered in the console: the configuration-file fields as JSON. */
  console_providers: {
    id: string;
    config: string; // JSON, without its credentials
    secrets: string | null; // AES-256-GCM sealed JSON of its credentials {api_key?, headers?, entra_client_secret?, access_key_id?, …}
    created_at: number;
    updated_at: number;
  };
  /** Upstream MCP servers registered in the console (HTTP only): the configuration fields as JSON, the headers sealed. */
  console_mcp_servers: { id: string; config: string; secrets: string | null; created_at: number; updated_at: number };
  console_models: { id: string; provider_id: string; config: string; created_at: number; updated_at: number };
  /**
   * A discovering provider's model list as its upstream last gave it (JSON array of UpstreamModel).
   * Its next listing is due by `listed_at` or `error_at` and the interval configured now; one process
   * at a time lists, holding a lease (`claimed_by` until `claimed_until`, renewed while it lists).
   * `error`: why the last listing failed, when it did (the list is then the one before).
   */
  discovered_models: {
    provider_id: string;
    models: string;
    listed_at: number | null;
    error: string | null;
    error_url: string | null;
    error_at: number | null;
    claimed_by: string | null;
    claimed_until: Generated<number>;
  };
  /** The imported price list (pricing/price-list.ts), its JSON document as validated; one row, of id 'imported'. */
  price_list: { id: string; document: string; imported_at: number };
  /** Per UTC day (days since the epoch) and provider/model: traffic and probe outcomes, kept for the uptime history. */
  status_daily: {
    day: number;
    provider_id: string;
    model: string;
    requests: Generated<number>;
    failures: Generated<number>;
    probes: Generated<number>;
    probe_failures: Generated<number>;
  };
  status_probes: {
    id: Generated<number>;
    at: number;
    provider_id: string;
    model: string;
    ok: number;
    latency_ms: number;
    error_kind: string | null;
  };
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
    /** JSON limits (core/key-limits.ts), null for none. */
    limits: Generated<string | null>;
  };
  usage_ledger: {
    id: Generated<number>;
    /** Null for rows written before entry ids (migration 0003). */
    entry_id: string | null;
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
    cached_input_tokens: Generated<number>;
    cache_write_tokens: Generated<number>;
    reasoning_tokens: Generated<number>;
    tokens_counted: number;
    latency_ms: number;
    ttfb_ms: number | null;
    cost_usd: number;
    /** 1 when the model had no price for what the request consumed: its cost_usd of 0 is not a price (migration 0013). */
    unpriced: Generated<number>;
    attempts: Generated<number>;
    deployment: string | null;
    /** JSON array of the attempts, when there was more than one or the only one failed after the upstream had the prompt. */
    attempt_log: string | null;
    /** Of a tool call (migration 0015): the bytes of its arguments and of its result; null on other rows. */
    bytes_in: number | null;
    bytes_out: number | null;
  };
  /**
   * The ledger added up per UTC day (days since the epoch), account, key and model: written in the
   * ledger's own transactions (sql-usage-daily.ts), so it always equals aggregating `usage_ledger`.
   * `failed` counts rows with a status of 400 or above.
   */
  usage_daily: {
    day: number;
    account_id: string;
    key_id: string;
    model: string;
    requests: number;
    failed: number;
    input_tokens: number;
    output_tokens: number;
    cost_usd: number;
    /** Of `requests`: those the ledger marks unpriced. */
    unpriced: Generated<number>;
  };
  /**
   * Responses-API responses kept for `previous_response_id`, `item_reference` and GET, until
   * `expires_at`. JSON text: the input items of the request (item references resolved, the
   * earlier turns not repeated) and the whole response object as the caller got it.
   */
  stored_responses: {
    id: string;
    account_id: string;
    key_id: string;
    model: string;
    previous_response_id: string | null;
    created_at: number;
    expires_at: number;
    input_items: string;
    response: string;
    input_tokens: number;
    output_tokens: number;
  };
  /** The output items of stored responses by item id, so that an `item_reference` resolves with one lookup. */
  stored_response_items: {
    id: string;
    response_id: string;
    account_id: string;
    expires_at: number;
    item: string;
  };
}
