import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { withinCap } from '../catalogue/discovered.js';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import type { DiscoverConfig } from '../config/config-file.js';
import { toGatewayError } from '../core/errors.js';
import { ModelListingError } from '../providers/model-listing.js';
import type { CatalogueRepository } from '../store/store.js';
import type { ProviderAdapter, ProviderRegistry } from '../generation/provider.js';

/** How often the schedule is looked at; a provider's own `interval_ms` says how often it is listed. */
const TICK_MS = 1_000;
/** A listing taking longer than this has failed (the upstream's own timeouts may be far longer). */
export const LIST_TIMEOUT_MS = 30_000;
/** After a failed listing the next try comes sooner than a whole interval, but not at once. */
const RETRY_MS = 60_000;
/**
 * How long a claim of a listing holds unless renewed: short, so that a process that died while
 * listing holds up no other for long (a listing taken over early is only listed twice).
 */
export const CLAIM_LEASE_MS = 10_000;
/** A running listing's lease is renewed once this much of it has passed. */
const RENEW_AFTER_MS = CLAIM_LEASE_MS / 3;

/**
 * Keeps the model lists of the providers with `discover:` in the store, where every gateway process
 * (and replica) reads them into its catalogue (LiveCatalogue). Each tick follows the providers in
 * force now (configuration file and console, as they change); for each one due (by its last
 * listing and the interval configured now), a claim in the store, a short lease renewed while the
 * listing runs, makes one process of many list it. A successful listing replaces the stored list whole (a
 * catalogue change when it differs); a failed one keeps it and is logged. Lists of providers that
 * are gone or no longer discover are dropped.
 */
export class Discovery {
  private timer: NodeJS.Timeout | undefined;
  private readonly stopping = new AbortController();
  /** The listings this process runs, and when each one's lease was last taken or renewed. */
  private readonly running = new Map<string, { readonly listing: Promise<void>; leasedAt: number }>();
  /** Whose claims are this process's own. */
  private readonly claimant = randomUUID();
  /** The discovering providers as last dropped for, so that the drop is written only when they change. */
  private kept: string | undefined;
  private ticking = false;

  constructor(
    private readonly repository: CatalogueRepository,
    private readonly catalogue: LiveCatalogue,
    private readonly providers: ProviderRegistry<ProviderAdapter>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    // The first look comes at once: a provider never listed is due.
    void this.tick();
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await Promise.all([...this.running.values()].map((run) => run.listing));
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopping.signal.aborted) return;
    this.ticking = true;
    try {
      const discovering = this.catalogue.providers().filter((entry) => entry.config.discover !== undefined);
      const ids = discovering.map((entry) => entry.id);
      if (this.kept !== ids.join('\u0000')) {
        if (await this.repository.dropDiscovered(ids)) await this.catalogue.refresh();
        this.kept = ids.join('\u0000');
      }
      await this.renewLeases();
      for (const entry of discovering) {
        if (this.running.has(entry.id)) continue;
        const settings = entry.config.discover!;
        const now = Date.now();
        // The interval in force now decides, so a shorter one set by a reload applies from the last listing.
        const schedule = { intervalMs: settings.interval_ms, retryMs: Math.min(settings.interval_ms, RETRY_MS), leaseMs: CLAIM_LEASE_MS };
        if (!(await this.repository.claimDiscovery(entry.id, this.claimant, now, schedule))) continue;
        const listing = this.list(entry.id, settings).finally(async () => {
          this.running.delete(entry.id);
          // Let go at once, so a stop in the middle of a listing leaves the next process to list straight away.
          await this.repository.releaseDiscovery(entry.id, this.claimant).catch((error: unknown) => this.logger.warn({ provider: entry.id, err: error }, 'model discovery could not release its claim'));
        });
        this.running.set(entry.id, { listing, leasedAt: now });
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'model discovery could not read or claim its schedule');
    } finally {
      this.ticking = false;
    }
  }

  /** Keeps the claims of the listings still running (a listing may take up to LIST_TIMEOUT_MS, longer than a lease). */
  private async renewLeases(): Promise<void> {
    const now = Date.now();
    for (const [providerId, run] of this.running) {
      if (now - run.leasedAt < RENEW_AFTER_MS) continue;
      run.leasedAt = now;
      if (!(await this.repository.renewDiscovery(providerId, this.claimant, now + CLAIM_LEASE_MS))) {
        this.logger.warn({ provider: providerId }, 'model discovery lost its claim while listing (another process may list too)');
      }
    }
  }

  private async list(providerId: string, settings: DiscoverConfig): Promise<void> {
    const provider = this.providers.get(providerId);
    if (provider === undefined) return;
    try {
      let models;
      try {
        models = await provider.listModels(AbortSignal.any([this.stopping.signal, AbortSignal.timeout(LIST_TIMEOUT_MS)]));
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        // The adapters' messages carry no credential (they are redacted as a caller's would be), nor does the address (masked).
        const reason = toGatewayError(error).message;
        const url = error instanceof ModelListingError ? error.url : null;
        this.logger.warn({ provider: providerId, reason, url }, 'model discovery failed; the models listed before are kept');
        await this.repository.discoveryFailed(providerId, reason, url, Date.now());
        return;
      }
      const { kept, dropped } = withinCap(models, settings);
      if (dropped > 0) {
        this.logger.warn({ provider: providerId, listed: models.length, dropped, max_models: settings.max_models }, `the upstream lists more models than discover.max_models (${settings.max_models}); the rest are left out`);
      }
      models = kept;
      if (await this.repository.putDiscovered(providerId, models, Date.now())) {
        this.logger.info({ provider: providerId, models: models.length }, 'discovered models changed');
        await this.catalogue.refresh();
      }
    } catch (error) {
      this.logger.warn({ provider: providerId, err: error }, 'discovered models could not be stored');
    }
  }
}
