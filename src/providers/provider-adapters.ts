import type { Logger } from 'pino';
import type { ProviderVersions } from '../catalogue/live-catalogue.js';
import type { ProviderConfig } from '../config/config-file.js';
import type { ProviderAdapter, ProviderRegistry } from '../generation/provider.js';

/**
 * The provider adapters (each with its connection pool), kept in step with the catalogue's
 * providers: a new or changed provider gets a fresh adapter; a replaced or removed one is closed,
 * which lets its requests in flight finish.
 */
export class ProviderAdapters implements ProviderRegistry<ProviderAdapter> {
  private readonly adapters = new Map<string, { provider: ProviderAdapter; stamp: string }>();

  constructor(
    private readonly createProvider: (config: ProviderConfig) => ProviderAdapter,
    private readonly logger: Logger,
  ) {}

  get(id: string): ProviderAdapter | undefined {
    return this.adapters.get(id)?.provider;
  }

  all(): IterableIterator<ProviderAdapter> {
    return (function* (adapters) {
      for (const { provider } of adapters) yield provider;
    })(this.adapters.values());
  }

  sync(providers: ProviderVersions): void {
    const retired: ProviderAdapter[] = [];
    const wanted = new Set(providers.map((p) => p.config.id));
    for (const { config, stamp } of providers) {
      const existing = this.adapters.get(config.id);
      if (existing?.stamp === stamp) continue;
      try {
        this.adapters.set(config.id, { provider: this.createProvider(config), stamp });
        if (existing !== undefined) retired.push(existing.provider);
      } catch (error) {
        this.logger.warn({ provider: config.id, err: error }, 'provider adapter could not be created');
      }
    }
    for (const [id, adapter] of this.adapters) {
      if (!wanted.has(id)) {
        this.adapters.delete(id);
        retired.push(adapter.provider);
      }
    }
    for (const provider of retired) void provider.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map(({ provider }) => provider.close()));
  }
}
