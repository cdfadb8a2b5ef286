/**
 * Limits in the console, over real HTTP against the real gateway: admins set a key's and an
 * account's limits through the forms, the keys page shows them with what is used (after requests
 * through the OpenAI SDK), members see their own read-only and cannot change them, and bad values
 * are refused with a message and change nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import pino from 'pino';
import { readUses, UNAVAILABLE } from '../src/console/limits-view.js';
import type { LimitUse } from '../src/limits/limit-admission.js';
import type { KeyRecord } from '../src/store/store.js';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

const ADMIN_PASSWORD = 'admin-password-1';
const MEMBER_PASSWORD = 'member-password-1';
/** Priced so that a few tokens make cents: $0.01 a token in and out. */
const PRICEY = `  - id: pricey
    provider: fake-vllm
    upstream_model: upstream-model
    endpoints: [completions]
    max_output_tokens: 100
    pricing: { input_per_mtok: 10000, output_per_mtok: 10000 }
`;

let fake: FakeUpstream;
let sluice: RunningSluice;
let admin: ConsoleClient;
let adminCsrf = '';

before(async () => {
  fake = await startFakeOpenAI();
  const dataDir = tempDir('console-limits-');
  await createAccount(dataDir, 'alice', ADMIN_PASSWORD, true);
  await createAccount(dataDir, 'bob', MEMBER_PASSWORD);
  sluice = await startSluice({ dataDir, config: configFor(fake.url, PRICEY) });
  admin = new ConsoleClient(sluice.url);
  adminCsrf = await admin.signIn('alice', ADMIN_PASSWORD);
});
after(async () => {
  if (sluice) assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await fake?.close();
});

interface ListedKey {
  id: string;
  name: string;
  limits: unknown;
  account_limits: unknown;
}

async function listedKey(id: string): Promise<ListedKey> {
  const result = await cli(['keys', 'list', '--json', '--data', sluice.dataDir]);
  assert.equal(result.code, 0, result.stderr);
  const key = (JSON.parse(result.stdout) as ListedKey[]).find((k) => k.id === id);
  assert.ok(key, `key ${id} is listed`);
  return key;
}

async function accountLimits(name: string): Promise<unknown> {
  const result = await cli(['accounts', 'limits', name, '--json', '--data', sluice.dataDir]);
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { limits: unknown }).limits;
}

/** The key's row on a keys page, as markup, and its limits cell as text. */
function rowOf(page: string, id: string): { html: string; limits: string } {
  const match = new RegExp(`<tr data-key-id="${id}">([\\s\\S]*?)</tr>`).exec(page);
  assert.ok(match, `the key ${id} has a row`);
  const cell = /<td class="limits">([\s\S]*?)<\/td>/.exec(match[1]!);
  assert.ok(cell, 'the row has a limits cell');
  return { html: match[1]!, limits: text(cell[1]!) };
}

function accountRowOf(page: string, name: string): string {
  const match = new RegExp(`<tr data-account="${name}">([\\s\\S]*?)</tr>`).exec(page);
  assert.ok(match, `the account ${name} has a row in the account limits`);
  return text(match[1]!);
}

