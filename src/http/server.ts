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
import { openApiRoute } from './routes/openapi.js';
import { cachedCheck, LIVEZ_PATH, livezRoute, READYZ_PATH, readyzRoute, type Unreadiness } from './routes/probes.js';
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
import type { McpService } from '../mcp/mcp-service.js';
import { MCP_METHODS, MCP_PATH, MCP_SERVER_PREFIX, mcpRoute } from './routes/mcp.js';

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
  /** A cheap query on the store, for `/readyz` (which keeps its answer a second and waits for it two). */
  readonly storeCheck: () => Promise<void>;
  /** The MCP gateway, at `/mcp` and `/mcp/{server}`; absent, those paths are not served. */
  readonly mcp?: McpService;
}

export interface GatewayServer {
  readonly server: http.Server<typeof IncomingMessage, typeof TimedResponse>;
  /** Requests whose handlers are running. */
  inFlight(): number;
  /** What start-up is doing now, for `/readyz` until open() (`opening and migrating the store`, …). */
  starting(step: string): void;
  /** Mounts the gateway's routes: until then only the probes answer, and every other request is a 503 `starting`. */
  open(deps: GatewayDeps): void;
  /**
   * Stops taking requests, waits up to `graceMs` for those in flight, then closes what is left.
   * The port stays open meanwhile, so that a probe reaching this process sees `/readyz` 503 (and
   * `/livez` 200); any other new request is refused with a 503 `shutting_down`.
   */
  drain(graceMs: number): Promise<void>;
}

/** The route label of a request no route took (an unknown path, a wrong method, a refusal while starting or draining). */
const UNMATCHED_ROUTE = 'unmatched';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** How long `/readyz` keeps the store's answer, and how long it waits for one. */
const STORE_CHECK_TTL_MS = 1_000;
const STORE_CHECK_TIMEOUT_MS = 2_000;

interface Target {
  readonly name: string;
  readonly handler: Handler;
}

/** The gateway's routes once open(): the handler and the route's pattern (a metrics label: never the raw path, whose ids are unbounded). */
type Router = (method: string, path: string) => Target | GatewayError;

/**
 * The HTTP server, made before anything else so that it can listen while the store opens and
 * migrates: the probes answer from the first moment, the gateway's routes once open() mounts them.
 */
export function createServer(logger: Logger): GatewayServer {
  let step = 'building the gateway';
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  let gateway: { readonly route: Router; readonly telemetry: Telemetry; readonly storeCheck: () => Promise<string | null> } | undefined;

  const unreadiness = async (): Promise<readonly string[]> => {
    if (draining) return ['draining: the gateway is shutting down'];
    if (gateway === undefined) return [`starting: ${step}`];
    const store = await gateway.storeCheck();
    return store === null ? [] : [store];
  };
  const probes = probeRoutes(unreadiness);

  async function handle(req: IncomingMessage, res: TimedResponse): Promise<void> {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const offered = req.headers['x-request-id'];
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const target = probes.get(`${method} ${path}`) ?? (draining || gateway === undefined ? undefined : gateway.route(method, path));
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
        throw draining
          ? new GatewayError('shutting_down', 'The gateway is shutting down; retry on another instance.')
          : new GatewayError('starting', 'The gateway is starting; retry in a moment.', { retryAfter: '1' });
      }
      if (target instanceof GatewayError) throw target;
      await target.handler(ctx);
    } catch (thrown) {
      sendError(ctx, thrown, logger);
    }
    // Before open() there is nothing to count with; the probes' route labels are fixed, and a probe answered 200 is not worth an access-log line.
    gateway?.telemetry.served({ requestId: ctx.requestId, route: ctx.route, dialect: ctx.dialect.name, status: res.statusCode, durationMs: performance.now() - ctx.startedAt, generation: ctx.generation, quiet: probes.has(ctx.route) && res.statusCode === 200 });
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
    starting(next: string) {
      step = next;
    },
    open(deps: GatewayDeps) {
      gateway = { route: gatewayRoutes(deps), telemetry: deps.telemetry, storeCheck: cachedCheck('store', deps.storeCheck, { ttlMs: STORE_CHECK_TTL_MS, timeoutMs: STORE_CHECK_TIMEOUT_MS }) };
    },
    async drain(graceMs: number): Promise<void> {
      draining = true;
      server.closeIdleConnections();
      await settled(graceMs);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Requests still running are cut; their handlers then see the abort and record their rows.
      server.closeAllConnections();
      await settled(5_000);
      await closed;
    },
  };
}

