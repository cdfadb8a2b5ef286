import { DISCOVER_DEFAULTS, modelSchema, type DiscoverConfig, type ModelConfig, type ProviderConfig } from '../config/config-file.js';
import type { CatalogueModel, RoutingBlocks } from './catalogue.js';
import { modelFromConfig } from './catalogue.js';
import { endpointsByName } from './model-kind.js';
import { globMatches } from './glob.js';
import { readUpstreamModels, type UpstreamModel } from './upstream-model.js';

/** What a provider without a `discover:` block imports with (the console's import action). */
const IMPORT_DEFAULTS: DiscoverConfig = { interval_ms: DISCOVER_DEFAULTS.interval_ms, max_models: DISCOVER_DEFAULTS.max_models, endpoints: DISCOVER_DEFAULTS.endpoints };

/** Why an upstream model is left out by the provider's include/exclude lists; undefined when it is not. */
export function exclusion(settings: DiscoverConfig | undefined, upstreamId: string): string | undefined {
  if (settings?.include !== undefined && !settings.include.some((pattern) => globMatches(pattern, upstreamId))) return 'matches no include pattern';
  const excluded = settings?.exclude?.find((pattern) => globMatches(pattern, upstreamId));
  return excluded === undefined ? undefined : `matches exclude pattern '${excluded}'`;
}

/**
 * An upstream's list cut after the `max_models`-th model the include/exclude patterns take (those
 * they leave out before it are kept, as the patterns may change), and how many taken ones were cut.
 */
export function withinCap<T extends { readonly id: string }>(models: readonly T[], settings: DiscoverConfig): { kept: T[]; dropped: number } {
  let taken = 0;
  for (let i = 0; i < models.length; i++) {
    if (exclusion(settings, models[i]!.id) !== undefined) continue;
    if (++taken === settings.max_models) {
      const kept = models.slice(0, i + 1);
      let dropped = 0;
      for (let j = i + 1; j < models.length; j++) if (exclusion(settings, models[j]!.id) === undefined) dropped++;
      return { kept, dropped };
    }
  }
  return { kept: [...models], dropped: 0 };
}

/**
 * The catalogue entry an upstream model makes, as the configuration file would write it, checked
 * by the same schema; undefined when it cannot be one (a name no model id may have). A model its
 * upstream's list or its name tells is no generation model (an embedding, reranking, moderation,
 * audio or image model) serves that operation instead of the provider's `discover.endpoints`
 * (which are what its generation models serve).
 */
export function entryFor(provider: ProviderConfig, model: UpstreamModel): ModelConfig | undefined {
  const settings = provider.discover ?? IMPORT_DEFAULTS;
  const parsed = modelSchema.safeParse({
    id: `${settings.id_prefix ?? ''}${model.id}`,
    provider: provider.id,
    upstream_model: model.id,
    endpoints: model.endpoints ?? endpointsByName(model.id) ?? settings.endpoints,
    ...(settings.upstream_api === undefined ? {} : { upstream_api: settings.upstream_api }),
    ...(model.ownedBy === undefined ? {} : { owned_by: model.ownedBy }),
    ...(model.created === undefined ? {} : { created: model.created }),
    ...(model.displayName === undefined ? {} : { display_name: model.displayName }),
    ...(model.description === undefined ? {} : { description: model.description }),
    ...(model.contextWindow === undefined ? {} : { context_window: model.contextWindow }),
    ...(model.maxOutputTokens === undefined ? {} : { max_output_tokens: model.maxOutputTokens }),
  });
  return parsed.success ? parsed.data : undefined;
}

/** `provider/upstream_model` of every deployment of these models. */
export function servedDeployments(models: readonly CatalogueModel[]): Set<string> {
  return new Set(models.flatMap((model) => model.deployments.map((d) => d.name)));
}

/**
 * The discovered models of the discovering providers, in provider order, around the entries an
 * operator wrote (`operator`): an operator's id or alias is never taken, an upstream model an operator's
 * entry already serves on that provider (under whatever id) is not listed twice, and of two
 * providers listing the same id the first keeps it. `clash` is told of each id lost to another
 * provider's, and of each name that cannot be a model id.
 */
export function discoveredModels(
  providers: readonly ProviderConfig[],
  lists: ReadonlyMap<string, unknown>,
  operator: readonly CatalogueModel[],
  /** Names the operator holds besides its models' ids and aliases (the file's `model_aliases`), never given to a discovered model. */
  reserved: Iterable<string>,
  blocks: RoutingBlocks,
  clash: (providerId: string, id: string, problem: string) => void,
): CatalogueModel[] {
  const owners = new Map<string, string | null>([...operator.map((model) => model.id), ...reserved, ...operator.flatMap((model) => model.aliases)].map((id) => [id, null]));
  const served = servedDeployments(operator);
  const out: CatalogueModel[] = [];
  for (const provider of providers) {
    if (provider.discover === undefined) continue;
    // The stored list is already cut (see withinCap); cut again, as `max_models` may have been lowered since.
    for (const model of withinCap(readUpstreamModels(lists.get(provider.id)), provider.discover).kept) {
      if (exclusion(provider.discover, model.id) !== undefined || served.has(`${provider.id}/${model.id}`)) continue;
      const entry = entryFor(provider, model);
      if (entry === undefined) {
        clash(provider.id, model.id, 'is not a valid model id');
        continue;
      }
      const owner = owners.get(entry.id);
      if (owner !== undefined) {
        if (owner !== null && owner !== provider.id) clash(provider.id, entry.id, `is also listed by provider '${owner}', which comes first`);
        continue;
      }
      owners.set(entry.id, provider.id);
      out.push(modelFromConfig(entry, 'discovered', blocks));
    }
  }
  return out;
}
