/**
 * The console's provider form for the cloud kinds (azure, bedrock, vertex), over real HTTP against
 * the real server and store, and in Chromium: each kind's fields, every credential sealed at rest
 * and never shown again, console providers that carry their own credentials (never a file on the
 * host, never the host's environment), and no secret in any page, the store or the server's log.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { CredentialCipher } from '../src/catalogue/credential-cipher.js';
import { readStoredProvider } from '../src/catalogue/live-catalogue.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, configFor, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore, storeContains, storeEnv } from './support/store.js';

const PASSWORD = 'clouds-admin-password';
/** A key file's path on the gateway's host: the console names the setting, never the path. */
const KEY_FILE_PATH = '/run/secrets/vertex-sa-7f3e.json';
const CHROMIUM = '/usr/bin/chromium';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_KEY_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** The secret part of the PEM's body, as it would appear anywhere it leaked (JSON escapes only its newlines). */
const PRIVATE_KEY_BODY = PRIVATE_KEY_PEM.split('\n')[5]!;
const SERVICE_ACCOUNT = JSON.stringify(
  {
    type: 'service_account',
    project_id: 'console-project',
    private_key_id: 'console-key-id-0001',
    private_key: PRIVATE_KEY_PEM,
    client_email: 'sluice@console-project.iam.gserviceaccount.com',
    token_uri: 'http://127.0.0.1:9/token',
  },
  null,
  2,
);

/** Every credential these tests type in: none may appear in a page, the store or the log. */
const SECRETS = {
  entra: 'entra-client-secret-8f2c91',
  accessKeyId: 'AKIACONSOLEKEYID7Q4Z',
  secretAccessKey: 'console-aws-secret-access-key-5d1e0a',
  sessionToken: 'console-aws-session-token-b37c',
  azureKey: 'azure-console-api-key-2a9d',
  privateKey: PRIVATE_KEY_BODY,
};

let fake: FakeUpstream;
let sluice: RunningSluice;
let client: ConsoleClient;
let csrf: string;

before(async () => {
  fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'admin', PASSWORD, true);
  // Two Vertex providers of the configuration file whose keys come from the host: a file, and the environment.
  const config = configFor(fake.url).replace(
    'providers:\n',
    `providers:\n  - { id: vertex-file, kind: vertex, project: file-project, location: global, credentials_file: ${KEY_FILE_PATH} }\n  - { id: vertex-adc, kind: vertex, project: file-project, location: global }\n`,
  );
  sluice = await startSluice({ dataDir, config });
  client = new ConsoleClient(sluice.url);
  csrf = await client.signIn('admin', PASSWORD);
});

after(async () => {
  if (sluice) assert.equal(await sluice.stop(), 0);
  await fake?.close();
  assertNoSecretIn(sluice.stdout() + sluice.stderr(), 'the server log');
});

function assertNoSecretIn(text: string, where: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) assert.ok(!text.includes(secret), `${name} appears in ${where}`);
}

async function providerRows(): Promise<string[]> {
  return (await queryStore<{ id: string }>(sluice.dataDir, 'SELECT id FROM console_providers ORDER BY id')).map((row) => row.id);
}

/** The provider as the gateway reads it back from the store: unsealed with the data directory's key. */
async function unsealed(id: string) {
  const row = (await queryStore<{ id: string; config: string; secrets: string | null; created_at: number; updated_at: number }>(sluice.dataDir, 'SELECT * FROM console_providers WHERE id = ?', [id]))[0]!;
  const read = readStoredProvider({ id: row.id, config: JSON.parse(row.config) as Record<string, unknown>, secrets: row.secrets, createdAt: row.created_at, updatedAt: row.updated_at }, CredentialCipher.forDataDir(sluice.dataDir, await storeEnv(sluice.dataDir)));
  assert.ok('config' in read, `the stored ${id} reads back`);
  return { row, config: read.config };
}

const AZURE = { id: 'azure-east', kind: 'azure', base_url: 'https://my-resource.openai.azure.com', api_version: '2024-10-21', allow_data_sources: '1', entra_tenant_id: 'contoso.onmicrosoft.com', entra_client_id: '00000000-0000-0000-0000-000000000001', entra_client_secret: SECRETS.entra, entra_authority_url: 'http://127.0.0.1:9' };
const BEDROCK = { id: 'bedrock-us', kind: 'bedrock', region: 'us-east-1', access_key_id: SECRETS.accessKeyId, secret_access_key: SECRETS.secretAccessKey, session_token: SECRETS.sessionToken };
const VERTEX = { id: 'vertex-eu', kind: 'vertex', project: 'console-project', location: 'europe-west4', credentials: SERVICE_ACCOUNT };

