import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { createAccount } from './support/console.js';
import { configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = resolve(import.meta.dirname, '../test-output/screenshots');
const PASSWORD = 'browser-admin-password';

let fake: FakeUpstream;
let sluice: RunningSluice;
let browser: Browser;
let context: BrowserContext;
let page: Page;

async function shot(name: string, target: Page = page): Promise<void> {
  await target.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Screenshots at 1,280 × 800 (the viewport, not the full page), for a person to look at. */
const SCREENSHOTS_1280 = join(tmpdir(), 'sluice-screenshots-1280');
async function shot1280(name: string, target: Page = page): Promise<void> {
  await target.screenshot({ path: join(SCREENSHOTS_1280, `${name}.png`) });
}

before(async () => {
  // Debian's chromium is a requirement of this suite (.ci/run installs it): fail, never skip.
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  mkdirSync(SCREENSHOTS_1280, { recursive: true });
  fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'admin', PASSWORD, true);
  sluice = await startSluice({ dataDir, config: configFor(fake.url) });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: sluice.url });
  page = await context.newPage();
  // No page may fetch anything from outside the gateway.
  page.on('request', (request) => assert.ok(request.url().startsWith(sluice.url), `outside request: ${request.url()}`));
});

after(async () => {
  await browser?.close();
  if (sluice) assert.equal(await sluice.stop(), 0);
  await fake?.close();
});

