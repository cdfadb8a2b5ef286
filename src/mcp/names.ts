import { createHash } from 'node:crypto';

/**
 * How upstream tools, prompts and resources are named to callers.
 *
 * Tool and prompt names: `{server}__{name}` on `/mcp`, `{name}` on `/mcp/{server}`. Either must fit
 * `[A-Za-z0-9_-]{1,64}` (OpenAI's function names, which agent SDKs pass MCP names into unchanged):
 * a name that does not is sanitised (every other character becomes `_`) and, when it had to be
 * changed or is too long, cut and given `_` and a hash of the upstream name, so the result depends
 * on the server id and the upstream name alone (stable across processes and restarts). A server id
 * never holds `__` (core/mcp-access.ts), so the first `__` of an aggregated name ends the server id.
 *
 * Resource URIs on `/mcp`: `sluice-mcp://{server}/{upstream uri}`, the upstream URI appended as it
 * is (never encoded), so a resource template's `{variables}` stay intact and a URI a client expands
 * from the template maps back by removing the prefix.
 */
export const CALLER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_NAME = 64;
const HASH_LENGTH = 8;
export const SERVER_SEPARATOR = '__';
export const RESOURCE_SCHEME = 'sluice-mcp://';

/** The name a caller sees for an upstream tool or prompt; `serverId` null on `/mcp/{server}`. */
export function callerName(serverId: string | null, upstreamName: string): string {
  const prefix = serverId === null ? '' : `${serverId}${SERVER_SEPARATOR}`;
  const whole = prefix + upstreamName;
  if (upstreamName.length > 0 && CALLER_NAME.test(whole)) return whole;
  const suffix = `_${shortHash(upstreamName)}`;
  // An upstream name made only of `_` after sanitising would be empty of meaning: the hash still tells it apart.
  const room = MAX_NAME - prefix.length - suffix.length;
  const sanitised = upstreamName.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, Math.max(0, room));
  return prefix + sanitised + suffix;
}

function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url').replace(/[^A-Za-z0-9]/g, '').slice(0, HASH_LENGTH).padEnd(HASH_LENGTH, '0');
}

/** The caller's URI for an upstream resource (or template) on `/mcp`. */
export function callerUri(serverId: string, upstreamUri: string): string {
  return `${RESOURCE_SCHEME}${serverId}/${upstreamUri}`;
}

/** A caller's `/mcp` URI back to its server and upstream URI; undefined when it is not one of ours. */
export function upstreamUriOf(uri: string): { readonly serverId: string; readonly uri: string } | undefined {
  if (!uri.startsWith(RESOURCE_SCHEME)) return undefined;
  const rest = uri.slice(RESOURCE_SCHEME.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { serverId: rest.slice(0, slash), uri: rest.slice(slash + 1) };
}

/**
 * Caller names to upstream names for one server's (or every server's) tools or prompts, built with
 * the list it names: two upstream names that come out the same (a sanitised name meeting a literal
 * one) keep the first, and the second is left out rather than shadowing it.
 */
export class NameMap<Target> {
  private readonly byName = new Map<string, Target>();

  /** False when the name was taken already (the target is then left out). */
  add(name: string, target: Target): boolean {
    if (this.byName.has(name)) return false;
    this.byName.set(name, target);
    return true;
  }

  get(name: string): Target | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }
}
