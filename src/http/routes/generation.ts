import { performance } from 'node:perf_hooks';
import type { Principal } from '../../core/principal.js';
import { modelForOperation } from '../../catalogue/access.js';
import type { CatalogueModel, Deployment } from '../../catalogue/catalogue.js';
import { GatewayError, toGatewayError } from '../../core/errors.js';
import { GENERATES_NOTHING, type Admitted } from '../../core/admission.js';
import { directInvoker, type Invoker } from '../../generation/invoke.js';
import type { CountTokensOperation, GenerationOperation, WireRequest } from '../../generation/operation.js';
import { CLIENT_CLOSED_REQUEST, newProgress, type RouteProgress } from '../../routing/router.js';
import { costUsd } from '../../pricing/cost.js';
import { readJsonBody } from '../body.js';
import type { Handler, RequestContext } from '../handler.js';
import type { GatewayDeps } from '../server.js';
import type { GenerationTelemetry } from '../../telemetry/telemetry.js';


/**
 * Every generation operation, whatever its dialect, runs these stages in this order:
 * authenticate → parse → resolve the model → admit → invoke and write (the dialect's `serve`) →
 * meter (usage, cost, the ledger row). A request that fails at any stage after authentication
 * still leaves its ledger row.
 */
export function generationRoute<Request>(deps: GatewayDeps, operation: GenerationOperation<Request>): Handler {
  return async (ctx) => {
    ctx.dialect = operation.dialect;
    const wire = wireRequest(ctx);
    const principal = await deps.authenticator.authenticate(operation.credential(wire));
    const progress = newProgress();
    let modelAsked = '';
    let model: CatalogueModel | undefined;
    let request: Request | undefined;
    let entryId: string | undefined;
    let status = 200;
    let errorKind: string | null = null;
    let settle: Admitted['settle'] | undefined;
    let observed: GenerationTelemetry | undefined;
    let clientLeft = false;
    const onClose = () => {
      if (ctx.res.writableFinished) return;
      clientLeft = true;
      progress.cancel();
    };
    ctx.res.once('close', onClose);
    try {
      const body = await readJsonBody(ctx.req, deps.maxBodyBytes);
      modelAsked = operation.modelNamed?.(wire) ?? modelNameOf(body);
      const parsed = operation.parse(body, wire);
      request = parsed;
      observed = deps.telemetry.generation({ requestId: ctx.requestId, headers: ctx.req.headers, route: ctx.route, operation: operation.operation, model: modelAsked, stream: operation.isStream(parsed), startedAt: ctx.startedAt });
      const asked = modelForOperation(deps.catalogue(), operation.modelOf(parsed), principal, operation.endpoint);
      model = asked;
      let promptTokens: Promise<number> | undefined;
      const countPrompt = () => (promptTokens ??= operation.countUsage(parsed, []).then((usage) => usage.input));
      const { maxTokens, choices } = operation.outputBound(parsed);
      const admitted = await deps.admission.admit(principal, asked, { promptTokens: countPrompt, maxOutputTokens: maxTokens, choices });
      settle = admitted.settle;
      for (const [name, value] of Object.entries(admitted.headers)) ctx.res.setHeader(name, value);
      entryId = deps.ledger.begin({
        at: Date.now(),
        requestId: ctx.requestId,
        accountId: principal.accountId,
        keyId: principal.keyId,
        operation: operation.operation,
        model: asked.id,
        providerId: asked.providerId,
        stream: operation.isStream(parsed),
      });
      await deps.router.run(
        {
          model: asked,
          fallback: (id) => usableFallback(deps, id, principal, operation.endpoint),
          gone: () => clientLeft,
          res: ctx.res,
          telemetry: observed,
          promptTokens: countPrompt,
          attempt: (attempt) =>
            operation.serve({
              request: parsed,
              principal,
              model: attempt.deployment.model,
              provider: attempt.provider,
              requestId: ctx.requestId,
              res: ctx.res,
              signal: attempt.signal,
              invoke: attempt.invoke,
              meter: attempt.meter,
            }),
        },
        progress,
      );
      const failure = progress.meter.failure;
      if (failure !== null) {
        status = failure.status;
        errorKind = failure.kind;
      }
    } catch (thrown) {
      const error = toGatewayError(thrown);
      status = clientLeft ? CLIENT_CLOSED_REQUEST : error.status;
      errorKind = clientLeft ? 'client_closed' : error.kind;
      // The upstream had the prompt once the call was made: that much is owed even if nothing came back.
      const meter = progress.meter;
      if (clientLeft && meter.usage === null && request !== undefined && progress.accepted) {
        meter.usage = await operation.countUsage(request, []);
        meter.tokensCounted = true;
      }
      if (!clientLeft) throw error;
    } finally {
      ctx.res.off('close', onClose);
      const stream = request !== undefined && operation.isStream(request);
      observed ??= deps.telemetry.generation({ requestId: ctx.requestId, headers: ctx.req.headers, route: ctx.route, operation: operation.operation, model: modelAsked, stream, startedAt: ctx.startedAt });
      record(deps, ctx, principal, { operation: operation.operation, modelAsked, model, status, errorKind, progress, stream, entryId, settle, observed });
    }
  };
}

