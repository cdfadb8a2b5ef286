import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { cliWithInput, ConsoleClient, createAccount } from './support/console.js';
import { cli, configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore, storeContains } from './support/store.js';

const ADMIN_PASSWORD = 'admin-password-1';

let fake: FakeUpstream;
let sluice: RunningSluice;
let admin: ConsoleClient;
let csrf: string;

before(async () => {
  fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'root', ADMIN_PASSWORD, true);
  sluice = await startSluice({ dataDir, config: configFor(fake.url) });
  admin = new ConsoleClient(sluice.url);
  csrf = await admin.signIn('root', ADMIN_PASSWORD);
});
after(async () => {
  assert.equal(await sluice.stop(), 0);
  await fake.close();
});

/** The one-time link on the page shown after it is made. */
function linkOn(page: string): string {
  const match = /<code id="sign-in-link"[^>]*>([^<]+)<\/code>/.exec(page);
  assert.ok(match, 'the page shows the link');
  return match[1]!;
}

async function accountRow(name: string): Promise<{ is_admin: number; disabled: number; password_hash: string | null } | undefined> {
  const rows = await queryStore<{ is_admin: number; disabled: number; password_hash: string | null }>(sluice.dataDir, 'SELECT is_admin, disabled, password_hash FROM accounts WHERE name = ?', [name]);
  return rows[0];
}

/** Sets a password through a one-time link, as its holder's browser does. */
async function useLink(url: string, password: string): Promise<{ client: ConsoleClient; status: number }> {
  const client = new ConsoleClient(sluice.url);
  const path = new URL(url).pathname;
  const form = await client.get(path);
  if (form.status !== 200) return { client, status: form.status };
  const response = await client.post(path, { ...ConsoleClient.formFields(form.text, path), password, confirm: password });
  return { client, status: response.status };
}

