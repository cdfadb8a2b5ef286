import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { cliWithInput, ConsoleClient, createAccount } from './support/console.js';
import { cli, configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore, storeContains } from './support/store.js';

const ADMIN_PASSWORD = 'admin-password-1';
const MEMBER_PASSWORD = 'member-password-1';

let fake: FakeUpstream;
let sluice: RunningSluice;

function query<T>(dataDir: string, sql: string, ...params: unknown[]): Promise<T[]> {
  return queryStore<T>(dataDir, sql, params);
}

async function keysOf(dataDir: string, account: string): Promise<{ id: string; name: string; status: string }[]> {
  const result = await cli(['keys', 'list', '--account', account, '--json', '--data', dataDir]);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as { id: string; name: string; status: string }[];
}

before(async () => {
  fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'alice', ADMIN_PASSWORD, true);
  await createAccount(dataDir, 'bob', MEMBER_PASSWORD);
  sluice = await startSluice({
    dataDir,
    config: configFor(fake.url).replace('    api_key: upstream-secret-credential\n', '    api_key: upstream-secret-credential\n    probe: { interval_ms: 1000, model: other-model }\n'),
  });
});
after(async () => {
  assert.equal(await sluice.stop(), 0);
  await fake.close();
});

describe('console accounts (CLI)', () => {
  test('create stores a salted scrypt hash, never the password; a second create and short passwords are refused', async () => {
    const rows = await query<{ name: string; password_hash: string; is_admin: number }>(sluice.dataDir, "SELECT name, password_hash, is_admin FROM accounts WHERE name IN ('alice','bob') ORDER BY name");
    assert.deepEqual(rows.map((r) => [r.name, r.is_admin]), [['alice', 1], ['bob', 0]]);
    for (const row of rows) {
      assert.match(row.password_hash, /^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
      assert.ok(!row.password_hash.includes('password'));
    }
    assert.notEqual(rows[0]!.password_hash.split('$')[4], rows[1]!.password_hash.split('$')[4], 'each hash has its own salt');
    const again = await cliWithInput(['accounts', 'create', 'bob', '--password-stdin', '--data', sluice.dataDir], 'another-password\n');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already sign in; use `sluice accounts passwd bob`/);
    const short = await cliWithInput(['accounts', 'create', 'carol', '--password-stdin', '--data', sluice.dataDir], 'short\n');
    assert.equal(short.code, 1);
    assert.match(short.stderr, /at least 8 characters/);
    assert.equal((await query(sluice.dataDir, "SELECT 1 FROM accounts WHERE name = 'carol'")).length, 0);
    const noStdinFlag = await cliWithInput(['accounts', 'create', 'dave', '--data', sluice.dataDir], 'whatever-password\n');
    assert.notEqual(noStdinFlag.code, 0);
    assert.match(noStdinFlag.stderr, /--password-stdin/);
  });

  test('passwd changes the password and ends the account’s sessions', async () => {
    await createAccount(sluice.dataDir, 'erin', 'first-password');
    const client = new ConsoleClient(sluice.url);
    await client.signIn('erin', 'first-password');
    assert.equal((await client.get('/app/keys')).status, 200);
    const changed = await cliWithInput(['accounts', 'passwd', 'erin', '--password-stdin', '--data', sluice.dataDir], 'second-password\n');
    assert.equal(changed.code, 0, changed.stderr);
    assert.equal((await client.get('/app/keys')).status, 303, 'the old session is gone');
    assert.equal((await new ConsoleClient(sluice.url).login('erin', 'first-password')).status, 401);
    assert.equal((await new ConsoleClient(sluice.url).login('erin', 'second-password')).status, 303);
  });
});

describe('sessions', () => {
  test('sign-in sets an HttpOnly, SameSite session cookie; the store keeps only its hash; Secure behind HTTPS', async () => {
    const client = new ConsoleClient(sluice.url);
    const response = await client.login('bob', MEMBER_PASSWORD);
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), '/app/keys');
    const setCookie = response.headers.getSetCookie().find((c) => c.startsWith('sluice_session='))!;
    assert.match(setCookie, /; HttpOnly/);
    assert.match(setCookie, /; SameSite=Lax/);
    assert.doesNotMatch(setCookie, /Secure/);
    const token = client.cookies.get('sluice_session')!;
    const stored = await query<{ token_hash: string }>(sluice.dataDir, 'SELECT token_hash FROM console_sessions');
    assert.ok(stored.length > 0);
    assert.ok(stored.every((row) => row.token_hash !== token));
    assert.equal(await storeContains(sluice.dataDir, token), false, 'the token is nowhere in the store');

    const behindProxy = new ConsoleClient(sluice.url);
    const form = await behindProxy.get('/app/login', { 'x-forwarded-proto': 'https' });
    const secure = await behindProxy.post('/app/login', { csrf: ConsoleClient.csrfOf(form.text), username: 'bob', password: MEMBER_PASSWORD }, { 'x-forwarded-proto': 'https' });
    assert.equal(secure.status, 303);
    assert.match(secure.headers.getSetCookie().find((c) => c.startsWith('sluice_session='))!, /; Secure/);
  });

  test('without a session the console redirects to the sign-in page', async () => {
    const response = await new ConsoleClient(sluice.url).get('/app/keys');
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), '/app/login?next=%2Fapp%2Fkeys');
    const login = await new ConsoleClient(sluice.url).get('/app/login');
    assert.match(login.text, /<label for="username">Username<\/label>/);
    assert.match(login.text, /<label for="password">Password<\/label>/);
  });

  test('sign-out ends the session, in the store too', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    const token = client.cookies.get('sluice_session')!;
    const refused = await client.post('/app/logout', {});
    assert.equal(refused.status, 403, 'sign-out needs the CSRF token too');
    const out = await client.post('/app/logout', { csrf });
    assert.equal(out.status, 303);
    assert.equal(client.cookies.has('sluice_session'), false);
    client.cookies.set('sluice_session', token);
    assert.equal((await client.get('/app/keys')).status, 303, 'the old token no longer works');
  });

  test('a session expires after --session-ttl', async () => {
    const dataDir = tempDir();
    await createAccount(dataDir, 'frank', 'frank-password');
    const short = await startSluice({ dataDir, args: ['--session-ttl', '1500'] });
    try {
      const client = new ConsoleClient(short.url);
      const signedIn = await client.login('frank', 'frank-password');
      const signedInAt = Date.now();
      assert.equal(signedIn.status, 303);
      assert.match(signedIn.headers.getSetCookie().find((c) => c.startsWith('sluice_session='))!, /Max-Age=2;/);
      assert.equal((await client.get('/app/keys')).status, 200);
      // The rest of the session's 1.5 s, which began before its answer reached us.
      await new Promise((r) => setTimeout(r, Math.max(0, signedInAt + 1600 - Date.now())));
      const expired = await client.get('/app/keys');
      assert.equal(expired.status, 303);
      assert.equal(expired.headers.get('location'), '/app/login?next=%2Fapp%2Fkeys&expired=1');
      assert.match((await client.get('/app/login?expired=1')).text, /Your session has ended/);
    } finally {
      assert.equal(await short.stop(), 0);
    }
  });
});

