import { test } from 'node:test';
import { chromium } from 'playwright-core';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { createAccount } from './support/console.js';
import { configFor, createKey, startSluice, tempDir } from './support/sluice.js';

test('scratch', async () => {
  const fake = await startFakeOpenAI();
  const dataDir = tempDir();
  await createAccount(dataDir, 'admin', 'browser-admin-password', true);
  const sluice = await startSluice({ dataDir, config: configFor(fake.url, `  - id: an-embedding-model-with-long-id
    provider: fake-vllm
    endpoints: [embeddings]
`) });
  for (let i = 1; i <= 4; i++) await createKey(dataDir, `team-account-${i}`, ['--name', `production-backend-service-${String(i).padStart(3, '0')}`.slice(0, 30), '--models', 'llama-8b,an-embedding-model-with-long-id,chat-only', '--rpm', '600', '--tpm', '200000', '--concurrency', '20', '--budget-usd', '250', '--budget-period', 'month', '--expires', '2099-01-01']);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${sluice.url}/app/login`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill('browser-admin-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${sluice.url}/app/keys`);
  await page.screenshot({ path: '/tmp/h7/keys.png', fullPage: true });
  for (const b of await page.locator('td.actions a').all()) console.log(await b.innerText(), JSON.stringify(await b.boundingBox()));
  const w = await page.evaluate(() => [(globalThis as any).document.documentElement.scrollWidth, (globalThis as any).document.querySelector('.table-scroll').scrollWidth, (globalThis as any).document.querySelector('.table-scroll').clientWidth]);
  console.log(w);
  for (const p of ['/models/llama-8b', '/models/an-embedding-model-with-long-id', '/status', '/app/catalogue']) { await page.goto(sluice.url + p); await page.screenshot({ path: `/tmp/h7/${p.replaceAll('/', '_')}.png`, fullPage: true }); }
  await browser.close();
  await sluice.stop();
  await fake.close();
});
