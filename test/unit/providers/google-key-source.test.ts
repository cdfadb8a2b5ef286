/** Where a Vertex provider's service-account key comes from, and that a console provider never reaches the host's file or environment. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keySourceOf } from '../../../src/providers/auth/google-service-account.js';

const env = { GOOGLE_APPLICATION_CREDENTIALS: '/host/sa.json' };

test('the pasted key, then the file, then GOOGLE_APPLICATION_CREDENTIALS', () => {
  assert.deepEqual(keySourceOf({ credentials: '{"k":1}', credentials_file: '/a.json' }, env), { setting: 'credentials', json: '{"k":1}' });
  assert.deepEqual(keySourceOf({ credentials_file: '/a.json' }, env), { setting: 'credentials_file', path: '/a.json' });
  assert.deepEqual(keySourceOf({}, env), { setting: 'GOOGLE_APPLICATION_CREDENTIALS', path: '/host/sa.json' });
  assert.equal(keySourceOf({}, {}), undefined);
});

test("a console provider has its pasted key or none: never the host's file or environment", () => {
  assert.deepEqual(keySourceOf({ credentials: '{"k":1}', ownCredentialsOnly: true }, env), { setting: 'credentials', json: '{"k":1}' });
  assert.equal(keySourceOf({ ownCredentialsOnly: true }, env), undefined);
  assert.equal(keySourceOf({ credentials_file: '/etc/shadow', ownCredentialsOnly: true }, env), undefined);
});