describe('CSRF', () => {
  test('a state-changing form without the session’s token, with a wrong one, or from another origin is refused (403) and changes nothing', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    const before = (await keysOf(sluice.dataDir, 'bob')).length;
    assert.equal((await client.post('/app/keys', { name: 'no token' })).status, 403);
    assert.equal((await client.post('/app/keys', { name: 'wrong token', csrf: csrf.slice(0, -2) + 'xx' })).status, 403);
    assert.equal((await client.post('/app/keys', { name: 'cross site', csrf }, { origin: 'https://evil.example' })).status, 403);
    assert.equal((await keysOf(sluice.dataDir, 'bob')).length, before);

    const { id } = await createKey(sluice.dataDir, 'bob');
    assert.equal((await client.post(`/app/keys/${id}/disable`, {})).status, 403);
    assert.equal((await keysOf(sluice.dataDir, 'bob')).find((k) => k.id === id)!.status, 'active');
    // Another session's token is no good either.
    const other = new ConsoleClient(sluice.url);
    const otherCsrf = await other.signIn('bob', MEMBER_PASSWORD);
    assert.notEqual(otherCsrf, csrf);
    assert.equal((await client.post(`/app/keys/${id}/disable`, { csrf: otherCsrf })).status, 403);
    // With its own token the same form works.
    assert.equal((await client.post(`/app/keys/${id}/disable`, { csrf })).status, 303);
    assert.equal((await keysOf(sluice.dataDir, 'bob')).find((k) => k.id === id)!.status, 'disabled');
  });

  test('the sign-in form needs its own token, so another site cannot sign a browser in', async () => {
    const client = new ConsoleClient(sluice.url);
    const response = await client.post('/app/login', { username: 'bob', password: MEMBER_PASSWORD });
    assert.equal(response.status, 403);
    assert.equal(client.cookies.has('sluice_session'), false);
  });
});

describe('keys', () => {
  test('a member sees only their own account’s keys and is refused another account’s key', async () => {
    const mine = await createKey(sluice.dataDir, 'bob', ['--name', 'bob-visible']);
    const theirs = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-secret-project']);
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    const page = (await client.get('/app/keys')).text;
    assert.match(page, /bob-visible/);
    assert.doesNotMatch(page, /acme-secret-project/);
    assert.doesNotMatch(page, new RegExp(theirs.id));

    for (const action of ['disable', 'revoke']) {
      const confirm = await client.get(`/app/keys/${theirs.id}/${action}`);
      assert.equal(confirm.status, 404);
      assert.doesNotMatch(confirm.text, /acme-secret-project/);
      assert.equal((await client.post(`/app/keys/${theirs.id}/${action}`, { csrf })).status, 404);
    }
    assert.equal((await keysOf(sluice.dataDir, 'acme')).find((k) => k.id === theirs.id)!.status, 'active', 'nothing changed');
    assert.equal((await client.get(`/app/keys/${mine.id}/revoke`)).status, 200, 'the member may act on their own key');
  });

  test('an admin sees every account’s keys and can filter by account', async () => {
    await createKey(sluice.dataDir, 'acme', ['--name', 'acme-for-admin']);
    const client = new ConsoleClient(sluice.url);
    await client.signIn('alice', ADMIN_PASSWORD);
    const all = (await client.get('/app/keys')).text;
    assert.match(all, /acme-for-admin/);
    assert.match(all, /bob-visible/);
    const filtered = (await client.get('/app/keys?account=acme')).text;
    assert.match(filtered, /acme-for-admin/);
    assert.doesNotMatch(filtered, /bob-visible/);
  });

  test('hostile names are escaped wherever they are shown', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('alice', ADMIN_PASSWORD);
    const created = await client.post('/app/keys', { csrf, name: '<script>alert(1)</script>', account: 'alice' });
    assert.equal(created.status, 200);
    assert.match(created.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.doesNotMatch(created.text, /<script>alert/);
    // The account-name rule keeps markup out of new names; an account made before the rule may have it.
    await queryStore(sluice.dataDir, "INSERT INTO accounts (id, name, created_at) VALUES ('acct_hostile', ?, 0)", ['"><img src=x onerror=alert(2)>']);
    await createKey(sluice.dataDir, '"><img src=x onerror=alert(2)>', ['--name', "it's <b>bold</b>"]);
    const page = (await client.get('/app/keys')).text;
    assert.doesNotMatch(page, /<script>alert|<img src=x|<b>bold/);
    assert.match(page, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(page, /&quot;&gt;&lt;img src=x onerror=alert\(2\)&gt;/);
    assert.match(page, /it&#39;s &lt;b&gt;bold&lt;\/b&gt;/);
    // A model registered with a hostile display name is escaped on the public pages too.
    const saved = await client.post('/app/catalogue/models/new', { csrf, id: 'hostile-model', provider: 'fake-vllm', display_name: '<svg onload=alert(3)>', endpoints: 'completions' });
    assert.equal(saved.status, 303);
    // Every gateway process reloads its catalogue within 250 ms.
    const models = await eventually(async () => {
      const text = (await new ConsoleClient(sluice.url).get('/models')).text;
      return text.includes('hostile-model') ? text : undefined;
    }, 1000, 'the model on /models');
    assert.doesNotMatch(models, /<svg onload/);
    assert.match(models, /&lt;svg onload=alert\(3\)&gt;/);
    assert.equal((await client.post('/app/catalogue/models/hostile-model/delete', { csrf })).status, 303);
  });

  test('bad input is refused with a clear message and creates nothing', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    const before = (await keysOf(sluice.dataDir, 'bob')).length;
    const past = await client.post('/app/keys', { csrf, name: 'old', expires: '2001-01-01' });
    assert.equal(past.status, 400);
    assert.match(past.text, /is in the past/);
    const unknown = await client.post('/app/keys', { csrf, name: 'x', models: ['llama-8b', 'no-such-model'] });
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /not in the catalogue: no-such-model/);
    const long = await client.post('/app/keys', { csrf, name: 'n'.repeat(101) });
    assert.equal(long.status, 400);
    // A member cannot create a key for another account by adding the field.
    const elsewhere = await client.post('/app/keys', { csrf, name: 'sneaky', account: 'acme' });
    assert.equal(elsewhere.status, 200);
    assert.ok((await keysOf(sluice.dataDir, 'bob')).some((k) => k.name === 'sneaky'));
    assert.ok(!(await keysOf(sluice.dataDir, 'acme')).some((k) => k.name === 'sneaky'));
    assert.equal((await keysOf(sluice.dataDir, 'bob')).length, before + 1);
  });

  test('a key made in the console works at once, its usage shows, and disabling it is refused by the API within a second', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    const created = await client.post('/app/keys', { csrf, name: 'usage-key', models: 'llama-8b' });
    const secret = /<code id="new-secret"[^>]*>(sk-[A-Za-z0-9]{48})<\/code>/.exec(created.text)![1]!;
    assert.equal(created.headers.get('cache-control'), 'no-store');
    const openai = new OpenAI({ apiKey: secret, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const completion = await openai.completions.create({ model: 'llama-8b', prompt: 'Say hi', max_tokens: 3 });
    assert.equal(completion.choices[0]!.text, ' The quick brown');
    const id = (await keysOf(sluice.dataDir, 'bob')).find((k) => k.name === 'usage-key')!.id;
    const row = await eventually(async () => {
      const page = (await client.get('/app/keys')).text;
      const match = new RegExp(`<tr data-key-id="${id}">([\\s\\S]*?)</tr>`).exec(page);
      return match && /<td class="num">1<\/td>/.test(match[1]!) ? match[1]! : undefined;
    }, 5000, 'usage on the keys page');
    assert.match(row, new RegExp(`<code>${secret.slice(0, 5)}…${secret.slice(-4)}</code>`));
    assert.doesNotMatch((await client.get('/app/keys')).text, new RegExp(secret), 'the secret is never shown again');
    assert.match(row, /<td class="num">5<\/td>/, 'tokens: 2 prompt + 3 completion');

    assert.equal((await client.post(`/app/keys/${id}/disable`, { csrf })).status, 303);
    const started = Date.now();
    await eventually(async () => {
      try {
        await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 });
        return undefined;
      } catch (error) {
        return error instanceof OpenAI.PermissionDeniedError ? true : undefined;
      }
    }, 1000, 'the API to refuse the disabled key');
    assert.ok(Date.now() - started <= 1000);
  });
});

