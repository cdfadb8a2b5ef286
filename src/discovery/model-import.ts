import type { CatalogueAdmin } from '../catalogue/catalogue-admin.js';
import { entryFor, exclusion } from '../catalogue/discovered.js';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import type { ProviderAdapter, ProviderRegistry } from '../generation/provider.js';

/** How long the console waits for an upstream's list. */
const IMPORT_TIMEOUT_MS = 15_000;

export interface ImportOutcome {
  readonly added: readonly { readonly id: string; readonly upstreamModel: string }[];
  readonly skipped: readonly { readonly upstreamModel: string; readonly reason: string }[];
}

const ORIGIN_NAMES = { config: 'the configuration file', console: 'the console' } as const;

/**
 * The console's "import models": the provider's upstream list, each model not yet in the
 * catalogue registered as a console entry (then edited or removed like any other). A model only
 * discovered so far is registered too, which pins it: it stays when the upstream stops listing it.
 * The provider's `discover` include/exclude, id prefix and endpoints apply when it has them.
 * Undefined for an unknown provider; throws the upstream's GatewayError when the list cannot be read.
 */
export async function importModels(providerId: string, live: LiveCatalogue, admin: CatalogueAdmin, providers: ProviderRegistry<ProviderAdapter>): Promise<ImportOutcome | undefined> {
  await live.refresh();
  const entry = live.providers().find((p) => p.id === providerId);
  const provider = providers.get(providerId);
  if (entry === undefined || provider === undefined) return undefined;
  const listed = await provider.listModels(AbortSignal.timeout(IMPORT_TIMEOUT_MS));
  const added: { id: string; upstreamModel: string }[] = [];
  const skipped: { upstreamModel: string; reason: string }[] = [];
  for (const model of listed) {
    const skip = (reason: string) => skipped.push({ upstreamModel: model.id, reason });
    const excluded = exclusion(entry.config.discover, model.id);
    if (excluded !== undefined) {
      skip(`excluded: ${excluded}`);
      continue;
    }
    const config = entryFor(entry.config, model);
    if (config === undefined) {
      skip('its name is not a valid model id');
      continue;
    }
    const operator = live.current().models.filter((m) => m.origin !== 'discovered');
    const same = operator.find((m) => m.id === config.id);
    if (same !== undefined) {
      skip(`already in the catalogue (from ${ORIGIN_NAMES[same.origin as keyof typeof ORIGIN_NAMES]})`);
      continue;
    }
    const serving = operator.find((m) => m.deployments.some((d) => d.providerId === providerId && d.upstreamModel === model.id));
    if (serving !== undefined) {
      skip(`already served as '${serving.id}'`);
      continue;
    }
    const result = await admin.saveModel('create', { ...config });
    if (result.ok) added.push({ id: config.id, upstreamModel: model.id });
    else skip(Object.values(result.errors).join(' '));
  }
  return { added, skipped };
}
