import type { Catalogue, CatalogueModel } from '../catalogue/catalogue.js';
import { modelForOperation } from '../catalogue/access.js';
import { hasBudget } from '../core/key-limits.js';
import { billingUnitsOf, pricedFor, type BillingUnit } from '../pricing/cost.js';
import { CLIENT_CLOSED_REQUEST, toGatewayError, type GatewayError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import type { Admission, Admitted } from '../generation/admission.js';
import type { Usage } from '../generation/model.js';
import { formField, type UploadForm } from '../generation/upload.js';
import type { AnswerSink, Operation, ParsedRequest, WireRequest } from '../generation/operation.js';
import type { ProviderRegistry } from '../generation/provider.js';
import type { RouteOutcome, Routed, Router, UpstreamTimer } from '../routing/router.js';
import { NO_TELEMETRY, type GenerationRecord, type GenerationTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { UsageLedger } from '../usage/ledger.js';
import { meter, type Metered } from './meter.js';
import { writeReply, type Written } from './write.js';

/** What the pipeline's stages use, each through its own contract. */
export interface PipelineDeps {
  readonly authenticator: { authenticate(secret: string | undefined): Promise<Principal> };
  /** The current catalogue; a function so that a reload can swap the snapshot. */
  readonly catalogue: () => Catalogue;
  readonly admission: Admission;
  readonly router: Router;
  readonly ledger: UsageLedger;
  readonly telemetry: Telemetry;
  /** For the kind of provider a request went to, in its telemetry. */
  readonly providers: ProviderRegistry;
}

/** One request as the HTTP layer hands it over. */
export interface Arrival {
  readonly requestId: string;
  /** The route's pattern, for telemetry. */
  readonly route: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  readonly wire: WireRequest;
  readBody(): Promise<unknown>;
  readonly sink: AnswerSink;
  /** Where routing adds the time spent on upstreams. */
  readonly timer: UpstreamTimer;
}

/** How a request ended: the meter stage's record, and the failure the caller is still owed an answer for. */
export interface Finished {
  /** Undefined for an operation that generates nothing. */
  readonly record: GenerationRecord | undefined;
  /** To be written in the caller's dialect (nothing was written yet, and the caller is still there). */
  readonly error: GatewayError | undefined;
}

/**
 * Every operation, whatever its dialect, runs these stages in this order, each once:
 * authenticate → parse → resolve the model → admit → invoke (routing around the provider call) →
 * write → meter (usage, cost, the ledger row, telemetry). A request that fails at any stage after
 * authentication still leaves its ledger row; the failure is thrown for the HTTP layer to write in
 * the caller's dialect, unless the answer had begun or the caller left.
 */
export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  async run<Request extends ParsedRequest>(operation: Operation<Request>, arrival: Arrival): Promise<Finished> {
    const { deps } = this;
    const { wire, sink } = arrival;
    const principal = await deps.authenticator.authenticate(operation.credential(wire));
    let modelAsked = '';
    let model: CatalogueModel | undefined;
    let request: Request | undefined;
    let entryId: string | undefined;
    let settle: Admitted['settle'] | undefined;
    let observed: GenerationTelemetry | undefined;
    let outcome: RouteOutcome | undefined;
    let written: Written | undefined;
    let status = 200;
    let errorKind: string | null = null;
    let leftUsage: Usage | null = null;
    let failed: GatewayError | undefined;
    try {
      const body = await arrival.readBody();
      modelAsked = operation.modelNamed?.(wire) ?? modelNameOf(operation.body === 'multipart' ? formField(body as UploadForm, 'model') : (body as { model?: unknown } | null)?.model);
      let parsed = operation.parse(body, wire);
      request = parsed;
      observed = this.observe(operation, arrival, modelAsked, parsed.stream === true);
      const asked = modelForOperation(deps.catalogue(), parsed.model, principal, operation.endpoint);
      model = asked;
      let promptTokens: Promise<number> | undefined;
      const countPrompt = () => (promptTokens ??= operation.countUsage(parsed, []).then((usage) => usage.input));
      const bound = operation.outputBound(parsed);
      const admitted = await deps.admission.admit(principal, asked, { promptTokens: countPrompt, maxOutputTokens: bound.maxTokens, choices: bound.choices, units: bound.units });
      settle = admitted.settle;
      for (const [name, value] of Object.entries(admitted.headers)) sink.setHeader(name, value);
      entryId = deps.ledger.begin({ at: Date.now(), requestId: arrival.requestId, accountId: principal.accountId, keyId: principal.keyId, operation: operation.operation, model: asked.id, providerId: asked.providerId, stream: parsed.stream === true });
      if (operation.prepare !== undefined) request = parsed = await operation.prepare(parsed, principal);
      const routed = await deps.router.invoke({
        model: asked,
        requestId: arrival.requestId,
        // A token count (no choices) is billed nothing: no fallback is unpriced for it.
        fallback: (id) => this.usableFallback(id, principal, operation, bound.choices > 0 ? billingUnitsOf(bound.units) : null),
        plan: (target) => operation.plan(parsed, target),
        signal: sink.signal,
        telemetry: observed,
        timer: arrival.timer,
        promptTokens: countPrompt,
      });
      outcome = routed.outcome;
      const attempts = outcome.attempts.length + (routed.ok ? 1 : 0);
      if (attempts > 1) sink.setHeader('x-sluice-attempts', String(attempts));
      if (!routed.ok) throw routed.error;
      written = await write(operation, parsed, routed, sink);
      await routed.answered.end(written);
      if (written.thrown !== undefined) throw written.thrown;
      if (written.failure !== undefined) {
        status = written.failure.status;
        errorKind = written.failure.kind;
      }
    } catch (thrown) {
      const error = toGatewayError(thrown);
      const clientLeft = sink.signal.aborted;
      status = clientLeft ? CLIENT_CLOSED_REQUEST : error.status;
      errorKind = clientLeft ? 'client_closed' : error.kind;
      // The upstream had the prompt once the call was made: that much is owed even if nothing came back.
      if (clientLeft && written?.usage == null && request !== undefined && outcome?.accepted === true) leftUsage = await operation.countUsage(request, []);
      if (!clientLeft) failed = error;
    }
    const stream = request?.stream === true;
    observed ??= this.observe(operation, arrival, modelAsked, stream);
    const usage = leftUsage ?? written?.usage ?? null;
    const counted = leftUsage !== null || (written?.counted ?? false);
    const metered: Metered = { operation: operation.operation, modelAsked, model, status, errorKind, outcome, usage, counted, firstByteAt: written?.firstByteAt ?? null, stream, entryId, settle };
    const record = meter(deps, arrival, principal, metered, observed);
    return { record: operation.generates === false ? undefined : record, error: failed };
  }

  private observe<Request extends ParsedRequest>(operation: Operation<Request>, arrival: Arrival, model: string, stream: boolean): GenerationTelemetry {
    const telemetry = operation.generates === false ? NO_TELEMETRY : this.deps.telemetry;
    return telemetry.generation({ requestId: arrival.requestId, headers: arrival.wire.headers, route: arrival.route, operation: operation.operation, model, stream, startedAt: arrival.startedAt });
  }

  /**
   * A fallback the caller's key may use for this operation; one it may not is passed over, as is an
   * unpriced one for a budgeted key (the admit stage refuses such a model as the one asked for).
   */
  private usableFallback<Request extends ParsedRequest>(id: string, principal: Principal, operation: Operation<Request>, billed: readonly BillingUnit[] | null): CatalogueModel | undefined {
    let fallback: CatalogueModel;
    try {
      fallback = modelForOperation(this.deps.catalogue(), id, principal, operation.endpoint);
    } catch {
      return undefined;
    }
    return billed !== null && hasBudget(principal.keyLimits, principal.accountLimits) && !pricedFor(fallback.pricing, billed) ? undefined : fallback;
  }
}

/** The write stage: the answer in the caller's wire, written to the sink; whatever happens, what it saw comes back (the attempt is ended with it). */
async function write<Request extends ParsedRequest>(operation: Operation<Request>, request: Request, routed: Extract<Routed, { ok: true }>, sink: AnswerSink): Promise<Written> {
  try {
    const reply = operation.answer(request, routed.answer, { ...routed.target, call: routed.call, sink });
    return await writeReply(reply, sink, (generated) => operation.countUsage(request, generated));
  } catch (thrown) {
    return { usage: null, counted: false, firstByteAt: null, failure: undefined, thrown: toGatewayError(thrown) };
  }
}

function modelNameOf(model: unknown): string {
  return typeof model === 'string' ? model.slice(0, 200) : '';
}
