/**
 * A URL (PostgreSQL, Redis, an upstream's) fit for logs, pages and messages: its password, a lone
 * user name (which Redis takes as a password) and any query parameter that may hold a credential
 * (a password, a key, a token, a secret) become `***`.
 */
export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    else if (parsed.username !== '' && parsed.protocol.startsWith('redis')) parsed.username = '***';
    for (const name of [...parsed.searchParams.keys()]) if (/pass|key|token|secret|auth|sig/i.test(name)) parsed.searchParams.set(name, '***');
    return parsed.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/**
 * A provider's base URL as a caller's error or a log may show it: scheme, host, port and path only
 * (user info, query and fragment dropped, as any of them may carry a credential).
 */
export function maskBaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return '(an unparsable URL)';
  }
}
