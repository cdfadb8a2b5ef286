import type { Selectable } from 'kysely';
import type { Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { type ResponsesRepository, type StoredResponse } from '../core/stored-responses.js';

/** Ids per `IN (…)`: far below either dialect's limit on bound parameters. */
const IDS_PER_QUERY = 500;

type Json = Readonly<Record<string, unknown>>;

/** Stored Responses-API responses and their output items, in portable SQL (JSON kept as text). */
export class SqlResponses implements ResponsesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async put(response: StoredResponse): Promise<void> {
    const output = Array.isArray(response.response.output) ? (response.response.output as Json[]) : [];
    const items = output
      .filter((item) => typeof item.id === 'string' && item.id !== '')
      .map((item) => ({ id: item.id as string, response_id: response.id, account_id: response.accountId, expires_at: response.expiresAt, item: JSON.stringify(item) }));
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('stored_responses')
        .values({
          id: response.id,
          account_id: response.accountId,
          key_id: response.keyId,
          model: response.model,
          previous_response_id: response.previousResponseId,
          created_at: response.createdAt,
          expires_at: response.expiresAt,
          input_items: JSON.stringify(response.inputItems),
          response: JSON.stringify(response.response),
          input_tokens: response.inputTokens,
          output_tokens: response.outputTokens,
        })
        .execute();
      for (let i = 0; i < items.length; i += IDS_PER_QUERY / 5) {
        await tx
          .insertInto('stored_response_items')
          .values(items.slice(i, i + IDS_PER_QUERY / 5))
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
    });
  }

  async get(id: string, accountId: string, now: number): Promise<StoredResponse | undefined> {
    const row = await this.db
      .selectFrom('stored_responses')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row && toStoredResponse(row);
  }

  async items(ids: readonly string[], accountId: string, now: number): Promise<Map<string, Json>> {
    const found = new Map<string, Json>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += IDS_PER_QUERY) {
      const rows = await this.db
        .selectFrom('stored_response_items')
        .select(['id', 'item'])
        .where('id', 'in', unique.slice(i, i + IDS_PER_QUERY))
        .where('account_id', '=', accountId)
        .where('expires_at', '>', now)
        .execute();
      for (const row of rows) found.set(row.id, JSON.parse(row.item) as Json);
    }
    return found;
  }

  async delete(id: string, accountId: string): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const deleted = await tx.deleteFrom('stored_responses').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) return false;
      await tx.deleteFrom('stored_response_items').where('response_id', '=', id).execute();
      return true;
    });
  }

  async deleteExpired(now: number): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('stored_response_items').where('expires_at', '<=', now).execute();
      const deleted = await tx.deleteFrom('stored_responses').where('expires_at', '<=', now).executeTakeFirst();
      return Number(deleted.numDeletedRows);
    });
  }
}

function toStoredResponse(row: Selectable<Database['stored_responses']>): StoredResponse {
  return {
    id: row.id,
    accountId: row.account_id,
    keyId: row.key_id,
    model: row.model,
    previousResponseId: row.previous_response_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    inputItems: JSON.parse(row.input_items) as Json[],
    response: JSON.parse(row.response) as Json,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
  };
}
