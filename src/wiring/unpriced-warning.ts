import type { Logger } from 'pino';
import type { Catalogue } from '../catalogue/catalogue.js';
import { listOfIds, unpricedModelIds } from '../catalogue/unpriced.js';
import { hasBudget } from '../core/key-limits.js';
import type { Store } from '../store/store.js';

/**
 * One warning at start-up and on each reload of the configuration, when some key or account has a
 * spend budget and some models have no price: budgeted keys are refused those models (403), which
 * an operator should hear of before the callers do. Quiet otherwise.
 */
export async function warnOfUnpricedBudgets(store: Pick<Store, 'keys' | 'accounts'>, catalogue: Catalogue, logger: Logger): Promise<void> {
  const unpriced = unpricedModelIds(catalogue);
  if (unpriced.length === 0) return;
  let keys, accounts;
  try {
    [keys, accounts] = await Promise.all([store.keys.list(), store.accounts.list()]);
  } catch (error) {
    // A warning is not worth failing a start-up or a reload for.
    logger.warn({ err: error, unpriced }, 'whether any spend budget meets an unpriced model could not be read from the store');
    return;
  }
  const budgetedKeys = keys.filter((key) => key.status !== 'revoked' && hasBudget(key.limits)).length;
  const budgetedAccounts = accounts.filter((account) => hasBudget(account.limits)).length;
  if (budgetedKeys + budgetedAccounts === 0) return;
  logger.warn(
    { unpriced, budgetedKeys, budgetedAccounts },
    `${unpriced.length === 1 ? '1 model has' : `${unpriced.length} models have`} no price (${listOfIds(unpriced)}) while spend budgets are set (${budgetedKeys} keys, ${budgetedAccounts} accounts): ` +
      'a budget cannot be kept on an unpriced model, so budgeted keys are refused these (403). Price them (pricing:, the console, or sluice prices import; a price of 0 makes a model free).',
  );
}