/** Markup → the text a screen reader gets (visually hidden text too), spaces collapsed. */
function text(markup: string): string {
  return markup
    .replace(/<\/?(?:dt|dd|li|td|th|tr|p|div|h\d)\b[^>]*>/g, ' ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(lt|gt|quot|#39|amp);/g, (_m, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name]!)
    .replace(/\s+/g, ' ')
    .trim();
}

function fieldError(page: string, id: string): string | undefined {
  const match = new RegExp(`<p class="field-error" id="${id}-err">([^<]*)</p>`).exec(page);
  return match ? text(match[1]!) : undefined;
}

const LIMIT_FORM_FIELDS = { rpm: '', tpm: '', concurrency: '', budget_usd: '', budget_period: 'month', mcp: '' };

describe('admins set limits in the console', () => {
  test("a key's limits through its form: stored, listed with their use, and cleared by emptying the form", async () => {
    const { id } = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-backend']);
    const keys = (await admin.get('/app/keys')).text;
    assert.equal(rowOf(keys, id).limits, 'none', 'a key without limits shows none');
    assert.match(rowOf(keys, id).html, new RegExp(`<a class="btn btn-small btn-secondary" href="/app/keys/${id}/limits">Limits<span class="visually-hidden"> of acme-backend</span></a>`));

    const action = `/app/keys/${id}/limits`;
    const form = await admin.get(action);
    assert.equal(form.status, 200);
    assert.match(form.text, /<h1>Limits of the key “acme-backend”<\/h1>/);
    for (const [field, label] of [['rpm', 'Requests per minute'], ['tpm', 'Tokens per minute'], ['concurrency', 'Requests in flight'], ['budget_usd', 'Budget \\(USD\\)'], ['budget_period', 'Budget period']]) {
      assert.match(form.text, new RegExp(`<label for="key-limits-${field}">${label}</label>`), `${field} is labelled`);
    }
    assert.match(form.text, /<fieldset class="field limits-fieldset"[^>]*>\s*<legend>Limits of this key<\/legend>/, 'the fields are grouped with a legend');
    const fields = ConsoleClient.formFields(form.text, action);
    assert.deepEqual({ ...fields, csrf: undefined }, { ...LIMIT_FORM_FIELDS, csrf: undefined }, 'an empty form for a key without limits');

    const saved = await admin.post(action, { ...fields, rpm: '100', tpm: '50000', concurrency: '4', budget_usd: '20', budget_period: 'month' });
    assert.equal(saved.status, 303, saved.text);
    assert.equal(saved.headers.get('location'), `/app/keys?limits=${id}`);
    assert.deepEqual((await listedKey(id)).limits, { rpm: 100, tpm: 50000, concurrency: 4, budgetUsd: 20, budgetPeriod: 'month' }, 'stored');

    const shown = (await admin.get(saved.headers.get('location')!)).text;
    assert.match(shown, /<p class="notice notice-ok" role="status">Limits of the key “acme-backend” saved: rpm 100, tpm 50000, concurrency 4, \$20\/month\./);
    const renews = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1));
    const renewal = `${renews.getUTCDate()} ${renews.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' })}${renews.getUTCFullYear() === new Date().getUTCFullYear() ? '' : ` ${renews.getUTCFullYear()}`}`;
    assert.equal(rowOf(shown, id).limits, `Key: rpm 0/100 · tpm 0/50,000 · in flight 0/4 · $0.00 of $20.00 this month (renews ${renewal})`);

    // The form is filled back with what is stored; saving it unchanged keeps it.
    const refilled = ConsoleClient.formFields((await admin.get(action)).text, action);
    assert.deepEqual({ ...refilled, csrf: undefined }, { rpm: '100', tpm: '50000', concurrency: '4', budget_usd: '20', budget_period: 'month', mcp: '', csrf: undefined });
    assert.equal((await admin.post(action, refilled)).status, 303);
    assert.deepEqual((await listedKey(id)).limits, { rpm: 100, tpm: 50000, concurrency: 4, budgetUsd: 20, budgetPeriod: 'month' }, 'unchanged');

    // Emptying a field removes that limit; emptying them all removes every one.
    assert.equal((await admin.post(action, { ...refilled, tpm: '', budget_usd: '' })).status, 303);
    assert.deepEqual((await listedKey(id)).limits, { rpm: 100, concurrency: 4 });
    assert.equal((await admin.post(action, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf })).status, 303);
    assert.equal((await listedKey(id)).limits, null, 'no limits');
    assert.equal(rowOf((await admin.get('/app/keys')).text, id).limits, 'none');
  });

  test("an account's limits through its form apply to all its keys: shown in the account section and on each of its keys", async () => {
    const first = await createKey(sluice.dataDir, 'globex', ['--name', 'globex-one']);
    const second = await createKey(sluice.dataDir, 'globex', ['--name', 'globex-two', '--rpm', '3']);
    const keys = (await admin.get('/app/keys')).text;
    assert.match(keys, /<h2 id="account-limits-heading">Account limits<\/h2>/);
    assert.equal(accountRowOf(keys, 'globex'), 'globex none Limits of the account globex');

    const action = '/app/accounts/globex/limits';
    const form = await admin.get(action);
    assert.equal(form.status, 200);
    assert.match(form.text, /<h1>Limits of the account “globex”<\/h1>/);
    assert.match(text(form.text), /Keys 2 active of 2/);
    const saved = await admin.post(action, { ...ConsoleClient.formFields(form.text, action), rpm: '10', budget_usd: '2.5', budget_period: 'week' });
    assert.equal(saved.status, 303, saved.text);
    assert.equal(saved.headers.get('location'), '/app/keys?account_limits=globex');
    assert.deepEqual(await accountLimits('globex'), { rpm: 10, budgetUsd: 2.5, budgetPeriod: 'week' }, 'stored');

    const shown = (await admin.get(saved.headers.get('location')!)).text;
    assert.match(shown, /Limits of the account “globex” saved: rpm 10, \$2\.5\/week\. They apply to all its keys together/);
    assert.match(accountRowOf(shown, 'globex'), /^globex rpm 0\/10 · \$0\.00 of \$2\.50 this week \(renews \d+ \w{3}( \d{4})?\)/);
    assert.match(rowOf(shown, first.id).limits, /^Key: none Account: rpm 0\/10 · \$0\.00 of \$2\.50 this week/, 'a key without its own limits shows its account’s');
    assert.match(rowOf(shown, second.id).limits, /^Key: rpm 0\/3 Account: rpm 0\/10 · \$0\.00 of \$2\.50 this week/, 'a key with its own shows both');

    // The filter shows the one account's limits only.
    const filtered = (await admin.get('/app/keys?account=globex')).text;
    assert.deepEqual([...filtered.matchAll(/<tr data-account="([^"]+)">/g)].map((m) => m[1]), ['globex']);

    assert.equal((await admin.post(action, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf })).status, 303);
    assert.equal(await accountLimits('globex'), null, 'cleared');
    assert.equal(rowOf((await admin.get('/app/keys')).text, first.id).limits, 'none');
  });

  test('the create form takes limits too', async () => {
    const created = await admin.post('/app/keys', { csrf: adminCsrf, name: 'limited-at-birth', account: 'acme', rpm: '7', budget_usd: '1.25', budget_period: 'day' });
    assert.equal(created.status, 200, created.text);
    assert.match(text(created.text), /Limits rpm 7, \$1\.25\/day/);
    const id = /<tr data-key-id="([^"]+)">\s*<th scope="row">limited-at-birth</.exec((await admin.get('/app/keys')).text)?.[1];
    assert.ok(id, 'the new key is listed');
    assert.deepEqual((await listedKey(id)).limits, { rpm: 7, budgetUsd: 1.25, budgetPeriod: 'day' });
    assert.equal(rowOf((await admin.get('/app/keys')).text, id).limits, 'Key: rpm 0/7 · $0.00 of $1.25 today (renews 00:00 UTC)');
  });
});