describe('the provider form for the cloud kinds', () => {
  test('offers azure, bedrock and vertex, each with its own fields, every credential an empty input', async () => {
    const form = await client.get('/app/catalogue/providers/new');
    assert.equal(form.status, 200);
    for (const kind of ['azure', 'bedrock', 'vertex']) assert.match(form.text, new RegExp(`<option value="${kind}"`));
    for (const [kind, fields] of [['azure', ['api_version', 'allow_data_sources', 'entra_tenant_id', 'entra_client_id', 'entra_client_secret', 'entra_authority_url']], ['bedrock', ['region', 'access_key_id', 'secret_access_key', 'session_token']], ['vertex', ['project', 'location', 'credentials']]] as const) {
      const group = new RegExp(`<fieldset class="field" data-kinds="${kind}">([\\s\\S]*?)</fieldset>`).exec(form.text);
      assert.ok(group, `a group of ${kind}'s fields`);
      for (const field of fields) assert.match(group[1]!, new RegExp(`name="${field}"`), `${kind}: ${field}`);
    }
    for (const secret of ['entra_client_secret', 'access_key_id', 'secret_access_key', 'session_token']) assert.match(form.text, new RegExp(`name="${secret}" type="password"[^>]*value=""`));
    assert.match(form.text, /<textarea id="f-credentials" name="credentials"[^>]*><\/textarea>/);
    assert.doesNotMatch(form.text, /name="credentials_file"/, 'no field names a file on the host');
  });

  test('an azure provider with Entra ID, a bedrock one with AWS keys and a vertex one with a pasted key are saved, their credentials sealed', async () => {
    for (const fields of [AZURE, BEDROCK, VERTEX]) {
      const saved = await client.post('/app/catalogue/providers/new', { csrf, ...fields });
      assert.equal(saved.status, 303, `${fields.id}: ${saved.text}`);
    }
    assert.deepEqual(await providerRows(), ['azure-east', 'bedrock-us', 'vertex-eu']);
    for (const secret of Object.values(SECRETS)) assert.equal(await storeContains(sluice.dataDir, secret), false, 'no credential in the store in plain text');

    const azure = await unsealed('azure-east');
    assert.match(azure.row.secrets!, /^v1\./);
    assert.deepEqual(JSON.parse(azure.row.config).entra, { tenant_id: 'contoso.onmicrosoft.com', client_id: '00000000-0000-0000-0000-000000000001', authority_url: 'http://127.0.0.1:9' }, 'the plain part of entra, without its secret');
    assert.deepEqual(azure.config.entra, { tenant_id: 'contoso.onmicrosoft.com', client_id: '00000000-0000-0000-0000-000000000001', client_secret: SECRETS.entra, authority_url: 'http://127.0.0.1:9' });
    assert.equal(azure.config.api_version, '2024-10-21');
    assert.equal(azure.config.allow_data_sources, true, 'the On Your Data box, ticked');
    assert.equal(azure.config.ownCredentialsOnly, true, 'the adapters are told not to use the host’s credentials');

    const bedrock = await unsealed('bedrock-us');
    assert.deepEqual([bedrock.config.access_key_id, bedrock.config.secret_access_key, bedrock.config.session_token, bedrock.config.base_url], [SECRETS.accessKeyId, SECRETS.secretAccessKey, SECRETS.sessionToken, 'https://bedrock-runtime.us-east-1.amazonaws.com']);
    const vertex = await unsealed('vertex-eu');
    assert.equal(vertex.config.credentials, SERVICE_ACCOUNT, 'the pasted key, exactly');
    assert.equal(vertex.config.base_url, 'https://europe-west4-aiplatform.googleapis.com');
    for (const { row } of [azure, bedrock, vertex]) assertNoSecretIn(row.config, 'a stored config column');
  });

  test('the pages say which credentials are set and never show one', async () => {
    const overview = await client.get('/app/catalogue');
    assertNoSecretIn(overview.text, 'the catalogue page');
    const cell = (id: string) => new RegExp(`<tr data-provider="${id}">([\\s\\S]*?)</tr>`).exec(overview.text)![1]!;
    assert.match(cell('azure-east'), /Entra client secret set/);
    assert.match(cell('bedrock-us'), /AWS access key id set<br>AWS secret access key set<br>AWS session token set/);
    assert.match(cell('vertex-eu'), /Service-account key set/);
    // Configuration-file Vertex providers: where the key comes from, by setting; never the file's path.
    assert.match(cell('vertex-file'), /Key from credentials_file/);
    assert.match(cell('vertex-adc'), /Key from GOOGLE_APPLICATION_CREDENTIALS/);
    assert.ok(!overview.text.includes(KEY_FILE_PATH), 'the host’s key path is not shown');
    for (const id of ['azure-east', 'bedrock-us', 'vertex-eu']) {
      const edit = await client.get(`/app/catalogue/providers/${id}/edit`);
      assert.equal(edit.status, 200);
      assertNoSecretIn(edit.text, `the edit page of ${id}`);
      assert.match(edit.text, /A value is set: leave blank to keep it/);
    }
    const bedrock = (await client.get('/app/catalogue/providers/bedrock-us/edit')).text;
    for (const field of ['access_key_id', 'secret_access_key', 'session_token']) assert.match(bedrock, new RegExp(`name="clear_${field}" value="1"`));
    assert.match((await client.get('/app/catalogue/providers/azure-east/edit')).text, /name="entra_tenant_id"[^>]*value="contoso\.onmicrosoft\.com"/, 'the plain entra fields are filled in');
  });

  test('an edit that retypes nothing keeps every credential; a ticked box removes one', async () => {
    const page = await client.get('/app/catalogue/providers/bedrock-us/edit');
    const fields = ConsoleClient.formFields(page.text, '/app/catalogue/providers/bedrock-us/edit');
    assert.equal(fields.secret_access_key, '', 'the form as served carries no credential');
    const kept = await client.post('/app/catalogue/providers/bedrock-us/edit', { ...fields, region: 'us-west-2' });
    assert.equal(kept.status, 303, kept.text);
    const after = (await unsealed('bedrock-us')).config;
    assert.deepEqual([after.region, after.access_key_id, after.secret_access_key, after.session_token], ['us-west-2', SECRETS.accessKeyId, SECRETS.secretAccessKey, SECRETS.sessionToken]);
    assert.equal(after.base_url, 'https://bedrock-runtime.us-west-2.amazonaws.com', 'the default endpoint follows the region');

    const cleared = await client.post('/app/catalogue/providers/bedrock-us/edit', { ...fields, clear_session_token: '1' });
    assert.equal(cleared.status, 303, cleared.text);
    assert.equal((await unsealed('bedrock-us')).config.session_token, undefined);

    const vertexPage = await client.get('/app/catalogue/providers/vertex-eu/edit');
    const vertexFields = ConsoleClient.formFields(vertexPage.text, '/app/catalogue/providers/vertex-eu/edit');
    assert.equal(vertexFields.credentials, '');
    assert.equal((await client.post('/app/catalogue/providers/vertex-eu/edit', { ...vertexFields, location: 'global' })).status, 303);
    const vertex = (await unsealed('vertex-eu')).config;
    assert.deepEqual([vertex.location, vertex.base_url, vertex.credentials], ['global', 'https://aiplatform.googleapis.com', SERVICE_ACCOUNT]);
  });
});

