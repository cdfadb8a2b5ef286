import { createHash, randomBytes } from 'node:crypto';

/** A random 256-bit token, base64url (43 characters): a session's or a sign-in link's. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** What the store keeps of a token: its SHA-256, so a stolen database holds no usable one. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}