describe('the use shown', () => {
  test('after requests through the OpenAI SDK the page shows them against the limits, the spend against the budget, and a request in flight', async () => {
    const { id, key } = await createKey(sluice.dataDir, 'initech', ['--name', 'initech-app', '--rpm', '5', '--concurrency', '2', '--budget-usd', '1', '--budget-period', 'day']);
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    for (let i = 0; i < 3; i++) await openai.completions.create({ model: 'pricey', prompt: 'Say hi', max_tokens: 3 });
    const ledger = await eventually(async () => {
      const rows = (await sluice.ledger()).filter((row) => row.key_id === id && row.status === 200);
      return rows.length === 3 ? rows : undefined;
    }, 5000, 'three ledger rows');
    const spent = ledger.reduce((sum, row) => sum + row.cost_usd, 0);
    assert.ok(spent > 0.05, `the requests cost cents (${spent})`);

    const limits = rowOf((await admin.get('/app/keys')).text, id).limits;
    assert.match(limits, /^Key: rpm 3\/5 · in flight 0\/2 · \$\d\.\d\d of \$1\.00 today \(renews 00:00 UTC\)$/, limits);
    const shownSpend = Number(/\$(\d\.\d\d) of/.exec(limits)![1]);
    assert.ok(Math.abs(shownSpend - spent) < 0.006, `the spend shown ($${shownSpend}) is the ledger's ($${spent})`);

    // Two more reach the limit, which the row marks.
    for (let i = 0; i < 2; i++) await openai.completions.create({ model: 'pricey', prompt: 'Say hi', max_tokens: 1 });
    const full = rowOf((await admin.get('/app/keys')).text, id);
    assert.match(full.html, /<span class="limit limit-full">rpm 5\/5<span class="visually-hidden"> \(limit reached\)<\/span><\/span>/);
    await assert.rejects(openai.completions.create({ model: 'pricey', prompt: 'hi', max_tokens: 1 }), (error: unknown) => error instanceof OpenAI.RateLimitError, 'the sixth is refused');

    // A request held upstream is in flight (its rpm already spent, so a fresh key).
    const held = await createKey(sluice.dataDir, 'initech', ['--name', 'initech-slow', '--concurrency', '2']);
    fake.behaviour = { headerDelayMs: 800 };
    try {
      const running = new OpenAI({ apiKey: held.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 }).completions.create({ model: 'pricey', prompt: 'hi', max_tokens: 1 });
      await eventually(async () => (/in flight 1\/2/.test(rowOf((await admin.get('/app/keys')).text, held.id).limits) ? true : undefined), 700, 'in flight 1/2 on the page');
      await running;
    } finally {
      fake.behaviour = {};
    }
    // The slot is released by the meter stage, which runs once the answer is written: soon after the caller has it.
    await eventually(async () => (/in flight 0\/2/.test(rowOf((await admin.get('/app/keys')).text, held.id).limits) ? true : undefined), 2000, 'released when it ends');
  });

  test("an account's use counts every key of the account", async () => {
    const first = await createKey(sluice.dataDir, 'umbrella', ['--name', 'umbrella-one']);
    const second = await createKey(sluice.dataDir, 'umbrella', ['--name', 'umbrella-two']);
    const action = '/app/accounts/umbrella/limits';
    assert.equal((await admin.post(action, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf, rpm: '20' })).status, 303);
    // The gateway's key cache learns the account's limits through the store's change counter.
    await new Promise((r) => setTimeout(r, 500));
    for (const { key } of [first, second, second]) await new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 }).completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 });
    const page = (await admin.get('/app/keys')).text;
    assert.equal(accountRowOf(page, 'umbrella'), 'umbrella rpm 3/20 Limits of the account umbrella');
    assert.equal(rowOf(page, first.id).limits, 'Key: none Account: rpm 3/20', 'each key shows the account’s use, not its own');
  });
});

