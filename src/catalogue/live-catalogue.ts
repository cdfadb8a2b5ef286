import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChangeFeed } from '../changes/change-feed.js';
import { VersionedCache } from '../changes/versioned-cache.js';
import { defaultBaseUrl, deploymentProblem, modelSchema, providerSchema, type GatewayConfig, type ModelConfig, type ProviderConfig } from '../config/config-file.js';
import type { CatalogueOrigin } from './catalogue.js';
import { discoveredModels } from './discovered.js';
import { readUpstreamModels } from './upstream-model.js';
import { Catalogue, modelFromConfig, routingBlocksOf, withListPrices } from './catalogue.js';
import { pricesInForce } from '../pricing/price-list.js';
import type { CatalogueRepository, StoredModel, StoredProvider } from '../store/store.js';
import type { CredentialCipher } from './credential-cipher.js';
import { joinSecrets, secretsSetIn, storedProviderProblems, type ProviderSecrets, type SecretField } from './provider-secrets.js';

/** The providers in force, each with a stamp that changes when its configuration does. */
export type ProviderVersions = readonly { readonly config: ProviderConfig; readonly stamp: string }[];

/** A provider as the console and the status page see it. `config` holds the credential: never render it. */
export interface ProviderEntry {
  readonly id: string;
  readonly origin: CatalogueOrigin;
  readonly config: ProviderConfig;
  readonly headerNames: readonly string[];
  /** The credential fields it holds (never their values). */
  readonly secretsSet: readonly SecretField[];
}

/** What the catalogue is made of at one version of the store. */
interface CatalogueState {
  readonly catalogue: Catalogue;
  readonly entries: readonly ProviderEntry[];
  /** The providers in force, for their adapters. */
  readonly providers: ProviderVersions;
}

/**
 * The catalogue and the provider adapters, merged from the configuration file (fixed for the
 * life of the process, unless it is reloaded) and the console's entries in the store (which
 * change). Every console write bumps `catalogue_version`, and the catalogue is rebuilt when it
 * moved: a model registered in any process reaches `/v1/models` in all of them at once, or within
 * the poll interval when a notification is lost (see VersionedCache). Configuration-file entries
 * win any clash of ids.
 */
export class LiveCatalogue {
  private readonly state: VersionedCache<CatalogueState>;
  /** Discovered ids already reported as lost to another entry, so that each is logged once. */
  private readonly clashesLogged = new Set<string>();
  /** Alias problems of the catalogue in force, as logged. */
  private aliasProblemsLogged = new Set<string>();

  constructor(
    private config: GatewayConfig,
    private readonly repository: CatalogueRepository,
    private readonly cipher: CredentialCipher,
    private readonly logger: Logger,
    /** Told of every change to the set of providers, so that their adapters follow (see ProviderAdapters). */
    onProviders: (providers: ProviderVersions) => void,
  ) {
    const fromConfig: CatalogueState = {
      catalogue: Catalogue.fromConfig(config),
      entries: config.providers.map((provider) => entryFor(provider, 'config')),
      providers: config.providers.map((provider) => ({ config: provider, stamp: configStamp(provider) })),
    };
    onProviders(fromConfig.providers);
    this.state = new VersionedCache(fromConfig, {
      topic: 'catalogue',
      version: () => repository.version(),
      load: () => this.load(),
      replaced: (state) => onProviders(state.providers),
      failed: (error) => logger.warn({ err: error }, 'catalogue reload failed; the catalogue as it was serves on (reported at most every 30 s)'),
    });
  }

  start(changes?: Pick<ChangeFeed, 'subscribe'>): Promise<void> {
    return this.state.start(changes);
  }

  current(): Catalogue {
    return this.state.value.catalogue;
  }

  providers(): readonly ProviderEntry[] {
    return this.state.value.entries;
  }

  configModels(): readonly ModelConfig[] {
    return this.config.models;
  }

  configProviders(): readonly ProviderConfig[] {
    return this.config.providers;
  }

  /** Version checks that found the catalogue current, and those that rebuilt it. */
  get cache(): { readonly hits: number; readonly misses: number } {
    return this.state.checks;
  }

  /** Rebuilds the catalogue when the stored version moved; a write in this process calls it at once. */
  refresh(): Promise<void> {
    return this.state.refresh();
  }

  /**
   * A reloaded configuration file: the catalogue is rebuilt from it and the store's entries, in turn
   * with any other rebuild. Providers whose entry changed get fresh adapters; the others keep theirs.
   */
  replaceConfig(config: GatewayConfig): Promise<void> {
    return this.state.reload(() => {
      this.config = config;
    });
  }

  async close(): Promise<void> {
    await this.state.stop();
  }