describe('a stored credential goes only where it was entered for', () => {
  test('an edit that moves the Entra authority, the tenant or base_url must retype the credentials; retyped, it is saved', async () => {
    const edit = '/app/catalogue/providers/azure-east/edit';
    const fields = ConsoleClient.formFields((await client.get(edit)).text, edit);
    const before = (await unsealed('azure-east')).row;
    const moves: Record<string, string>[] = [{ entra_authority_url: 'http://127.0.0.1:18999' }, { entra_tenant_id: 'fabrikam.onmicrosoft.com' }, { base_url: 'https://attacker.example' }];
    for (const moved of moves) {
      const answer = await client.post(edit, { ...fields, ...moved });
      assert.equal(answer.status, 400, JSON.stringify(moved));
      assert.match(answer.text, /entra_client_secret<\/code>: the address changed/);
      assert.deepEqual((await unsealed('azure-east')).row, before, 'nothing changed');
    }
    const retyped = await client.post(edit, { ...fields, entra_authority_url: 'http://127.0.0.1:18999', entra_client_secret: SECRETS.entra });
    assert.equal(retyped.status, 303, retyped.text.slice(0, 500));
    const after = (await unsealed('azure-east')).config;
    assert.deepEqual([after.entra?.authority_url, after.entra?.client_secret], ['http://127.0.0.1:18999', SECRETS.entra]);
  });
});

