import type { Principal } from '../core/principal.js';
import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { BilledUnits } from './model.js';

/** What a request may consume, as the admit stage reserves it. */
export interface Demand {
  /** The prompt's tokens; counted only when a limit needs them. */
  promptTokens(): Promise<number>;
  /** The request's output cap, or undefined for the model's. */
  readonly maxOutputTokens: number | undefined;
  /** Answers asked for; 0 for a token count, which generates (and is billed) nothing. */
  readonly choices: number;
  /** What it will be billed for besides tokens, as far as the request tells (images asked for, characters to speak). */
  readonly units?: BilledUnits | undefined;
}

/** An admitted request: headers for its answer, and the call that ends its reservation. */
export interface Admitted {
  /** `x-ratelimit-*` for a limited key; empty otherwise. */
  readonly headers: Readonly<Record<string, string>>;
  /** Called exactly once, however the request ended, with what it really used. */
  settle(used: { readonly tokens: number; readonly costUsd: number }): void;
}

/**
 * The admit stage: whether a request may go ahead (rate limits, budgets). It throws a GatewayError
 * (with the refusal's headers) to refuse.
 */
export interface Admission {
  admit(principal: Principal, model: CatalogueModel, demand: Demand): Promise<Admitted>;
}

/** A request nothing limits. */
export const UNLIMITED: Admitted = { headers: {}, settle: () => undefined };
