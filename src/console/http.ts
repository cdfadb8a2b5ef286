import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Html } from './html.js';

/** Largest console form accepted; forms are small. */
const FORM_LIMIT = 64 * 1024;

/** Headers on every console and public page: no framing, no outside assets, nothing cached that holds a secret. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
} as const;

export class FormError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function sendHtml(res: ServerResponse, status: number, page: Html, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'cache-control': 'no-store', ...headers }).end(page.value);
}

export function sendPublicJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache', 'access-control-allow-origin': '*' }).end(JSON.stringify(body));
}

/** 303 after a POST, so a reload does not send the form again. */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', ...headers }).end();
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new FormError(415, 'Send the form as application/x-www-form-urlencoded.');
  if (Number(req.headers['content-length']) > FORM_LIMIT) throw new FormError(413, 'The form is too large.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT) throw new FormError(413, 'The form is too large.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export function parseCookies(req: IncomingMessage): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

/** True when the browser reached us over HTTPS, directly or through a proxy that says so. */
export function isHttps(req: IncomingMessage): boolean {
  if ((req.socket as TLSSocket).encrypted) return true;
  const forwarded = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https';
}

/** A Host header as a browser sends one: a name or an address, and a port. Anything else is not put in a page. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * This gateway's address as the browser reached it (`https://gw.example.com`): the scheme (a
 * proxy's `X-Forwarded-Proto` included) and the Host header, for links and examples the reader
 * copies. A Host header that is no host name becomes `localhost`.
 */
export function gatewayOrigin(req: IncomingMessage): string {
  const host = req.headers.host;
  return `${isHttps(req) ? 'https' : 'http'}://${host !== undefined && HOST.test(host) ? host : 'localhost'}`;
}

export function cookie(req: IncomingMessage, name: string, value: string, options: { maxAgeSeconds: number; path?: string }): string {
  const parts = [`${name}=${value}`, `Path=${options.path ?? '/'}`, `Max-Age=${options.maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax'];
  if (isHttps(req)) parts.push('Secure');
  return parts.join('; ');
}

export function clientIp(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** A browser's cross-site POST carries its Origin; refuse one that is not this host. */
export function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') return origin === undefined;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** JSON for programs: `?format=json` or an Accept header that prefers it over HTML. */
export function wantsJson(req: IncomingMessage, query: URLSearchParams): boolean {
  if (query.get('format') === 'json') return true;
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}