/** The probes, by `METHOD /path`: answered from the first moment to the last, whatever else is mounted. */
function probeRoutes(unreadiness: Unreadiness): Map<string, Target> {
  const probes = new Map<string, Target>();
  for (const [path, handler] of [[LIVEZ_PATH, livezRoute()], [READYZ_PATH, readyzRoute(unreadiness)]] as const) {
    for (const method of ['GET', 'HEAD']) probes.set(`${method} ${path}`, { name: `${method} ${path}`, handler });
  }
  return probes;
}

type Served = <Request extends ParsedRequest>(operation: Operation<Request>) => Handler;

/** The gateway's own routes by their exact path, each made from the dependencies. */
const EXACT_ROUTES: Readonly<Record<string, (deps: GatewayDeps, served: Served) => Handler>> = {
  'GET /healthz': () => healthzRoute(),
  'GET /openapi.json': () => openApiRoute(),
  'GET /v1/models': (deps) => listModelsRoute(deps),
  'GET /v1beta/models': (deps) => listModelsRoute(deps),
  'POST /v1/completions': (_, served) => served(legacyCompletions),
  'POST /v1/chat/completions': (_, served) => served(chatCompletions),
  'POST /v1/messages': (_, served) => served(anthropicMessages),
  'POST /v1/messages/count_tokens': (_, served) => served(anthropicCountTokens),
  'POST /v1/responses': (deps, served) => served(responsesOperation(deps.conversations)),
  'POST /v1/rerank': (_, served) => served(rerank),
  'POST /v2/rerank': (_, served) => served(rerank),
  'POST /v1/moderations': (_, served) => served(moderations),
  'POST /v1/images/generations': (_, served) => served(imageGenerations),
  'POST /v1/images/edits': (_, served) => served(imageEdits),
  'POST /v1/audio/transcriptions': (_, served) => served(audioTranscriptions),
  'POST /v1/audio/translations': (_, served) => served(audioTranslations),
  'POST /v1/audio/speech': (_, served) => served(audioSpeech),
  'POST /v1/embeddings': (_, served) => served(embeddings),
};

/** Google's methods on a model: `POST /v1beta/models/{model}:{method}` (and under /v1, as Google serves both). */
const MODEL_METHODS: Readonly<Record<string, (served: Served) => Handler>> = {
  generateContent: (served) => served(geminiGenerateContent),
  streamGenerateContent: (served) => served(geminiGenerateContent),
  countTokens: (served) => served(geminiCountTokens),
  embedContent: (served) => served(geminiEmbedContent),
  batchEmbedContents: (served) => served(geminiBatchEmbedContents),
};

const STORED_RESPONSE_METHODS = ['GET', 'DELETE'];

/**
 * Every route the server mounts itself, as its route labels name them (`GET /v1/models/{model}`);
 * the wiring's pages (the console, `/metrics`) aside. The OpenAPI document is checked against them.
 */
export function mountedRoutes(): string[] {
  // A function, not a constant: routes/models.ts imports this module, so its prefixes may not be set yet when this one loads.
  return [
    ...probeRoutes(async () => []).keys(),
    ...Object.keys(EXACT_ROUTES),
    ...STORED_RESPONSE_METHODS.map((method) => `${method} ${STORED_RESPONSES_PREFIX}{id}`),
    ...MODEL_PATH_PREFIXES.flatMap((prefix) => [`GET ${prefix}{model}`, ...Object.keys(MODEL_METHODS).map((method) => `POST ${prefix}{model}:${method}`)]),
  ];
}

