import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { cliWithInput, ConsoleClient, createAccount, type PageResponse } from './support/console.js';
import { cli, configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { PG_ADMIN_URL, pgQuery, queryStore, STORE_MODE } from './support/store.js';

const ADMIN_PASSWORD = 'admin-password-1';
/** Names every plain object inherits (or, for __proto__, has an accessor for). */
const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty'] as const;
const CATALOGUE_ORDER = ['llama-8b', 'other-model', 'chat-only'];

let fake: FakeUpstream;
let sluice: RunningSluice;

before(async () => {
  fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'alice', ADMIN_PASSWORD, true);
  sluice = await startSluice({ dataDir, config: configFor(fake.url), args: ['--workers', '1'] });
});
after(async () => {
  assert.equal(await sluice.stop(), 0);
  await fake.close();
});

const rowOrder = (page: string) => [...page.matchAll(/<tr data-model="([^"]+)">/g)].map((m) => m[1]);

describe('request values that name inherited object properties', () => {
  test('/models?sort= with such a name is an unknown sort: the catalogue order, in HTML and in JSON', async () => {
    for (const name of INHERITED) {
      const sort = encodeURIComponent(name);
      const page = await fetch(`${sluice.url}/models?sort=${sort}`);
      assert.equal(page.status, 200, `/models?sort=${name}`);
      const text = await page.text();
      assert.deepEqual(rowOrder(text), CATALOGUE_ORDER);
      assert.match(text, /<option value="default" selected>Catalogue order<\/option>/);
      const reversed = await (await fetch(`${sluice.url}/models?sort=${sort}&dir=desc`)).text();
      assert.deepEqual(rowOrder(reversed), [...CATALOGUE_ORDER].reverse());

      for (const [url, headers] of [[`/models.json?sort=${sort}`, {}], [`/models?sort=${sort}`, { accept: 'application/json' }]] as const) {
        const json = await fetch(sluice.url + url, { headers });
        assert.equal(json.status, 200, `${url} as JSON`);
        assert.deepEqual(((await json.json()) as { data: { id: string }[] }).data.map((m) => m.id), CATALOGUE_ORDER);
      }
    }
  });

  test('such names in paths, queries, form fields and JSON bodies are answered as any unknown name', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme');
    const admin = new ConsoleClient(sluice.url);
    const csrf = await admin.signIn('alice', ADMIN_PASSWORD);
    const bearer = { authorization: `Bearer ${key}` };
    for (const name of INHERITED) {
      const segment = encodeURIComponent(name);
      const pageToken = Buffer.from(JSON.stringify({ after: name })).toString('base64url');
      const gets: [string, Record<string, string>, number][] = [
        [`/models/${segment}`, {}, 404],
        [`/models/${segment}?format=json`, {}, 404],
        [`/v1/models/${segment}`, bearer, 404],
        [`/v1/models/${segment}`, { ...bearer, 'anthropic-version': '2023-06-01' }, 404],
        [`/v1beta/models/${segment}`, { 'x-goog-api-key': key }, 404],
        [`/v1/models?after_id=${segment}`, { ...bearer, 'anthropic-version': '2023-06-01' }, 400],
        [`/v1beta/models?pageToken=${pageToken}`, { 'x-goog-api-key': key }, 400],
        [`/models?q=${segment}`, {}, 200],
        [`/models?sort=id&dir=${segment}`, {}, 200],
      ];
      for (const [path, headers, status] of gets) {
        const response = await fetch(sluice.url + path, { headers });
        assert.equal(response.status, status, `GET ${path}`);
      }
      const pages: [string, number][] = [
        [`/app/keys/${segment}/disable`, 404],
        [`/app/catalogue/providers/${segment}/edit`, 404],
        [`/app/catalogue/models/${segment}/delete`, 404],
        [`/app/keys?account=${segment}&changed=${segment}`, 200],
      ];
      for (const [path, status] of pages) assert.equal((await admin.get(path)).status, status, `GET ${path}`);
      assert.equal((await admin.post(`/app/keys/${segment}/revoke`, { csrf })).status, 404);
      assert.equal((await admin.post('/app/keys', { csrf, account: name })).status, 400, 'an account that does not exist');
      assert.equal((await admin.post('/app/keys', { csrf, models: name })).status, 400, 'a model that does not exist');
      const model = await admin.post('/app/catalogue/models/new', { csrf, id: 'x', provider: name, [name]: 'field' });
      assert.equal(model.status, 400);
      assert.match(model.text, /no provider has the id/);
      assert.equal((await new ConsoleClient(sluice.url).login(name, 'some-password')).status, 401);

      const completion = (body: object) =>
        fetch(`${sluice.url}/v1/completions`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal((await completion({ model: name, prompt: 'hi' })).status, 404);
      // An unknown field is taken as any other, but `__proto__`, which validation would lose without a word, is refused by name.
      const extraField = await completion({ model: 'llama-8b', prompt: 'hi', max_tokens: 1, [name]: 1 });
      assert.equal(extraField.status, name === '__proto__' ? 400 : 200, `a body field named ${name}`);
      if (name === '__proto__') assert.equal(((await extraField.json()) as { error: { param: string } }).error.param, '__proto__');
    }
  });

  test('a console provider may send headers named constructor, toString or hasOwnProperty; __proto__ is refused, never dropped silently', async () => {
    const admin = new ConsoleClient(sluice.url);
    const csrf = await admin.signIn('alice', ADMIN_PASSWORD);
    const refused = await admin.post('/app/catalogue/providers/new', { csrf, id: 'proto-box', kind: 'openai', base_url: fake.url, headers: 'x-team: a\n__proto__: b' });
    assert.equal(refused.status, 400);
    assert.match(refused.text, /<code>headers<\/code>: .*__proto__/);
    assert.equal((await admin.get('/app/catalogue/providers/proto-box/edit')).status, 404, 'nothing saved');

    const headers = 'constructor: c\ntoString: t\nhasOwnProperty: h';
    assert.equal((await admin.post('/app/catalogue/providers/new', { csrf, id: 'named-box', kind: 'openai', base_url: fake.url, headers })).status, 303);
    assert.match((await admin.get('/app/catalogue/providers/named-box/edit')).text, /Set now: constructor, toString, hasOwnProperty\./);
    assert.equal((await admin.post('/app/catalogue/models/new', { csrf, id: 'named-model', provider: 'named-box', upstream_model: 'upstream-model', endpoints: 'completions' })).status, 303);
    const { key } = await createKey(sluice.dataDir, 'acme');
    await eventually(async () => {
      const response = await fetch(`${sluice.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'named-model', prompt: 'hi', max_tokens: 1 }),
      });
      return response.status === 200 ? true : undefined;
    }, 3000, 'a completion through the console provider');
    const sent = fake.requests.at(-1)!.headers;
    // Node lower-cases header names; own properties only, so an inherited one cannot pass for a header.
    assert.deepEqual(['constructor', 'tostring', 'hasownproperty'].map((name) => Object.getOwnPropertyDescriptor(sent, name)?.value), ['c', 't', 'h']);
  });
});

/** Sign-ins checked before the first lock-out: the throttle's two free failures and the one that locks. */
const ALLOWANCE = 3;

/**
 * Wrong passwords posted all at once, each with the sign-in form's valid CSRF token; `whileLocked`
 * runs as soon as the first is refused, while the lock-out is surely on (the checked guesses' slow
 * password hashing may outlast its first second).
 */
async function guessInParallel<T>(url: string, username: string, count: number, whileLocked: () => Promise<T>): Promise<{ answers: PageResponse[]; locked: T | undefined }> {
  const client = new ConsoleClient(url);
  const csrf = ConsoleClient.csrfOf((await client.get('/app/login')).text);
  let refused!: () => void;
  const firstRefusal = new Promise<'refused'>((resolve) => (refused = () => resolve('refused')));
  const guesses = Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const answer = await client.post('/app/login', { csrf, username, password: `wrong-guess-${i}`, next: '/app/keys' });
      if (answer.status === 429) refused();
      return answer;
    }),
  );
  const locked = (await Promise.race([firstRefusal, guesses])) === 'refused' ? await whileLocked() : undefined;
  return { answers: await guesses, locked };
}

async function expectParallelGuessesThrottled(url: string, username: string, password: string): Promise<void> {
  const { answers, locked } = await guessInParallel(url, username, 30, () => new ConsoleClient(url).login(username, password));
  const checked = answers.filter((answer) => answer.status === 401);
  const refused = answers.filter((answer) => answer.status === 429);
  assert.ok(checked.length >= 1 && checked.length <= ALLOWANCE, `${checked.length} of 30 parallel wrong passwords were checked`);
  assert.equal(refused.length, answers.length - checked.length, 'every other guess is refused by the throttle');
  for (const answer of refused) {
    assert.match(answer.text, /Too many failed sign-ins/);
    assert.ok(Number(answer.headers.get('retry-after')) >= 1, 'a refusal says when to try again');
  }
  assert.equal(locked?.status, 429, 'while locked out the right password is refused too');
  // Waits the Retry-After the refusal gave, not until the sign-in works: what it says must be enough.
  await new Promise((resolve) => setTimeout(resolve, Number(locked!.headers.get('retry-after')) * 1000 + 100));
  assert.equal((await new ConsoleClient(url).login(username, password)).status, 303, 'after the lock-out the right password works');
}

describe('sign-in throttle under parallel guesses', () => {
  test('30 wrong passwords at once: at most the allowance are checked, the rest and then the right password are refused', async () => {
    await createAccount(sluice.dataDir, 'henry', 'henry-password');
    await expectParallelGuessesThrottled(sluice.url, 'henry', 'henry-password');
  });

  test('the same across two worker processes sharing the store', async () => {
    const dataDir = tempDir();
    await createAccount(dataDir, 'irene', 'irene-password');
    const workers = await startSluice({ dataDir, args: ['--workers', '2'] });
    try {
      await expectParallelGuessesThrottled(workers.url, 'irene', 'irene-password');
    } finally {
      assert.equal(await workers.stop(), 0);
    }
  });
});

describe('one rule for account names', () => {
  const accountNames = async (dataDir: string) => (await queryStore<{ name: string }>(dataDir, 'SELECT name FROM accounts ORDER BY name')).map((row) => row.name);

  test('keys create refuses every name accounts create refuses, with the same message, and both take the same names', async () => {
    const dataDir = tempDir();
    for (const name of ['has space', ' padded', '-dash-first', '.dot-first', 'a/b', 'émile', 'tab\tname', 'x'.repeat(101)]) {
      // After `--`, so that a leading dash is a name, not an option.
      const viaAccounts = await cliWithInput(['accounts', 'create', '--password-stdin', '--data', dataDir, '--', name], 'long-enough-password\n');
      const viaKeys = await cli(['keys', 'create', '--account', name, '--data', dataDir]);
      assert.equal(viaAccounts.code, 1, `accounts create ${JSON.stringify(name)}`);
      assert.equal(viaKeys.code, 1, `keys create --account ${JSON.stringify(name)}`);
      assert.match(viaKeys.stderr, /An account name is 1-100 letters, digits or \._@- and starts with a letter or digit/);
      assert.equal(viaKeys.stderr, viaAccounts.stderr);
    }
    assert.deepEqual(await accountNames(dataDir), [], 'no account was made');

    for (const name of ['team.a_b@c-d', 'x'.repeat(100)]) {
      assert.equal((await cli(['keys', 'create', '--account', name, '--data', dataDir])).code, 0);
      assert.equal((await cliWithInput(['accounts', 'create', name, '--password-stdin', '--data', dataDir], 'long-enough-password\n')).code, 0);
    }
    assert.deepEqual(await accountNames(dataDir), ['team.a_b@c-d', 'x'.repeat(100)]);
  });

  test('an account made before the rule keeps getting keys', async () => {
    const dataDir = tempDir();
    await createKey(dataDir, 'acme'); // creates and migrates the store
    await queryStore(dataDir, "INSERT INTO accounts (id, name, created_at) VALUES ('acct_legacy', 'legacy team', 0)");
    const created = await cli(['keys', 'create', '--account', 'legacy team', '--json', '--data', dataDir]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).account, 'legacy team');
  });
});

describe('test support', () => {
  test('what tempDir made (a gateway’s data and configuration included, and its database in postgres mode) is gone when the test process ends', async () => {
    const support = pathToFileURL(resolve(import.meta.dirname, 'support/sluice.ts')).href;
    const store = pathToFileURL(resolve(import.meta.dirname, 'support/store.ts')).href;
    const script = `
      import { startSluice, tempDir } from ${JSON.stringify(support)};
      import { STORE_MODE, databaseUrlFor } from ${JSON.stringify(store)};
      const sluice = await startSluice({ config: 'providers: []\\n' });
      await sluice.stop();
      const database = STORE_MODE === 'postgres' ? new URL(await databaseUrlFor(sluice.dataDir)).pathname.slice(1) : null;
      console.log(JSON.stringify([sluice.dataDir, tempDir('sluice-other-'), database]));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script]);
    const [dataDir, otherDir, database] = JSON.parse(stdout) as [string, string, string | null];
    for (const dir of [dataDir, otherDir]) assert.equal(existsSync(dir), false, `${dir} is left behind`);
    if (STORE_MODE === 'postgres') {
      assert.match(database ?? '', /^sluice_t_/, 'the gateway had a database of its own');
      assert.deepEqual(await pgQuery(PG_ADMIN_URL, 'SELECT datname FROM pg_database WHERE datname = $1', [database]), [], `${database} is left behind`);
    }
  });
});
