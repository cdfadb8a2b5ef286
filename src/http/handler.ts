import type { IncomingMessage } from 'node:http';
import type { Dialect } from '../dialects/dialect.js';
import type { TimedResponse } from './timed-response.js';
import type { GenerationRecord } from '../telemetry/telemetry.js';

/** One request as every handler sees it: the HTTP layer and the pages mounted on it share these types. */
export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: TimedResponse;
  readonly requestId: string;
  readonly path: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** The route's pattern, for metrics and logs. */
  readonly route: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** The dialect errors are written in; a handler switches it once it knows who is calling. */
  dialect: Dialect;
  /** What the meter stage recorded of a generation request, for the access log. */
  generation?: GenerationRecord;
}

export type Handler = (ctx: RequestContext) => Promise<void>;

export interface PrefixRoute {
  readonly methods: readonly string[];
  readonly prefix: string;
  readonly handler: Handler;
}

/** Routes mounted on the server by the wiring (the web console and public pages). */
export interface MountedRoutes {
  /** 'METHOD /path' → handler, merged into the server's exact routes. */
  readonly exact: ReadonlyArray<readonly [string, Handler]>;
  readonly prefixes: readonly PrefixRoute[];
}
