import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { sharedSecret } from '../core/data-dir-secret.js';

const KEY_FILE = 'credential-key';
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals upstream credentials entered in the console (provider api_key and headers) with
 * AES-256-GCM before they reach the store. The key is derived (HKDF-SHA256) from a secret kept
 * outside the database: `SLUICE_CREDENTIAL_KEY`, the file named by `SLUICE_CREDENTIAL_KEY_FILE`, or
 * the file `DATA/credential-key` (mode 0600); replicas on one database must all have the same.
 * The provider id is bound in as associated data, so a sealed value copied to another row fails.
 */
export class CredentialCipher {
  private constructor(private readonly key: Buffer) {}

  static forDataDir(dataDir: string, env: NodeJS.ProcessEnv = process.env): CredentialCipher {
    const secret = sharedSecret('SLUICE_CREDENTIAL_KEY', dataDir, KEY_FILE, env);
    return new CredentialCipher(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'sluice provider credentials v1', 32)));
  }

  seal(plaintext: string, boundTo: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  /** Throws when the value was altered, moved to another id, or sealed under another key. */
  open(sealed: string, boundTo: string): string {
    const [version, payload] = sealed.split('.', 2);
    if (version !== VERSION || payload === undefined) throw new Error('unrecognised sealed credential');
    const raw = Buffer.from(payload, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
