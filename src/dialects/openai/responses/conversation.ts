import type { Logger } from 'pino';
import type { Principal } from '../../../core/principal.js';
import { GatewayError } from '../../../core/errors.js';
import type { Usage } from '../../../generation/model.js';
import { itemType, type Item } from './request.js';
import { type ResponsesRepository, type StoredResponse } from '../../../core/stored-responses.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** How often expired responses are deleted, besides never being returned once expired. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** Responses followed back through `previous_response_id` at most: a longer chain is refused rather than walked forever. */
const MAX_CHAIN = 10_000;

/** The conversation a request continues, and its own input with references resolved. */
export interface Turn {
  /** Every item of the earlier turns, oldest first: each response's input items, then its output. */
  readonly history: readonly Item[];
  /** This request's input, each `item_reference` replaced by the item it names. */
  readonly input: readonly Item[];
}

/**
 * Conversation state for the Responses API, kept in the store so that any replica (and any
 * upstream the conversation moves to) can continue it: responses are stored for the account of
 * the key that made them, for `retentionDays`, and only that account can read, continue or
 * delete them; an id of another account's response is as unknown as one that never existed.
 */
export class Conversations {
  private retentionMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: ResponsesRepository,
    retentionDays: number,
    private readonly logger: Logger,
  ) {
    this.retentionMs = retentionDays * DAY_MS;
  }

  /** From a reloaded configuration: responses stored from now on are kept this long. */
  setRetentionDays(retentionDays: number): void {
    this.retentionMs = retentionDays * DAY_MS;
  }

  /** Deletes expired responses now and every hour (each replica does; the deletes are idempotent). */
  start(): void {
    const prune = () => void this.prune();
    prune();
    this.timer = setInterval(prune, PRUNE_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async prune(): Promise<void> {
    try {
      await this.repository.deleteExpired(Date.now());
    } catch (error) {
      this.logger.warn({ err: error }, 'could not delete expired stored responses');
    }
  }

  /** Follows `previous_response_id` back and resolves this turn's item references; unknown ids are refused as OpenAI refuses them. */
  async resolve(principal: Principal, previousResponseId: string | undefined, input: readonly Item[]): Promise<Turn> {
    const now = Date.now();
    const chain: StoredResponse[] = [];
    for (let id = previousResponseId; id !== undefined; ) {
      if (chain.length >= MAX_CHAIN) throw new GatewayError('invalid_request', `The conversation before '${previousResponseId}' is longer than ${MAX_CHAIN} responses.`, { param: 'previous_response_id' });
      const stored = await this.repository.get(id, principal.accountId, now);
      if (stored === undefined) {
        // OpenAI's own words and code; a link further back that expired breaks the chain alike.
        throw new GatewayError('invalid_request', `Previous response with id '${id}' not found.`, { param: 'previous_response_id', code: 'previous_response_not_found' });
      }
      chain.push(stored);
      id = stored.previousResponseId ?? undefined;
    }
    const history: Item[] = [];
    for (const stored of chain.reverse()) {
      history.push(...stored.inputItems);
      if (Array.isArray(stored.response.output)) history.push(...(stored.response.output as Item[]));
    }
    const referenced = input.filter((item) => itemType(item) === 'item_reference').map((item) => item.id as string);
    if (referenced.length === 0) return { history, input };
    const found = await this.repository.items(referenced, principal.accountId, now);
    const resolved = input.map((item) => {
      if (itemType(item) !== 'item_reference') return item;
      const target = found.get(item.id as string);
      if (target === undefined) {
        throw new GatewayError('resource_not_found', `Item with id '${String(item.id)}' not found. Items are kept only for responses stored with 'store' true, for the retention period.`, { param: 'input', type: 'invalid_request_error', code: 'item_not_found' });
      }
      return target;
    });
    return { history, input: resolved };
  }

  /** Keeps a finished response; a store that fails loses the conversation, not the answer already generated. */
  async keep(principal: Principal, previousResponseId: string | undefined, input: readonly Item[], response: Readonly<Record<string, unknown>>, usage: Usage | null): Promise<void> {
    const now = Date.now();
    try {
      await this.repository.put({
        id: String(response.id),
        accountId: principal.accountId,
        keyId: principal.keyId,
        model: String(response.model),
        previousResponseId: previousResponseId ?? null,
        createdAt: now,
        expiresAt: now + this.retentionMs,
        inputItems: input,
        response,
        inputTokens: usage?.input ?? 0,
        outputTokens: usage?.output ?? 0,
      });
    } catch (error) {
      this.logger.warn({ err: error, responseId: response.id }, 'could not store a response; the conversation cannot continue from it');
    }
  }

  async get(principal: Principal, id: string): Promise<Readonly<Record<string, unknown>>> {
    const stored = await this.repository.get(id, principal.accountId, Date.now());
    if (stored === undefined) throw responseNotFound(id);
    return stored.response;
  }

  async delete(principal: Principal, id: string): Promise<void> {
    if (!(await this.repository.delete(id, principal.accountId))) throw responseNotFound(id);
  }
}

function responseNotFound(id: string): GatewayError {
  return new GatewayError('resource_not_found', `Response with id '${id}' not found.`, { param: null, type: 'invalid_request_error' });
}
