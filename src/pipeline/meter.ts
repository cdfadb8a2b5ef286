import { performance } from 'node:perf_hooks';
import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { Principal } from '../core/principal.js';
import type { Admitted } from '../generation/admission.js';
import type { Usage } from '../generation/model.js';
import { billingUnitsOf, costUsd, pricedFor } from '../pricing/cost.js';
import type { RouteOutcome } from '../routing/router.js';
import type { GenerationRecord, GenerationTelemetry } from '../telemetry/telemetry.js';
import type { Arrival, PipelineDeps } from './pipeline.js';

/** What the stages before it leave the meter stage. */
export interface Metered {
  readonly operation: string;
  readonly modelAsked: string;
  /** The model resolved for the caller; undefined when the request failed before. */
  readonly model: CatalogueModel | undefined;
  readonly status: number;
  readonly errorKind: string | null;
  /** Undefined when the request never reached routing. */
  readonly outcome: RouteOutcome | undefined;
  readonly usage: Usage | null;
  /** True when Sluice counted the tokens because the upstream reported none. */
  readonly counted: boolean;
  readonly firstByteAt: number | null;
  readonly stream: boolean;
  readonly entryId: string | undefined;
  readonly settle: Admitted['settle'] | undefined;
}

const NOT_ROUTED: RouteOutcome = { deployment: undefined, served: undefined, attempts: [], accepted: false };

/**
 * The meter stage: usage and cost, billed for the attempt that answered (or ended the request); the
 * reservation settled to the real cost; the request's ledger row; then its telemetry.
 */
export function meter(deps: PipelineDeps, arrival: Arrival, principal: Principal, metered: Metered, observed: GenerationTelemetry): GenerationRecord {
  const { served, deployment, attempts } = metered.outcome ?? NOT_ROUTED;
  const usage = metered.usage;
  const model = served ?? metered.model;
  // A request refused before it had a model (one the key may not use, or that serves another operation) is still
  // the catalogue's, and a name standing for a model (an alias) goes by that model's id; only a name it lacks is unresolved.
  const asked = metered.model ?? deps.catalogue().resolve(metered.modelAsked);
  const modelName = model?.id ?? asked?.id ?? metered.modelAsked;
  const cost = usage === null ? 0 : costUsd(model, usage);
  // Nothing consumed costs $0 at any price; what was consumed at a model without a price for it is unknown, not free
  // (a cost above 0 was priced: the common case asks nothing more).
  const unpriced = cost === 0 && usage !== null && consumed(usage) && !pricedFor(model?.pricing, billingUnitsOf(usage.units));
  const latencyMs = performance.now() - arrival.startedAt;
  const ttfbMs = metered.firstByteAt === null ? null : metered.firstByteAt - arrival.startedAt;
  metered.settle?.({ tokens: (usage?.input ?? 0) + (usage?.output ?? 0), costUsd: cost });
  const providerId = deployment?.providerId ?? model?.providerId ?? null;
  deps.ledger.record({
    entryId: metered.entryId ?? deps.ledger.nextEntryId(),
    at: Date.now(),
    requestId: arrival.requestId,
    accountId: principal.accountId,
    keyId: principal.keyId,
    operation: metered.operation,
    model: modelName,
    providerId,
    status: metered.status,
    errorKind: metered.errorKind,
    stream: metered.stream,
    promptTokens: usage?.input ?? 0,
    completionTokens: usage?.output ?? 0,
    cachedInputTokens: usage?.cachedInput ?? 0,
    cacheWriteTokens: usage?.cacheWrite ?? 0,
    reasoningTokens: usage?.reasoning ?? 0,
    tokensCounted: metered.counted,
    latencyMs,
    ttfbMs,
    costUsd: cost,
    unpriced,
    attempts: attempts.length,
    deployment: deployment?.name ?? null,
    // Each attempt with its deployment and what it consumed, for reconciling with the providers' bills: kept when
    // there was more than one, or when the only one failed after the upstream had the prompt.
    attemptLog: attempts.length > 1 || (attempts.length === 1 && attempts[0]!.status !== 200 && attempts[0]!.promptTokens > 0) ? attempts : null,
  });
  let fallbacks = 0;
  for (const attempt of attempts) if (attempt.model !== metered.model?.id) fallbacks++;
  const record: GenerationRecord = {
    requestId: arrival.requestId,
    keyId: principal.keyId,
    accountId: principal.accountId,
    model: modelName,
    catalogueModel: asked?.id ?? null,
    // A request refused before any attempt is reported under its model's first provider.
    providerKind: deps.providers.get(providerId ?? '')?.kind ?? null,
    status: metered.status,
    errorKind: metered.errorKind,
    inputTokens: usage?.input ?? 0,
    outputTokens: usage?.output ?? 0,
    costUsd: cost,
    attempts: attempts.length,
    fallbacks,
    durationMs: latencyMs,
    firstByteMs: ttfbMs,
    upstreamMs: arrival.timer.upstreamMs,
  };
  observed.end(record);
  return record;
}

function consumed(usage: Usage): boolean {
  const units = usage.units;
  return usage.input > 0 || usage.output > 0 || (units !== undefined && Object.values(units).some((amount) => amount !== undefined && amount > 0));
}
