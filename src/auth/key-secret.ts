import { createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { randomBase62 } from '../core/ids.js';
import { sharedSecret } from '../core/data-dir-secret.js';

export const SECRET_PREFIX = 'sk-';
const SECRET_BODY_LENGTH = 48;
const PEPPER_FILE = 'key-pepper';

export function generateSecret(): string {
  return SECRET_PREFIX + randomBase62(SECRET_BODY_LENGTH);
}

/** The masked form shown in lists: `sk-ab…wxyz`. */
export function maskSecret(prefix: string, lastFour: string): string {
  return `${prefix}…${lastFour}`;
}

export function secretParts(secret: string): { prefix: string; lastFour: string } {
  return { prefix: secret.slice(0, SECRET_PREFIX.length + 2), lastFour: secret.slice(-4) };
}

/**
 * Keys are stored as an HMAC-SHA256 under a server-side pepper, so a copy of the database alone
 * cannot be used to test guesses. The pepper lives outside the database: `SLUICE_KEY_PEPPER`, the
 * file named by `SLUICE_KEY_PEPPER_FILE`, or a file created once in the data directory (mode 0600).
 * Losing it invalidates every key; replicas on one database must all have the same.
 */
export class SecretHasher {
  /** The pepper as a key object, made once: an HMAC keyed by a Buffer makes one per call, ten times the HMAC's own cost. */
  private readonly key: KeyObject;

  private constructor(private readonly pepper: Buffer) {
    this.key = createSecretKey(pepper);
  }

  static forDataDir(dataDir: string, env: NodeJS.ProcessEnv = process.env): SecretHasher {
    return new SecretHasher(sharedSecret('SLUICE_KEY_PEPPER', dataDir, PEPPER_FILE, env));
  }

  /**
   * A key for another purpose (signing MCP sessions), derived from the pepper: every process of a
   * deployment shares it as they share the pepper, and it reveals nothing of the pepper or of keys.
   */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.pepper, Buffer.alloc(0), `sluice ${purpose}`, 32));
  }

  hash(secret: string): string {
    return createHmac('sha256', this.key).update(secret).digest('base64url');
  }
}
