import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';

type SourceData = string | ArrayBuffer | ArrayBufferView;

/** The HMAC keys a signer has used, as key objects; a signer uses a handful (the secret key, each day's signing key). */
const hmacKeys = new Map<string, KeyObject>();
const MAX_HMAC_KEYS = 64;

function bytesOf(data: SourceData): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/**
 * Node 24's createHmac spends about 10 µs checking a key given as bytes, and SigV4 takes two HMACs
 * per request with keys that do not change (the secret key, the day's signing key): each becomes a
 * key object once, which createHmac takes at once. Bounded, and cleared when full.
 */
function hmacKey(secret: SourceData): KeyObject {
  const bytes = bytesOf(secret);
  const id = bytes.toString('base64');
  let key = hmacKeys.get(id);
  if (key === undefined) {
    if (hmacKeys.size >= MAX_HMAC_KEYS) hmacKeys.clear();
    key = createSecretKey(bytes);
    hmacKeys.set(id, key);
  }
  return key;
}

/** SHA-256, and HMAC-SHA-256 when given a secret, with node:crypto, as smithy's signer takes a hash (its `sha256` option). */
export class Sha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }

  update(data: SourceData): void {
    this.hash.update(typeof data === 'string' ? data : bytesOf(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }

  reset(): void {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', hmacKey(this.secret));
  }
}
