import { deploymentsOf, hostedToolsOf, isModelName, isNamePattern, resolveRouting, type Endpoint, type HostedTools, type GatewayConfig, type ModelAlias, type ModelConfig, PRICE_UNITS, type PriceUnit, type PricingConfig, type ProviderKind, type RoutingBlock, type RoutingPolicy, type UpstreamApi } from '../config/config-file.js';
import type { Pricing } from '../pricing/cost.js';
import type { PriceEntry, PricesInForce, PriceListOrigin } from '../pricing/price-list.js';
import { vendorModelOf } from '../pricing/vendor-model.js';
import { Glob } from './glob.js';

/**
 * `config`: from the configuration file (changed there); `console`: registered in the console, kept
 * in the store; `discovered`: read from a discovering provider's own model list (src/discovery).
 */
export type CatalogueOrigin = 'config' | 'console' | 'discovered';

/**
 * A model as the gateway knows it: the public face, the upstreams it maps to, and its price. The
 * upstream fields (`providerId`, `upstreamModel`, `upstreamApi`) are its first deployment's; each
 * deployment's `model` is the same entry with that deployment's, which is what an adapter is given.
 */
export interface CatalogueModel {
  readonly id: string;
  /** Other names callers may ask for it by (its entry's `aliases`). */
  readonly aliases: readonly string[];
  /** Set on a model list's entry for an alias: the id of the model it names (the entry is that model's, under the alias). */
  readonly aliasOf?: string;
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
  /** What a Responses request's hosted tools become where the upstream has none: the model's `hosted_tools`, else its deployment's provider's, else `drop`. */
  readonly hostedTools: HostedTools;
  readonly pricing: Pricing | undefined;
  /** Where `pricing` came from; undefined when there is none. */
  readonly pricingSource: PricingSource | undefined;
  /** Where the entry came from, shown by the console ("configuration file" entries are edited there). */
  readonly origin: CatalogueOrigin;
  /** In configuration order; at least one. */
  readonly deployments: readonly Deployment[];
  /** Public model ids tried in order when every deployment failed. */
  readonly fallbacks: readonly string[];
  /** The request-wide routing fields (strategy, retries, backoff, deadline): the model's, else its first deployment's provider's, else the defaults. */
  readonly routing: RoutingPolicy;
}

/** One upstream serving a public model. */
export interface Deployment {
  /** `provider/upstream_model`: how the ledger, /status and the logs name it. */
  readonly name: string;
  readonly providerId: string;
  readonly upstreamModel: string;
  readonly weight: number;
  readonly priority: number;
  /** The public model with this deployment's upstream fields, as the adapter sees it. */
  readonly model: CatalogueModel;
  /** The per-attempt routing fields (retry_on, first-token timeout, circuit, Retry-After cap): the model's, else this provider's, else the defaults. */
  readonly routing: RoutingPolicy;
}

/** The `routing:` blocks beneath a model's own: its providers', then the top level's; and its providers' `hosted_tools`. */
export interface RoutingBlocks {
  provider(providerId: string): RoutingBlock | undefined;
  readonly top: RoutingBlock | undefined;
  hostedTools(providerId: string): HostedTools | undefined;
}

const NO_ROUTING_BLOCKS: RoutingBlocks = { provider: () => undefined, top: undefined, hostedTools: () => undefined };

/** A model's price is its entry's own, else a price list's (see pricing/price-list.ts). */
export type PricingSource = { readonly kind: 'entry' } | { readonly kind: 'price_list'; readonly asOf: string; readonly origin: PriceListOrigin };

const ENTRY_PRICING: PricingSource = { kind: 'entry' };

/** Each price unit as written (configuration, price lists, JSON) and as the catalogue's Pricing names it. */
export const PRICE_UNIT_FIELDS = {
  input_per_mtok: 'inputPerMtok',
  output_per_mtok: 'outputPerMtok',
  cached_input_per_mtok: 'cachedInputPerMtok',
  cache_write_per_mtok: 'cacheWritePerMtok',
  per_image: 'perImage',
  per_audio_minute: 'perAudioMinute',
  per_mchar: 'perMchar',
  per_request: 'perRequest',
} as const satisfies Record<PriceUnit, keyof Pricing>;