  private async load(): Promise<CatalogueState> {
    const [storedProviders, storedModels, discovered, storedPrices] = await Promise.all([this.repository.providers(), this.repository.models(), this.repository.discovered(), this.repository.priceList()]);
    const configProviderIds = new Set(this.config.providers.map((p) => p.id));
    // A console or discovered model never takes an id or an exact alias of the file's.
    const configModelIds = new Set([...this.config.models.flatMap((m) => [m.id, ...(m.aliases ?? [])]), ...this.config.modelAliases.map((a) => a.name)]);

    const consoleProviders: { config: ProviderConfig; stamp: string }[] = [];
    for (const stored of storedProviders) {
      if (configProviderIds.has(stored.id)) continue;
      const config = this.providerFromStore(stored);
      if (config !== undefined) consoleProviders.push({ config, stamp: String(stored.updatedAt) });
    }
    const kinds = new Map([...this.config.providers, ...consoleProviders.map((p) => p.config)].map((p) => [p.id, p.kind]));
    const blocks = routingBlocksOf(this.config, consoleProviders.map((p) => p.config));
    const consoleModels = [];
    for (const stored of storedModels) {
      if (configModelIds.has(stored.id)) continue;
      const parsed = modelSchema.safeParse(storedModelEntry(stored));
      if (!parsed.success || deploymentProblem(parsed.data, (id) => kinds.get(id)) !== undefined) {
        this.logger.warn({ model: stored.id }, 'console model entry no longer valid (or its provider is gone); left out of the catalogue');
        continue;
      }
      consoleModels.push(modelFromConfig(parsed.data, 'console', blocks));
    }

    const operator = [...Catalogue.fromConfig(this.config).models, ...consoleModels];
    const lists = new Map(discovered.map((list) => [list.providerId, list.models]));
    const providers = [...this.config.providers, ...consoleProviders.map((p) => p.config)];
    const found = discoveredModels(providers, lists, operator, configModelIds, blocks, (providerId, id, problem) => {
      const key = `${providerId}\u0000${id}`;
      if (this.clashesLogged.has(key)) return;
      this.clashesLogged.add(key);
      this.logger.warn({ provider: providerId, model: id }, `discovered model ${problem}; left out of the catalogue`);
    });
    const prices = pricesInForce(storedPrices?.document, (error) => this.logger.warn({ err: error }, 'the imported price list is not valid; the shipped one prices the catalogue'));
    const reported = new Map(discovered.flatMap((list) => readUpstreamModels(list.models).flatMap((model) => (model.vendorModel === undefined ? [] : [[`${list.providerId}\u0000${model.id}`, model.vendorModel] as const]))));
    const catalogue = withListPrices(new Catalogue([...operator, ...found], this.config.modelAliases), prices, (id) => kinds.get(id), (providerId, upstreamModel) => reported.get(`${providerId}\u0000${upstreamModel}`));
    this.logAliasProblems(catalogue.aliasProblems);
    return {
      catalogue,
      entries: [...this.config.providers.map((provider) => entryFor(provider, 'config')), ...consoleProviders.map(({ config }) => entryFor(config, 'console'))],
      providers: [...this.config.providers.map((provider) => ({ config: provider, stamp: configStamp(provider) })), ...consoleProviders],
    };
  }

  /** Each problem once while it lasts: a catalogue rebuilt every few minutes does not repeat it, and one that comes back is told again. */
  private logAliasProblems(problems: readonly string[]): void {
    for (const problem of problems) if (!this.aliasProblemsLogged.has(problem)) this.logger.warn(problem);
    this.aliasProblemsLogged = new Set(problems);
  }

  private providerFromStore(stored: StoredProvider): ProviderConfig | undefined {
    const read = readStoredProvider(stored, this.cipher);
    if ('problem' in read) {
      // Never log the value; the id says which entry to re-enter.
      this.logger.warn({ provider: stored.id }, `console provider ${read.problem}; provider left out`);
      return undefined;
    }
    return read.config;
  }
}

/** Changes with a configuration-file provider's entry, so that a reload replaces only the adapters of providers that changed. */
function configStamp(provider: ProviderConfig): string {
  return `config:${createHash('sha256').update(JSON.stringify(provider)).digest('base64url')}`;
}

/** A console provider as a configuration entry, its credential unsealed; or what is wrong with it (never the value). */
export function readStoredProvider(stored: StoredProvider, cipher: CredentialCipher): { config: ProviderConfig } | { problem: string } {
  let secrets: ProviderSecrets = {};
  if (stored.secrets !== null) {
    try {
      secrets = JSON.parse(cipher.open(stored.secrets, stored.id)) as ProviderSecrets;
    } catch {
      return { problem: 'credential cannot be decrypted (credential key changed?)' };
    }
  }
  const parsed = providerSchema.safeParse({ ...joinSecrets(stored.config, secrets), id: stored.id });
  const baseUrl = parsed.success ? (parsed.data.base_url ?? defaultBaseUrl(parsed.data)) : undefined;
  // A row the console could not have written (copied in, or from an older version) is refused as the console refuses it.
  if (!parsed.success || baseUrl === undefined || Object.keys(storedProviderProblems(parsed.data)).length > 0) return { problem: 'entry no longer valid' };
  return { config: { ...parsed.data, base_url: baseUrl, ownCredentialsOnly: true } };
}

function entryFor(config: ProviderConfig, origin: CatalogueOrigin): ProviderEntry {
  return {
    id: config.id,
    origin,
    config,
    headerNames: Object.keys(config.headers ?? {}),
    secretsSet: secretsSetIn(config),
  };
}

/** A stored console model as a configuration entry: the `provider` column is its first deployment's, given only in the one-deployment form. */
export function storedModelEntry(stored: StoredModel): Record<string, unknown> {
  return stored.config.deployments === undefined ? { ...stored.config, id: stored.id, provider: stored.providerId } : { ...stored.config, id: stored.id };
}
