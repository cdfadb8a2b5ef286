// The catalogue a gateway on this configuration and store would serve, for the commands that check keys against it.
import type { Catalogue } from '../catalogue/catalogue.js';
import type { Store } from '../store/store.js';

/** The configuration file's entries and the store's, priced as a gateway would price them. */
export async function loadCatalogue(store: Pick<Store, 'catalogue'>, dataDir: string, configFile: string | undefined): Promise<Catalogue> {
  const [{ emptyConfig, loadConfigFile }, { LiveCatalogue }, { CredentialCipher }, { createLogger }] = await Promise.all([
    import('../config/config-file.js'),
    import('../catalogue/live-catalogue.js'),
    import('../catalogue/credential-cipher.js'),
    import('../core/log.js'),
  ]);
  const config = configFile === undefined ? emptyConfig() : loadConfigFile(configFile);
  const live = new LiveCatalogue(config, store.catalogue, CredentialCipher.forDataDir(dataDir), createLogger('error'), () => undefined);
  try {
    await live.refresh();
  } finally {
    await live.close();
  }
  return live.current();
}

/**
 * A budget does not bind on a model without a price, so a budgeted key is refused such models: said
 * on standard error when a budget is set on a key (its allow-list, or every model) or an account
 * (every model), as a warning, not a refusal (prices can follow).
 */
export async function warnOfUnpricedModels(catalogue: Catalogue, allowed: readonly string[] | null, whose: string): Promise<void> {
  const { listOfIds, unpricedModelIds } = await import('../catalogue/unpriced.js');
  const unpriced = unpricedModelIds(catalogue, allowed);
  if (unpriced.length === 0) return;
  const them = unpriced.length === 1 ? 'it' : 'them';
  console.error(
    `Warning: ${whose} has a spend budget, and ${unpriced.length === 1 ? 'a model it may use has' : `${unpriced.length} models it may use have`} no price: ${listOfIds(unpriced)}. ` +
      `A budget cannot be kept on an unpriced model, so requests to ${them} will be refused (403) until ${them === 'it' ? 'it is' : 'they are'} priced: a pricing: entry in the configuration or the console, or a price list (sluice prices import); a price of 0 makes a model free.`,
  );
}
