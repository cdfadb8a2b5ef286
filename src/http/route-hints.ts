import type { CallerDialect } from '../generation/operation.js';

/**
 * What a 404 for an unknown path says when the path is a known one under a base URL set wrongly: a
 * client whose base URL lacks `/v1` (the `openai` SDK given `http://host:port`) asks for
 * `/chat/completions`; one whose base URL already ends in the version its client adds (the
 * Anthropic SDK given `http://host:port/v1`, Google's given `…/v1beta`) asks for `/v1/v1/messages`.
 */

/** The version segments Sluice serves under: OpenAI's and Anthropic's `/v1`, Google's `/v1beta` (and `/v1`). */
const VERSIONS = ['/v1', '/v1beta'] as const;

/**
 * The hint for `method path`, or undefined when no known route is near it. `serves` says whether a
 * method and path reach a route.
 */
export function routeHint(method: string, path: string, serves: (method: string, path: string) => boolean): string | undefined {
  // A version doubled (`/v1/v1/…`, `/v1beta/v1beta/…`, `/v1/v1beta/…`): the base URL ends in one the client adds again.
  for (const extra of VERSIONS) {
    if (!path.startsWith(`${extra}/`)) continue;
    const rest = path.slice(extra.length);
    if (VERSIONS.some((version) => rest.startsWith(`${version}/`)) && serves(method, rest)) {
      return `did you mean ${rest}? The client's base URL should not end in ${extra}: the client adds ${rest.slice(0, rest.indexOf('/', 1))} itself, so give it the gateway's address alone (http://host:port).`;
    }
  }
  // No version at all: the base URL lacks the `/v1` an OpenAI client expects in it.
  if (!VERSIONS.some((version) => path === version || path.startsWith(`${version}/`))) {
    const versioned = `/v1${path}`;
    if (serves(method, versioned)) return `did you mean ${versioned}? The client's base URL should end in /v1 (http://host:port/v1).`;
  }
  return undefined;
}

/**
 * Whose error body a request no route took is answered in, as far as its path and headers tell:
 * Anthropic's clients send `x-api-key` or `anthropic-version`, Google's `x-goog-api-key` or a
 * `/v1beta` path; anyone else is answered as OpenAI's clients are.
 */
export function guessDialect(path: string, headers: Readonly<Record<string, string | string[] | undefined>>): CallerDialect {
  if (headers['x-goog-api-key'] !== undefined || path.includes('/v1beta/') || path.endsWith('/v1beta')) return 'gemini';
  if (headers['anthropic-version'] !== undefined || headers['x-api-key'] !== undefined || /\/messages(?:\/|$)/.test(path)) return 'anthropic';
  return 'openai';
}