/** Prices as written in an entry or a price list, in the units given; unset cache prices are the input price. */
export function pricingOf(written: PricingConfig | PriceEntry): Pricing {
  const pricing: { -readonly [K in keyof Pricing]: Pricing[K] } = {};
  for (const unit of PRICE_UNITS) if (written[unit] !== undefined) pricing[PRICE_UNIT_FIELDS[unit]] = written[unit];
  if (written.input_per_mtok !== undefined) {
    pricing.cachedInputPerMtok ??= written.input_per_mtok;
    pricing.cacheWritePerMtok ??= written.input_per_mtok;
  }
  return pricing;
}

/**
 * The catalogue with list prices filled in: an entry without its own `pricing` gets the list's
 * price for the vendor model its first deployment carries (cost is per model, and the model's
 * upstream fields are its first deployment's): by the deployment's provider kind and upstream
 * model, and for an Azure deployment the model its resource reports (`reportedModelOf`, from
 * discovery). Models the list does not know stay unpriced.
 */
export function withListPrices(
  catalogue: Catalogue,
  prices: PricesInForce,
  kindOf: (providerId: string) => ProviderKind | undefined,
  reportedModelOf: (providerId: string, upstreamModel: string) => string | undefined = () => undefined,
): Catalogue {
  const source: PricingSource = { kind: 'price_list', asOf: prices.list.asOf, origin: prices.origin };
  return new Catalogue(
    catalogue.models.map((model) => {
      if (model.pricing !== undefined) return model;
      const kind = kindOf(model.providerId);
      const vendorModel = kind === undefined ? undefined : vendorModelOf(kind, model.upstreamModel, reportedModelOf(model.providerId, model.upstreamModel));
      const entry = vendorModel === undefined ? undefined : prices.list.findVendorModel(vendorModel);
      return entry === undefined ? model : repriced(model, pricingOf(entry), source);
    }),
    catalogue.modelAliases,
  );
}

/** The model, and each deployment's view of it, with another price. */
function repriced(model: CatalogueModel, pricing: Pricing, pricingSource: PricingSource): CatalogueModel {
  const deployments: Deployment[] = [];
  const priced: CatalogueModel = { ...model, pricing, pricingSource, deployments };
  for (const [index, deployment] of model.deployments.entries()) {
    deployments.push({ ...deployment, model: index === 0 ? priced : { ...deployment.model, pricing, pricingSource, deployments } });
  }
  return priced;
}

/** An order of models; `name` keys the sorted copy kept with a catalogue snapshot (one name, one comparison), so it is sorted once per snapshot. */
export interface ModelOrdering {
  readonly name: string;
  compare(a: CatalogueModel, b: CatalogueModel): number;
}

/** The models in one order, with each id's place in it: what a paged list slices and resumes from. */
export class ModelSequence {
  private places: Map<string, number> | undefined;

  constructor(readonly models: readonly CatalogueModel[]) {}

  /** The place of `id`, -1 when absent; the index is built on first use and kept with the sequence. */
  indexOf(id: string): number {
    this.places ??= new Map(this.models.map((model, index) => [model.id, index]));
    return this.places.get(id) ?? -1;
  }
}

/** The models a key may use, in any ordering; each ordering is sorted once (per snapshot, or per request for a restricted key). */
export interface PermittedModels {
  readonly count: number;
  ordered(ordering?: ModelOrdering): ModelSequence;
}

/** A `model_aliases` pattern, compiled once per snapshot, and the model it names. */
export interface NamePattern {
  readonly pattern: string;
  readonly glob: Glob;
  readonly target: CatalogueModel;
}

/**
 * An immutable snapshot of the models on offer. The order is the configuration's, which is the
 * order lists use unless a dialect prescribes its own.
 *
 * A caller's model name resolves to an id or an exact alias (the models' `aliases` and the exact
 * names of `model_aliases`) in one Map lookup; only a name that is neither is tried against the
 * patterns of `model_aliases`, in order, the first match winning. An alias whose target is not in
 * the snapshot (a discovered model gone from its upstream's list) names nothing until it returns.
 */