describe('login throttling', () => {
  test('after repeated failures the username is locked out from that address for a growing time, even with the right password', async () => {
    await createAccount(sluice.dataDir, 'grace', 'grace-password');
    const client = new ConsoleClient(sluice.url);
    assert.equal((await client.login('grace', 'wrong-1')).status, 401);
    assert.equal((await client.login('grace', 'wrong-2')).status, 401);
    const third = await client.login('grace', 'wrong-3');
    const thirdAt = Date.now();
    assert.equal(third.status, 401);
    assert.match(third.text, /wait 1 s before the next try/);
    const locked = await client.login('grace', 'grace-password');
    assert.equal(locked.status, 429);
    assert.ok(Number(locked.headers.get('retry-after')) >= 1);
    assert.match(locked.text, /Too many failed sign-ins/);
    assert.equal((await new ConsoleClient(sluice.url).login('bob', MEMBER_PASSWORD)).status, 303, 'other usernames are not affected');
    // The lock-outs are fixed (1 s, then 2 s) and counted from the attempt, which was answered before now: only what is left of them is waited.
    await new Promise((r) => setTimeout(r, Math.max(0, thirdAt + 1100 - Date.now())));
    const fourth = await client.login('grace', 'wrong-4');
    const fourthAt = Date.now();
    assert.match(fourth.text, /wait 2 s/, 'the delay doubles');
    await new Promise((r) => setTimeout(r, Math.max(0, fourthAt + 2100 - Date.now())));
    assert.equal((await client.login('grace', 'grace-password')).status, 303);
    assert.equal((await query(sluice.dataDir, "SELECT 1 FROM login_throttle WHERE subject LIKE 'grace|%'")).length, 0, 'success clears the count');
  });

  test('an unknown username fails like a wrong password', async () => {
    const response = await new ConsoleClient(sluice.url).login('nobody-here', 'whatever-password');
    assert.equal(response.status, 401);
    assert.match(response.text, /The username or password is not right/);
  });
});

