import type { Logger } from 'pino';
import type { LiveCatalogue } from '../catalogue/live-catalogue.js';
import type { CatalogueModel } from '../catalogue/catalogue.js';
import { generationRequest } from '../generation/model.js';
import { toGatewayError } from '../core/errors.js';
import type { Provider, ProviderRegistry } from '../generation/provider.js';
import type { StatusRepository } from '../store/store.js';

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
    private readonly status: StatusRepository,
    private readonly catalogue: LiveCatalogue,
    private readonly providers: ProviderRegistry,
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
      const provider = this.providers.get(entry.id);
      if (provider === undefined) continue;
      this.running.add(entry.id);
      void (async () => {
        try {
          if (!(await this.status.claimProbe(entry.id, Date.now(), probe.interval_ms))) return;
          const started = performance.now();
          let ok = true;
          let errorKind: string | null = null;
          try {
            await probe1Token(provider, model, `probe-${entry.id}-${Date.now()}`);
          } catch (error) {
            // The probe request is well-formed, so any refusal (even a 4xx such as an unknown model) is a failure.
            ok = false;
            errorKind = toGatewayError(error).kind;
          }
          await this.status.recordProbe({ at: Date.now(), providerId: entry.id, model: model.id, ok, latencyMs: performance.now() - started, errorKind });
        } catch (error) {
          this.logger.warn({ provider: entry.id, err: error }, 'probe could not be recorded');
        } finally {
          this.running.delete(entry.id);
        }
      })();
    }
  }
}

/**
 * A one-token request on the operation the model serves: a legacy completion relayed where the
 * upstream takes those (base models may have no chat template); one embedding of one word for an
 * embedding model, one document ranked for a reranker (servers such as TEI serve nothing else);
 * otherwise one chat turn.
 */
async function probe1Token(provider: Provider, model: CatalogueModel, requestId: string): Promise<void> {
  const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  const generates = model.endpoints.has('chat') || model.endpoints.has('completions') || model.endpoints.has('responses');
  if (!generates && model.endpoints.has('embeddings')) {
    await provider.embed({ request: { input: { kind: 'text', texts: ['ping'] }, extensions: {} }, model, requestId, signal, encoding: 'base64' });
    return;
  }
  if (!generates && model.endpoints.has('rerank') && provider.relays('openai.rerank', model)) {
    await provider.relay({ operation: 'openai.rerank', body: { model: model.id, query: 'ping', documents: ['ping'] }, stream: false, model, requestId, signal });
    return;
  }
  if (model.endpoints.has('completions') && provider.relays('openai.completions', model)) {
    await provider.relay({ operation: 'openai.completions', body: { model: model.id, prompt: 'ping', max_tokens: 1 }, stream: false, model, requestId, signal });
    return;
  }
  const request = generationRequest({ model: model.id, messages: [{ role: 'user', content: [{ type: 'text', text: 'ping' }] }], maxOutputTokens: 1 });
  await provider.generate({ request, model, requestId, signal, choices: 1 });
}
