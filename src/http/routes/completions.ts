import { performance } from 'node:perf_hooks';
import type { Principal } from '../../auth/authenticator.js';
import { bearerToken } from '../../auth/key-carriers.js';
import { modelForOperation } from '../../catalogue/access.js';
import type { CatalogueModel } from '../../catalogue/catalogue.js';
import type { CompletionCall, CompletionRequest, Usage } from '../../completions/completion.js';
import { openAICompletionBody, OpenAICompletionStreamWriter } from '../../dialects/openai/completion-writer.js';
import { parseCompletionRequest } from '../../dialects/openai/completions-request.js';
import { GatewayError, toGatewayError } from '../../errors.js';
import type { Provider } from '../../providers/provider.js';
import { costUsd } from '../../usage/pricing.js';
import { countUsage } from '../../usage/token-counter.js';
import { readJsonBody } from '../body.js';
import type { GatewayDeps, Handler, RequestContext } from '../server.js';

/** Recorded when the client went away before the answer was complete (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

/** What the ledger row of one request needs, filled in as the request goes along. */
interface Outcome {
  model: string;
  catalogueModel: CatalogueModel | undefined;
  status: number;
  errorKind: string | null;
  usage: Usage | null;
  tokensCounted: boolean;
  ttfbAt: number | null;
}

/** `POST /v1/completions`: request → auth → catalogue → provider → writer → ledger. */
export function completionsRoute(deps: GatewayDeps): Handler {
  return async (ctx) => {
    const principal = await deps.authenticator.authenticate(bearerToken(ctx.req.headers));
    const outcome: Outcome = {
      model: '',
      catalogueModel: undefined,
      status: 200,
      errorKind: null,
      usage: null,
      tokensCounted: false,
      ttfbAt: null,
    };
    const controller = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort();
    };
    ctx.res.once('close', onClose);
    let stream = false;
    let request: CompletionRequest | undefined;
    try {
      const body = await readJsonBody(ctx.req, deps.maxBodyBytes);
      outcome.model = modelNameOf(body);
      request = parseCompletionRequest(body);
      stream = request.stream;
      const model = modelForOperation(deps.catalogue(), request.model, principal, 'completions');
      outcome.catalogueModel = model;
      const provider = deps.providers.get(model.providerId);
      if (provider === undefined) throw new GatewayError('internal_error', `The provider of model \`${model.id}\` is not configured.`);
      const call: CompletionCall = { request, model, requestId: ctx.requestId, signal: controller.signal };
      if (request.stream) await relayStream(ctx, provider, call, outcome);
      else await relayWhole(ctx, provider, call, outcome);
    } catch (thrown) {
      const error = toGatewayError(thrown);
      const clientLeft = controller.signal.aborted;
      outcome.status = clientLeft ? CLIENT_CLOSED_REQUEST : error.status;
      outcome.errorKind = clientLeft ? 'client_closed' : error.kind;
      // The upstream had the prompt once the call was made: that much is owed even if nothing came back.
      if (clientLeft && outcome.usage === null && request !== undefined && outcome.catalogueModel !== undefined) {
        outcome.usage = await countOwnUsage(request, []);
        outcome.tokensCounted = true;
      }
      if (!clientLeft) throw error;
    } finally {
      ctx.res.off('close', onClose);
      record(deps, ctx, principal, outcome, stream);
    }
  };
}

async function relayWhole(ctx: RequestContext, provider: Provider, call: CompletionCall, outcome: Outcome): Promise<void> {
  const completion = await provider.complete(call);
  let usage = completion.usage;
  if (usage === null) {
    usage = await countOwnUsage(call.request, completion.choices.map((choice) => choice.text));
    outcome.tokensCounted = true;
  }
  outcome.usage = usage;
  ctx.res.writeHead(200, { 'content-type': 'application/json' }).end(openAICompletionBody(completion, call.request.model, usage));
  outcome.ttfbAt = performance.now();
}

async function relayStream(ctx: RequestContext, provider: Provider, call: CompletionCall, outcome: Outcome): Promise<void> {
  const { request } = call;
  const events = await provider.streamCompletion(call);
  const writer = new OpenAICompletionStreamWriter(ctx.res, request.model, request.includeUsage, call.signal);
  const texts: string[] = [];
  let usage: Usage | null = null;
  try {
    for await (const event of events) {
      if (event.type === 'start') {
        writer.open(event.id, event.created);
        outcome.ttfbAt ??= performance.now();
      } else if (event.type === 'choice') {
        if (!writer.hasStarted) writer.open(`cmpl-${ctx.requestId}`, Math.floor(Date.now() / 1000));
        outcome.ttfbAt ??= performance.now();
        texts[event.index] = (texts[event.index] ?? '') + event.text;
        await writer.choice(event);
      } else {
        usage = event.usage;
      }
    }
    if (usage === null) {
      usage = await countOwnUsage(request, texts);
      outcome.tokensCounted = true;
    }
    outcome.usage = usage;
    if (!writer.hasStarted) writer.open(`cmpl-${ctx.requestId}`, Math.floor(Date.now() / 1000));
    await writer.usage(usage);
    writer.end();
  } catch (thrown) {
    // What was generated before a failure or a hang-up was produced, and delivered, all the same.
    outcome.usage = await countOwnUsage(request, texts);
    outcome.tokensCounted = true;
    // Before the first byte the caller still gets a proper status; after it, an error event.
    if (!writer.hasStarted || call.signal.aborted) throw thrown;
    const error = toGatewayError(thrown);
    outcome.status = error.status;
    outcome.errorKind = error.kind;
    await writer.error(error).catch(() => undefined);
    ctx.res.end();
  }
}

function record(deps: GatewayDeps, ctx: RequestContext, principal: Principal, outcome: Outcome, stream: boolean): void {
  const usage = outcome.usage ?? { promptTokens: 0, completionTokens: 0 };
  deps.ledger.record({
    at: Date.now(),
    requestId: ctx.requestId,
    accountId: principal.accountId,
    keyId: principal.keyId,
    operation: 'completions',
    model: outcome.catalogueModel?.id ?? outcome.model,
    providerId: outcome.catalogueModel?.providerId ?? null,
    status: outcome.status,
    errorKind: outcome.errorKind,
    stream,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    tokensCounted: outcome.tokensCounted,
    latencyMs: performance.now() - ctx.startedAt,
    ttfbMs: outcome.ttfbAt === null ? null : outcome.ttfbAt - ctx.startedAt,
    costUsd: costUsd(outcome.catalogueModel, usage),
  });
}

/**
 * Tokens Sluice counts itself when the upstream reported none: the prompts, and what was generated
 * for each choice (an echoed prompt is the prompt, not output).
 */
function countOwnUsage(request: CompletionRequest, texts: readonly (string | undefined)[]): Promise<Usage> {
  const prompts = typeof request.prompt === 'string' ? [request.prompt] : request.prompt;
  const generated: string[] = [];
  texts.forEach((text, index) => {
    if (text === undefined) return;
    const prompt = prompts[Math.floor(index / request.n)];
    generated.push(request.echo && typeof prompt === 'string' && text.startsWith(prompt) ? text.slice(prompt.length) : text);
  });
  return countUsage(request.prompt, generated);
}

function modelNameOf(body: unknown): string {
  const model = (body as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? model.slice(0, 200) : '';
}
