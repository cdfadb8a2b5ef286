/**
 * The Responses API's conversation state as the store keeps it: the port the Responses dialect
 * uses (dialects/openai/responses/conversation.ts) and the store implements (store/sql-responses.ts).
 */

/** A Responses-API response as kept for the conversation that may follow it. */
export interface StoredResponse {
  readonly id: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly previousResponseId: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** This turn's input items, item references resolved (earlier turns are in the previous responses). */
  readonly inputItems: readonly Readonly<Record<string, unknown>>[];
  /** The response object as the caller got it; its `output` items are also found by id. */
  readonly response: Readonly<Record<string, unknown>>;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** Responses kept for `previous_response_id`, `item_reference` and GET; expired ones are never returned. */
export interface ResponsesRepository {
  /** Stores a response and indexes its output items (an item id seen before keeps its first response). */
  put(response: StoredResponse): Promise<void>;
  /** The account's response of that id, unless it has expired at `now`. */
  get(id: string, accountId: string, now: number): Promise<StoredResponse | undefined>;
  /** The account's stored output items among `ids`, by id, unless expired at `now`. */
  items(ids: readonly string[], accountId: string, now: number): Promise<Map<string, Readonly<Record<string, unknown>>>>;
  /** Deletes the account's response of that id and its items; false when there was none. */
  delete(id: string, accountId: string): Promise<boolean>;
  /** Deletes what expired at or before `now`; the number of responses deleted. */
  deleteExpired(now: number): Promise<number>;
}
