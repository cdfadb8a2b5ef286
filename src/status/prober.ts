import type { Logger } from 'pino';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import { parseCompletionRequest } from '../dialects/openai/completions-request.js';
import { toGatewayError } from '../errors.js';
import type { Store } from '../store/store.js';

const TICK_MS = 500;
const PROBE_TIMEOUT_MS = 30_000;

/**
 * Active health checks for providers with a `probe` entry: a one-token completion of the probe
 * model, sent straight to the provider adapter. It goes through no key and writes no ledger row,
 * so no customer is billed; the result goes to `status_probes`. When several processes share the
 * store, a claim in the store makes sure only one of them probes each interval.
 */
export class Prober {
  private timer: NodeJS.Timeout | undefined;
  private readonly running = new Set<string>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly catalogue: LiveCatalogue,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    for (const entry of this.catalogue.providers()) {
      const probe = entry.config.probe;
      if (probe === undefined || this.running.has(entry.id)) continue;
      const model = this.catalogue.current().get(probe.model);
      if (model === undefined || model.providerId !== entry.id) {
        if (!this.warned.has(entry.id)) this.logger.warn({ provider: entry.id, model: probe.model }, 'probe model is not a catalogue model of this provider; not probing');
        this.warned.add(entry.id);
        continue;
      }
      const provider = this.catalogue.get(entry.id);
      if (provider === undefined) continue;
      this.running.add(entry.id);
      void (async () => {
        try {
          if (!(await this.store.status.claimProbe(entry.id, Date.now(), probe.interval_ms))) return;
          const started = performance.now();
          let ok = true;
          let errorKind: string | null = null;
          try {
            const request = parseCompletionRequest({ model: model.id, prompt: 'ping', max_tokens: 1 });
            await provider.complete({ request, model, requestId: `probe-${entry.id}-${Date.now()}`, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
          } catch (error) {
            // The probe request is well-formed, so any refusal (even a 4xx such as an unknown model) is a failure.
            ok = false;
            errorKind = toGatewayError(error).kind;
          }
          await this.store.status.recordProbe({ at: Date.now(), providerId: entry.id, model: model.id, ok, latencyMs: performance.now() - started, errorKind });
        } catch (error) {
          this.logger.warn({ provider: entry.id, err: error }, 'probe could not be recorded');
        } finally {
          this.running.delete(entry.id);
        }
      })();
    }
  }
}