describe('members', () => {
  test('see their own keys’ limits and use, read-only, and only theirs', async () => {
    const mine = await createKey(sluice.dataDir, 'bob', ['--name', 'bob-limited', '--rpm', '9']);
    const theirs = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-hidden', '--rpm', '11']);
    const member = new ConsoleClient(sluice.url);
    await member.signIn('bob', MEMBER_PASSWORD);
    const page = (await member.get('/app/keys')).text;
    assert.equal(rowOf(page, mine.id).limits, 'Key: rpm 0/9');
    assert.doesNotMatch(page, new RegExp(`${theirs.id}|acme-hidden|rpm 0/11`), 'another account’s key is not shown');
    assert.doesNotMatch(page, /\/limits"/, 'no link to change limits');
    assert.doesNotMatch(page, /name="rpm"/, 'no limit fields in the create form');
    assert.doesNotMatch(page, /Account limits/, 'no account section while the account has no limits');

    // With account limits, the member sees them too (read-only).
    assert.equal((await admin.post('/app/accounts/bob/limits', { ...LIMIT_FORM_FIELDS, csrf: adminCsrf, concurrency: '3' })).status, 303);
    const withAccount = (await member.get('/app/keys')).text;
    assert.equal(accountRowOf(withAccount, 'bob'), 'bob in flight 0/3');
    assert.equal(rowOf(withAccount, mine.id).limits, 'Key: rpm 0/9 Account: in flight 0/3');
    assert.deepEqual([...withAccount.matchAll(/<tr data-account="([^"]+)">/g)].map((m) => m[1]), ['bob'], 'only their own account');
  });

  test('cannot open or post a limits form, for their own key, another’s, or their account (403), and nothing changes', async () => {
    const mine = await createKey(sluice.dataDir, 'bob', ['--name', 'bob-fixed', '--rpm', '4']);
    const theirs = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-fixed', '--rpm', '4']);
    const member = new ConsoleClient(sluice.url);
    const csrf = await member.signIn('bob', MEMBER_PASSWORD);
    for (const path of [`/app/keys/${mine.id}/limits`, `/app/keys/${theirs.id}/limits`, '/app/accounts/bob/limits', '/app/accounts/acme/limits']) {
      const form = await member.get(path);
      assert.equal(form.status, 403, `GET ${path}`);
      assert.match(form.text, /Admins only/, `GET ${path} says why`);
      const posted = await member.post(path, { ...LIMIT_FORM_FIELDS, csrf, rpm: '1000' });
      assert.equal(posted.status, 403, `POST ${path}`);
    }
    // A member's create form ignores limit fields added by hand.
    const created = await member.post('/app/keys', { csrf, name: 'bob-sneaky', rpm: '1', budget_usd: 'abc' });
    assert.equal(created.status, 200, 'created, the limit fields ignored');
    assert.doesNotMatch(created.text, /<dt>Limits<\/dt>/);
    assert.deepEqual((await listedKey(mine.id)).limits, { rpm: 4 }, 'unchanged');
    assert.deepEqual((await listedKey(theirs.id)).limits, { rpm: 4 }, 'unchanged');
    assert.deepEqual(await accountLimits('acme'), null, 'unchanged');
  });
});

describe('refusals', () => {
  test('bad values are refused with a message on their field, what was typed comes back, and nothing changes', async () => {
    const { id } = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-strict', '--rpm', '50']);
    const action = `/app/keys/${id}/limits`;
    const cases: [fields: Record<string, string>, field: string, message: RegExp][] = [
      [{ rpm: 'abc' }, 'rpm', /^must be a whole number of at least 1/],
      [{ rpm: '0' }, 'rpm', /^must be a whole number of at least 1/],
      [{ tpm: '1.5' }, 'tpm', /^must be a whole number/],
      [{ concurrency: '-2' }, 'concurrency', /^must be a whole number/],
      [{ rpm: '99999999999999999999' }, 'rpm', /^must be a whole number/],
      [{ budget_usd: '-5' }, 'budget_usd', /^must be an amount in USD above 0/],
      [{ budget_usd: '0' }, 'budget_usd', /^must be an amount in USD above 0/],
      [{ budget_usd: '1e400' }, 'budget_usd', /^must be an amount in USD above 0/],
      [{ budget_usd: '5', budget_period: 'year' }, 'budget_period', /^must be one of day, week, month, total$/],
    ];
    for (const [fields, field, message] of cases) {
      const label = JSON.stringify(fields);
      const refused = await admin.post(action, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf, rpm: '60', ...fields });
      assert.equal(refused.status, 400, label);
      assert.match(fieldError(refused.text, `key-limits-${field}`) ?? '(no error on the field)', message, label);
      assert.match(refused.text, /<div class="notice notice-error" role="alert"><p>Nothing was saved:<\/p><ul><li><a href="#key-limits-/, `${label}: summarised`);
      assert.match(refused.text, new RegExp(`id="key-limits-${field}"[^>]* aria-describedby="[^"]*key-limits-${field}-err" aria-invalid="true"`), `${label}: wired to its field`);
      const back = ConsoleClient.formFields(refused.text, action);
      for (const [name, value] of Object.entries(fields)) if (name !== 'budget_period') assert.equal(back[name], value, `${label}: ${name} comes back as typed`);
      assert.deepEqual((await listedKey(id)).limits, { rpm: 50 }, `${label}: nothing changed`);
    }
    const account = await admin.post('/app/accounts/acme/limits', { ...LIMIT_FORM_FIELDS, csrf: adminCsrf, rpm: 'abc', budget_usd: '-1' });
    assert.equal(account.status, 400);
    assert.match(fieldError(account.text, 'account-limits-rpm') ?? '', /must be a whole number/);
    assert.match(fieldError(account.text, 'account-limits-budget_usd') ?? '', /above 0/);
    assert.equal(await accountLimits('acme'), null, 'nothing changed');

    // The create form refuses them the same way and creates nothing.
    const before = (await admin.get('/app/keys')).text.match(/<tr data-key-id=/g)!.length;
    const create = await admin.post('/app/keys', { csrf: adminCsrf, name: 'never-made', account: 'acme', rpm: 'abc' });
    assert.equal(create.status, 400);
    assert.match(fieldError(create.text, 'new-limits-rpm') ?? '', /must be a whole number/);
    assert.match(create.text, /<details open>\s*<summary>Limits/, 'the limits section is open on its error');
    assert.equal((await admin.get('/app/keys')).text.match(/<tr data-key-id=/g)!.length, before, 'no key made');
  });

  test('without the CSRF token, from another origin, or for an unknown key or account, nothing changes', async () => {
    const { id } = await createKey(sluice.dataDir, 'acme', ['--name', 'acme-guarded', '--rpm', '8']);
    const action = `/app/keys/${id}/limits`;
    assert.equal((await admin.post(action, { ...LIMIT_FORM_FIELDS, rpm: '1' })).status, 403, 'no token');
    assert.equal((await admin.post(action, { ...LIMIT_FORM_FIELDS, rpm: '1', csrf: adminCsrf }, { origin: 'https://evil.example' })).status, 403, 'another origin');
    assert.equal((await admin.post('/app/accounts/acme/limits', { ...LIMIT_FORM_FIELDS, rpm: '1' })).status, 403, 'no token for an account');
    assert.deepEqual((await listedKey(id)).limits, { rpm: 8 }, 'unchanged');
    assert.equal(await accountLimits('acme'), null, 'unchanged');
    for (const name of ['no-such-key', '__proto__', 'constructor', '%E0%A4%A']) {
      assert.equal((await admin.get(`/app/keys/${name}/limits`)).status, 404, `GET key ${name}`);
      assert.equal((await admin.post(`/app/keys/${name}/limits`, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf })).status, 404, `POST key ${name}`);
      assert.equal((await admin.get(`/app/accounts/${name}/limits`)).status, 404, `GET account ${name}`);
      assert.equal((await admin.post(`/app/accounts/${name}/limits`, { ...LIMIT_FORM_FIELDS, csrf: adminCsrf })).status, 404, `POST account ${name}`);
    }
    assert.equal((await admin.get('/app/accounts/acme')).status, 404, 'no other page under /app/accounts/');
    assert.equal((await admin.get('/app/keys?limits=__proto__&account_limits=constructor')).status, 200);
  });
});

describe('reading the use', () => {
  const key = (id: string, limits: KeyRecord['limits'], accountId = 'acct_a', accountLimits: KeyRecord['accountLimits'] = null): KeyRecord => ({
    id, accountId, accountName: accountId, name: id, secretPrefix: 'sk-ab', secretLastFour: 'wxyz', status: 'active', models: null, expiresAt: null, createdAt: 0, lastUsedAt: null, limits, accountLimits, accountDisabled: false,
  });
  const use: LimitUse = { requests: 1, tokens: 0, inFlight: 0, spentUsd: null, budgetResetsAt: null };

  test('only limited keys and accounts are read, each account once; a failing or silent one is unavailable and the rest are shown', async () => {
    const asked: string[] = [];
    const limits = {
      used: async (k: { id: string; accountId: string; limits: unknown; accountLimits: unknown }): Promise<{ key: LimitUse | null; account: LimitUse | null }> => {
        asked.push(k.limits !== null ? `key:${k.id}` : `account:${k.accountId}`);
        if (k.id === 'broken') throw new Error('counter down');
        if (k.id === 'silent') return new Promise<never>(() => {});
        return { key: k.limits !== null ? use : null, account: k.accountLimits !== null ? use : null };
      },
    };
    const started = Date.now();
    const uses = await readUses({ limits, logger: pino({ level: 'silent' }) }, [
      key('plain', null),
      key('limited', { rpm: 5 }),
      key('broken', { rpm: 5 }),
      key('silent', { rpm: 5 }),
      key('shared-1', null, 'acct_b', { rpm: 9 }),
      key('shared-2', { tpm: 10 }, 'acct_b', { rpm: 9 }),
    ], [{ id: 'acct_c', limits: { concurrency: 1 } }, { id: 'acct_d', limits: null }]);
    assert.ok(Date.now() - started < 5000, 'a silent counter is given up on');
    assert.deepEqual(asked.sort(), ['account:acct_b', 'account:acct_c', 'key:broken', 'key:limited', 'key:shared-2', 'key:silent'], 'limited scopes only, each account once');
    assert.deepEqual(Object.fromEntries(uses.keys), { limited: use, broken: UNAVAILABLE, silent: UNAVAILABLE, 'shared-2': use });
    assert.deepEqual(Object.fromEntries(uses.accounts), { acct_c: use, acct_b: use });
  });
});
