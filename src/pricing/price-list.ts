import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { checkPricing, describeIssue, PRICING_FIELDS } from '../config/config-file.js';
import type { VendorModel } from './vendor-model.js';
import { UserError } from '../core/user-error.js';

/**
 * Price lists: the one shipped with Sluice (`prices/price-list.json`) and one an operator imports
 * (`sluice prices import`), in the same JSON format. A list prices a hosted model by the name its
 * vendor knows it by; the catalogue fills the price of an entry that has none of its own.
 */
export const PRICE_FAMILIES = ['openai', 'anthropic', 'google', 'amazon', 'meta', 'mistral', 'cohere'] as const;
export type PriceFamily = (typeof PRICE_FAMILIES)[number];

export type PriceListOrigin = 'shipped' | 'imported';

const isoDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date written YYYY-MM-DD')
  .refine((day) => !Number.isNaN(Date.parse(`${day}T00:00:00Z`)) && new Date(`${day}T00:00:00Z`).toISOString().startsWith(day), 'is not a calendar date');

/** A model's prices as a catalogue entry's `pricing` states them (in the units it is sold in), with whose model it is. */
const entrySchema = z
  .strictObject({
    family: z.enum(PRICE_FAMILIES),
    /** The model as its vendor's API names it. */
    model: z.string().min(1),
    /** Other names of the same model at the same price (a `-latest` alias, a snapshot priced alike). */
    aliases: z.array(z.string().min(1)).optional(),
    ...PRICING_FIELDS,
  })
  .superRefine((entry, ctx) => checkPricing(entry, ctx));

export const priceListSchema = z
  .strictObject({ as_of: isoDay, models: z.array(entrySchema) })
  .superRefine((list, ctx) => {
    // A name listed twice would make the price depend on the order of the file.
    const seen = new Set<string>();
    for (const [index, entry] of list.models.entries()) {
      for (const [at, name] of [entry.model, ...(entry.aliases ?? [])].entries()) {
        const key = keyOf(entry.family, name);
        if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['models', index, ...(at === 0 ? ['model'] : ['aliases', at - 1])], message: `'${name}' is listed twice for ${entry.family}` });
        seen.add(key);
      }
    }
  });

export type PriceEntry = z.output<typeof entrySchema>;
export type PriceListDocument = z.output<typeof priceListSchema>;

export class PriceListError extends UserError {
  override name = 'PriceListError';
}

/** A dated snapshot or revision at the end of a name: `-20250929`, `-2024-08-06`, `-001`. */
const VERSION_SUFFIX = /-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{3})$/;

function keyOf(family: PriceFamily, name: string): string {
  return `${family}\u0000${name}`;
}

/** A validated price list, indexed by family and name. */
export class PriceList {
  private readonly byName: ReadonlyMap<string, PriceEntry>;

  constructor(readonly document: PriceListDocument) {
    this.byName = new Map(document.models.flatMap((entry) => [entry.model, ...(entry.aliases ?? [])].map((name) => [keyOf(entry.family, name), entry] as const)));
  }

  get asOf(): string {
    return this.document.as_of;
  }

  /**
   * The entry for an upstream model: its exact name (or an alias) first, then the name without a
   * dated snapshot or revision suffix, so `claude-sonnet-4-5-20250929` is priced as
   * `claude-sonnet-4-5` unless the list names the snapshot itself. Gemini's `models/` prefix is ignored.
   */
  find(family: PriceFamily, upstreamModel: string): PriceEntry | undefined {
    const name = upstreamModel.replace(/^models\//, '');
    return this.byName.get(keyOf(family, name)) ?? this.byName.get(keyOf(family, name.replace(VERSION_SUFFIX, '')));
  }

  /** The entry for the first of a vendor model's names the list knows (each as `find` matches it). */
  findVendorModel(vendorModel: VendorModel): PriceEntry | undefined {
    for (const name of vendorModel.names) {
      const entry = this.find(vendorModel.family, name);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }
}

/** Parses a price list's JSON text; bad input throws a PriceListError of one line naming the entry and field. */
export function parsePriceList(text: string, source: string): PriceList {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new PriceListError(`${source}: not valid JSON (${(error as Error).message})`);
  }
  const parsed = priceListSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) throw new PriceListError(`${source}: ${describeIssue(raw, parsed.error.issues[0]!)}`);
  return new PriceList(parsed.data);
}

/** Next to `dist/pricing/` and `src/pricing/` alike: the package ships `prices/` (not `data/`, the default data directory). */
export const SHIPPED_PRICE_LIST_FILE = new URL('../../prices/price-list.json', import.meta.url);

let shipped: PriceList | undefined;

export function shippedPriceList(): PriceList {
  return (shipped ??= parsePriceList(readFileSync(SHIPPED_PRICE_LIST_FILE, 'utf8'), 'the shipped price list'));
}

export interface PricesInForce {
  readonly list: PriceList;
  readonly origin: PriceListOrigin;
}

/**
 * The list that prices the catalogue: the imported one unless the shipped one is newer (an upgrade
 * of Sluice brings newer prices than a list imported before it); at the same date, the imported.
 * An imported document that no longer parses is reported to `onInvalid` and the shipped list used.
 */
export function pricesInForce(imported: string | undefined, onInvalid: (error: PriceListError) => void = () => undefined): PricesInForce {
  const shippedList = shippedPriceList();
  if (imported === undefined) return { list: shippedList, origin: 'shipped' };
  let list: PriceList;
  try {
    list = parsePriceList(imported, 'the imported price list');
  } catch (error) {
    if (!(error instanceof PriceListError)) throw error;
    onInvalid(error);
    return { list: shippedList, origin: 'shipped' };
  }
  return list.asOf >= shippedList.asOf ? { list, origin: 'imported' } : { list: shippedList, origin: 'shipped' };
}
