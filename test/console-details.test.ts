import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { configFor, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

const run = promisify(execFile);
const PASSWORD = 'details-admin-password';

let fake: FakeUpstream;
let sluice: RunningSluice;
let key: string;

before(async () => {
  fake = await startFakeOpenAI({ models: ['upstream-model', 'chat-only', 'embed-upstream', 'rerank-upstream'] });
  const dataDir = tempDir();
  await createAccount(dataDir, 'admin', PASSWORD, true);
  sluice = await startSluice({
    dataDir,
    config: configFor(
      fake.url,
      `  - { id: chatty, provider: fake-vllm, upstream_model: upstream-model, endpoints: [completions, chat] }
  - { id: embedder, provider: fake-vllm, upstream_model: embed-upstream, endpoints: [embeddings] }
  - { id: reranker, provider: fake-vllm, upstream_model: rerank-upstream, endpoints: [rerank] }
`,
    ),
  });
  key = (await createKey(dataDir, 'try-it')).key;
});

after(async () => {
  if (sluice) assert.equal(await sluice.stop(), 0);
  await fake?.close();
});

/** Markup → its text, as a browser shows it (the entities the console writes undone). */
function textOf(markup: string): string {
  return markup.replace(/<[^>]+>/g, '').replace(/&(lt|gt|quot|#39|amp);/g, (_m, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name]!);
}

/** The "Try it" snippet of a model's page, as the page shows it. */
async function snippetOf(model: string): Promise<string> {
  const page = await fetch(`${sluice.url}/models/${model}`).then((r) => r.text());
  const code = /<code class="try-it">([\s\S]*?)<\/code>/.exec(page);
  assert.ok(code, `${model}: a Try it snippet`);
  return textOf(code[1]!);
}

/** Runs a snippet with bash, the key put in its key line and nothing else changed; its output parsed as JSON. */
async function runSnippet(snippet: string): Promise<any> {
  const placeholder = "SLUICE_KEY='<your API key>'";
  assert.ok(snippet.includes(placeholder), 'the key line to fill in');
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', snippet.replace(placeholder, `SLUICE_KEY='${key}'`)], { cwd: tempDir() });
  return JSON.parse(stdout);
}

describe('the "Try it" box of a model page', () => {
  test('defines every variable it uses, the gateway’s URL as the browser reached it', async () => {
    for (const model of ['chatty', 'embedder', 'reranker', 'llama-8b']) {
      const snippet = await snippetOf(model);
      const defined = [...snippet.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!);
      const used = [...new Set([...snippet.matchAll(/\$\{?([A-Z_]+)/g)].map((m) => m[1]!))];
      assert.deepEqual(defined, ['SLUICE_URL', 'SLUICE_KEY'], `${model}: the variables are set at the top`);
      assert.deepEqual(used.filter((name) => !defined.includes(name)), [], `${model}: no variable is used undefined`);
      assert.match(snippet, new RegExp(`^SLUICE_URL='${sluice.url}'$`, 'm'), `${model}: this gateway's own address`);
    }
  });

  test('a chat model’s snippet calls chat completions (not legacy completions), and works as written', async () => {
    const snippet = await snippetOf('chatty');
    assert.match(snippet, /"\$SLUICE_URL\/v1\/chat\/completions"/);
    const answer = await runSnippet(snippet);
    assert.equal(answer.object, 'chat.completion');
    assert.equal(answer.model, 'chatty');
    assert.equal(typeof answer.choices[0].message.content, 'string');
    assert.ok(answer.choices[0].message.content.length > 0);
  });

  test('an embedding model’s snippet calls embeddings, and works as written', async () => {
    const snippet = await snippetOf('embedder');
    assert.match(snippet, /"\$SLUICE_URL\/v1\/embeddings"/);
    const answer = await runSnippet(snippet);
    assert.equal(answer.object, 'list');
    assert.ok(Array.isArray(answer.data[0].embedding) && answer.data[0].embedding.length > 0, 'a vector');
  });

  test('a reranker’s snippet calls rerank, and works as written', async () => {
    const snippet = await snippetOf('reranker');
    assert.match(snippet, /"\$SLUICE_URL\/v1\/rerank"/);
    const answer = await runSnippet(snippet);
    assert.equal(answer.results.length, 2, 'both documents ranked');
  });

  test('legacy completions only for a model that serves nothing else, and it works as written', async () => {
    const snippet = await snippetOf('llama-8b');
    assert.match(snippet, /"\$SLUICE_URL\/v1\/completions"/);
    const answer = await runSnippet(snippet);
    assert.equal(answer.object, 'text_completion');
  });

  test('behind a TLS proxy the address is https, and a Host header that is no host name never reaches the snippet', async () => {
    const proxied = await fetch(`${sluice.url}/models/chatty`, { headers: { 'x-forwarded-proto': 'https' } }).then((r) => r.text());
    assert.match(textOf(/<code class="try-it">([\s\S]*?)<\/code>/.exec(proxied)![1]!), new RegExp(`^SLUICE_URL='https://${new URL(sluice.url).host}'$`, 'm'));
    const hostile = await new Promise<string>((resolve, reject) => {
      const request = httpGet(`${sluice.url}/models/chatty`, { headers: { host: "gw.example.com';touch pwned;'" } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve(body));
      });
      request.on('error', reject);
    });
    const snippet = textOf(/<code class="try-it">([\s\S]*?)<\/code>/.exec(hostile)![1]!);
    assert.match(snippet, /^SLUICE_URL='http:\/\/localhost'$/m);
    assert.ok(!snippet.includes('pwned'));
  });
});

describe('the new key’s page', () => {
  test('its example sets SLUICE_URL and SLUICE_KEY and runs as it is', async () => {
    const admin = new ConsoleClient(sluice.url);
    const csrf = await admin.signIn('admin', PASSWORD);
    const created = await admin.post('/app/keys', { csrf, name: 'example key', account: 'admin' });
    assert.equal(created.status, 200);
    const secret = /<code id="new-secret"[^>]*>(sk-[A-Za-z0-9]{48})<\/code>/.exec(created.text)![1]!;
    const example = textOf(/<summary>How to use it<\/summary>\s*<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(created.text)![1]!);
    assert.deepEqual([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]), ['SLUICE_URL', 'SLUICE_KEY']);
    assert.ok(example.includes(`SLUICE_KEY='${secret}'`));
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', example]);
    assert.ok((JSON.parse(stdout) as { data: { id: string }[] }).data.some((m) => m.id === 'chatty'), 'the models the new key may use');
  });
});

describe('dates', () => {
  test('keys, accounts, usage, a model page and /status show human dates in UTC, the exact ISO time on hover', async () => {
    const admin = new ConsoleClient(sluice.url);
    await admin.signIn('admin', PASSWORD);
    const pages = await Promise.all(['/app/keys', '/app/accounts', '/app/usage', '/models/llama-8b', '/status'].map(async (path) => (await admin.get(path)).text));
    for (const page of pages) {
      const tags = [...page.matchAll(/<time datetime="([^"]+)" title="([^"]+)">([^<]+)<\/time>/g)];
      assert.ok(tags.length > 0, 'moments are shown');
      for (const [, datetime, title, shown] of tags) {
        assert.match(datetime!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        assert.equal(title, datetime, 'the exact time on hover');
        assert.match(shown!, /^(today|yesterday) \d{2}:\d{2} UTC$|^\d{1,2} [A-Z][a-z]{2} \d{4}(, \d{2}:\d{2} UTC)?$/);
        assert.ok(!/\d{4}-\d{2}-\d{2}/.test(shown!), `no ISO date shown: ${shown}`);
      }
    }
  });
});

describe('/status', () => {
  test('the data comes first, the explanation after it', async () => {
    const page = await fetch(`${sluice.url}/status`).then((r) => r.text());
    const main = /<main[^>]*>([\s\S]*)<\/main>/.exec(page)![1]!;
    const firstTable = main.indexOf('<table');
    const firstParagraph = main.search(/<p class="muted small">/);
    assert.ok(firstTable > 0, 'a table');
    assert.ok(firstParagraph === -1 || firstParagraph > firstTable, 'no paragraph of explanation before the first table');
    assert.ok(main.indexOf('What these figures mean') > main.lastIndexOf('</table>'), 'the explanation below the tables');
  });

  test('one state per model: /status agrees with /models, and the router’s column never reads as a second health', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await openai.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1 });
    const labels: Record<string, string> = { up: 'Up', degraded: 'Degraded', down: 'Down', unknown: 'No recent data' };
    // Each gateway worker reads the ledger on its own (a snapshot at most a second old): compared once every one has the request.
    let mismatches: string[] = [];
    const statusPage = await eventually(async () => {
      const page = await fetch(`${sluice.url}/status`).then((r) => r.text());
      const models = ((await fetch(`${sluice.url}/models.json`).then((r) => r.json())) as { data: { id: string; health: string }[] }).data;
      mismatches = [];
      for (const { id, health } of models) {
        const row = new RegExp(`<tr data-model="${id}">([\\s\\S]*?)</tr>`).exec(page);
        const shown = row && /<span class="pill pill-(\w+)">([^<]+)<\/span>/.exec(row[1]!);
        if (shown?.[1] !== health || shown[2] !== labels[health]) mismatches.push(`${id}: /models.json ${health}, /status ${shown?.[1]} (${shown?.[2]})`);
        const detail = await fetch(`${sluice.url}/models/${id}`).then((r) => r.text());
        if (!detail.includes(`<span class="pill pill-${health}">${labels[health]}</span>`)) mismatches.push(`${id}: its own page differs from /models.json (${health})`);
      }
      return mismatches.length === 0 && models.find((m) => m.id === 'llama-8b')?.health === 'up' ? page : undefined;
    }, 5000, 'the request on /status and /models').catch((error: Error) => assert.fail(`${error.message}: ${mismatches.join('; ')}`));
    // other-model had no request of its own: the provider's state, and said so.
    assert.match(/<tr data-model="other-model">([\s\S]*?)<\/tr>/.exec(statusPage)![1]!, /pill-up">Up<\/span> <span class="muted small">its provider’s<\/span>/);
    // The deployments' router states use words of their own, under a heading that says whose view they are.
    assert.match(statusPage, /<th scope="col">Router \(this process\)<\/th>/);
    const routerStates = [...statusPage.matchAll(/<tr data-deployment-of="[^"]+"[^>]*>[\s\S]*?<span class="pill pill-\w+">([^<]+)<\/span>/g)].map((m) => m[1]);
    assert.ok(routerStates.length > 0);
    for (const state of routerStates) assert.ok(!Object.values(labels).includes(state!), `a router state is not worded as a health: ${state}`);
  });
});