describe('the accounts page', () => {
  test('lists accounts with role, status, console access and keys; members are refused', async () => {
    await createKey(sluice.dataDir, 'keyholder');
    const page = await admin.get('/app/accounts');
    assert.equal(page.status, 200);
    assert.match(page.text, /<tr data-account="keyholder">[\s\S]*?member[\s\S]*?active[\s\S]*?<td><span class="muted">no<\/span><\/td>[\s\S]*?href="\/app\/keys\?account=keyholder">1</);
    assert.match(page.text, /<tr data-account="root">[\s\S]*?\(you\)[\s\S]*?admin/);
    assert.match(page.text, /<a href="\/app\/accounts" aria-current="page">Accounts<\/a>/, 'in the admins’ navigation');

    await createAccount(sluice.dataDir, 'member', 'member-password-1');
    const member = new ConsoleClient(sluice.url);
    const memberCsrf = await member.signIn('member', 'member-password-1');
    assert.doesNotMatch((await member.get('/app/keys')).text, /href="\/app\/accounts"/, 'no Accounts link for a member');
    assert.equal((await member.get('/app/accounts')).status, 403);
    assert.equal((await member.post('/app/accounts', { csrf: memberCsrf, name: 'sneaky', method: 'password', password: 'sneaky-password', confirm: 'sneaky-password' })).status, 403);
    assert.equal((await member.post('/app/accounts/member/admin', { csrf: memberCsrf })).status, 403);
    assert.equal((await accountRow('member'))!.is_admin, 0);
    assert.equal(await accountRow('sneaky'), undefined);
  });

  test('create with an initial password: it signs in; bad input changes nothing and says why', async () => {
    const bad = [
      [{ name: 'pat', method: 'password', password: 'short', confirm: 'short' }, /at least 8 characters/],
      [{ name: 'pat', method: 'password', password: 'long-enough-1', confirm: 'long-enough-2' }, /two passwords are not the same/],
      [{ name: 'has space', method: 'password', password: 'long-enough-1', confirm: 'long-enough-1' }, /name/i],
      [{ name: 'root', method: 'password', password: 'long-enough-1', confirm: 'long-enough-1' }, /can already sign in/],
    ] as const;
    for (const [fields, message] of bad) {
      const refused = await admin.post('/app/accounts', { csrf, ...fields });
      assert.equal(refused.status, 400, fields.name);
      assert.match(refused.text, message);
      assert.match(refused.text, new RegExp(`value="${fields.name}"`), 'what was typed is kept');
    }
    assert.equal(await accountRow('pat'), undefined);
    assert.equal(await accountRow('has space'), undefined);

    const made = await admin.post('/app/accounts', { csrf, name: 'pat', method: 'password', password: 'pat-password-1', confirm: 'pat-password-1' });
    assert.equal(made.status, 303);
    assert.match((await admin.get(made.headers.get('location')!)).text, /Account “pat” created/);
    assert.match((await accountRow('pat'))!.password_hash!, /^scrypt\$/);
    assert.equal(await storeContains(sluice.dataDir, 'pat-password-1'), false);
    assert.equal((await new ConsoleClient(sluice.url).login('pat', 'pat-password-1')).status, 303);
  });

  test('a password typed with the link option selected is used, never dropped for a link; the page says which', async () => {
    const mismatched = await admin.post('/app/accounts', { csrf, name: 'typist', method: 'link', password: 'typist-password-1', confirm: 'typist-password-2' });
    assert.equal(mismatched.status, 400);
    assert.match(mismatched.text, /two passwords are not the same/);
    assert.match(mismatched.text, /<input type="radio" name="method" value="password" checked>/, 'the form shows the password option chosen');
    assert.equal(await accountRow('typist'), undefined);

    const made = await admin.post('/app/accounts', { csrf, name: 'typist', method: 'link', password: 'typist-password-1', confirm: 'typist-password-1' });
    assert.equal(made.status, 303, 'no sign-in link page');
    assert.match((await admin.get(made.headers.get('location')!)).text, /Account “typist” created with the password you typed \(no sign-in link\)/);
    assert.equal((await queryStore(sluice.dataDir, 'SELECT 1 FROM sign_in_links WHERE account_id = (SELECT id FROM accounts WHERE name = ?)', ['typist'])).length, 0, 'no link made');
    assert.equal((await new ConsoleClient(sluice.url).login('typist', 'typist-password-1')).status, 303);

    const reset = await admin.post('/app/accounts/typist/password', { csrf, method: 'link', password: 'typist-password-2', confirm: 'typist-password-2' });
    assert.equal(reset.status, 303, 'no sign-in link page');
    assert.match((await admin.get(reset.headers.get('location')!)).text, /The password of “typist” is changed to the one you typed/);
    assert.equal((await new ConsoleClient(sluice.url).login('typist', 'typist-password-2')).status, 303);
  });

  test('create with a one-time link: shown once as a full URL, stored as a hash, works once, not after expiry', async () => {
    const made = await admin.post('/app/accounts', { csrf, name: 'linda', admin: '1', method: 'link', password: '', confirm: '' });
    assert.equal(made.status, 200);
    const link = linkOn(made.text);
    assert.match(link, new RegExp(`^${sluice.url}/app/sign-in/[A-Za-z0-9_-]{43}$`));
    const token = link.slice(link.lastIndexOf('/') + 1);
    assert.equal(await storeContains(sluice.dataDir, token), false, 'only a hash of the token is stored');
    assert.equal((await accountRow('linda'))!.password_hash, null);
    assert.match((await admin.get('/app/accounts')).text, /<tr data-account="linda">[\s\S]*?link sent/);
    assert.equal((await new ConsoleClient(sluice.url).login('linda', '')).status, 401);

    const mismatch = new ConsoleClient(sluice.url);
    const form = await mismatch.get(`/app/sign-in/${token}`);
    assert.match(form.text, /Welcome, linda/);
    const wrong = await mismatch.post(`/app/sign-in/${token}`, { password: 'linda-password-1', confirm: 'other' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /not the same/);

    const first = await useLink(link, 'linda-password-1');
    assert.equal(first.status, 303, 'the link sets the password and signs in');
    assert.match((await first.client.get('/app/accounts')).text, /<h1>Accounts<\/h1>/, 'signed in, as an admin');
    const second = await useLink(link, 'other-password-2');
    assert.equal(second.status, 410, 'used once, not twice');
    assert.equal((await new ConsoleClient(sluice.url).login('linda', 'linda-password-1')).status, 303);
    assert.equal((await new ConsoleClient(sluice.url).login('linda', 'other-password-2')).status, 401);

    const later = linkOn((await admin.post('/app/accounts', { csrf, name: 'late', method: 'link' })).text);
    await queryStore(sluice.dataDir, 'UPDATE sign_in_links SET expires_at = ? WHERE account_id = (SELECT id FROM accounts WHERE name = ?)', [Date.now() - 1, 'late']);
    assert.equal((await useLink(later, 'late-password-1')).status, 410, 'an expired link is refused');
    assert.equal((await accountRow('late'))!.password_hash, null);
  });

  test('make admin and remove admin; nobody demotes or disables themself; the last enabled admin stays', async () => {
    assert.equal((await admin.post('/app/accounts/pat/admin', { csrf })).status, 303);
    assert.equal((await accountRow('pat'))!.is_admin, 1);
    const pat = new ConsoleClient(sluice.url);
    await pat.signIn('pat', 'pat-password-1');
    assert.equal((await pat.get('/app/accounts')).status, 200, 'pat is an admin now');
    assert.equal((await admin.post('/app/accounts/pat/member', { csrf })).status, 303);
    assert.equal((await pat.get('/app/accounts')).status, 403, 'and no longer');

    for (const change of ['member', 'disable']) {
      const self = await admin.post(`/app/accounts/root/${change}`, { csrf });
      assert.equal(self.status, 409);
      assert.match(self.text, /You cannot (remove your own admin rights|disable your own account)/);
    }
    // Without a console actor (the CLI), the last enabled admins are still kept: linda and root are the admins now.
    assert.equal((await cli(['accounts', 'disable', 'linda', '--data', sluice.dataDir])).code, 0);
    const last = await cli(['accounts', 'disable', 'root', '--data', sluice.dataDir]);
    assert.equal(last.code, 1);
    assert.match(last.stderr, /'root' is the last enabled admin/);
    assert.deepEqual(await accountRow('root'), { ...(await accountRow('root'))!, is_admin: 1, disabled: 0 });
    assert.equal((await cli(['accounts', 'enable', 'linda', '--data', sluice.dataDir])).code, 0);
  });

  test('disable: sign-in refused, sessions end, API keys refused with 403; enable restores', async () => {
    await createAccount(sluice.dataDir, 'dora', 'dora-password-1');
    const { key } = await createKey(sluice.dataDir, 'dora');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    assert.equal((await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 2 })).object, 'text_completion');
    const dora = new ConsoleClient(sluice.url);
    await dora.signIn('dora', 'dora-password-1');

    assert.equal((await admin.post('/app/accounts/dora/disable', { csrf: 'not-the-token' })).status, 403, 'CSRF refused');
    assert.equal((await admin.post('/app/accounts/dora/disable', { csrf }, { origin: 'https://evil.example' })).status, 403, 'another origin refused');
    assert.equal((await accountRow('dora'))!.disabled, 0, 'nothing changed');

    const done = await admin.post('/app/accounts/dora/disable', { csrf });
    assert.equal(done.status, 303);
    assert.match((await admin.get(done.headers.get('location')!)).text, /“dora” is disabled/);
    assert.equal((await dora.get('/app/keys')).status, 303, 'its session has ended');
    const refused = await new ConsoleClient(sluice.url).login('dora', 'dora-password-1');
    assert.equal(refused.status, 403);
    assert.match(refused.text, /account is disabled/);
    const error = await eventually(async () => {
      try {
        await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 });
        return undefined;
      } catch (thrown) {
        return thrown;
      }
    }, 2000, 'the key refused');
    assert.ok(error instanceof OpenAI.PermissionDeniedError, String(error));
    assert.equal(error.status, 403);
    assert.match(error.message, /account of this API key is disabled/);

    assert.equal((await admin.post('/app/accounts/dora/enable', { csrf })).status, 303);
    await eventually(async () => {
      try {
        return (await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 })).object;
      } catch {
        return undefined;
      }
    }, 2000, 'the key accepted again');
    assert.equal((await new ConsoleClient(sluice.url).login('dora', 'dora-password-1')).status, 303);
  });

  test('reset a password: set one or issue a new link; the old password and every session end', async () => {
    const before = new ConsoleClient(sluice.url);
    await before.signIn('dora', 'dora-password-1');
    const page = await admin.get('/app/accounts/dora/password');
    assert.equal(page.status, 200);
    assert.equal((await admin.post('/app/accounts/dora/password', { csrf, method: 'password', password: 'x', confirm: 'x' })).status, 400);
    assert.equal((await before.get('/app/keys')).status, 200, 'a refused reset changes nothing');
    const set = await admin.post('/app/accounts/dora/password', { csrf, method: 'password', password: 'dora-password-2', confirm: 'dora-password-2' });
    assert.equal(set.status, 303);
    assert.equal((await before.get('/app/keys')).status, 303, 'the old session has ended');
    assert.equal((await new ConsoleClient(sluice.url).login('dora', 'dora-password-1')).status, 401);
    const current = new ConsoleClient(sluice.url);
    await current.signIn('dora', 'dora-password-2');

    const link = linkOn((await admin.post('/app/accounts/dora/password', { csrf, method: 'link' })).text);
    assert.equal((await current.get('/app/keys')).status, 303, 'a new link ends the sessions too');
    assert.equal((await new ConsoleClient(sluice.url).login('dora', 'dora-password-2')).status, 401, 'and the old password');
    assert.equal((await useLink(link, 'dora-password-3')).status, 303);
  });
});