/** A fallback the caller's key may use for this operation; one it may not is passed over. */
function usableFallback(deps: GatewayDeps, id: string, principal: Principal, endpoint: GenerationOperation<unknown>['endpoint']): CatalogueModel | undefined {
  try {
    return modelForOperation(deps.catalogue(), id, principal, endpoint);
  } catch {
    return undefined;
  }
}

/**
 * `POST …/count_tokens` and `…:countTokens`: authenticate → parse → resolve the model → admit → count
 * (the upstream's own count where it has one in the caller's wire, else Sluice's) → meter. A count
 * generates nothing: it is admitted against the request limits (a spent budget refuses it too) but
 * reserves no tokens and no spend, and its ledger row costs nothing.
 */
export function countTokensRoute<Request>(deps: GatewayDeps, operation: CountTokensOperation<Request>): Handler {
  return async (ctx) => {
    ctx.dialect = operation.dialect;
    const wire = wireRequest(ctx);
    const principal = await deps.authenticator.authenticate(operation.credential(wire));
    const progress = newProgress();
    let modelAsked = '';
    let model: CatalogueModel | undefined;
    let entryId: string | undefined;
    let status = 200;
    let errorKind: string | null = null;
    let settle: Admitted['settle'] | undefined;
    const controller = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort();
    };
    ctx.res.once('close', onClose);
    try {
      const body = await readJsonBody(ctx.req, deps.maxBodyBytes);
      modelAsked = operation.modelNamed?.(wire) ?? modelNameOf(body);
      const request = operation.parse(body, wire);
      const asked = modelForOperation(deps.catalogue(), operation.modelOf(request), principal, operation.endpoint);
      model = asked;
      const admitted = await deps.admission.admit(principal, asked, GENERATES_NOTHING);
      settle = admitted.settle;
      for (const [name, value] of Object.entries(admitted.headers)) ctx.res.setHeader(name, value);
      entryId = deps.ledger.begin({ at: Date.now(), requestId: ctx.requestId, accountId: principal.accountId, keyId: principal.keyId, operation: operation.operation, model: asked.id, providerId: asked.providerId, stream: false });
      const deployment = deps.router.preferred(asked);
      const provider = deps.providers.get(deployment.providerId);
      if (provider === undefined) throw new GatewayError('internal_error', `The provider of model \`${asked.id}\` is not configured.`);
      const invoke = countedAsAttempt(directInvoker(provider), deployment, progress);
      await operation.serve({ request, principal, model: deployment.model, provider, requestId: ctx.requestId, res: ctx.res, signal: controller.signal, invoke });
    } catch (thrown) {
      const error = toGatewayError(thrown);
      const clientLeft = controller.signal.aborted;
      status = clientLeft ? CLIENT_CLOSED_REQUEST : error.status;
      errorKind = clientLeft ? 'client_closed' : error.kind;
      if (!clientLeft) throw error;
    } finally {
      ctx.res.off('close', onClose);
      meter(deps, ctx, principal, { operation: operation.operation, modelAsked, model, status, errorKind, progress, stream: false, entryId, settle });
    }
  };
}

/** The provider's invoker, with a relayed count logged as the request's one attempt (a count Sluice makes itself has none). */
function countedAsAttempt(invoker: Invoker, deployment: Deployment, progress: RouteProgress): Invoker {
  return {
    ...invoker,
    relay: async (call) => {
      progress.deployment = deployment;
      const startedAt = performance.now();
      const attempt = (status: number, errorKind: string | null) =>
        progress.attempts.push({ model: deployment.model.id, deployment: deployment.name, providerId: deployment.providerId, status, errorKind, promptTokens: 0, completionTokens: 0, latencyMs: performance.now() - startedAt });
      try {
        const answer = await invoker.relay(call);
        attempt(200, null);
        return answer;
      } catch (error) {
        const failure = toGatewayError(error);
        attempt(failure.status, failure.kind);
        throw error;
      }
    },
  };
}

