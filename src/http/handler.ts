import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dialect } from '../dialects/dialect.js';

/** One request as every handler sees it: the HTTP layer and the pages mounted on it share these types. */
export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  readonly path: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** The dialect errors are written in; a handler switches it once it knows who is calling. */
  dialect: Dialect;
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
