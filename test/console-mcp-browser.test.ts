/**
 * The MCP servers page in a real browser (Chromium): an admin adds an HTTP server through the
 * labelled form, sees it connected with its tools, and the page fits a 1,280 px window; the edit form
 * never holds the header's value.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startStreamableHttpMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';
import { createAccount } from './support/console.js';
import { startSluice, tempDir, type RunningSluice } from './support/sluice.js';

const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'browser-admin-password';
const TOKEN = 'browser-mcp-token-0d3e5b';

let upstream: FakeMcpUpstream;
let sluice: RunningSluice;
let browser: Browser;
let page: Page;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  upstream = await startStreamableHttpMcpUpstream({ token: TOKEN });
  const dataDir = tempDir();
  await createAccount(dataDir, 'admin', PASSWORD, true);
  sluice = await startSluice({ dataDir, config: `mcp_servers:\n  - id: a-file-server-with-a-long-id\n    url: http://127.0.0.1:9/a/rather/long/path/to/an/mcp/endpoint/that/is/down\n` });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on('request', (request) => assert.ok(request.url().startsWith(sluice.url), `outside request: ${request.url()}`));
});

after(async () => {
  await browser?.close();
  if (sluice) assert.equal(await sluice.stop(), 0);
  await upstream?.close();
});

describe('the MCP servers page in a browser', () => {
  test('add a server through the labelled form, see it ready with its tools; the page fits 1,280 px; the edit form is blank where the header was', async () => {
    await page.goto(`${sluice.url}/app/login`);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'MCP servers' }).click();
    await page.getByRole('link', { name: 'Add HTTP server' }).click();
    await page.getByLabel('Id').fill('team-tools');
    await page.getByLabel('URL').fill(upstream.url);
    await page.getByLabel('Transport').selectOption('streamable_http');
    await page.getByLabel(/^Headers/).fill(`Authorization: Bearer ${TOKEN}`);
    await page.getByRole('button', { name: 'Add server' }).click();
    assert.match(await page.getByRole('status').first().innerText(), /MCP server team-tools added\./);

    const row = page.locator('tr[data-mcp-server="team-tools"]');
    for (let tries = 0; (await row.locator('[data-state]').getAttribute('data-state')) !== 'ready'; tries++) {
      assert.ok(tries < 40, 'the server is ready within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
      await page.reload();
    }
    await row.getByText(/\d+ tools/).click();
    assert.ok(await row.locator('[data-tool="echo"]').isVisible(), 'its tools open under the count');
    assert.ok(!(await page.content()).includes(TOKEN), 'the header value is not on the page');
    const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    assert.ok(width <= 1280, `the page is ${width} px wide at 1,280`);
    const clipped = await page.evaluate(() =>
      [...(globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ scrollWidth: number; clientWidth: number }> } }).document.querySelectorAll('.table-scroll')].filter((box) => box.scrollWidth > box.clientWidth + 1).length,
    );
    await page.screenshot({ path: `${tmpdir()}/sluice-mcp-page-1280.png` });
    assert.equal(clipped, 0, 'the table fits its box');

    await row.getByRole('link', { name: 'Edit team-tools' }).click();
    assert.equal(await page.getByLabel(/^Headers/).inputValue(), '', 'the headers field is empty');
    assert.match(await page.locator('#f-headers-hint').innerText(), /Set now: Authorization: •+\. Leave blank to keep them/);
  });
});