describe('what the console refuses, changing nothing', () => {
  const refusals: [string, Record<string, string>, RegExp][] = [
    ['a bedrock provider without its own AWS keys', { id: 'r-bedrock', kind: 'bedrock', region: 'us-east-1' }, /access_key_id<\/code>: is required: a console provider carries its own AWS credentials/],
    ['a secret access key without its key id', { id: 'r-bedrock2', kind: 'bedrock', region: 'us-east-1', secret_access_key: SECRETS.secretAccessKey }, /access_key_id and secret_access_key go together/],
    ['a vertex provider without a pasted key', { id: 'r-vertex', kind: 'vertex', project: 'p', location: 'global' }, /credentials<\/code>: is required: paste a service-account key/],
    ['a key file named by its path', { id: 'r-file', kind: 'vertex', project: 'p', location: 'global', credentials: SERVICE_ACCOUNT, credentials_file: '/etc/passwd' }, /credentials_file<\/code>: is for the configuration file only/],
    ['a path where the key should be', { id: 'r-path', kind: 'vertex', project: 'p', location: 'global', credentials: '/run/secrets/sa.json' }, /credentials<\/code>: is not JSON/],
    ['a JSON that is not a service-account key', { id: 'r-json', kind: 'vertex', project: 'p', location: 'global', credentials: JSON.stringify({ type: 'authorized_user', refresh_token: SECRETS.sessionToken }) }, /is not a service-account key/],
    ['an azure provider with both an API key and Entra ID', { ...AZURE, id: 'r-azure', api_key: SECRETS.azureKey }, /give api_key or entra, not both/],
    ['an azure provider with neither', { id: 'r-azure2', kind: 'azure', base_url: 'https://r.openai.azure.com' }, /is required for kind &#39;azure&#39;|is required for kind 'azure'/],
    ['Entra ID without its client secret', { id: 'r-entra', kind: 'azure', base_url: 'https://r.openai.azure.com', entra_tenant_id: 't', entra_client_id: 'c' }, /entra_client_secret<\/code>: is required/],
    ['a field of another kind', { id: 'r-mixed', kind: 'bedrock', region: 'us-east-1', access_key_id: SECRETS.accessKeyId, secret_access_key: SECRETS.secretAccessKey, project: 'p' }, /project<\/code>: applies to &#39;vertex&#39; providers only|project<\/code>: applies to 'vertex' providers only/],
    ['a credential of another kind', { id: 'r-mixed2', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', session_token: SECRETS.sessionToken }, /session_token<\/code>: applies to &#39;bedrock&#39; providers only|session_token<\/code>: applies to 'bedrock' providers only/],
    ['a region that is not one', { id: 'r-region', kind: 'bedrock', region: 'moon-1', access_key_id: SECRETS.accessKeyId, secret_access_key: SECRETS.secretAccessKey }, /must be an AWS region such as us-east-1/],
  ];
  for (const [what, fields, message] of refusals) {
    test(what, async () => {
      const before = await providerRows();
      const answer = await client.post('/app/catalogue/providers/new', { csrf, ...fields });
      assert.equal(answer.status, 400, answer.text.slice(0, 500));
      assert.match(answer.text, message);
      assertNoSecretIn(answer.text, 'the refusal');
      assert.ok(!answer.text.includes('BEGIN PRIVATE KEY'), 'a pasted key is not echoed back');
      assert.deepEqual(await providerRows(), before, 'nothing saved');
    });
  }
});

describe('console providers in sluice doctor', () => {
  test('doctor reads them as the gateway does and prints no credential', async () => {
    const result = await cli(['doctor', '--data', sluice.dataDir, '--config', `${sluice.dataDir}/sluice.yaml`], await storeEnv(sluice.dataDir));
    const output = result.stdout + result.stderr;
    for (const id of ['azure-east', 'bedrock-us', 'vertex-eu']) assert.match(output, new RegExp(`provider ${id}:`));
    assertNoSecretIn(output, 'the doctor’s report');
  });
});

describe('the provider form in a browser', () => {
  let browser: Browser;
  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  });
  after(async () => {
    await browser?.close();
  });

  test('shows only the chosen kind’s fields, and saves a bedrock provider typed there', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${sluice.url}/app/login`);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: /sign in/i }).click();
    await page.goto(`${sluice.url}/app/catalogue/providers/new`);
    const visible = (name: string) => page.locator(`[name="${name}"]`).isVisible();
    assert.equal(await visible('api_key'), true, 'openai, the default kind, takes an API key');
    assert.equal(await visible('region'), false);
    assert.equal(await visible('credentials'), false);
    await page.getByLabel('Kind').selectOption('bedrock');
    assert.deepEqual(await Promise.all(['region', 'access_key_id', 'secret_access_key', 'session_token'].map(visible)), [true, true, true, true]);
    assert.deepEqual(await Promise.all(['api_key', 'entra_tenant_id', 'project', 'credentials'].map(visible)), [false, false, false, false]);
    await page.getByLabel('Id', { exact: true }).fill('bedrock-browser');
    await page.getByLabel('AWS region').fill('eu-west-1');
    await page.getByLabel('AWS access key id').fill(SECRETS.accessKeyId);
    await page.getByLabel('AWS secret access key').fill(SECRETS.secretAccessKey);
    await page.getByRole('button', { name: 'Add provider' }).click();
    await page.waitForURL(/\/app\/catalogue\?done=/);
    assert.match(await page.locator('tr[data-provider="bedrock-browser"]').innerText(), /AWS secret access key set/);
    assertNoSecretIn(await page.content(), 'the page in the browser');
    const stored = (await unsealed('bedrock-browser')).config;
    assert.deepEqual([stored.region, stored.secret_access_key], ['eu-west-1', SECRETS.secretAccessKey]);
  });
});