describe('the console in a real browser', () => {
  test('sign in with the labelled fields', async () => {
    await page.goto(`${sluice.url}/app/keys`);
    assert.equal(new URL(page.url()).pathname, '/app/login');
    await shot('01-login');
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.match(await page.getByRole('alert').innerText(), /username or password is not right/);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Password').press('Enter');
    await page.waitForURL(`${sluice.url}/app/keys`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'API keys');
  });

  let secret = '';

  test('create a key, copy it, use it with the OpenAI SDK, disable it and see the API refuse it within a second', async () => {
    await page.getByLabel('Name').fill('browser key');
    await page.getByRole('checkbox', { name: /llama-8b/ }).check();
    await shot('02-keys-empty');
    await page.getByRole('button', { name: 'Create key' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Key created');
    const shown = (await page.locator('#new-secret').innerText()).trim();
    assert.match(shown, /^sk-[A-Za-z0-9]{48}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    // Runs in the page; typed by hand since the project's tsconfig has no DOM library.
    secret = await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText());
    assert.equal(secret, shown);
    await shot('03-key-created');

    const openai = new OpenAI({ apiKey: secret, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const completion = await openai.completions.create({ model: 'llama-8b', prompt: 'Say hi', max_tokens: 4 });
    assert.equal(completion.choices[0]!.text, ' The quick brown fox');

    await page.getByRole('link', { name: 'Back to keys' }).click();
    const row = page.locator('tr', { hasText: 'browser key' });
    assert.match(await row.innerText(), new RegExp(`${secret.slice(0, 5)}…${secret.slice(-4)}`));
    await eventually(async () => {
      await page.reload();
      return /\b1\b/.test(await row.locator('td.num').first().innerText()) ? true : undefined;
    }, 5000, 'the request counted on the keys page');
    await shot('04-keys-with-usage');

    await row.getByRole('link', { name: /Disable/ }).click();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Disable the key “browser key”/);
    await shot('05-confirm-disable');
    await page.getByRole('button', { name: 'Disable key' }).click();
    const disabledAt = Date.now();
    assert.match(await page.getByRole('status').first().innerText(), /is now disabled/);
    await eventually(async () => {
      try {
        await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 });
        return undefined;
      } catch (error) {
        return error instanceof OpenAI.PermissionDeniedError && error.status === 403 ? true : undefined;
      }
    }, 1000, 'a 403 for the disabled key');
    assert.ok(Date.now() - disabledAt <= 1000);
    assert.equal(await page.locator('tr', { hasText: 'browser key' }).locator('.pill').innerText(), 'disabled');
  });

  test('register a provider and a model and see it in /v1/models and on /models', async () => {
    await page.getByRole('link', { name: 'Catalogue' }).click();
    await shot('06-catalogue');
    await page.getByRole('link', { name: 'Add provider' }).click();
    await page.getByRole('textbox', { name: 'Id', exact: true }).fill('gpu-box');
    await page.getByLabel('Base URL').fill(fake.url);
    await page.getByLabel(/^API key/).fill('console-entered-credential');
    await shot('07-provider-form');
    await page.getByRole('button', { name: 'Add provider' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Provider gpu-box added/);
    assert.doesNotMatch(await page.content(), /console-entered-credential/);

    await page.getByRole('link', { name: 'Add model' }).click();
    await page.getByLabel('Model id').fill('my-selfhosted-model');
    await page.getByLabel('Provider').selectOption('gpu-box');
    await page.getByLabel('Upstream model').fill('upstream-model');
    await page.getByLabel('Display name').fill('My self-hosted model');
    await page.getByLabel('Context window (tokens)').fill('32768');
    await page.getByLabel('Input price').fill('0.15');
    await page.getByLabel('Output price').fill('0.45');
    await shot('08-model-form');
    await page.getByRole('button', { name: 'Register model' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Model my-selfhosted-model added/);
    assert.match(await page.locator('tr[data-model="my-selfhosted-model"]').innerText(), /console/);
    assert.match(await page.locator('tr[data-model="llama-8b"]').innerText(), /configuration file/);

    const { key } = await createKey(sluice.dataDir, 'browser-acct');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const ids = await eventually(async () => {
      const list = (await openai.models.list()).data.map((m) => m.id);
      return list.includes('my-selfhosted-model') ? list : undefined;
    }, 1000, 'the model in /v1/models');
    assert.deepEqual(ids, ['llama-8b', 'other-model', 'chat-only', 'my-selfhosted-model']);
    const completion = await openai.completions.create({ model: 'my-selfhosted-model', prompt: 'hi', max_tokens: 2 });
    assert.equal(completion.choices[0]!.text, ' The quick');
    assert.equal(fake.requests.at(-1)!.headers.authorization, 'Bearer console-entered-credential');
    // The form's operations were left as they came: chat is served too.
    const chat = await openai.chat.completions.create({ model: 'my-selfhosted-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    assert.equal(chat.choices[0]!.message.role, 'assistant');
    assert.equal(fake.requests.at(-1)!.path, '/v1/chat/completions');
  });

  test('register a model with a second deployment and a fallback: labelled fields, a bad line refused on its field, the deployments on /status', async () => {
    await page.goto(`${sluice.url}/app/catalogue/models/new`);
    await page.getByLabel('Model id').fill('my-routed-model');
    await page.getByLabel('Provider').selectOption('gpu-box');
    await page.getByLabel('Upstream model').fill('upstream-model');
    await page.locator('summary', { hasText: 'More deployments and fallbacks' }).click();
    const lines = page.getByRole('textbox', { name: /^More deployments/ });
    await lines.fill('fake-vllm upstream-model weight=2\nfake-vllm upstream-model colour=blue');
    await page.getByRole('textbox', { name: /^Fallbacks/ }).fill('llama-8b');
    await page.getByRole('button', { name: 'Register model' }).click();
    assert.match(await page.getByRole('alert').innerText(), /deployments: line 2: unknown attribute 'colour'/);
    // The error belongs to the textarea for assistive technology too: invalid, and part of its description.
    assert.equal(await lines.getAttribute('aria-invalid'), 'true');
    const described = await Promise.all((await lines.getAttribute('aria-describedby'))!.split(' ').map((id) => page.locator(`#${id}`).innerText()));
    assert.match(described.join(' '), /provider \[upstream_model\] \[weight=N\][\s\S]*line 2: unknown attribute 'colour'/);
    assert.equal(await lines.inputValue(), 'fake-vllm upstream-model weight=2\nfake-vllm upstream-model colour=blue', 'what was typed is kept');
    await shot('08b-model-deployments-error');

    await lines.fill('fake-vllm upstream-model weight=2');
    await page.getByRole('button', { name: 'Register model' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Model my-routed-model added/);
    const row = await page.locator('tr[data-model="my-routed-model"]').innerText();
    assert.match(row, /gpu-box\/upstream-model\s+fake-vllm\/upstream-model weight 2\s+llama-8b/);
    await shot('08c-catalogue-deployments');

    await page.goto(`${sluice.url}/status`);
    const table = page.locator('section[data-provider="gpu-box"]').getByRole('table', { name: 'Deployments: where requests are routed now' });
    assert.deepEqual(await table.getByRole('columnheader').allInnerTexts().then((t) => t.map((h) => h.toLowerCase())), ['model', 'deployment', 'router (this process)', 'live latency']);
    const deployments = table.locator('tr[data-deployment-of="my-routed-model"]');
    assert.deepEqual(await deployments.locator('td:nth-child(2)').allInnerTexts(), ['gpu-box/upstream-model', 'fake-vllm/upstream-model']);
    assert.deepEqual(await deployments.locator('.pill').allInnerTexts(), ['Routable', 'Routable'], 'the state in words, not those of health');
    // A deployment's health is its upstream's (gpu-box/upstream-model served the model above), in the worker that answered.
    for (const latency of await deployments.locator('td.num').allInnerTexts()) assert.match(latency, /^(\d[\d,]* ms|—)$/);
    await shot('08d-status-deployments');
  });

  test('read prices on /models, search and sort it, open a model page', async () => {
    await page.goto(`${sluice.url}/models`);
    assert.match(await page.locator('main').innerText(), /depends on the key/);
    const llama = page.locator('tr[data-model="llama-8b"]');
    assert.equal(await llama.locator('.price-in').innerText(), '$0.20');
    assert.equal(await llama.locator('.price-out').innerText(), '$0.60');
    const mine = page.locator('tr[data-model="my-selfhosted-model"]');
    assert.equal(await mine.locator('.price-in').innerText(), '$0.15');
    assert.equal(await mine.locator('.price-out').innerText(), '$0.45');
    await shot('09-models');
    await page.getByLabel('Search models').fill('self-hosted');
    await page.getByRole('button', { name: 'Apply' }).click();
    assert.deepEqual(await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-model'))), ['my-selfhosted-model']);
    await page.goto(`${sluice.url}/models`);
    await page.getByRole('link', { name: /Input \/ 1M/ }).click();
    assert.equal(await page.locator('th[aria-sort]').getAttribute('aria-sort'), 'ascending');
    assert.deepEqual((await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-model')))).slice(0, 2), ['my-selfhosted-model', 'llama-8b']);
    await page.getByRole('link', { name: 'llama-8b' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Llama 3.1 8B');
    assert.match(await page.locator('.facts').innerText(), /\$0\.20 per million tokens/);
    await shot('10-model-page');
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${sluice.url}/models`);
    const { scrollWidth, innerWidth } = await phone.evaluate(() => {
      const w = globalThis as unknown as { innerWidth: number; document: { documentElement: { scrollWidth: number } } };
      return { scrollWidth: w.document.documentElement.scrollWidth, innerWidth: w.innerWidth };
    });
    assert.ok(scrollWidth <= innerWidth + 1, `no sideways scrolling of the page on a phone (${scrollWidth} > ${innerWidth})`);
    await shot('11-models-phone', phone);
    await phone.close();
  });

  test('see a failing upstream on /status', async () => {
    const { key } = await createKey(sluice.dataDir, 'browser-acct');
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await openai.completions.create({ model: 'other-model', prompt: 'hi', max_tokens: 1 });
    const ofFake = async () => (await sluice.ledger()).filter((row) => row.provider_id === 'fake-vllm');
    await eventually(async () => ((await ofFake()).some((row) => row.model === 'other-model') ? true : undefined), 3000, 'the ledger row');
    // More failures than the successes so far (their number varies: the disabled key above kept
    // working for a few requests inside its one second), so the provider must show as down.
    const successes = (await ofFake()).length;
    const failures = successes + 1;
    fake.behaviour = { fail: { status: 503, body: '{"error":{"message":"overloaded","type":"ServiceUnavailableError","param":null,"code":503}}' } };
    try {
      for (let i = 0; i < failures; i++) await assert.rejects(openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 }), OpenAI.InternalServerError);
    } finally {
      fake.behaviour = {};
    }
    const section = page.locator('section[data-provider="fake-vllm"]');
    // Each gateway worker writes its own ledger batches; wait until the page counts them all.
    await eventually(async () => {
      await page.goto(`${sluice.url}/status`);
      return (await section.locator('.stats dd').first().innerText()) === String(successes + failures) ? true : undefined;
    }, 5000, 'every request counted on /status');
    assert.equal(await section.locator('.provider-head .pill').innerText(), 'Down');
    assert.match(await section.locator('.stats').innerText(), new RegExp(`Error rate\\s+${((failures / (successes + failures)) * 100).toFixed(1)}%`));
    assert.match(await page.locator('#overall').innerText(), /degraded|outage/i);
    assert.equal(await section.locator('.bar').count(), 90);
    assert.equal(await section.locator('tr[data-model="llama-8b"] .pill').innerText(), 'Down');
    assert.equal(await page.locator('section[data-provider="gpu-box"] .provider-head .pill').innerText(), 'Up');
    await shot('12-status');
  });

  test('limits: set a key’s and its account’s through the labelled forms, see them with their use on the keys page, no sideways scrolling on a phone', async () => {
    await page.goto(`${sluice.url}/app/keys`);
    await page.locator('tr', { hasText: 'browser key' }).getByRole('link', { name: 'Limits of browser key' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Limits of the key “browser key”');
    const limits = page.getByRole('group', { name: 'Limits of this key' });
    await limits.getByLabel('Requests per minute').fill('60');
    await limits.getByLabel('Budget (USD)').fill('5');
    await limits.getByLabel('Budget period').selectOption('day');
    await shot('12b-key-limits-form');
    await page.getByRole('button', { name: 'Save limits' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Limits of the key “browser key” saved: rpm 60, \$5\/day/);
    const row = page.locator('tr', { hasText: 'browser key' });
    assert.match(await row.locator('td.limits').innerText(), /^Key: rpm 0\/60 · \S+ of \$5\.00 today \(renews 00:00 UTC\)$/);

    await page.locator('tr[data-account="admin"]').getByRole('link', { name: 'Limits of the account admin' }).click();
    await page.getByLabel('Requests in flight').fill('2');
    await page.getByRole('button', { name: 'Save limits' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Limits of the account “admin” saved: concurrency 2/);
    assert.match(await page.locator('tr[data-account="admin"] td.limits').innerText(), /^in flight 0\/2$/);
    assert.match(await row.locator('td.limits').innerText(), /Account: in flight 0\/2/);
    await shot('12c-keys-limits');

    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/app/keys', (await row.getByRole('link', { name: 'Limits of browser key' }).getAttribute('href'))!]) {
      await phone.goto(sluice.url + path);
      const { scrollWidth, innerWidth } = await phone.evaluate(() => {
        const w = globalThis as unknown as { innerWidth: number; document: { documentElement: { scrollWidth: number } } };
        return { scrollWidth: w.document.documentElement.scrollWidth, innerWidth: w.innerWidth };
      });
      assert.ok(scrollWidth <= innerWidth + 1, `no sideways scrolling of ${path} on a phone (${scrollWidth} > ${innerWidth})`);
    }
    await shot('12d-key-limits-phone', phone);
    await phone.close();
  });

  test('usage: totals from the ledger, the range switch, an account picked, broken down by key, the CSV downloaded; nothing overflows', async () => {
    const { id, key } = await createKey(sluice.dataDir, 'usage-acct', ['--name', 'usage key']);
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    for (let i = 0; i < 4; i++) await openai.completions.create({ model: i % 2 ? 'llama-8b' : 'other-model', prompt: `usage ${i}`, max_tokens: 3 });
    // Each gateway worker writes its own ledger batches: wait until every row is in.
    const rows = await eventually(async () => {
      const all = await sluice.ledger();
      return all.filter((row) => row.key_id === id).length === 4 ? all : undefined;
    }, 5000, 'the usage rows in the ledger');
    const usageAccount = rows.find((row) => row.key_id === id)!.account_id;
    await page.setViewportSize({ width: 1280, height: 800 });
    try {
      await page.goto(`${sluice.url}/app/keys`);
      await page.getByRole('link', { name: 'Usage', exact: true }).click();
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Usage', 'the usage page from the navigation');
      assert.equal(await page.getByRole('link', { name: 'Usage', exact: true }).getAttribute('aria-current'), 'page', 'marked as the current page');
      const totalShown = async () => Number((await page.locator('dd[data-total="requests"]').innerText()).replaceAll(',', ''));
      assert.equal(await totalShown(), rows.length, 'every request of the last 30 days, all accounts');
      assert.equal(await page.getByRole('img', { name: /^Requests per day by model/ }).count(), 1, 'the requests chart is an image with its title as its name');
      await page.screenshot({ path: '/tmp/usage-01-admin-30-days.png', fullPage: true });

      await page.getByRole('navigation', { name: 'Range' }).getByRole('link', { name: '7 days' }).click();
      assert.match(page.url(), /\/app\/usage\?range=7$/, 'the range is a plain link');
      assert.equal(await page.getByRole('navigation', { name: 'Range' }).getByRole('link', { name: '7 days' }).getAttribute('aria-current'), 'true', 'the range shown is marked');
      await page.locator('summary', { hasText: 'Show the table' }).click();
      assert.equal(await page.getByRole('table', { name: 'Figures per day' }).locator('tbody tr').count(), 7, 'the figures of the seven days, as a table');
      await page.screenshot({ path: '/tmp/usage-02-admin-7-days.png', fullPage: true });

      await page.getByRole('navigation', { name: 'Range' }).getByRole('link', { name: '90 days' }).click();
      await page.getByLabel('Account').selectOption('usage-acct');
      await page.getByRole('button', { name: 'Show' }).click();
      assert.match(page.url(), /\/app\/usage\?range=90&account=usage-acct$/, 'the picker keeps the range');
      assert.equal(await totalShown(), rows.filter((row) => row.account_id === usageAccount).length, 'the account’s requests only');
      await page.getByRole('navigation', { name: 'Break down by' }).getByRole('link', { name: 'Key' }).click();
      assert.match(await page.locator('#requests-chart-heading + figure .legend').innerText(), /usage key \(key_\w{6}…\)/, 'the charts are broken down by key, named with its id prefix');
      assert.match(await page.locator('#top-models').innerText(), /llama-8b[\s\S]*other-model|other-model[\s\S]*llama-8b/, 'both models in the top models');
      await page.screenshot({ path: '/tmp/usage-03-account-90-days-by-key.png', fullPage: true });

      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Download CSV/ }).click()]);
      assert.match(download.suggestedFilename(), /^sluice-usage-usage-acct-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv$/, 'a CSV file named for the account and the range');
      const csv = readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
      assert.equal(csv[0], 'day,account,key_id,key_name,model,requests,failed,input_tokens,output_tokens,cost_usd,unpriced_requests,kind', 'its header');
      assert.equal(csv.slice(1).reduce((sum, line) => sum + Number(line.split(',')[5]), 0), 4, 'the account’s four requests');

      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: '/tmp/usage-04-dark.png', fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });

      const phone = await context.newPage();
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${sluice.url}/app/usage?range=90`);
      const { scrollWidth, innerWidth } = await phone.evaluate(() => {
        const w = globalThis as unknown as { innerWidth: number; document: { documentElement: { scrollWidth: number } } };
        return { scrollWidth: w.document.documentElement.scrollWidth, innerWidth: w.innerWidth };
      });
      assert.ok(scrollWidth <= innerWidth + 1, `no sideways scrolling of the usage page on a phone (${scrollWidth} > ${innerWidth})`);
      await phone.screenshot({ path: '/tmp/usage-05-phone.png', fullPage: true });
      await phone.close();
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  test('1,280 × 800: the accounts page (a one-time link made and used, an account disabled); no page scrolls sideways; no failed request', async () => {
    const failed: string[] = [];
    const onResponse = (response: { status(): number; url(): string }) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    };
    page.on('response', onResponse);
    // Several keys with long names, so the keys table is at its widest.
    for (let i = 1; i <= 3; i++) await createKey(sluice.dataDir, 'an-account-with-a-rather-long-name', ['--name', `a key with a long descriptive name, number ${i}`, '--models', 'llama-8b,other-model,chat-only']);
    await page.setViewportSize({ width: 1280, height: 800 });
    try {
      await page.goto(`${sluice.url}/app/keys`);
      await page.getByRole('link', { name: 'Accounts' }).click();
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Accounts');
      await page.getByRole('textbox', { name: 'Name' }).fill('newcomer');
      await page.getByRole('radio', { name: /one-time sign-in link/ }).check();
      await page.getByRole('button', { name: 'Create account' }).click();
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Account “newcomer” created');
      const link = (await page.locator('#sign-in-link').innerText()).trim();
      assert.match(link, new RegExp(`^${sluice.url}/app/sign-in/[\\w-]{43}$`));
      await shot1280('accounts-link-shown');

      const visitor = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const theirs = await visitor.newPage();
      await theirs.goto(link);
      assert.equal(await theirs.getByRole('heading', { level: 1 }).innerText(), 'Welcome, newcomer');
      await shot1280('sign-in-link-form', theirs);
      await theirs.getByLabel('New password').fill('newcomer-password');
      await theirs.getByLabel('The same password again').fill('newcomer-password');
      await theirs.getByRole('button', { name: 'Set password and sign in' }).click();
      await theirs.waitForURL(`${sluice.url}/app/keys`);
      assert.match(await theirs.locator('.who').innerText(), /Signed in as newcomer/);
      await theirs.goto(link);
      assert.equal(await theirs.getByRole('heading', { level: 1 }).innerText(), 'Link not valid', 'the link works once');
      await visitor.close();

      await page.getByRole('link', { name: 'Back to accounts' }).click();
      const row = page.locator('tr[data-account="newcomer"]');
      assert.match(await row.innerText(), /member\s+active\s+yes\s+0/);
      await row.getByRole('button', { name: 'Disable newcomer' }).click();
      assert.match(await page.getByRole('status').first().innerText(), /“newcomer” is disabled/);
      assert.equal(await page.locator('tr[data-account="newcomer"] .pill').innerText(), 'disabled');
      await shot1280('accounts');

      await page.goto(`${sluice.url}/models`);
      assert.match(await page.locator('.who').innerText(), /Signed in as admin/, 'a public page knows who is signed in');
      for (const [name, path] of [
        ['keys', '/app/keys'],
        ['usage', '/app/usage'],
        ['catalogue', '/app/catalogue'],
        ['accounts', '/app/accounts'],
        ['account-password', '/app/accounts/newcomer/password'],
        ['models', '/models'],
        ['model', '/models/llama-8b'],
        ['status', '/status'],
      ] as const) {
        await page.goto(sluice.url + path);
        const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
        await shot1280(name);
        assert.ok(width <= 1280, `${path} is ${width} px wide at 1,280`);
        // A table that scrolls inside its box hides its last columns (the keys table's actions): each must fit.
        const clipped = await page.evaluate(() =>
          [...(globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ scrollWidth: number; clientWidth: number; getAttribute(n: string): string | null; querySelector(s: string): { getAttribute(n: string): string | null } | null }> } }).document.querySelectorAll('.table-scroll')]
            .filter((box) => box.scrollWidth > box.clientWidth + 1)
            .map((box) => `${box.querySelector('table')?.getAttribute('aria-labelledby') ?? box.getAttribute('aria-label') ?? 'a table'}: ${box.scrollWidth} > ${box.clientWidth}`),
        );
        assert.deepEqual(clipped, [], `${path}: every table fits its box at 1,280`);
      }
      assert.deepEqual(failed, [], 'no request failed (the favicon included)');
    } finally {
      page.off('response', onResponse);
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  test('1,280 × 800: with realistic keys (30-character names, three models, limits on every key) each row’s Disable and Revoke are inside the window and work', async () => {
    const models = ['meta-llama/Llama-3.1-70B-Instruct', 'Qwen/Qwen2.5-Coder-32B-Instruct', 'text-embedding-3-large'];
    const names = ['payments-api-production-eu-w01', 'search-reranker-staging-cluster', 'internal-support-chatbot-v2-fra', 'data-science-notebook-shared-01'].map((name) => name.slice(0, 30));
    for (const name of names) assert.equal(name.length, 30);
    for (const [i, name] of names.entries()) {
      await createKey(sluice.dataDir, `platform-team-${i + 1}`, ['--name', name, '--models', models.join(','), '--allow-unknown', '--rpm', '600', '--tpm', '200000', '--concurrency', '20', '--budget-usd', '250', '--budget-period', 'month', '--expires', '2099-12-31']);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    try {
      await page.goto(`${sluice.url}/app/keys`);
      await shot1280('keys-realistic');
      const viewport = page.viewportSize()!;
      for (const name of names) {
        const row = page.locator('tr', { hasText: name });
        assert.match(await row.locator('td.limits').innerText(), /rpm 0\/600 · tpm 0\/200,000 · in flight 0\/20 · \$0\.00 of \$250\.00 this month/, `${name}: its limits shown`);
        assert.deepEqual(await row.locator('td.models li').allInnerTexts(), models, `${name}: its three models`);
        for (const action of ['Disable', 'Revoke']) {
          const button = row.getByRole('link', { name: `${action} ${name}` });
          const box = await button.boundingBox();
          assert.ok(box, `${name}: ${action} is shown`);
          assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, `${name}: ${action} within the ${viewport.width} px window (${box.x} + ${box.width})`);
          // Visible, not covered, and takes a click where it is (a trial click does not follow the link).
          await button.click({ trial: true });
        }
      }
      const scrolls = await page.evaluate(() => {
        const box = (globalThis as unknown as { document: { querySelector(s: string): { scrollWidth: number; clientWidth: number } } }).document.querySelector('.table-scroll[aria-label="API keys"]');
        return box.scrollWidth > box.clientWidth + 1;
      });
      assert.equal(scrolls, false, 'the keys table does not scroll sideways');

      await page.locator('tr', { hasText: names[0]! }).getByRole('link', { name: `Disable ${names[0]}` }).click();
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), `Disable the key “${names[0]}”?`);
      await page.getByRole('button', { name: 'Disable key' }).click();
      assert.match(await page.getByRole('status').first().innerText(), new RegExp(`Key “${names[0]}” is now disabled`));
      assert.equal(await page.locator('tr', { hasText: names[0]! }).locator('.pill').innerText(), 'disabled');

      await page.locator('tr', { hasText: names[1]! }).getByRole('link', { name: `Revoke ${names[1]}` }).click();
      await page.getByRole('button', { name: 'Revoke key' }).click();
      assert.match(await page.getByRole('status').first().innerText(), new RegExp(`Key “${names[1]}” is now revoked`));
      const revoked = page.locator('tr', { hasText: names[1]! });
      assert.equal(await revoked.locator('.pill').innerText(), 'revoked');
      assert.equal(await revoked.getByRole('link', { name: /Disable|Revoke/ }).count(), 0, 'a revoked key has no actions left');
      await shot1280('keys-realistic-after');
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  test('accounts: typing a password selects the password option, and the account is made with it', async () => {
    await page.goto(`${sluice.url}/app/accounts`);
    await page.getByRole('textbox', { name: 'Name' }).fill('typist');
    const linkOption = page.getByRole('radio', { name: /one-time sign-in link/ });
    const passwordOption = page.getByRole('radio', { name: /A password I type now/ });
    await linkOption.check();
    await page.locator('#create-password').fill('typist-password-1');
    assert.equal(await passwordOption.isChecked(), true, 'typing chose the password');
    assert.equal(await linkOption.isChecked(), false);
    await page.locator('#create-confirm').fill('typist-password-1');
    await page.getByRole('button', { name: 'Create account' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /Account “typist” created with the password you typed/);
  });

  test('keyboard: the sign-out button is reachable and signs out', async () => {
    await page.goto(`${sluice.url}/app/keys`);
    await shot('13-keys-admin');
    const signOut = page.getByRole('button', { name: 'Sign out' });
    await signOut.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/app\/login\?signedout=1$/);
    await page.goto(`${sluice.url}/app/keys`);
    assert.equal(new URL(page.url()).pathname, '/app/login');
  });
});
