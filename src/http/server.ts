import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticator.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import { DIALECTS } from '../dialects/dialect.js';
import { GatewayError, toGatewayError } from '../core/errors.js';
import { chatCompletions } from '../dialects/openai/chat/operation.js';
import { legacyCompletions } from '../dialects/openai/legacy/operation.js';
import { embeddings } from '../dialects/openai/embeddings/operation.js';
import { geminiBatchEmbedContents, geminiEmbedContent } from '../dialects/gemini/embed/operation.js';
import type { Handler, MountedRoutes, RequestContext } from './handler.js';
import { operationRoute } from './routes/operation.js';
import type { Operation, ParsedRequest } from '../generation/operation.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import { anthropicCountTokens, anthropicMessages } from '../dialects/anthropic/messages/operation.js';
import { geminiCountTokens, geminiGenerateContent } from '../dialects/gemini/generate/operation.js';
import { healthzRoute } from './routes/healthz.js';
import { guessDialect, routeHint } from './route-hints.js';
import { TimedResponse } from './timed-response.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { responsesOperation } from '../dialects/openai/responses/operation.js';
import type { Conversations } from '../dialects/openai/responses/conversation.js';
import { audioTranscriptions, audioTranslations } from '../dialects/openai/audio/transcriptions.js';
import { audioSpeech } from '../dialects/openai/audio/speech.js';
import { imageEdits } from '../dialects/openai/images/edits.js';
import { STORED_RESPONSES_PREFIX, storedResponsesRoute } from './routes/stored-responses.js';
import { listModelsRoute, MODEL_PATH_PREFIXES, retrieveModelRoute } from './routes/models.js';
import { rerank } from '../dialects/openai/rerank/operation.js';
import { moderations } from '../dialects/openai/moderations/operation.js';
import { imageGenerations } from '../dialects/openai/images/operation.js';

/** Everything the HTTP surface needs, passed in: no globals, so tests and workers wire their own. */
export interface GatewayDeps {
  readonly logger: Logger;
  readonly authenticator: Authenticator;
  /** The current catalogue; a function so that a later change can swap the snapshot. */
  readonly catalogue: () => Catalogue;
  /** The stages every operation runs, from authentication to the ledger row. */
  readonly pipeline: Pipeline;
  /** Stored Responses-API conversations. */
  readonly conversations: Conversations;
  readonly maxBodyBytes: number;
  /** The largest multipart body (`max_upload_bytes`); a function so that a configuration reload applies to the next request. */
  readonly maxUploadBytes: () => number;
  /** Further routes (the web console, the public /models and /status pages, /metrics), mounted by the wiring. */
  readonly pages: MountedRoutes;
  /** The meter stage's readers: metrics, traces, the access log. */
  readonly telemetry: Telemetry;
}

export interface GatewayServer {
  readonly server: http.Server<typeof IncomingMessage, typeof TimedResponse>;
  /** Requests whose handlers are running. */
  inFlight(): number;
  /** Stops accepting, waits up to `graceMs` for requests in flight, then closes what is left. */
  drain(graceMs: number): Promise<void>;
}