export class Catalogue {
  private readonly byId: ReadonlyMap<string, CatalogueModel>;
  /** Ids and exact aliases. */
  private readonly byName: ReadonlyMap<string, CatalogueModel>;
  /** Each model's exact aliases, its entry's first, then `model_aliases`'s. */
  private readonly aliasesById: ReadonlyMap<string, readonly string[]>;
  /** What is computed from this snapshot once and kept with it (orderings, search text), so that a request costs its page, not the catalogue. */
  private readonly derived = new Map<string, unknown>();
  readonly models: readonly CatalogueModel[];
  readonly patterns: readonly NamePattern[];
  /** Aliases left out of this snapshot (a target missing, a name taken by another entry), one line each, for the log. */
  readonly aliasProblems: readonly string[];

  constructor(
    models: readonly CatalogueModel[],
    /** The configuration's `model_aliases`, in its order. */
    readonly modelAliases: readonly ModelAlias[] = [],
  ) {
    this.models = models;
    this.byId = new Map(models.map((model) => [model.id, model]));
    const byName = new Map(this.byId);
    const aliasesById = new Map<string, string[]>();
    const patterns: NamePattern[] = [];
    const problems: string[] = [];
    const claim = (alias: string, target: CatalogueModel, entry: string): void => {
      if (byName.has(alias)) {
        problems.push(`${entry}: '${alias}' is taken by ${this.byId.has(alias) ? 'a model id' : `an alias of '${byName.get(alias)!.id}'`}; the alias is left out`);
        return;
      }
      byName.set(alias, target);
      let list = aliasesById.get(target.id);
      if (list === undefined) aliasesById.set(target.id, (list = []));
      list.push(alias);
    };
    for (const model of models) for (const alias of model.aliases) claim(alias, model, `model '${model.id}'`);
    for (const { name, target } of modelAliases) {
      const model = this.byId.get(target);
      const entry = `model_aliases '${name}'`;
      if (model === undefined) problems.push(`${entry}: no model has the id '${target}' (yet); it names nothing until one does`);
      else if (isNamePattern(name)) patterns.push({ pattern: name, glob: new Glob(name), target: model });
      else claim(name, model, entry);
    }
    this.byName = byName;
    this.aliasesById = aliasesById;
    this.patterns = patterns;
    this.aliasProblems = problems;
  }

  static fromConfig(config: GatewayConfig): Catalogue {
    const blocks = routingBlocksOf(config);
    return new Catalogue(config.models.map((entry) => modelFromConfig(entry, 'config', blocks)), config.modelAliases);
  }

  /** The model with this id (never an alias). */
  get(id: string): CatalogueModel | undefined {
    return this.byId.get(id);
  }

  /** The model with this id or exact alias (no pattern). */
  named(name: string): CatalogueModel | undefined {
    return this.byName.get(name);
  }

  /** The model a caller's name stands for: an id, an exact alias, else the first pattern it matches. */
  resolve(name: string): CatalogueModel | undefined {
    const found = this.byName.get(name);
    // A pattern answers only names a model could have: a caller's megabyte, or markup, is not repeated in every chunk of an answer.
    if (found !== undefined || this.patterns.length === 0 || !isModelName(name)) return found;
    for (const pattern of this.patterns) if (pattern.glob.matches(name)) return pattern.target;
    return undefined;
  }

  /** The exact aliases of a model. */
  aliasesOf(id: string): readonly string[] {
    return this.aliasesById.get(id) ?? [];
  }

  /** A value computed once from this snapshot under `name` (one name, one computation). */
  derive<T>(name: string, build: (models: readonly CatalogueModel[]) => T): T {
    if (!this.derived.has(name)) this.derived.set(name, build(this.models));
    return this.derived.get(name) as T;
  }

  /** Every model in `ordering` (a stable sort: ties keep the catalogue order), sorted once per snapshot. */
  ordered(ordering?: ModelOrdering): ModelSequence {
    return this.derive(`ordered:${ordering?.name ?? 'catalogue'}`, (models) => new ModelSequence(ordering === undefined ? models : [...models].sort(ordering.compare)));
  }

