import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where a console-added MCP server may not point. A console admin is not an administrator of the
 * host: a server they add must not reach the gateway's own host (loopback, "any"), the link-local
 * network or a cloud's metadata service (whose answers hold the host's credentials). Private
 * networks (10/8, 172.16/12, 192.168/16, fc00::/7) stay allowed: an MCP server on the company's
 * network is the normal case. The configuration file's servers are not checked (the file is the
 * host administrator's).
 */
const REFUSED = new BlockList();
REFUSED.addSubnet('0.0.0.0', 8, 'ipv4'); // "this network", 0.0.0.0 reaches the host itself
REFUSED.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, 169.254.169.254 (metadata) included
REFUSED.addAddress('::', 'ipv6');
REFUSED.addSubnet('fe80::', 10, 'ipv6');
REFUSED.addAddress('fd00:ec2::254', 'ipv6'); // AWS's IPv6 metadata address
// IPv6 forms that carry an IPv4 address inside (IPv4-compatible, NAT64's well-known and local-use prefixes): `[::127.0.0.1]`,
// `[64:ff9b::a9fe:a9fe]` would reach loopback or the metadata address through a translator. Nobody needs them to reach an MCP server.
REFUSED.addSubnet('::', 96, 'ipv6');
REFUSED.addSubnet('64:ff9b::', 96, 'ipv6');
REFUSED.addSubnet('64:ff9b:1::', 48, 'ipv6');
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Loopback allowed for console servers: only for a gateway and its MCP servers on one machine
 * (development, the tests), set in the gateway's environment by whoever runs it.
 */
export const ALLOW_LOOPBACK_ENV = 'SLUICE_MCP_CONSOLE_ALLOW_LOOPBACK';

export function loopbackAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[ALLOW_LOOPBACK_ENV] === '1';
}

/** Whether a host (as `normalisedHost` gives it) is this machine by loopback, "any" or the name localhost. */
export function isLocalHost(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return LOOPBACK.check(host, type) || REFUSED.check(host, type);
}

/** Why an address (IPv4, IPv6, IPv4-mapped IPv6: BlockList matches those against the IPv4 ranges) is refused; null when it is not. */
export function refusedAddress(address: string, allowLoopback = loopbackAllowed()): string | null {
  const family = isIP(address);
  if (family === 0) return 'is not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (!allowLoopback && LOOPBACK.check(address, type)) return `${address} is a loopback address (this gateway's own host)`;
  if (REFUSED.check(address, type)) return `${address} is a link-local, unspecified or cloud metadata address`;
  return null;
}

/** The URL's host as an address or a name: brackets off, a trailing dot off (`localhost.` is `localhost`); the URL parser already made decimal, hex and short IPv4 forms dotted. */
export function normalisedHost(url: URL): string {
  let host = url.hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  while (host.endsWith('.')) host = host.slice(0, -1);
  return host;
}

/**
 * Why a console server's URL is refused: its host is (or resolves to, any of its addresses) a
 * refused address; null when it may be saved. A name that does not resolve is refused too: it
 * cannot be judged.
 */
export async function refusedConsoleUrl(url: URL, allowLoopback = loopbackAllowed(), resolve: (host: string) => Promise<readonly string[]> = resolveAll): Promise<string | null> {
  const host = normalisedHost(url);
  if (isIP(host) !== 0) return refusedAddress(host, allowLoopback);
  if (!allowLoopback && (host === 'localhost' || host.endsWith('.localhost'))) return `${host} is this gateway's own host`;
  let addresses: readonly string[];
  try {
    addresses = await resolve(host);
  } catch {
    return `the host name ${host} does not resolve`;
  }
  if (addresses.length === 0) return `the host name ${host} does not resolve`;
  for (const address of addresses) {
    const refusal = refusedAddress(address, allowLoopback);
    if (refusal !== null) return `${host} resolves to ${refusal}`;
  }
  return null;
}

async function resolveAll(host: string): Promise<readonly string[]> {
  return (await dnsLookupAll(host, { all: true, verbatim: true })).map((entry) => entry.address);
}

export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  readonly code = 'ESLUICEREFUSEDADDRESS';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets to a console server: the name is resolved as usual, and refused when any
 * of its addresses is, so a name that resolved to a public address when it was saved and to a
 * refused one now (DNS rebinding) is never connected to.
 */
export function guardedLookup(allowLoopback = loopbackAllowed()) {
  return (hostname: string, options: { family?: number | string; all?: boolean; hints?: number }, callback: LookupCallback): void => {
    const name = hostname.toLowerCase().replace(/\.+$/, '');
    if (!allowLoopback && (name === 'localhost' || name.endsWith('.localhost'))) return callback(new RefusedAddressError(`refused to connect to ${hostname}: this gateway's own host`), []);
    dnsLookup(hostname, { family: typeof options.family === 'number' ? options.family : 0, hints: options.hints ?? 0, all: true, verbatim: true }, (error, addresses) => {
      if (error !== null) return callback(error, []);
      for (const { address } of addresses) {
        const refusal = refusedAddress(address, allowLoopback);
        if (refusal !== null) return callback(new RefusedAddressError(`refused to connect to ${hostname}: ${refusal}`), []);
      }
      if (options.all === true) return callback(null, addresses);
      const first = addresses[0];
      if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
