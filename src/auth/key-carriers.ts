import type { IncomingHttpHeaders } from 'node:http';

/** The key in `Authorization: Bearer <key>` (scheme case-insensitive), or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization;
  if (value === undefined) return undefined;
  if (value.length > 7 && value.charCodeAt(6) === 32 && value.slice(0, 6).toLowerCase() === 'bearer') {
    return value.slice(7).trim();
  }
  return undefined;
}