  /**
   * The models a key may use, each followed by an entry per exact alias (see listedWithAliases):
   * every model when the key has no list. A restricted key's models are looked up from its own
   * list, so the cost follows that list, not the catalogue.
   */
  permitted(allowed: ReadonlySet<string> | null): PermittedModels {
    const listed = this.derive('listed', (models) => new ModelSequence(listedWithAliases(models, this)));
    if (allowed === null) {
      return {
        count: listed.models.length,
        ordered: (ordering) => (ordering === undefined ? listed : this.derive(`listed:${ordering.name}`, () => new ModelSequence([...listed.models].sort(ordering.compare)))),
      };
    }
    const mine = listedWithAliases([...allowed].flatMap((id) => this.byId.get(id) ?? []), this).sort((a, b) => listed.indexOf(a.id) - listed.indexOf(b.id));
    return { count: mine.length, ordered: (ordering) => new ModelSequence(ordering === undefined ? mine : [...mine].sort(ordering.compare)) };
  }
}

/** Models, each followed by a list entry of its own per exact alias (the model under that name; patterns cannot be listed). */
function listedWithAliases(models: readonly CatalogueModel[], catalogue: Catalogue): CatalogueModel[] {
  return models.flatMap((model) => [model, ...catalogue.aliasesOf(model.id).map((alias) => asAlias(model, alias))]);
}

/** The model as a caller who asked for it by `name` sees it: itself, or its entry under the alias. */
export function asAlias(model: CatalogueModel, name: string): CatalogueModel {
  return name === model.id ? model : { ...model, id: name, aliasOf: model.id };
}

export function routingBlocksOf(config: GatewayConfig, moreProviders: readonly { id: string; routing?: RoutingBlock | undefined; hosted_tools?: HostedTools | undefined }[] = []): RoutingBlocks {
  const providers = new Map([...config.providers, ...moreProviders].map((provider) => [provider.id, provider]));
  return { provider: (id) => providers.get(id)?.routing, top: config.routing, hostedTools: (id) => providers.get(id)?.hosted_tools };
}

export function modelFromConfig(entry: ModelConfig, origin: CatalogueOrigin = 'config', blocks: RoutingBlocks = NO_ROUTING_BLOCKS): CatalogueModel {
  const configs = deploymentsOf(entry);
  const first = configs[0]!;
  const deployments: Deployment[] = [];
  const own = entry.hosted_tools ?? (entry.drop_hosted_tools === undefined ? undefined : hostedToolsOf(entry.drop_hosted_tools));
  const hostedTools = (providerId: string): HostedTools => own ?? blocks.hostedTools(providerId) ?? 'drop';
  const model: CatalogueModel = {
    id: entry.id,
    aliases: entry.aliases ?? [],
    providerId: first.provider,
    upstreamModel: first.upstream_model ?? entry.id,
    upstreamApi: first.upstream_api ?? 'completions',
    ownedBy: entry.owned_by ?? first.provider,
    created: entry.created,
    displayName: entry.display_name,
    version: entry.version,
    description: entry.description,
    contextWindow: entry.context_window,
    maxOutputTokens: entry.max_output_tokens,
    endpoints: new Set(entry.endpoints),
    hostedTools: hostedTools(first.provider),
    pricing: entry.pricing && pricingOf(entry.pricing),
    pricingSource: entry.pricing && ENTRY_PRICING,
    origin,
    deployments,
    fallbacks: entry.fallbacks ?? [],
    routing: resolveRouting(entry.routing, blocks.provider(first.provider), blocks.top),
  };
  for (const [index, config] of configs.entries()) {
    const upstreamModel = config.upstream_model ?? entry.id;
    const view: CatalogueModel =
      index === 0 ? model : { ...model, providerId: config.provider, upstreamModel, upstreamApi: config.upstream_api ?? 'completions', hostedTools: hostedTools(config.provider) };
    deployments.push({
      name: `${config.provider}/${upstreamModel}`,
      providerId: config.provider,
      upstreamModel,
      weight: config.weight,
      priority: config.priority,
      model: view,
      routing: resolveRouting(entry.routing, blocks.provider(config.provider), blocks.top),
    });
  }
  return model;
}
