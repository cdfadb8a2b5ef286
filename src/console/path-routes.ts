// Route matching for the console's paths with parameters (`/app/keys/:id/:action`): the patterns,
// a page's route table, and the percent-decoding of a parameter (404 when it does not decode).
import { FormError } from './http.js';

/** A path's parameters by name, as sent (still percent-encoded). */
export type PathParams = Readonly<Record<string, string>>;

export type PathMatcher = (path: string) => PathParams | undefined;

/**
 * A pattern of literal segments and parameters: `:name` is one whole segment, `:name(a|b)` one of
 * the words listed. The whole path must match.
 */
export function pathPattern(pattern: string): PathMatcher {
  const source = pattern
    .split('/')
    .map((segment) => {
      const param = /^:(\w+)(?:\(([\w|-]+)\))?$/.exec(segment);
      if (param === null) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return `(?<${param[1]}>${param[2] ?? '[^/]+'})`;
    })
    .join('/');
  const regex = new RegExp(`^${source}$`);
  return (path) => {
    const match = regex.exec(path);
    return match === null ? undefined : { ...match.groups };
  };
}

/** One line of a page's route table. */
export interface PathRoute<H> {
  readonly methods: readonly string[];
  readonly match: PathMatcher;
  readonly handler: H;
}

export function pathRoute<H>(methods: string | readonly string[], pattern: string, handler: H): PathRoute<H> {
  return { methods: typeof methods === 'string' ? [methods] : methods, match: pathPattern(pattern), handler };
}

/** The first route whose pattern and method both match, with the path's parameters. */
export function findRoute<H>(routes: readonly PathRoute<H>[], method: string | undefined, path: string): { handler: H; params: PathParams } | undefined {
  for (const route of routes) {
    if (method === undefined || !route.methods.includes(method)) continue;
    const params = route.match(path);
    if (params !== undefined) return { handler: route.handler, params };
  }
  return undefined;
}

/** A parameter percent-decoded; one that does not decode names nothing there is, so 404 with `notFound`. */
export function decodeParam(encoded: string, notFound: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new FormError(404, notFound);
  }
}
