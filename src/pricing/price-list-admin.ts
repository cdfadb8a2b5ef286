import { readFileSync } from 'node:fs';
import type { Store } from '../store/store.js';
import { parsePriceList, PriceListError, pricesInForce, shippedPriceList, type PriceList, type PricesInForce } from './price-list.js';

/** What `sluice prices show` reports: the list in force, and both candidates. */
export interface PriceListStatus {
  readonly inForce: PricesInForce;
  readonly shipped: PriceList;
  readonly imported: { readonly list: PriceList; readonly importedAt: number } | undefined;
}

/**
 * Validates a price list file and stores it as the imported list, bumping the catalogue version in
 * the same transaction so that every running process reprices at once. A file older than the
 * shipped list is refused: it would not be used (the newer list wins). Bad input changes nothing.
 */
export async function importPriceList(store: Pick<Store, 'catalogue'>, file: string, now = Date.now()): Promise<PriceList> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new PriceListError(`${file}: cannot read the price list (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const list = parsePriceList(text, file);
  const shipped = shippedPriceList();
  if (list.asOf < shipped.asOf) {
    throw new PriceListError(`${file}: the list is as of ${list.asOf}, older than the shipped list of ${shipped.asOf}, which would stay in force; nothing was imported.`);
  }
  await store.catalogue.putPriceList(JSON.stringify(list.document), now);
  return list;
}

/** Removes the imported list, so that the shipped one prices the catalogue; false when none was imported. */
export function resetPriceList(store: Pick<Store, 'catalogue'>, now = Date.now()): Promise<boolean> {
  return store.catalogue.putPriceList(null, now);
}

export async function priceListStatus(store: Pick<Store, 'catalogue'>): Promise<PriceListStatus> {
  const stored = await store.catalogue.priceList();
  let imported: PriceListStatus['imported'];
  if (stored !== undefined) {
    try {
      imported = { list: parsePriceList(stored.document, 'the imported price list'), importedAt: stored.importedAt };
    } catch (error) {
      if (!(error instanceof PriceListError)) throw error;
    }
  }
  return { inForce: pricesInForce(stored?.document), shipped: shippedPriceList(), imported };
}
