/** USD per million tokens; cached input and cache writes default to the input price. */
export interface Pricing {
  readonly inputPerMtok: number;
  readonly outputPerMtok: number;
  readonly cachedInputPerMtok: number;
  readonly cacheWritePerMtok: number;
}

/** The tokens a request is billed for (the generation model's Usage has them). */
export interface BilledTokens {
  /** All of the input, cached and cache-written included. */
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWrite: number;
  readonly output: number;
}

/** USD for one request at the model's per-million-token prices; 0 for a model without pricing. */
export function costUsd(model: { readonly pricing: Pricing | undefined } | undefined, usage: BilledTokens): number {
  const pricing = model?.pricing;
  if (pricing === undefined) return 0;
  const uncachedInput = Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite);
  return (
    (uncachedInput * pricing.inputPerMtok +
      usage.cachedInput * pricing.cachedInputPerMtok +
      usage.cacheWrite * pricing.cacheWritePerMtok +
      usage.output * pricing.outputPerMtok) /
    1_000_000
  );
}
