/** The signer's SHA-256 and HMAC-SHA-256 against published vectors, with keys given in each form smithy's signer gives them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Sha256 } from '../../../src/providers/bedrock/sha256.js';

const hex = async (hash: Sha256) => Buffer.from(await hash.digest()).toString('hex');

test('SHA-256 (FIPS 180-2 "abc") and HMAC-SHA-256 (RFC 4231 case 2), again after reset and with a cached key', async () => {
  const plain = new Sha256();
  plain.update('abc');
  assert.equal(await hex(plain), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  for (const key of ['Jefe', new TextEncoder().encode('Jefe'), new TextEncoder().encode('Jefe').buffer]) {
    for (let round = 0; round < 2; round++) {
      const mac = new Sha256(key);
      mac.update(new TextEncoder().encode('what do ya want '));
      mac.update('for nothing?');
      assert.equal(await hex(mac), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
      mac.reset();
      mac.update('what do ya want for nothing?');
      assert.equal(await hex(mac), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    }
  }
});