describe('accounts on the command line', () => {
  test('create --sign-in-link prints the link once; list shows every account; disable and enable', async () => {
    const noUrl = await cli(['accounts', 'create', 'cli-user', '--sign-in-link', '--data', sluice.dataDir]);
    assert.equal(noUrl.code, 0, noUrl.stderr);
    const path = noUrl.stdout.trim().split('\n').at(-1)!;
    assert.match(path, /^\/app\/sign-in\/[A-Za-z0-9_-]{43}$/);
    assert.match(noUrl.stderr, /console's address in front/);
    assert.equal((await useLink(sluice.url + path, 'cli-user-password')).status, 303);

    const withUrl = await cli(['accounts', 'create', 'cli-two', '--admin', '--sign-in-link', '--url', 'https://llm.example.com/', '--data', sluice.dataDir]);
    assert.equal(withUrl.code, 0, withUrl.stderr);
    assert.match(withUrl.stdout.trim().split('\n').at(-1)!, /^https:\/\/llm\.example\.com\/app\/sign-in\/[A-Za-z0-9_-]{43}$/);
    const both = await cliWithInput(['accounts', 'create', 'cli-three', '--password-stdin', '--sign-in-link', '--data', sluice.dataDir], 'long-enough-pw\n');
    assert.equal(both.code, 1);
    assert.match(both.stderr, /either --password-stdin or --sign-in-link/);

    assert.equal((await cli(['accounts', 'disable', 'cli-user', '--data', sluice.dataDir])).code, 0);
    const list = await cli(['accounts', 'list', '--json', '--data', sluice.dataDir]);
    assert.equal(list.code, 0, list.stderr);
    const accounts = JSON.parse(list.stdout) as { name: string; admin: boolean; status: string; console_access: boolean; keys: number }[];
    assert.deepEqual(accounts.find((a) => a.name === 'cli-user'), { ...accounts.find((a) => a.name === 'cli-user')!, admin: false, status: 'disabled', console_access: true, keys: 0 });
    assert.deepEqual(accounts.find((a) => a.name === 'keyholder'), { ...accounts.find((a) => a.name === 'keyholder')!, status: 'active', console_access: false, keys: 1 });
    assert.equal(accounts.find((a) => a.name === 'cli-two')!.admin, true);
    const table = await cli(['accounts', 'list', '--data', sluice.dataDir]);
    assert.match(table.stdout, /^NAME\s+ADMIN\s+STATUS\s+CONSOLE/);
    assert.match(table.stdout, /\ncli-user\s+no\s+disabled\s+yes/);
    assert.equal((await new ConsoleClient(sluice.url).login('cli-user', 'cli-user-password')).status, 403);
    assert.equal((await cli(['accounts', 'enable', 'cli-user', '--data', sluice.dataDir])).code, 0);
    assert.equal((await new ConsoleClient(sluice.url).login('cli-user', 'cli-user-password')).status, 303);
  });
});

describe('public pages, favicon', () => {
  test('/models, a model page and /status know a signed-in visitor, and are then not cached for others', async () => {
    const anonymous = new ConsoleClient(sluice.url);
    for (const path of ['/models', '/models/llama-8b', '/status']) {
      const open = await anonymous.get(path);
      assert.equal(open.status, 200, path);
      assert.match(open.text, /<a class="signin" href="\/app\/login">Sign in<\/a>/, path);
      assert.doesNotMatch(open.text, /Signed in as/);
      assert.equal(open.headers.get('cache-control'), 'no-cache');
      assert.equal(open.headers.get('vary'), 'Cookie');

      const mine = await admin.get(path);
      assert.match(mine.text, /Signed in as <strong>root<\/strong> \(admin\)/, path);
      assert.match(mine.text, /<a href="\/app\/keys">Console<\/a>/);
      assert.match(mine.text, /<button type="submit" class="btn btn-quiet">Sign out<\/button>/);
      assert.doesNotMatch(mine.text, /class="signin"/);
      assert.equal(mine.headers.get('cache-control'), 'private, no-store', 'one visitor’s page is never stored for another');
      assert.equal(mine.headers.get('vary'), 'Cookie');
    }
  });

  test('a favicon at /favicon.ico, named by every page', async () => {
    const icon = await fetch(`${sluice.url}/favicon.ico`);
    assert.equal(icon.status, 200);
    assert.equal(icon.headers.get('content-type'), 'image/svg+xml');
    assert.match(await icon.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    for (const [client, path] of [[new ConsoleClient(sluice.url), '/app/login'], [admin, '/models'], [admin, '/status'], [admin, '/app/keys'], [admin, '/app/accounts']] as const) {
      assert.match((await client.get(path)).text, /<link rel="icon" href="\/favicon\.ico" type="image\/svg\+xml">/, path);
    }
  });
});

describe('sessions end when idle', () => {
  test('serve --session-idle: a session idle longer ends; activity renews it', async () => {
    // Real waits past the idle time are the point: a short one, and activity often enough that a slow
    // request (a loaded machine) still comes within it.
    const IDLE_MS = 1000;
    const dataDir = tempDir();
    await createAccount(dataDir, 'idler', 'idler-password-1');
    const idle = await startSluice({ dataDir, config: configFor(fake.url), args: ['--session-idle', String(IDLE_MS), '--workers', '1'] });
    try {
      const client = new ConsoleClient(idle.url);
      await client.signIn('idler', 'idler-password-1');
      const signedInAt = Date.now();
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, IDLE_MS * 0.4));
        assert.equal((await client.get('/app/keys')).status, 200, `active at ${Date.now() - signedInAt} ms: still signed in`);
      }
      assert.ok(Date.now() - signedInAt > IDLE_MS * 1.5, 'kept well past the idle time by activity');
      await new Promise((r) => setTimeout(r, IDLE_MS * 1.3));
      const ended = await client.get('/app/keys');
      assert.equal(ended.status, 303, `idle past ${IDLE_MS} ms: signed out`);
      assert.match(ended.headers.get('location')!, /expired=1/);
    } finally {
      assert.equal(await idle.stop(), 0);
    }
  });
});