describe('catalogue administration', () => {
  test('members are refused the catalogue pages', async () => {
    const client = new ConsoleClient(sluice.url);
    const csrf = await client.signIn('bob', MEMBER_PASSWORD);
    assert.equal((await client.get('/app/catalogue')).status, 403);
    assert.equal((await client.post('/app/catalogue/models/new', { csrf, id: 'x', provider: 'fake-vllm' })).status, 403);
  });

  test('a console provider and model reach /v1/models in this and another process within a second; the credential is encrypted at rest', async () => {
    const guarded = await startFakeOpenAI({ models: ['selfhosted-upstream'], apiKey: 'console-upstream-credential' });
    const second = await startSluice({ dataDir: sluice.dataDir, config: readFileSync(join(sluice.dataDir, 'sluice.yaml'), 'utf8'), args: ['--workers', '1'] });
    try {
      const client = new ConsoleClient(sluice.url);
      const csrf = await client.signIn('alice', ADMIN_PASSWORD);
      const bad = await client.post('/app/catalogue/providers/new', { csrf, id: 'gpu-box', kind: 'openai', base_url: 'not a url' });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /must be an http:\/\/ or https:\/\/ URL/);
      assert.equal((await query(sluice.dataDir, 'SELECT 1 FROM console_providers')).length, 0, 'nothing saved');
      const clash = await client.post('/app/catalogue/providers/new', { csrf, id: 'fake-vllm', kind: 'openai', base_url: guarded.url });
      assert.equal(clash.status, 400);
      assert.match(clash.text, /configuration file already declares a provider/);
      assert.equal((await client.get('/app/catalogue/providers/fake-vllm/edit')).status, 404, 'configuration entries are not edited here');

      const provider = await client.post('/app/catalogue/providers/new', { csrf, id: 'gpu-box', kind: 'openai', base_url: guarded.url, api_key: 'console-upstream-credential' });
      assert.equal(provider.status, 303, provider.text);
      const model = await client.post('/app/catalogue/models/new', {
        csrf, id: 'selfhosted-70b', provider: 'gpu-box', upstream_model: 'selfhosted-upstream', display_name: 'Self-hosted 70B',
        endpoints: 'completions', input_per_mtok: '0.5', output_per_mtok: '1.5', context_window: '32768',
      });
      assert.equal(model.status, 303, model.text);
      const registeredAt = Date.now();
      const { key } = await createKey(sluice.dataDir, 'acme');
      for (const url of [sluice.url, second.url]) {
        const openai = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
        await eventually(async () => ((await openai.models.list()).data.some((m) => m.id === 'selfhosted-70b') ? true : undefined), 1000, `selfhosted-70b on ${url}`);
        const completion = await openai.completions.create({ model: 'selfhosted-70b', prompt: 'hi', max_tokens: 2 });
        assert.equal(completion.choices[0]!.text, ' The quick');
      }
      assert.ok(Date.now() - registeredAt < 3000);
      assert.equal(guarded.requests.at(-1)!.headers.authorization, 'Bearer console-upstream-credential', 'the decrypted credential goes upstream');

      const stored = (await query<{ config: string; secrets: string }>(sluice.dataDir, "SELECT config, secrets FROM console_providers WHERE id = 'gpu-box'"))[0]!;
      assert.match(stored.secrets, /^v1\./);
      assert.ok(!stored.config.includes('console-upstream-credential') && !stored.secrets.includes('console-upstream-credential'));
      assert.equal(await storeContains(sluice.dataDir, 'console-upstream-credential'), false, 'the credential is nowhere in the store');
      // A credential written into a base URL (a user's password, a token parameter) is not shown either.
      const inUrl = await client.post('/app/catalogue/providers/new', { csrf, id: 'url-secret', kind: 'openai', base_url: 'http://ops:url-password@127.0.0.1:9/v1?token=url-token' });
      assert.equal(inUrl.status, 303, inUrl.text);
      const catalogue = (await client.get('/app/catalogue')).text;
      assert.doesNotMatch(catalogue, /console-upstream-credential|url-password|url-token/);
      assert.match(catalogue, /http:\/\/ops:\*\*\*@127\.0\.0\.1:9\/v1\?token=\*\*\*/);
      assert.equal((await client.post('/app/catalogue/providers/url-secret/delete', { csrf })).status, 303);
      const edit = (await client.get('/app/catalogue/providers/gpu-box/edit')).text;
      assert.doesNotMatch(edit, /console-upstream-credential/);
      assert.match(edit, /A key is set: leave blank to keep it/);

      // Editing without retyping the key keeps it; removing the model takes it out everywhere.
      assert.equal((await client.post('/app/catalogue/providers/gpu-box/edit', { csrf, kind: 'openai', base_url: guarded.url, max_connections: '8' })).status, 303);
      const price = await eventually(async () => ((await (await fetch(`${second.url}/models.json`)).json()) as any).data.find((m: any) => m.id === 'selfhosted-70b')?.pricing, 1000);
      assert.deepEqual(price, { input_per_mtok: 0.5, output_per_mtok: 1.5, currency: 'USD' });
      const openai = new OpenAI({ apiKey: key, baseURL: `${second.url}/v1`, maxRetries: 0 });
      await eventually(async () => {
        try {
          return (await openai.completions.create({ model: 'selfhosted-70b', prompt: 'hi', max_tokens: 1 })) && true;
        } catch {
          return undefined;
        }
      }, 1000, 'a completion after the edit');
      assert.equal(guarded.requests.at(-1)!.headers.authorization, 'Bearer console-upstream-credential');
      const inUse = await client.post('/app/catalogue/providers/gpu-box/delete', { csrf });
      assert.equal(inUse.status, 409);
      assert.match(inUse.text, /Models still use provider/);
      assert.equal((await client.post('/app/catalogue/models/selfhosted-70b/delete', { csrf })).status, 303);
      await eventually(async () => ((await openai.models.list()).data.some((m) => m.id === 'selfhosted-70b') ? undefined : true), 1000, 'the model to disappear');
      assert.equal((await client.post('/app/catalogue/providers/gpu-box/delete', { csrf })).status, 303);
    } finally {
      assert.equal(await second.stop(), 0);
      await guarded.close();
    }
  });
});

