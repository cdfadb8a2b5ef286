/**
 * The cloud kinds' secret fields are never shown: not in the configuration file's errors (printed at
 * start-up, logged on a reload), and every one of them is in the values redacted from messages about
 * the provider (src/config/secret-values.ts), a pasted key's private key down to a line of it.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { ConfigError, parseConfig } from '../../../src/config/config-file.js';
import { secretValuesOf } from '../../../src/config/secret-values.js';
import { redact } from '../../../src/core/upstream-errors.js';

const PEM = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const SERVICE_ACCOUNT = JSON.stringify({ type: 'service_account', client_email: 'sa@p.iam.gserviceaccount.com', private_key: PEM, token_uri: 'https://oauth2.googleapis.com/token' });

/** Each secret field, the provider entry that carries it (in YAML flow style), and the value. */
const FIELDS: [field: string, entry: (value: string) => string, value: string][] = [
  ['entra.client_secret', (v) => `{ id: p, kind: azure, base_url: 'https://r.openai.azure.com', entra: { tenant_id: t, client_id: c, client_secret: '${v}' } }`, 'entra-secret-value-0001'],
  ['api_key (azure)', (v) => `{ id: p, kind: azure, base_url: 'https://r.openai.azure.com', api_key: '${v}' }`, 'azure-api-key-value-0001'],
  ['access_key_id', (v) => `{ id: p, kind: bedrock, region: us-east-1, access_key_id: '${v}', secret_access_key: other-secret-0001 }`, 'AKIAUNITTESTKEY00001'],
  ['secret_access_key', (v) => `{ id: p, kind: bedrock, region: us-east-1, access_key_id: AKIAOTHER, secret_access_key: '${v}' }`, 'aws-secret-access-key-0001'],
  ['session_token', (v) => `{ id: p, kind: bedrock, region: us-east-1, access_key_id: AKIAOTHER, secret_access_key: other-secret-0001, session_token: '${v}' }`, 'aws-session-token-value-0001'],
  ['credentials', (v) => `{ id: p, kind: vertex, project: my-project, location: global, credentials: '${v}' }`, SERVICE_ACCOUNT],
];

const configOf = (entry: string, extra = ''): string => `providers:\n  - ${entry.replace(/ \}$/, `${extra} }`)}\n`;

function configError(text: string): string {
  try {
    parseConfig(text, 'sluice.yaml', {});
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail('the file was accepted');
}

describe('a secret field in the configuration file', () => {
  for (const [field, entry, value] of FIELDS) {
    test(`${field}: an error in the same entry names the field at fault, never the secret`, () => {
      // A bad timeout beside the secret: the error is the entry's, and quotes nothing of it.
      const message = configError(configOf(entry(value.replace(/'/g, "''")), ', connect_timeout_ms: -1'));
      assert.match(message, /providers\[0\] \(id: p\): field 'connect_timeout_ms'/);
      assert.ok(!message.includes(value) && !message.includes(PEM.split('\n')[1]!), message);
    });

    test(`${field}: its value is among those redacted from messages about the provider`, () => {
      const provider = parseConfig(configOf(entry(value.replace(/'/g, "''"))), 'sluice.yaml', {}).providers[0]!;
      const secrets = secretValuesOf(provider);
      assert.ok(secrets.includes(value), `${field} is redacted`);
      const message = `upstream said: ${value} was wrong`;
      assert.equal(redact(message, secrets), 'upstream said: [redacted] was wrong');
    });
  }

  test('a secret field on a provider of another kind is refused by name, not echoed', () => {
    for (const [field, value] of [['secret_access_key', 'aws-secret-access-key-0001'], ['session_token', 'aws-session-token-value-0001'], ['credentials', 'pasted-key-text-0001']] as const) {
      const message = configError(configOf(`{ id: p, kind: openai, base_url: 'http://127.0.0.1:9/v1', ${field}: '${value}' }`));
      assert.match(message, new RegExp(`field '${field}': applies to '(bedrock|vertex)' providers only`));
      assert.ok(!message.includes(value), message);
    }
  });

  test('a pasted key’s private key is redacted whole, JSON-escaped and line by line', () => {
    const provider = parseConfig(configOf(FIELDS[5]![1](SERVICE_ACCOUNT)), 'sluice.yaml', {}).providers[0]!;
    const secrets = secretValuesOf(provider);
    const line = PEM.split('\n')[3]!;
    assert.equal(redact(`bad key material near ${line}`, secrets), 'bad key material near [redacted]');
    assert.equal(redact(`key ${JSON.stringify(PEM)}`, secrets), 'key "[redacted]"');
    assert.ok(!secrets.some((secret) => secret.length < 4), 'nothing short enough to blank out ordinary words');
  });
});
