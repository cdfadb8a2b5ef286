/**
 * A model's prices, in whichever units it is sold in: USD per million tokens (cached input and cache
 * writes default to the input price), per image, per minute of input audio, per million input
 * characters, per call. A unit left out is not billed; a model without any price has no Pricing.
 */
export interface Pricing {
  readonly inputPerMtok?: number | undefined;
  readonly outputPerMtok?: number | undefined;
  readonly cachedInputPerMtok?: number | undefined;
  readonly cacheWritePerMtok?: number | undefined;
  readonly perImage?: number | undefined;
  readonly perAudioMinute?: number | undefined;
  readonly perMchar?: number | undefined;
  readonly perRequest?: number | undefined;
}

/**
 * The units besides tokens a request is billed for: the same fields as the generation model's
 * `BilledUnits` (src/generation/model.ts, which this layer may not import), read structurally.
 */
export interface BilledUnits {
  readonly images?: number | undefined;
  readonly audioSeconds?: number | undefined;
  readonly characters?: number | undefined;
  readonly requests?: number | undefined;
}

/** What a request is billed for (the generation model's Usage has it). */
export interface BilledUsage {
  /** All of the input, cached and cache-written included. */
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWrite: number;
  readonly output: number;
  readonly units?: BilledUnits | undefined;
}

/**
 * What a request is billed in: tokens (every operation may report them: gpt-image, gpt-4o-transcribe
 * and token-priced TTS or rerank models are sold so), and the units besides tokens it names.
 */
export type BillingUnit = 'tokens' | keyof BilledUnits;

/** The units a request is billed in: tokens, and each unit its demand or usage names (even at 0: an audio upload of unknown length). */
export function billingUnitsOf(units: BilledUnits | undefined): BillingUnit[] {
  const billed: BillingUnit[] = ['tokens'];
  if (units !== undefined) for (const unit of ['images', 'audioSeconds', 'characters', 'requests'] as const) if (units[unit] !== undefined) billed.push(unit);
  return billed;
}

/** The prices that bill each unit. */
export const PRICES_OF: Readonly<Record<BillingUnit, readonly (keyof Pricing)[]>> = {
  tokens: ['inputPerMtok', 'outputPerMtok'],
  images: ['perImage'],
  audioSeconds: ['perAudioMinute'],
  characters: ['perMchar'],
  requests: ['perRequest'],
};

/**
 * Whether a model has a price (zero included: "explicitly free") in at least one of the units a
 * request is billed in. A model without one costs $0 for it whatever it consumes, so a budget
 * cannot bind on it: budgeted keys are refused such a model, and the ledger marks its rows unpriced.
 */
export function pricedFor(pricing: Pricing | undefined, billed: readonly BillingUnit[]): boolean {
  return pricing !== undefined && billed.some((unit) => PRICES_OF[unit].some((field) => pricing[field] !== undefined));
}

/** USD for one request at the model's prices; 0 for a model without pricing. Units the model has no price for cost nothing. */
export function costUsd(model: { readonly pricing: Pricing | undefined } | undefined, usage: BilledUsage): number {
  const pricing = model?.pricing;
  if (pricing === undefined) return 0;
  const input = pricing.inputPerMtok ?? 0;
  const uncachedInput = Math.max(0, usage.input - usage.cachedInput - usage.cacheWrite);
  const tokens =
    (uncachedInput * input +
      usage.cachedInput * (pricing.cachedInputPerMtok ?? input) +
      usage.cacheWrite * (pricing.cacheWritePerMtok ?? input) +
      usage.output * (pricing.outputPerMtok ?? 0)) /
    1_000_000;
  const units = usage.units;
  if (units === undefined) return tokens;
  return (
    tokens +
    (units.images ?? 0) * (pricing.perImage ?? 0) +
    ((units.audioSeconds ?? 0) / 60) * (pricing.perAudioMinute ?? 0) +
    ((units.characters ?? 0) / 1_000_000) * (pricing.perMchar ?? 0) +
    (units.requests ?? 0) * (pricing.perRequest ?? 0)
  );
}
