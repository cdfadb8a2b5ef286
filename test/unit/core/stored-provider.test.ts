/**
 * A console provider as the store keeps it (src/catalogue/provider-secrets.ts, live-catalogue.ts):
 * its credentials apart from its plain fields, put back where the configuration file has them, and
 * a row the console could not have written (a key file's path, a Bedrock or Vertex provider leaning
 * on the host's credentials) refused when read, as the console refuses it when written.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CredentialCipher } from '../../../src/catalogue/credential-cipher.js';
import { readStoredProvider } from '../../../src/catalogue/live-catalogue.js';
import { joinSecrets, serviceAccountKeyProblem, splitSecrets, storedProviderProblems } from '../../../src/catalogue/provider-secrets.js';
import type { StoredProvider } from '../../../src/store/store.js';

const cipher = CredentialCipher.forDataDir('/nonexistent', { SLUICE_CREDENTIAL_KEY: 'unit-test-credential-key-0123456789' });
const KEY = JSON.stringify({ type: 'service_account', client_email: 'sa@p.iam.gserviceaccount.com', private_key_id: 'key-id-1', private_key: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n', token_uri: 'http://127.0.0.1:9/token' });

function row(id: string, config: Record<string, unknown>, secrets: Record<string, unknown> | null): StoredProvider {
  return { id, config, secrets: secrets === null ? null : cipher.seal(JSON.stringify(secrets), id), createdAt: 0, updatedAt: 0 };
}

describe('a console provider’s credentials in the store', () => {
  test('split from the entry (entra’s client secret out of entra) and joined back as they were', () => {
    const entry = { id: 'a', kind: 'azure', base_url: 'https://r.openai.azure.com', entra: { tenant_id: 't', client_id: 'c', client_secret: 's3cret', authority_url: 'https://login.microsoftonline.com' }, headers: { 'x-org': 'o' } };
    const { config, secrets } = splitSecrets(entry);
    assert.deepEqual(config, { id: 'a', kind: 'azure', base_url: 'https://r.openai.azure.com', entra: { tenant_id: 't', client_id: 'c', authority_url: 'https://login.microsoftonline.com' } });
    assert.deepEqual(secrets, { headers: { 'x-org': 'o' }, entra_client_secret: 's3cret' });
    assert.deepEqual(joinSecrets(config, secrets), entry);
    const bedrock = { id: 'b', kind: 'bedrock', region: 'us-east-1', access_key_id: 'AKIA', secret_access_key: 'sak', session_token: 'st' };
    assert.deepEqual(splitSecrets(bedrock), { config: { id: 'b', kind: 'bedrock', region: 'us-east-1' }, secrets: { access_key_id: 'AKIA', secret_access_key: 'sak', session_token: 'st' } });
  });

  test('read back as the gateway uses it, marked as carrying its own credentials only', () => {
    const read = readStoredProvider(row('b', { kind: 'bedrock', region: 'eu-west-1' }, { access_key_id: 'AKIA', secret_access_key: 'sak' }), cipher);
    assert.ok('config' in read);
    assert.deepEqual([read.config.access_key_id, read.config.secret_access_key, read.config.base_url, read.config.ownCredentialsOnly], ['AKIA', 'sak', 'https://bedrock-runtime.eu-west-1.amazonaws.com', true]);
    const azure = readStoredProvider(row('a', { kind: 'azure', base_url: 'https://r.openai.azure.com', entra: { tenant_id: 't', client_id: 'c' } }, { entra_client_secret: 's3cret' }), cipher);
    assert.ok('config' in azure);
    assert.equal(azure.config.entra?.client_secret, 's3cret');
  });

  test('a row the console could not have written is refused, without its values', () => {
    const cases: StoredProvider[] = [
      row('f', { kind: 'vertex', project: 'my-project', location: 'global', credentials_file: '/etc/passwd' }, null),
      row('v', { kind: 'vertex', project: 'my-project', location: 'global' }, null),
      row('e', { kind: 'bedrock', region: 'us-east-1' }, null),
      row('k', { kind: 'vertex', project: 'my-project', location: 'global' }, { credentials: 'not json at all' }),
    ];
    for (const stored of cases) assert.deepEqual(readStoredProvider(stored, cipher), { problem: 'entry no longer valid' }, stored.id);
    assert.ok('config' in readStoredProvider(row('ok', { kind: 'vertex', project: 'my-project', location: 'global' }, { credentials: KEY }), cipher));
  });

  test('what the console says of each rule names the field and never quotes a value', () => {
    assert.deepEqual(Object.keys(storedProviderProblems({ kind: 'bedrock' })), ['access_key_id', 'secret_access_key']);
    assert.deepEqual(Object.keys(storedProviderProblems({ kind: 'vertex', credentials_file: '/x' })), ['credentials_file', 'credentials']);
    assert.deepEqual(storedProviderProblems({ kind: 'openai' }), {});
    for (const [text, message] of [
      ['{"type": "service_account", "private_key": "PRIVATE-VALUE"', /is not JSON/],
      ['["PRIVATE-VALUE"]', /is not a JSON object/],
      ['{"type": "authorized_user", "refresh_token": "PRIVATE-VALUE"}', /is not a service-account key/],
      ['{"type": "service_account", "client_email": "a@b", "private_key": "PRIVATE-VALUE"}', /has no 'private_key' in PEM form/],
      [JSON.stringify({ ...JSON.parse(KEY), private_key_id: undefined }), /lacks its 'private_key_id'/],
      [JSON.stringify({ ...JSON.parse(KEY), token_uri: 'file:///PRIVATE-VALUE' }), /'token_uri' that is not an http\(s\) URL/],
    ] as const) {
      const problem = serviceAccountKeyProblem(text);
      assert.match(problem ?? '', message);
      assert.ok(!problem!.includes('PRIVATE-VALUE'));
    }
    assert.equal(serviceAccountKeyProblem(KEY), undefined);
  });
});
