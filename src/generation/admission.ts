import type { Principal } from '../auth/authenticator.js';
import type { CatalogueModel } from '../catalogue/catalogue.js';

/**
 * The admit stage: whether a request may go ahead (rate limits, budgets). It throws a GatewayError
 * to refuse; the function it returns is called once the request has ended, with what it used.
 */
export interface Admission {
  admit(principal: Principal, model: CatalogueModel): Promise<(costUsd: number) => void>;
}

const settleNothing = (): void => undefined;

/** Admits everything: the embedded default has no limits configured. */
export const admitAll: Admission = {
  admit: async () => settleNothing,
};