describe('public pages', () => {
  test('/models lists every model with its facts, searches and sorts without JavaScript, and serves JSON', async () => {
    const page = await fetch(`${sluice.url}/models`);
    assert.equal(page.status, 200);
    const text = await page.text();
    assert.match(text, /The list an API key gets from GET \/v1\/models depends on the key/);
    const llama = /<tr data-model="llama-8b">([\s\S]*?)<\/tr>/.exec(text)![1]!;
    assert.match(llama, /Llama 3\.1 8B/);
    assert.match(llama, /<td>meta<\/td>/);
    assert.match(llama, /131,072/);
    assert.match(llama, /4,096/);
    assert.match(llama, /price-in">\$0\.20/);
    assert.match(llama, /price-out">\$0\.60/);
    assert.match(llama, /\/v1\/completions/);
    const order = (html: string) => [...html.matchAll(/<tr data-model="([^"]+)">/g)].map((m) => m[1]);
    assert.deepEqual(order(await (await fetch(`${sluice.url}/models?q=llama`)).text()), ['llama-8b']);
    const byPrice = order(await (await fetch(`${sluice.url}/models?sort=input_price&dir=desc`)).text());
    assert.equal(byPrice[0], 'llama-8b', 'priced models first when sorting by price');
    assert.deepEqual(order(await (await fetch(`${sluice.url}/models?sort=id&dir=desc`)).text()), ['other-model', 'llama-8b', 'chat-only']);

    const json = (await (await fetch(`${sluice.url}/models`, { headers: { accept: 'application/json' } })).json()) as any;
    assert.match(json.note, /depends on the key/);
    assert.deepEqual(json.data.find((m: any) => m.id === 'llama-8b'), {
      id: 'llama-8b', display_name: 'Llama 3.1 8B', owned_by: 'meta', description: null, created: 1721692800, context_window: 131072,
      max_output_tokens: 4096, pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6, currency: 'USD' }, pricing_source: { kind: 'entry' }, operations: ['/v1/completions'],
      health: json.data.find((m: any) => m.id === 'llama-8b').health,
    });
    const detail = await fetch(`${sluice.url}/models/llama-8b`);
    assert.equal(detail.status, 200);
    assert.match(await detail.text(), /\$0\.20 per million tokens/);
    assert.equal((await fetch(`${sluice.url}/models/llama-8b?format=json`).then((r) => r.json()) as any).id, 'llama-8b');
    assert.equal((await fetch(`${sluice.url}/models/nope`)).status, 404);
  });

  test('/status shows a failing upstream as down, with error rate and latency from real traffic; probes are recorded but never billed', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await eventually(async () => ((await query(sluice.dataDir, "SELECT 1 FROM status_probes WHERE provider_id = 'fake-vllm' AND ok = 1")).length > 0 ? true : undefined), 5000, 'a probe');
    fake.behaviour = { fail: { status: 500, body: JSON.stringify({ error: { message: 'engine dead', type: 'InternalServerError', param: null, code: 500 } }) } };
    try {
      // More failures than successes so far (a disabled key keeps working for part of a second, so their number varies).
      const successes = (await sluice.ledger()).filter((row) => row.provider_id === 'fake-vllm' && row.status === 200).length;
      for (let i = 0; i < Math.max(4, successes + 1); i++) await assert.rejects(openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 }), OpenAI.InternalServerError);
      const status = await eventually(async () => {
        const body = (await (await fetch(`${sluice.url}/status.json`)).json()) as any;
        const provider = body.providers.find((p: any) => p.id === 'fake-vllm');
        // Each failing request is tried three times (routing), so its row lands a moment after the one before.
        return provider.status === 'down' && provider.last_hour.failures >= 4 ? body : undefined;
      }, 5000, 'the provider to show as down, with every failure counted');
      const provider = status.providers.find((p: any) => p.id === 'fake-vllm');
      assert.notEqual(status.status, 'up');
      assert.ok(provider.last_hour.error_rate >= 0.5, `error rate ${provider.last_hour.error_rate}`);
      assert.equal(typeof provider.last_hour.latency_ms.p95, 'number');
      assert.equal(provider.models.find((m: any) => m.id === 'llama-8b').status, 'down');
      assert.equal(provider.days.at(-1).date, new Date().toISOString().slice(0, 10));
      const page = await (await fetch(`${sluice.url}/status`)).text();
      assert.match(/<section class="card provider" data-provider="fake-vllm"[\s\S]*?<\/section>/.exec(page)![0], /pill-down">Down/);
      assert.equal([...page.matchAll(/class="bar bar-/g)].length % 90, 0, '90 daily bars per component');
    } finally {
      fake.behaviour = {};
    }
    const probes = fake.requests.filter((r) => r.body?.model === 'upstream-model' && r.body?.prompt === 'ping');
    assert.ok(probes.length > 0, 'the probe reached the upstream');
    const ledger = (await sluice.ledger());
    assert.ok(ledger.every((row) => !row.request_id.startsWith('probe-')), 'no probe is in the ledger');
  });

  test('public pages carry no secret and no account data', async () => {
    for (const path of ['/models', '/models.json', '/status', '/status.json', '/models/llama-8b']) {
      const text = await (await fetch(sluice.url + path)).text();
      assert.doesNotMatch(text, /upstream-secret-credential|console-upstream-credential/);
      assert.doesNotMatch(text, /alice|bob|acme|sk-[A-Za-z0-9]{10}/);
      assert.doesNotMatch(text, /127\.0\.0\.1:\d+\/v1/, 'no upstream address');
    }
  });
});

describe('catalogue: deployments and fallbacks in the console', () => {
  // A gateway of its own with one worker, so that /status.json reports the routing state of the
  // process that served the requests; two upstreams of its own, for the two deployments.
  let primary: FakeUpstream;
  let secondary: FakeUpstream;
  let fallback: FakeUpstream;
  let gateway: RunningSluice;
  let client: ConsoleClient;
  let csrf = '';
  const storedModel = (id: string) => query<{ provider_id: string; config: string }>(gateway.dataDir, 'SELECT provider_id, config FROM console_models WHERE id = ?', id);
  const fieldError = (page: string, name: string) => new RegExp(`<p class="field-error" id="f-${name}-err">([^<]*)</p>`).exec(page)?.[1];

  before(async () => {
    [primary, secondary, fallback] = await Promise.all([startFakeOpenAI({ models: ['a-upstream'] }), startFakeOpenAI({ models: ['b-upstream'] }), startFakeOpenAI()]);
    const dataDir = tempDir();
    await createAccount(dataDir, 'alice', ADMIN_PASSWORD, true);
    gateway = await startSluice({ dataDir, config: configFor(fallback.url), args: ['--workers', '1'] });
    client = new ConsoleClient(gateway.url);
    csrf = await client.signIn('alice', ADMIN_PASSWORD);
    for (const [id, upstream] of [['route-a', primary], ['route-b', secondary]] as const) {
      const saved = await client.post('/app/catalogue/providers/new', { csrf, id, kind: 'openai', base_url: upstream.url });
      assert.equal(saved.status, 303, saved.text);
    }
  });
  after(async () => {
    if (gateway) assert.equal(await gateway.stop(), 0);
    await Promise.all([primary?.close(), secondary?.close(), fallback?.close()]);
  });

  test('a model with two deployments and a fallback, registered through the form, is served, listed and shown with its deployments', async () => {
    const form = (await client.get('/app/catalogue/models/new')).text;
    assert.match(form, /<label for="f-deployments">More deployments/);
    assert.match(form, /<textarea id="f-deployments" name="deployments"[^>]* aria-describedby="f-deployments-hint"/);
    assert.match(form, /<p class="hint" id="f-deployments-hint">[^]*<code>provider \[upstream_model\] \[weight=N\] \[priority=N\] \[upstream_api=completions\|chat\|responses\]<\/code>/);
    assert.match(form, /<input id="f-fallbacks" name="fallbacks"/);

    const saved = await client.post('/app/catalogue/models/new', {
      csrf, id: 'routed-70b', provider: 'route-a', upstream_model: 'a-upstream', deployments: 'route-b b-upstream weight=3 priority=1\n', fallbacks: 'llama-8b', endpoints: 'completions',
    });
    assert.equal(saved.status, 303, saved.text);
    const [row] = (await storedModel('routed-70b'));
    assert.equal(row!.provider_id, 'route-a', 'the provider column is the first deployment’s');
    const config = JSON.parse(row!.config);
    assert.deepEqual(config.deployments, [
      { provider: 'route-a', upstream_model: 'a-upstream', weight: 1, priority: 0 },
      { provider: 'route-b', upstream_model: 'b-upstream', weight: 3, priority: 1 },
    ]);
    assert.deepEqual(config.fallbacks, ['llama-8b']);
    assert.equal(config.provider, undefined);

    const { key } = await createKey(gateway.dataDir, 'acme');
    const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    await eventually(async () => ((await openai.models.list()).data.some((m) => m.id === 'routed-70b') ? true : undefined), 1000, 'routed-70b on /v1/models');
    const completion = await openai.completions.create({ model: 'routed-70b', prompt: 'hi', max_tokens: 2 });
    assert.equal(completion.choices[0]!.text, ' The quick');
    assert.equal(primary.requests.at(-1)!.body.model, 'a-upstream', 'priority 0 first');
    assert.equal(secondary.requests.length, 0);

    const listed = (await client.get('/app/catalogue')).text;
    const tableRow = new RegExp('<tr data-model="routed-70b">([\\s\\S]*?)</tr>').exec(listed)![1]!;
    assert.match(tableRow, /<li><code>route-a\/a-upstream<\/code><\/li>/, 'defaults are not spelled out');
    assert.match(tableRow, /<li><code>route-b\/b-upstream<\/code> <span class="muted small">weight 3, priority 1<\/span><\/li>/);
    assert.match(tableRow, /<td><code>llama-8b<\/code><\/td>/, 'the fallbacks column');

    const status = (await (await fetch(`${gateway.url}/status.json`)).json()) as any;
    const model = status.providers.find((p: any) => p.id === 'route-a').models.find((m: any) => m.id === 'routed-70b');
    assert.equal(model.deployments.length, 2);
    assert.deepEqual(model.deployments.map((d: any) => [d.provider, d.upstream_model, d.state]), [['route-a', 'a-upstream', 'up'], ['route-b', 'b-upstream', 'up']]);
    assert.equal(typeof model.deployments[0].latency_ms, 'number', 'route-a answered');
    assert.equal(model.deployments[1].latency_ms, null, 'route-b has had no request');
    const page = (await (await fetch(`${gateway.url}/status`)).text());
    const rows = [...page.matchAll(/<tr data-deployment-of="routed-70b" data-deployment="([^"]+)">([\s\S]*?)<\/tr>/g)];
    assert.deepEqual(rows.map((r) => r[1]), ['route-a/a-upstream', 'route-b/b-upstream']);
    assert.match(rows[0]![2]!, /<span class="pill pill-up">Routable<\/span><\/td><td class="num">\d[\d,]* ms<\/td>/);
    assert.match(rows[1]![2]!, /<span class="pill pill-up">Routable<\/span><\/td><td class="num">—<\/td>/);
    assert.match(page, /<caption>Deployments: where requests are routed now<\/caption>\s*<thead><tr><th scope="col">Model<\/th><th scope="col">Deployment<\/th><th scope="col">Router \(this process\)<\/th><th scope="col" class="num">Live latency<\/th>/);

    // Both deployments failing: the fallback registered in the form answers, and /status says how each deployment fares.
    const dead = { fail: { status: 503, body: '{"error":{"message":"overloaded","type":"ServiceUnavailableError","param":null,"code":503}}' } };
    primary.behaviour = dead;
    secondary.behaviour = dead;
    try {
      const rescued = await openai.completions.create({ model: 'routed-70b', prompt: 'hi', max_tokens: 3 });
      assert.equal(rescued.choices[0]!.text, ' The quick brown');
      assert.equal(fallback.requests.at(-1)!.body.model, 'upstream-model', 'llama-8b’s upstream served it');
      assert.equal(secondary.requests.at(-1)!.body.model, 'b-upstream', 'the second deployment was tried before the fallback');
    } finally {
      primary.behaviour = {};
      secondary.behaviour = {};
    }
    const degraded = await eventually(async () => {
      const text = await (await fetch(`${gateway.url}/status`)).text();
      return /data-deployment="route-b\/b-upstream">[\s\S]*?pill-degraded">Routable, recent failures</.test(text) ? text : undefined;
    }, 3000, 'the failed deployment shown as degraded');
    assert.match(/<tr data-deployment-of="routed-70b" data-deployment="route-b\/b-upstream">([\s\S]*?)<\/tr>/.exec(degraded)![1]!, /<td class="num">\d[\d,]* ms<\/td>/, 'a failure gives it a latency');
  });

  test('a malformed deployment line, an unknown provider on a line and an unknown fallback are refused on their fields, by line, and nothing is saved', async () => {
    const attempt = (fields: Record<string, string>) =>
      client.post('/app/catalogue/models/new', { csrf, id: 'refused-model', provider: 'route-a', upstream_model: 'a-upstream', endpoints: 'completions', ...fields });
    const cases: [fields: Record<string, string>, field: string, message: RegExp][] = [
      [{ deployments: 'route-b b-upstream weight=heavy' }, 'deployments', /^line 1: weight must be a number$/],
      [{ deployments: 'route-b b-upstream\nroute-b colour=blue' }, 'deployments', /^line 2: unknown attribute &#39;colour&#39; \(use weight=, priority= or upstream_api=\)$/],
      [{ deployments: 'route-b b-upstream priority=1.5' }, 'deployments', /^line 1: priority must be a whole number$/],
      // From the admin: deployments.2 is the second line typed, which is the textarea's third.
      [{ deployments: 'route-b b-upstream\n\nnowhere some-model' }, 'deployments', /^line 3, provider: no provider has the id &#39;nowhere&#39;$/],
      [{ deployments: 'route-b weight=0' }, 'deployments', /^line 1, weight: .*&gt;0$/],
      [{ deployments: 'route-b b-upstream upstream_api=grpc' }, 'deployments', /^line 1, upstream_api: /],
      [{ deployments: 'route-b b-upstream', provider: 'ghost' }, 'provider', /^no provider has the id &#39;ghost&#39;$/],
      [{ fallbacks: 'llama-8b, no-such-model' }, 'fallbacks', /^no model has the id &#39;no-such-model&#39;$/],
      [{ deployments: 'route-b', fallbacks: 'refused-model' }, 'fallbacks', /^a model cannot fall back to itself$/],
    ];
    for (const [fields, field, message] of cases) {
      const refused = await attempt(fields);
      const label = JSON.stringify(fields);
      assert.equal(refused.status, 400, label);
      assert.match(fieldError(refused.text, field) ?? '(no error on the field)', message, label);
      for (const other of ['deployments', 'provider', 'fallbacks'].filter((name) => name !== field)) assert.equal(fieldError(refused.text, other), undefined, `${label}: no error on ${other}`);
      assert.match(refused.text, new RegExp(`<div class="notice notice-error" role="alert"><p>Nothing was saved:</p><ul><li><code>${field}</code>: `), `${label}: in the summary`);
      if (field !== 'provider') assert.match(refused.text, new RegExp(`<(?:textarea|input) id="f-${field}" [^>]*aria-describedby="f-${field}-hint f-${field}-err" aria-invalid="true"`), `${label}: wired to the field`);
      // What was typed comes back, in an open section.
      if (fields.deployments !== undefined) assert.equal(ConsoleClient.formFields(refused.text, '/app/catalogue/models/new').deployments, fields.deployments, label);
      assert.match(refused.text, /<details open>\s*<summary>More deployments and fallbacks/, label);
      assert.equal((await storedModel('refused-model')).length, 0, `${label}: nothing saved`);
    }
  });

  test('editing fills the form back with the deployments and fallbacks, and saving it unchanged keeps them', async () => {
    const action = '/app/catalogue/models/routed-70b/edit';
    const edit = await client.get(action);
    assert.equal(edit.status, 200);
    const fields = ConsoleClient.formFields(edit.text, action);
    assert.equal(fields.provider, 'route-a');
    assert.equal(fields.upstream_model, 'a-upstream');
    assert.equal(fields.deployments, 'route-b b-upstream weight=3 priority=1');
    assert.equal(fields.fallbacks, 'llama-8b');
    assert.match(edit.text, /<details open>\s*<summary>More deployments and fallbacks/);

    const more = 'route-b b-upstream weight=3 priority=1\nroute-a spare-upstream weight=1 priority=2 upstream_api=chat\nroute-b weight=0.5 priority=0';
    const changed = await client.post(action, { ...fields, display_name: 'Routed 70B', deployments: more, fallbacks: 'llama-8b other-model' });
    assert.equal(changed.status, 303, changed.text);
    const before = JSON.parse((await storedModel('routed-70b'))[0]!.config);
    assert.equal(before.display_name, 'Routed 70B');
    assert.deepEqual(before.fallbacks, ['llama-8b', 'other-model']);
    const refilled = ConsoleClient.formFields((await client.get(action)).text, action);
    assert.equal(refilled.deployments, 'route-b b-upstream weight=3 priority=1\nroute-a spare-upstream priority=2 upstream_api=chat\nroute-b weight=0.5', 'only attributes that are not the defaults');
    assert.equal(refilled.fallbacks, 'llama-8b, other-model');
    assert.equal((await client.post(action, refilled)).status, 303);
    const afterSave = JSON.parse((await storedModel('routed-70b'))[0]!.config);
    assert.deepEqual(afterSave, before, 'saving the form as filled changes nothing');
    assert.deepEqual(afterSave.deployments.map((d: any) => [d.provider, d.upstream_model, d.weight, d.priority, d.upstream_api]), [
      ['route-a', 'a-upstream', 1, 0, undefined],
      ['route-b', 'b-upstream', 3, 1, undefined],
      ['route-a', 'spare-upstream', 1, 2, 'chat'],
      ['route-b', undefined, 0.5, 0, undefined],
    ]);

    // Emptying the lines returns the model to the one-deployment short form.
    const single = await client.post(action, { ...refilled, deployments: '', fallbacks: '' });
    assert.equal(single.status, 303, single.text);
    const short = JSON.parse((await storedModel('routed-70b'))[0]!.config);
    assert.equal(short.deployments, undefined);
    assert.equal(short.upstream_model, 'a-upstream');
    assert.equal(short.fallbacks, undefined);
    assert.equal((await storedModel('routed-70b'))[0]!.provider_id, 'route-a');
    // And back, through the same form.
    assert.equal((await client.post(action, refilled)).status, 303);
    assert.deepEqual(JSON.parse((await storedModel('routed-70b'))[0]!.config), before);
  });

  test('the model form offers every operation and prices in every unit: an embedding model priced by its input, an image model by the image', async () => {
    const form = (await client.get('/app/catalogue/models/new')).text;
    for (const endpoint of ['completions', 'chat', 'responses', 'embeddings', 'rerank', 'images', 'transcriptions', 'speech', 'moderations']) {
      assert.match(form, new RegExp(`<input type="checkbox" name="endpoints" value="${endpoint}"( checked)?> `), endpoint);
    }
    for (const unit of ['input_per_mtok', 'output_per_mtok', 'cached_input_per_mtok', 'cache_write_per_mtok', 'per_image', 'per_audio_minute', 'per_mchar', 'per_request']) {
      assert.match(form, new RegExp(`<input id="f-${unit}" name="${unit}" type="number"`), unit);
    }

    const embedder = await client.post('/app/catalogue/models/new', { csrf, id: 'console-embedder', provider: 'route-a', upstream_model: 'bge-m3', endpoints: 'embeddings', input_per_mtok: '0.01' });
    assert.equal(embedder.status, 303, embedder.text);
    const painter = await client.post('/app/catalogue/models/new', { csrf, id: 'console-painter', provider: 'route-a', endpoints: ['images'], per_image: '0.04', per_request: '0.001' });
    assert.equal(painter.status, 303, painter.text);
    assert.deepEqual(JSON.parse((await storedModel('console-painter'))[0]!.config).pricing, { per_image: 0.04, per_request: 0.001 });
    const listed = await eventually(async () => {
      const data = ((await (await fetch(`${gateway.url}/models.json`)).json()) as any).data as any[];
      return data.some((m) => m.id === 'console-painter') ? data : undefined;
    }, 2000, 'the console models listed');
    const byId = new Map(listed.map((m) => [m.id, m]));
    assert.deepEqual(byId.get('console-embedder').pricing, { input_per_mtok: 0.01, currency: 'USD' });
    assert.deepEqual(byId.get('console-embedder').operations, ['/v1/embeddings', '/v1beta/models/{model}:embedContent', '/v1beta/models/{model}:batchEmbedContents']);
    assert.deepEqual(byId.get('console-painter').pricing, { per_image: 0.04, per_request: 0.001, currency: 'USD' });
    assert.deepEqual(byId.get('console-painter').operations, ['/v1/images/generations', '/v1/images/edits']);

    const catalogue = (await client.get('/app/catalogue')).text;
    const row = /<tr data-model="console-painter">[\s\S]*?<\/tr>/.exec(catalogue)![0];
    assert.match(row, /<td>images<\/td><td class="prices">\$0\.04 per image<br>\$0\.001 per request<\/td>/);
    assert.match(/<tr data-model="console-embedder">[\s\S]*?<\/tr>/.exec(catalogue)![0], /<td class="prices">\$0\.01 per 1M input tokens<\/td>/);

    // Editing fills the prices and the operations back; saving unchanged keeps them.
    const action = '/app/catalogue/models/console-painter/edit';
    const fields = ConsoleClient.formFields((await client.get(action)).text, action);
    assert.deepEqual([fields.endpoints, fields.per_image, fields.per_request, fields.input_per_mtok], ['images', '0.04', '0.001', '']);
    assert.equal((await client.post(action, fields)).status, 303);
    assert.deepEqual(JSON.parse((await storedModel('console-painter'))[0]!.config).pricing, { per_image: 0.04, per_request: 0.001 });

    // A bad price is refused on its own field, a cache price without the input price on its own, and nothing is saved.
    const negative = await client.post('/app/catalogue/models/new', { csrf, id: 'refused-priced', provider: 'route-a', endpoints: 'images', per_image: '-1' });
    assert.equal(negative.status, 400);
    assert.match(fieldError(negative.text, 'per_image') ?? '(no error on the field)', /&gt;=0/);
    const cacheOnly = await client.post('/app/catalogue/models/new', { csrf, id: 'refused-priced', provider: 'route-a', endpoints: 'chat', cached_input_per_mtok: '0.1' });
    assert.equal(cacheOnly.status, 400);
    assert.equal(fieldError(cacheOnly.text, 'cached_input_per_mtok'), 'needs input_per_mtok beside it');
    const text = await client.post('/app/catalogue/models/new', { csrf, id: 'refused-priced', provider: 'route-a', endpoints: 'images', per_image: 'cheap' });
    assert.equal(fieldError(text.text, 'per_image'), 'must be a number');
    assert.equal((await storedModel('refused-priced')).length, 0, 'nothing saved');
    for (const id of ['console-embedder', 'console-painter']) assert.equal((await client.post(`/app/catalogue/models/${id}/delete`, { csrf })).status, 303);
  });

  test('the blank model form ticks chat and legacy completions, and a model registered as it comes answers both', async () => {
    const blank = ConsoleClient.formFields((await client.get('/app/catalogue/models/new')).text, '/app/catalogue/models/new');
    assert.deepEqual(blank.endpoints, ['completions', 'chat'], 'the same defaults as a model written without endpoints');
    const saved = await client.post('/app/catalogue/models/new', { ...blank, csrf, id: 'as-it-comes', provider: 'route-a', upstream_model: 'a-upstream' });
    assert.equal(saved.status, 303, saved.text);
    assert.deepEqual(JSON.parse((await storedModel('as-it-comes'))[0]!.config).endpoints, ['completions', 'chat']);

    const openai = new OpenAI({ apiKey: (await createKey(gateway.dataDir, 'form-defaults')).key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const chat = await eventually(async () => {
      try {
        return await openai.chat.completions.create({ model: 'as-it-comes', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 });
      } catch (error) {
        if (error instanceof OpenAI.NotFoundError) return undefined; // not yet in this process's catalogue
        throw error;
      }
    }, 2000, 'the registered model to be served');
    assert.equal(chat.object, 'chat.completion');
    assert.equal(primary.requests.at(-1)!.path, '/v1/chat/completions');
    const legacy = await openai.completions.create({ model: 'as-it-comes', prompt: 'Say hi', max_tokens: 3 });
    assert.equal(legacy.object, 'text_completion');
    assert.equal(primary.requests.at(-1)!.path, '/v1/completions');
    assert.equal((await client.post('/app/catalogue/models/as-it-comes/delete', { csrf })).status, 303);
  });

  test('a provider that only a second deployment uses cannot be removed, and the page says which model holds it', async () => {
    const confirm = await client.get('/app/catalogue/providers/route-b/delete');
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /Still used by the model <code>routed-70b<\/code>/);
    assert.doesNotMatch(confirm.text, /<button type="submit" class="btn btn-danger">Remove provider/, 'no button to press');
    const refused = await client.post('/app/catalogue/providers/route-b/delete', { csrf });
    assert.equal(refused.status, 409);
    assert.match(refused.text, /role="alert">Not removed: Models still use provider &#39;route-b&#39; \(routed-70b\)/);
    assert.equal((await query(gateway.dataDir, "SELECT 1 FROM console_providers WHERE id = 'route-b'")).length, 1, 'still there');

    assert.equal((await client.post('/app/catalogue/models/routed-70b/delete', { csrf })).status, 303);
    assert.match((await client.get('/app/catalogue/providers/route-b/delete')).text, /<button type="submit" class="btn btn-danger">Remove provider/);
    assert.equal((await client.post('/app/catalogue/providers/route-b/delete', { csrf })).status, 303);
    assert.equal((await query(gateway.dataDir, "SELECT 1 FROM console_providers WHERE id = 'route-b'")).length, 0);
  });
});