/** The route label of a request no route took (an unknown path, a wrong method, a refusal while draining). */
const UNMATCHED_ROUTE = 'unmatched';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function createServer(deps: GatewayDeps): GatewayServer {
  const served = <Request extends ParsedRequest>(operation: Operation<Request>) => operationRoute(deps.pipeline, { maxBodyBytes: deps.maxBodyBytes, maxUploadBytes: deps.maxUploadBytes }, operation);
  const exact = new Map<string, Handler>([
    ['GET /healthz', healthzRoute()],
    ['GET /v1/models', listModelsRoute(deps)],
    ['GET /v1beta/models', listModelsRoute(deps)],
    ['POST /v1/completions', served(legacyCompletions)],
    ['POST /v1/chat/completions', served(chatCompletions)],
    ['POST /v1/messages', served(anthropicMessages)],
    ['POST /v1/messages/count_tokens', served(anthropicCountTokens)],
    ['POST /v1/responses', served(responsesOperation(deps.conversations))],
    ['POST /v1/rerank', served(rerank)],
    ['POST /v2/rerank', served(rerank)],
    ['POST /v1/moderations', served(moderations)],
    ['POST /v1/images/generations', served(imageGenerations)],
    ['POST /v1/images/edits', served(imageEdits)],
    ['POST /v1/audio/transcriptions', served(audioTranscriptions)],
    ['POST /v1/audio/translations', served(audioTranslations)],
    ['POST /v1/audio/speech', served(audioSpeech)],
    ['POST /v1/embeddings', served(embeddings)],
  ]);
  const storedResponses = storedResponsesRoute(deps);
  // Google's methods on a model: `POST /v1beta/models/{model}:{method}` (and under /v1, as Google serves both).
  const modelMethods = new Map<string, Handler>([
    ['generateContent', served(geminiGenerateContent)],
    ['streamGenerateContent', served(geminiGenerateContent)],
    ['countTokens', served(geminiCountTokens)],
    ['embedContent', served(geminiEmbedContent)],
    ['batchEmbedContents', served(geminiBatchEmbedContents)],
  ]);
  const { pages } = deps;
  for (const [route, handler] of pages.exact) exact.set(route, handler);
  const retrieveModel = retrieveModelRoute(deps);
  const knownPaths = new Set([...exact.keys()].map((route) => route.slice(route.indexOf(' ') + 1)));

  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;

  /** The handler and the route's pattern (a metrics label: never the raw path, whose ids are unbounded). */
  function route(method: string, path: string): { readonly name: string; readonly handler: Handler } | GatewayError {
    const key = `${method} ${path}`;
    const handler = exact.get(key);
    if (handler !== undefined) return { name: key, handler };
    for (const page of pages.prefixes) {
      if (path.startsWith(page.prefix) && path.length > page.prefix.length) {
        return page.methods.includes(method) ? { name: `${method} ${page.prefix}*`, handler: page.handler } : new GatewayError('method_not_allowed', `${method} is not allowed on ${path}.`);
      }
    }
    if (path.startsWith(STORED_RESPONSES_PREFIX) && path.length > STORED_RESPONSES_PREFIX.length) {
      return method === 'GET' || method === 'DELETE' ? { name: `${method} ${STORED_RESPONSES_PREFIX}{id}`, handler: storedResponses } : new GatewayError('method_not_allowed', `${method} is not allowed on ${path}.`);
    }
    for (const prefix of MODEL_PATH_PREFIXES) {
      if (path.startsWith(prefix) && path.length > prefix.length) {
        if (method === 'GET') return { name: `GET ${prefix}{model}`, handler: retrieveModel };
        // Model ids may hold colons (`llama3:8b`): the method follows the last one.
        const methodName = path.slice(path.lastIndexOf(':') + 1);
        const handler = method === 'POST' ? modelMethods.get(methodName) : undefined;
        if (handler !== undefined) return { name: `POST ${prefix}{model}:${methodName}`, handler };
        return new GatewayError(method === 'POST' ? 'route_not_found' : 'method_not_allowed', method === 'POST' ? `There is no method \`${methodName}\` on models.` : `${method} is not allowed on ${path}.`);
      }
    }
    if (knownPaths.has(path)) return new GatewayError('method_not_allowed', `${method} is not allowed on ${path}.`);
    const hint = routeHint(method, path, (m, p) => !(route(m, p) instanceof GatewayError));
    return new GatewayError('route_not_found', hint === undefined ? `There is no route ${method} ${path}.` : `There is no route ${method} ${path}; ${hint}`);
  }

  async function handle(req: IncomingMessage, res: TimedResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const offered = req.headers['x-request-id'];
    const path = q === -1 ? url : url.slice(0, q);
    const target = draining ? undefined : route(req.method ?? 'GET', path);
    const ctx: RequestContext = {
      req,
      res,
      requestId: typeof offered === 'string' && REQUEST_ID_PATTERN.test(offered) ? offered : randomUUID(),
      path,
      query: q === -1 ? '' : url.slice(q + 1),
      route: target === undefined || target instanceof GatewayError ? UNMATCHED_ROUTE : target.name,
      startedAt: res.startedAt,
      // Google's paths and Anthropic's are only ever called by their own clients; elsewhere a handler refines this. A path
      // no route takes (a base URL set wrongly) is answered in the dialect its headers suggest.
      dialect:
        target instanceof GatewayError && target.kind === 'route_not_found'
          ? DIALECTS[guessDialect(path, req.headers)]
          : path.startsWith('/v1beta/')
            ? DIALECTS.gemini
            : path.startsWith('/v1/messages')
              ? DIALECTS.anthropic
              : DIALECTS.openai,
    };
    res.setHeader('x-request-id', ctx.requestId);
    try {
      if (target === undefined) {
        res.setHeader('connection', 'close');
        throw new GatewayError('shutting_down', 'The gateway is shutting down; retry on another instance.');
      }
      if (target instanceof GatewayError) throw target;
      await target.handler(ctx);
    } catch (thrown) {
      sendError(ctx, thrown, deps.logger);
    }
    deps.telemetry.served({ requestId: ctx.requestId, route: ctx.route, dialect: ctx.dialect.name, status: res.statusCode, durationMs: performance.now() - ctx.startedAt, generation: ctx.generation });
  }

  // In flight means until the handler has finished, ledger row included, not until the socket closes.
  const server = http.createServer({ keepAliveTimeout: 65_000, ServerResponse: TimedResponse }, (req, res) => {
    inFlight++;
    void handle(req, res).finally(() => {
      inFlight--;
      if (draining && inFlight === 0) drained?.();
    });
  });
  const settled = (ms: number): Promise<void> => {
    if (inFlight === 0) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      new Promise<void>((resolve) => (drained = resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ]).finally(() => clearTimeout(timer));
  };

  return {
    server,
    inFlight: () => inFlight,
    async drain(graceMs: number): Promise<void> {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await settled(graceMs);
      // Requests still running are cut; their handlers then see the abort and record their rows.
      server.closeAllConnections();
      await settled(5_000);
      await closed;
    },
  };
}

/**
 * Writes an error in the context's dialect, or cuts the response if it has already begun. Our own
 * and the upstreams' failures are logged; a fault every request repeats (`logOnceAs`) was logged,
 * once a minute, by the attempt that met it (telemetry/gateway-telemetry.ts).
 */
export function sendError(ctx: RequestContext, thrown: unknown, logger: Logger): void {
  const error = toGatewayError(thrown);
  if (error.status >= 500 && error.kind !== 'upstream_rate_limited' && error.logOnceAs === undefined) {
    logger.warn({ requestId: ctx.requestId, kind: error.kind, err: error.cause ?? error }, error.message);
  }
  const { res } = ctx;
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  const { status, body } = ctx.dialect.renderError(error, ctx.requestId);
  const headers: Record<string, string> = { ...error.headers, 'content-type': 'application/json' };
  if (error.retryAfter !== undefined) headers['retry-after'] = error.retryAfter;
  res.writeHead(status, headers).end(body);
}

export function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}