function wireRequest(ctx: RequestContext): WireRequest {
  return { headers: ctx.req.headers, path: ctx.path, query: new URLSearchParams(ctx.query) };
}

interface Metered {
  readonly operation: string;
  readonly modelAsked: string;
  readonly model: CatalogueModel | undefined;
  readonly status: number;
  readonly errorKind: string | null;
  readonly progress: RouteProgress;
  readonly stream: boolean;
  readonly entryId: string | undefined;
  readonly settle: Admitted['settle'] | undefined;
}

interface Outcome extends Metered {
  readonly observed: GenerationTelemetry;
}

/** The meter stage's ledger half, for every route that admits: the reservation settled to the real cost, and the request's ledger row. */
function meter(deps: GatewayDeps, ctx: RequestContext, principal: Principal, outcome: Metered) {
  const { meter, served, deployment, attempts } = outcome.progress;
  const usage = meter.usage;
  const model = served ?? outcome.model;
  const cost = usage === null ? 0 : costUsd(model, usage);
  const latencyMs = performance.now() - ctx.startedAt;
  const ttfbMs = meter.firstByteAt === null ? null : meter.firstByteAt - ctx.startedAt;
  outcome.settle?.({ tokens: (usage?.input ?? 0) + (usage?.output ?? 0), costUsd: cost });
  deps.ledger.record({
    entryId: outcome.entryId ?? deps.ledger.nextEntryId(),
    at: Date.now(),
    requestId: ctx.requestId,
    accountId: principal.accountId,
    keyId: principal.keyId,
    operation: outcome.operation,
    model: model?.id ?? outcome.modelAsked,
    providerId: deployment?.providerId ?? model?.providerId ?? null,
    status: outcome.status,
    errorKind: outcome.errorKind,
    stream: outcome.stream,
    promptTokens: usage?.input ?? 0,
    completionTokens: usage?.output ?? 0,
    cachedInputTokens: usage?.cachedInput ?? 0,
    cacheWriteTokens: usage?.cacheWrite ?? 0,
    reasoningTokens: usage?.reasoning ?? 0,
    tokensCounted: meter.tokensCounted,
    latencyMs,
    ttfbMs,
    costUsd: cost,
    attempts: attempts.length,
    deployment: deployment?.name ?? null,
    // Each attempt with its deployment and what it consumed, for reconciling with the providers' bills: kept when
    // there was more than one, or when the only one failed after the upstream had the prompt.
    attemptLog: attempts.length > 1 || (attempts.length === 1 && attempts[0]!.status !== 200 && attempts[0]!.promptTokens > 0) ? attempts : null,
  });
  return { usage, model, cost, latencyMs, ttfbMs };
}

/** The meter stage: usage, cost and the ledger row, billed for the attempt that answered (or ended the request); then its telemetry. */
function record(deps: GatewayDeps, ctx: RequestContext, principal: Principal, outcome: Outcome): void {
  const { usage, model, cost, latencyMs, ttfbMs } = meter(deps, ctx, principal, outcome);
  const { deployment, attempts } = outcome.progress;
  let fallbacks = 0;
  for (const attempt of attempts) if (attempt.model !== outcome.model?.id) fallbacks++;
  const generation = {
    requestId: ctx.requestId,
    keyId: principal.keyId,
    accountId: principal.accountId,
    model: model?.id ?? outcome.modelAsked,
    // A model the key may not use, or that serves another operation, is still the catalogue's: only a name it lacks is unresolved.
    catalogueModel: (outcome.model ?? deps.catalogue().get(outcome.modelAsked))?.id ?? null,
    // A request refused before any attempt is reported under its model's first provider.
    providerKind: deps.providers.get(deployment?.providerId ?? model?.providerId ?? '')?.kind ?? null,
    status: outcome.status,
    errorKind: outcome.errorKind,
    inputTokens: usage?.input ?? 0,
    outputTokens: usage?.output ?? 0,
    costUsd: cost,
    attempts: attempts.length,
    fallbacks,
    durationMs: latencyMs,
    firstByteMs: ttfbMs,
    upstreamMs: ctx.res.upstreamMs,
  };
  ctx.generation = generation;
  outcome.observed.end(generation);
}

function modelNameOf(body: unknown): string {
  const model = (body as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? model.slice(0, 200) : '';
}