function gatewayRoutes(deps: GatewayDeps): Router {
  const served: Served = (operation) => operationRoute(deps.pipeline, { maxBodyBytes: deps.maxBodyBytes, maxUploadBytes: deps.maxUploadBytes }, operation);
  const exact = new Map<string, Handler>(Object.entries(EXACT_ROUTES).map(([route, make]) => [route, make(deps, served)]));
  const storedResponses = storedResponsesRoute(deps);
  const modelMethods = new Map<string, Handler>(Object.entries(MODEL_METHODS).map(([method, make]) => [method, make(served)]));
  const { pages } = deps;
  for (const [route, handler] of pages.exact) exact.set(route, handler);
  const retrieveModel = retrieveModelRoute(deps);
  const mcp = deps.mcp === undefined ? undefined : mcpRoute({ authenticator: deps.authenticator, mcp: deps.mcp, maxBodyBytes: deps.maxBodyBytes, logger: deps.logger });
  const knownPaths = new Set([...exact.keys(), LIVEZ_PATH, READYZ_PATH].map((route) => route.slice(route.indexOf(' ') + 1)));

  const match: Router = (method, path) => {
    const key = `${method} ${path}`;
    const handler = exact.get(key);
    if (handler !== undefined) return { name: key, handler };
    // HEAD is GET without the body (node:http leaves it out): a client checking the gateway is up (Claude Code's `HEAD /`) gets GET's status.
    const asGet = method === 'HEAD' ? exact.get(`GET ${path}`) : undefined;
    if (asGet !== undefined) return { name: key, handler: asGet };
    if (mcp !== undefined && (path === MCP_PATH || path.startsWith(MCP_SERVER_PREFIX))) {
      // The route answers a wrong method itself, in JSON-RPC's words (and takes `/mcp/` as `/mcp`); the label is bounded whatever the method.
      return { name: `${(MCP_METHODS as readonly string[]).includes(method) ? method : 'OTHER'} ${path === MCP_PATH || path === MCP_SERVER_PREFIX ? MCP_PATH : `${MCP_SERVER_PREFIX}{server}`}`, handler: mcp };
    }
    for (const page of pages.prefixes) {
      if (path.startsWith(page.prefix) && path.length > page.prefix.length) {
        return page.methods.includes(method) ? { name: `${method} ${page.prefix}*`, handler: page.handler } : new GatewayError('method_not_allowed', `${method} is not allowed on ${path}.`);
      }
    }
    if (path.startsWith(STORED_RESPONSES_PREFIX) && path.length > STORED_RESPONSES_PREFIX.length) {
      return STORED_RESPONSE_METHODS.includes(method) ? { name: `${method} ${STORED_RESPONSES_PREFIX}{id}`, handler: storedResponses } : new GatewayError('method_not_allowed', `${method} is not allowed on ${path}.`);
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
    return new GatewayError('route_not_found', `There is no route ${method} ${path}.`);
  };
  // A path no route takes may be a served one under a base URL set wrongly: the 404 says which (asked of match alone, so one look each).
  const serves = (method: string, path: string): boolean => !(match(method, path) instanceof GatewayError);
  return (method, path) => {
    const target = match(method, path);
    if (!(target instanceof GatewayError) || target.kind !== 'route_not_found' || MODEL_PATH_PREFIXES.some((prefix) => path.startsWith(prefix))) return target;
    const hint = routeHint(method, path, serves);
    return hint === undefined ? target : new GatewayError('route_not_found', `There is no route ${method} ${path}; ${hint}`);
  };
}

/** 5xx answers that are no fault: the gateway starting or shutting down, an upstream's rate limit. Not logged one by one. */
const EXPECTED_UNAVAILABLE = new Set(['upstream_rate_limited', 'starting', 'shutting_down']);

/**
 * Writes an error in the context's dialect, or cuts the response if it has already begun. Our own
 * and the upstreams' failures are logged; a fault every request repeats (`logOnceAs`) was logged,
 * once a minute, by the attempt that met it (telemetry/gateway-telemetry.ts).
 */
export function sendError(ctx: RequestContext, thrown: unknown, logger: Logger): void {
  const error = toGatewayError(thrown);
  if (error.status >= 500 && !EXPECTED_UNAVAILABLE.has(error.kind) && error.logOnceAs === undefined) {
    logger.warn({ requestId: ctx.requestId, kind: error.kind, err: error.cause ?? error }, error.message);
  }
  const { res } = ctx;
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  const { status, body } = ctx.dialect.renderError(error, ctx.requestId);
  const headers: Record<string, string> = { ...error.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  if (error.retryAfter !== undefined) headers['retry-after'] = error.retryAfter;
  res.writeHead(status, headers).end(body);
}

export function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }).end(body);
}
