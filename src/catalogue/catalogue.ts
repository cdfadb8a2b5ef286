import type { Endpoint, GatewayConfig, ModelConfig, UpstreamApi } from '../config/config-file.js';

/** `config`: from the configuration file (changed there); `console`: registered in the console, kept in the store. */
export type CatalogueOrigin = 'config' | 'console';

/** A model as the gateway knows it: the public face, the upstream it maps to, and its price. */
export interface CatalogueModel {
  readonly id: string;
  readonly providerId: string;
  readonly upstreamModel: string;
  /** How an `openai` provider is asked for legacy completions. */
  readonly upstreamApi: UpstreamApi;
  readonly ownedBy: string;
  /** Unix seconds; 0 when unknown. */
  readonly created: number;
  readonly displayName: string | undefined;
  readonly version: string | undefined;
  readonly description: string | undefined;
  readonly contextWindow: number | undefined;
  readonly maxOutputTokens: number | undefined;
  readonly endpoints: ReadonlySet<Endpoint>;
  /** A Responses request's hosted tools are left out (and named in a header) rather than refused, where the upstream has none. */
  readonly dropHostedTools: boolean;
  readonly pricing: Pricing | undefined;
  /** Where the entry came from, shown by the console ("configuration file" entries are edited there). */
  readonly origin: CatalogueOrigin;
}

/** USD per million tokens; cached input and cache writes default to the input price. */
export interface Pricing {
  readonly inputPerMtok: number;
  readonly outputPerMtok: number;
  readonly cachedInputPerMtok: number;
  readonly cacheWritePerMtok: number;
}

/**
 * An immutable snapshot of the models on offer. The order is the configuration's, which is the
 * order lists use unless a dialect prescribes its own.
 */
export class Catalogue {
  private readonly byId: ReadonlyMap<string, CatalogueModel>;
  readonly models: readonly CatalogueModel[];

  constructor(models: readonly CatalogueModel[]) {
    this.models = models;
    this.byId = new Map(models.map((model) => [model.id, model]));
  }

  static fromConfig(config: GatewayConfig): Catalogue {
    return new Catalogue(config.models.map((entry) => modelFromConfig(entry)));
  }

  get(id: string): CatalogueModel | undefined {
    return this.byId.get(id);
  }

  /** The models a key may use: every model when the key has no list. */
  permitted(allowed: ReadonlySet<string> | null): CatalogueModel[] {
    if (allowed === null) return [...this.models];
    return this.models.filter((model) => allowed.has(model.id));
  }
}

export function modelFromConfig(entry: ModelConfig, origin: CatalogueOrigin = 'config'): CatalogueModel {
  return {
    id: entry.id,
    providerId: entry.provider,
    upstreamModel: entry.upstream_model ?? entry.id,
    upstreamApi: entry.upstream_api ?? 'completions',
    ownedBy: entry.owned_by ?? entry.provider,
    created: entry.created,
    displayName: entry.display_name,
    version: entry.version,
    description: entry.description,
    contextWindow: entry.context_window,
    maxOutputTokens: entry.max_output_tokens,
    endpoints: new Set(entry.endpoints),
    dropHostedTools: entry.drop_hosted_tools ?? false,
    pricing: entry.pricing && {
      inputPerMtok: entry.pricing.input_per_mtok,
      outputPerMtok: entry.pricing.output_per_mtok,
      cachedInputPerMtok: entry.pricing.cached_input_per_mtok ?? entry.pricing.input_per_mtok,
      cacheWritePerMtok: entry.pricing.cache_write_per_mtok ?? entry.pricing.input_per_mtok,
    },
    origin,
  };
}
