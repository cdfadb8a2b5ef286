import { isIP } from 'node:net';
import type { ProviderKind } from './config-file.js';

/**
 * The servers `sluice init` recognises on an IP address or a loopback name by their default port
 * (a host with a name is named after itself: `vllm.internal` is `vllm`). docs/commands.md lists them.
 */
export const WELL_KNOWN_PORTS: Readonly<Record<string, string>> = {
  '8000': 'vllm',
  '11434': 'ollama',
  '8080': 'llama-cpp',
  '1234': 'lmstudio',
  '30000': 'sglang',
};

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost']);

/** Labels that say nothing about whose server it is (`api.groq.com` is `groq`). */
const GENERIC_LABELS = new Set(['api', 'www']);

/** Words the configuration file's YAML would read as something other than a string. */
const YAML_WORDS = /^(true|false|null|yes|no|on|off|y|n)$/i;

const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');

/**
 * The ids a provider may take, most readable first; a later one is used only when an earlier one
 * is another provider's too. A vendor's own API is its kind. A server with a DNS name is named after
 * the name's first label that says something (`gpu-box.internal` is `gpu-box`), then with its port,
 * then the whole name. An IP address or a loopback name is named after the server its port is the
 * default of (`vllm` for 8000), else `KIND-ADDRESS` (`openai-10-0-0-5`, `openai-local`); then with
 * its port. Last comes the URL's path, for servers that differ only there.
 */
export function providerIdCandidates(kind: ProviderKind, url: URL | undefined): string[] {
  if (url === undefined) return [kind];
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port;
  const ip = isIP(hostname);
  const loopback = LOOPBACK_NAMES.has(hostname.toLowerCase()) || hostname === '::1' || (ip === 4 && hostname.startsWith('127.'));
  const address = loopback || ip !== 0;
  const withPort = (id: string) => (port === '' ? [id] : [id, `${id}-${port}`]);
  let names: string[];
  if (address) {
    const known = kind === 'openai' ? WELL_KNOWN_PORTS[port] : undefined;
    const where = loopback ? 'local' : slug(hostname);
    names = known === undefined ? withPort(`${kind}-${where}`) : [known, `${known}-${where}`];
  } else {
    const labels = hostname.toLowerCase().split('.').filter((label) => label !== '');
    const meaningful = (labels.length > 1 ? labels.slice(0, -1) : labels).filter((label) => !GENERIC_LABELS.has(label));
    const first = slug(meaningful[0] ?? labels[0] ?? '');
    // An id must read as a name in the file: a label that YAML would take for a number or a boolean gets the kind before it.
    const readable = /^[a-z]/.test(first) && !YAML_WORDS.test(first) ? first : `${kind}-${first}`.replace(/-$/, '');
    names = [...withPort(readable), ...withPort(`${kind}-${slug(hostname)}`)];
  }
  const path = slug(url.pathname.replace(/\/v1\/?$/, ''));
  if (path !== '') names.push(...names.map((name) => `${name}-${path}`));
  return [...new Set(names)];
}

/**
 * Distinct ids for providers given their candidates: each takes its first candidate no other
 * provider wants at the same step; providers whose ids clash move on to their next. Returns
 * undefined for a provider that runs out (the same server named twice).
 */
export function distinctIds(candidates: readonly (readonly string[])[]): (string | undefined)[] {
  const level = candidates.map(() => 0);
  const chosen: (string | undefined)[] = candidates.map((list) => list[0]);
  for (;;) {
    const holders = new Map<string, number[]>();
    chosen.forEach((id, index) => id !== undefined && holders.set(id, [...(holders.get(id) ?? []), index]));
    const clashing = [...holders.values()].filter((indexes) => indexes.length > 1).flat();
    if (clashing.length === 0) return chosen;
    // A provider whose candidate is its last keeps it (or gives up) while the others move on.
    const movable = clashing.filter((index) => level[index]! + 1 < candidates[index]!.length);
    if (movable.length === 0) {
      for (const index of clashing) chosen[index] = undefined;
      return chosen;
    }
    for (const index of movable) chosen[index] = candidates[index]![++level[index]!];
  }
}
