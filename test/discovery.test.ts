import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import type { ListedModel } from './fakes/model-lists.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';

// What each upstream lists; the tests change these arrays while the gateway runs.
const vllmListed: ListedModel[] = [
  { id: 'meta-llama/Llama-3.1-8B-Instruct', contextLength: 131_072 },
  { id: 'qwen-coder', contextLength: 65_536 },
  { id: 'qwen-7b' },
  { id: 'shared-model' },
  { id: 'text-embedding-3' },
  // Retrieval models, told by their names (vLLM's /v1/models says nothing of a model's task), or by the weights an alias was loaded from.
  { id: 'BAAI/bge-m3', contextLength: 8192 },
  { id: 'BAAI/bge-reranker-v2-m3' },
  { id: 'my-retriever', root: 'intfloat/e5-mistral-7b-instruct' },
];
const secondListed: ListedModel[] = [{ id: 'shared-model' }, { id: 'second-only' }];
const anthropicListed: ListedModel[] = [
  { id: 'claude-a', displayName: 'Claude A' },
  { id: 'claude-b', displayName: 'Claude B' },
  { id: 'claude-c', displayName: 'Claude C' },
];
const geminiListed: ListedModel[] = [
  { id: 'gemini-x', displayName: 'Gemini X', inputTokenLimit: 1_048_576, outputTokenLimit: 65_536 },
  { id: 'gemini-y', displayName: 'Gemini Y' },
  { id: 'text-embedding-004', methods: ['embedContent'] },
];

let vllm: FakeUpstream;
let second: FakeUpstream;
let ollama: FakeUpstream;
let llamacpp: FakeUpstream;
let slow: FakeUpstream;
let anthropic: FakeUpstream;
let gemini: FakeUpstream;
let sluice: RunningSluice;
let key: string;

before(async () => {
  [vllm, second, ollama, llamacpp, slow, anthropic, gemini] = await Promise.all([
    startFakeOpenAI({ apiKey: 'vllm-credential', models: ['shared-model', 'qwen-coder'], listed: vllmListed }),
    startFakeOpenAI({ apiKey: 'second-credential', models: ['shared-model', 'second-only'], listed: secondListed }),
    startFakeOpenAI({ listed: [{ id: 'llama3.2:latest' }], listFlavour: 'ollama' }),
    startFakeOpenAI({ listed: [{ id: 'gguf-model', contextLength: 8192 }], listFlavour: 'llamacpp' }),
    startFakeOpenAI({ listed: [{ id: 'rarely-listed' }] }),
    // Two a page: Sluice has to follow has_more / nextPageToken to see them all.
    startFakeAnthropic({ apiKey: 'anthropic-credential', listed: anthropicListed, listPageMax: 2 }),
    startFakeGemini({ apiKey: 'gemini-credential', listed: geminiListed, listPageMax: 2 }),
  ]);
  sluice = await startSluice({
    args: ['--workers', '2'],
    config: `
providers:
  - { id: vllm, kind: openai, base_url: '${vllm.url}', api_key: vllm-credential, discover: { interval_ms: 1000, exclude: ['text-embedding-*'] } }
  - { id: second, kind: openai, base_url: '${second.url}', api_key: second-credential, discover: { interval_ms: 1000 } }
  - { id: ollama, kind: openai, base_url: '${ollama.url}', discover: { interval_ms: 1000, id_prefix: 'ollama/', endpoints: [chat], upstream_api: chat } }
  - { id: llamacpp, kind: openai, base_url: '${llamacpp.url}', discover: true }
  - { id: slow, kind: openai, base_url: '${slow.url}', discover: { interval_ms: 600000 } }
  - { id: anthropic, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-credential, discover: { interval_ms: 1000 } }
  - { id: google, kind: gemini, base_url: '${gemini.url}', api_key: gemini-credential, discover: { interval_ms: 1000 } }
models:
  - { id: llama-8b, provider: vllm, upstream_model: meta-llama/Llama-3.1-8B-Instruct, endpoints: [completions, chat] }
  - { id: qwen-7b, provider: vllm, display_name: Operator Qwen, context_window: 4096 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await Promise.all([vllm, second, ollama, llamacpp, slow, anthropic, gemini].map((fake) => fake.close()));
});

const openai = () => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });

async function listedIds(): Promise<string[]> {
  return (await openai().models.list()).data.map((model) => model.id);
}

/** Waits until /v1/models lists every id of `present` and none of `absent`. */
async function until(present: string[], absent: string[] = []): Promise<string[]> {
  return eventually(async () => {
    const ids = await listedIds();
    return present.every((id) => ids.includes(id)) && absent.every((id) => !ids.includes(id)) ? ids : undefined;
  }, 15_000, `models ${present.join(', ')} listed${absent.length > 0 ? ` and ${absent.join(', ')} not` : ''}`);
}

async function modelsJson(): Promise<any[]> {
  const body = (await (await fetch(`${sluice.url}/models.json`)).json()) as any;
  return body.data;
}

describe('discovery', () => {
  test('models of vLLM, Ollama, llama.cpp, Anthropic (paged) and Gemini (paged) reach /v1/models, after the operator’s own', async () => {
    const ids = await until(['qwen-coder', 'shared-model', 'second-only', 'ollama/llama3.2:latest', 'gguf-model', 'claude-a', 'claude-b', 'claude-c', 'gemini-x', 'gemini-y', 'rarely-listed']);
    assert.deepEqual(ids.slice(0, 2), ['llama-8b', 'qwen-7b']);
    // Excluded by pattern, or already served by the operator's llama-8b.
    for (const absent of ['text-embedding-3', 'meta-llama/Llama-3.1-8B-Instruct']) assert.ok(!ids.includes(absent), absent);
    assert.equal(ids.filter((id) => id === 'qwen-7b').length, 1);
    assert.equal(ids.filter((id) => id === 'shared-model').length, 1);
    // The listing carried the credential each upstream checks (the fakes answer 401 otherwise).
    assert.ok(vllm.requests.some((r) => r.method === 'GET' && r.headers.authorization === 'Bearer vllm-credential'));
    assert.ok(anthropic.requests.some((r) => r.method === 'GET' && r.path.includes('after_id=claude-b')), 'the second Anthropic page was asked for');
    assert.ok(gemini.requests.some((r) => r.method === 'GET' && r.path.includes('pageToken=')), 'the second Gemini page was asked for');
  });

  test('what the upstreams tell is kept: context lengths, display names, token limits; the operator’s entry is not overridden', async () => {
    const models = await modelsJson();
    const byId = new Map(models.map((m) => [m.id, m]));
    assert.equal(byId.get('qwen-coder').context_window, 65_536);
    assert.equal(byId.get('gguf-model').context_window, 8192);
    assert.equal(byId.get('claude-b').display_name, 'Claude B');
    assert.equal(byId.get('gemini-x').display_name, 'Gemini X');
    assert.equal(byId.get('gemini-x').context_window, 1_048_576);
    assert.equal(byId.get('gemini-x').max_output_tokens, 65_536);
    assert.equal(byId.get('ollama/llama3.2:latest').context_window, null);
    assert.equal(byId.get('qwen-7b').display_name, 'Operator Qwen');
    assert.equal(byId.get('qwen-7b').context_window, 4096);

    const claude = [];
    for await (const model of new Anthropic({ apiKey: key, baseURL: sluice.url, maxRetries: 0 }).models.list()) claude.push(model);
    assert.equal(claude.find((m) => m.id === 'claude-c')?.display_name, 'Claude C');
    const pager = await new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } }).models.list();
    const seen = [];
    for await (const model of pager) seen.push(model);
    const x = seen.find((m) => m.name === 'models/gemini-x');
    assert.equal(x?.inputTokenLimit, 1_048_576);
    assert.equal(x?.outputTokenLimit, 65_536);
  });

  test('embedding and reranking models are registered for embeddings and rerank, not chat: by name, by an alias’s root, by Gemini’s methods', async () => {
    await until(['BAAI/bge-m3', 'BAAI/bge-reranker-v2-m3', 'my-retriever', 'text-embedding-004']);
    const byId = new Map((await modelsJson()).map((m) => [m.id, m]));
    const embeddings = ['/v1/embeddings', '/v1beta/models/{model}:embedContent', '/v1beta/models/{model}:batchEmbedContents'];
    assert.deepEqual(byId.get('BAAI/bge-m3').operations, embeddings);
    assert.equal(byId.get('BAAI/bge-m3').context_window, 8192);
    assert.deepEqual(byId.get('my-retriever').operations, embeddings, 'a vLLM alias of e5-mistral');
    assert.deepEqual(byId.get('BAAI/bge-reranker-v2-m3').operations, ['/v1/rerank', '/v2/rerank']);
    const gecko = byId.get('text-embedding-004');
    assert.deepEqual(gecko.operations, embeddings, 'Gemini lists it with embedContent only');
    assert.equal(gecko.max_output_tokens, null, 'an embedding model has no output limit');
    // Generation models keep the provider's discover.endpoints.
    assert.ok(byId.get('qwen-coder').operations.includes('/v1/chat/completions'));
    assert.ok(byId.get('gemini-x').operations.includes('/v1beta/models/{model}:generateContent'));

    // Google's listing gives the embedding model its embedding methods only.
    const seen = [];
    for await (const model of await new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: sluice.url } }).models.list()) seen.push(model);
    assert.deepEqual(seen.find((m) => m.name === 'models/text-embedding-004')?.supportedActions, ['embedContent', 'batchEmbedContents']);

    // A chat request for a retrieval model is refused naming the model and the operation, and reaches no upstream.
    const posts = vllm.requests.filter((r) => r.method === 'POST').length;
    await assert.rejects(
      openai().chat.completions.create({ model: 'BAAI/bge-reranker-v2-m3', messages: [{ role: 'user', content: 'hi' }] }),
      (error: any) => error.status === 400 && /`BAAI\/bge-reranker-v2-m3` does not serve \/v1\/chat\/completions; it serves \/v1\/rerank/.test(error.message),
    );
    assert.equal(vllm.requests.filter((r) => r.method === 'POST').length, posts);
  });

  test('a discovered model serves requests; an id two providers list goes to the first', async () => {
    const answer = await openai().chat.completions.create({ model: 'shared-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    assert.ok(answer.choices[0]!.message.content);
    assert.ok(vllm.requests.some((r) => r.method === 'POST' && r.body?.model === 'shared-model'));
    assert.ok(!second.requests.some((r) => r.method === 'POST'));
  });

  test('of two workers, one lists each provider each interval', async () => {
    // `slow` is due once in ten minutes: both workers' schedules see it, one claim wins.
    await until(['rarely-listed']);
    // A real wait for something not to happen: two and a half of each worker's schedule ticks (1 s
    // each, fixed in discovery.ts), in which the other worker would have claimed the listing too.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(slow.requests.filter((r) => r.method === 'GET').length, 1);
    // Every worker answers with the same list (requests on fresh connections land on either).
    const lists = await Promise.all(Array.from({ length: 6 }, async () => (await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key}`, connection: 'close' } }).then((r) => r.json())) as any));
    for (const list of lists) assert.deepEqual(list.data.map((m: any) => m.id), lists[0].data.map((m: any) => m.id));
  });

  test('a refresh picks up a new model and drops a removed one', async () => {
    vllmListed.push({ id: 'brand-new', contextLength: 16_384 });
    vllmListed.splice(vllmListed.findIndex((m) => m.id === 'qwen-coder'), 1);
    await until(['brand-new'], ['qwen-coder']);
  });

  test('a failing upstream keeps the list it gave before, and the failure is recorded with the URL it requested, without its credential; the console shows both', async () => {
    second.behaviour = { fail: { status: 500, body: JSON.stringify({ error: { message: 'engine down', type: 'InternalServerError', param: null, code: 500 } }) }, only: (r) => r.method === 'GET' };
    try {
      const rows = await eventually(async () => {
        const found = await queryStore<{ error: string | null; error_url: string | null }>(sluice.dataDir, "SELECT error, error_url FROM discovered_models WHERE provider_id = 'second'");
        return found[0]?.error ? found : undefined;
      }, 15_000, 'the failed listing recorded');
      assert.match(rows[0]!.error!, /second/);
      assert.ok(!rows[0]!.error!.includes('second-credential'));
      const tried = `${second.url}/models`;
      assert.equal(rows[0]!.error_url, tried, 'the URL discovery requested');
      const ids = await listedIds();
      assert.ok(ids.includes('second-only'), 'the models listed before are kept');

      await createAccount(sluice.dataDir, 'discovery-admin', 'discovery admin password', true);
      const admin = new ConsoleClient(sluice.url);
      await admin.signIn('discovery-admin', 'discovery admin password');
      const page = (await admin.get('/app/catalogue')).text;
      const row = /<tr data-provider="second">([\s\S]*?)<\/tr>/.exec(page)![1]!;
      const shown = /<span class="field-error small" data-discovery-error>([\s\S]*?)<\/span><\/td>/.exec(row)?.[1];
      assert.ok(shown, 'the provider’s row shows the failure');
      assert.match(shown, /^last listing failed <time datetime="[^"]+" title="[^"]+">today \d\d:\d\d UTC<\/time>: .*second.*/);
      assert.ok(shown.includes(`(GET <code>${tried}</code>)`), `the URL tried: ${shown}`);
      assert.ok(!page.includes('second-credential'), 'never the credential');

      // The console's import of the same list says which URL failed too.
      const imported = await admin.post('/app/catalogue/providers/second/import', ConsoleClient.formFields(page, '/app/catalogue/providers/second/import'));
      assert.equal(imported.status, 502);
      assert.match(imported.text, new RegExp(`could not be read: [^<]*second[^<]* <span class="tried">\\(GET <code>${tried.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}</code>\\)</span>`));
      assert.ok(!imported.text.includes('second-credential'));
    } finally {
      second.behaviour = {};
    }
  });
});

describe('the console’s import action', () => {
  test('registers the upstream’s models that are not in the catalogue as console entries, and says what it skipped and why', async () => {
    await createAccount(sluice.dataDir, 'root', 'correct horse battery', true);
    const browser = new ConsoleClient(sluice.url);
    await browser.signIn('root', 'correct horse battery');
    const page = await browser.get('/app/catalogue');
    assert.match(page.text, /discovered from anthropic/);
    const fields = ConsoleClient.formFields(page.text, '/app/catalogue/providers/vllm/import');

    // Without the session's CSRF token nothing happens.
    const forged = await browser.post('/app/catalogue/providers/vllm/import', { csrf: 'forged' });
    assert.equal(forged.status, 403);

    const result = await browser.post('/app/catalogue/providers/vllm/import', fields);
    assert.equal(result.status, 200);
    const added = /data-import="added">([\s\S]*?)<\/ul>/.exec(result.text)?.[1] ?? '';
    const skipped = /data-import="skipped">([\s\S]*?)<\/ul>/.exec(result.text)?.[1] ?? '';
    assert.match(added, /<code>shared-model<\/code>/);
    assert.match(added, /<code>brand-new<\/code>/);
    assert.match(skipped, /<code>qwen-7b<\/code>: already in the catalogue \(from the configuration file\)/);
    assert.match(skipped, /<code>meta-llama\/Llama-3.1-8B-Instruct<\/code>: already served as &#39;llama-8b&#39;|already served as 'llama-8b'/);
    assert.match(skipped, /<code>text-embedding-3<\/code>: excluded: matches exclude pattern/);

    const after = await browser.get('/app/catalogue');
    assert.match(after.text, /href="\/app\/catalogue\/models\/brand-new\/edit"/, 'an imported model is editable in the console');
    // A second import finds them there.
    const again = await browser.post('/app/catalogue/providers/vllm/import', fields);
    assert.match(again.text, /<code>brand-new<\/code>: already in the catalogue \(from the console\)/);
  });

  test('a console provider can discover: the form sets it, keeps it on edit and refuses a bad interval', async () => {
    const upstream = await startFakeOpenAI({ listed: [{ id: 'console-discovered' }] });
    try {
      const browser = new ConsoleClient(sluice.url);
      await browser.signIn('root', 'correct horse battery');
      const form = ConsoleClient.formFields((await browser.get('/app/catalogue/providers/new')).text, '/app/catalogue/providers/new');
      const bad = await browser.post('/app/catalogue/providers/new', { ...form, id: 'console-box', kind: 'openai', base_url: upstream.url, discover: '1', discover_interval_ms: '10' });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-discover_interval_ms-err">[^<]*1000/);
      const saved = await browser.post('/app/catalogue/providers/new', { ...form, id: 'console-box', kind: 'openai', base_url: upstream.url, discover: '1', discover_interval_ms: '1000', discover_id_prefix: 'box/' });
      assert.equal(saved.status, 303, saved.text);
      const client = new OpenAI({ apiKey: (await createKey(sluice.dataDir, 'console-discovery')).key, baseURL: `${sluice.url}/v1` });
      await eventually(async () => ((await client.models.list()).data.some((m) => m.id === 'box/console-discovered') ? true : undefined), 8000, 'the console provider\'s model');
      const edit = await browser.get('/app/catalogue/providers/console-box/edit');
      assert.match(edit.text, /name="discover" value="1" checked/);
      assert.match(edit.text, /name="discover_id_prefix" type="text" value="box\/"/);
    } finally {
      await upstream.close();
    }
  });

  test('an upstream that refuses the credential is reported, without the credential', async () => {
    const browser = new ConsoleClient(sluice.url);
    await browser.signIn('root', 'correct horse battery');
    const fields = ConsoleClient.formFields((await browser.get('/app/catalogue')).text, '/app/catalogue/providers/second/import');
    second.behaviour = { fail: { status: 401, body: JSON.stringify({ error: 'Unauthorized' }) } };
    const result = await browser.post('/app/catalogue/providers/second/import', fields);
    second.behaviour = {};
    assert.equal(result.status, 502);
    assert.match(result.text, /refused the gateway&#39;s credentials|refused the gateway's credentials/);
    assert.ok(!result.text.includes('second-credential'));
  });
});

describe('discovery across a stop, a kill and a reload', () => {
  const heldConfig = (url: string, intervalMs: number) => `
providers:
  - { id: held, kind: openai, base_url: '${url}', discover: { interval_ms: ${intervalMs} } }
`;

  async function modelIds(gateway: RunningSluice, apiKey: string): Promise<string[]> {
    return (await new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 }).models.list()).data.map((model) => model.id);
  }

  /** A gateway whose listing of `upstream` is under way and held unanswered (longer than the test waits), as a slow upstream's would be. */
  async function listingHeld(upstream: FakeUpstream, config: string): Promise<RunningSluice> {
    upstream.behaviour = { headerDelayMs: 20_000, only: (request) => request.method === 'GET' };
    const gateway = await startSluice({ args: ['--workers', '1'], config });
    await eventually(() => (upstream.requests.some((request) => request.method === 'GET') ? true : undefined), 10_000, 'the first listing to start');
    upstream.behaviour = {};
    return gateway;
  }

  test('a gateway killed while listing holds up a restarted one for a short lease, not its interval', async () => {
    const upstream = await startFakeOpenAI({ listed: [{ id: 'held-model' }] });
    // Ten minutes: the restarted gateway must not wait for the turn the killed one took.
    const config = heldConfig(upstream.url, 600_000);
    let gateway = await listingHeld(upstream, config);
    try {
      await gateway.stop('SIGKILL');
      gateway = await startSluice({ args: ['--workers', '1'], config, dataDir: gateway.dataDir });
      const { key: apiKey } = await createKey(gateway.dataDir, 'restart-co');
      const ids = await eventually(async () => ((await modelIds(gateway, apiKey)).includes('held-model') ? modelIds(gateway, apiKey) : undefined), 30_000, 'the model listed after the kill');
      assert.deepEqual(ids, ['held-model']);
      assert.equal(upstream.requests.filter((request) => request.method === 'GET').length, 2, 'listed once more, by the restarted gateway');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });

  test('a gateway stopped while listing lets go of its turn: the restarted one lists at once', async () => {
    const upstream = await startFakeOpenAI({ listed: [{ id: 'held-model' }] });
    const config = heldConfig(upstream.url, 600_000);
    let gateway = await listingHeld(upstream, config);
    try {
      assert.equal(await gateway.stop('SIGTERM'), 0, 'a graceful stop in the middle of a listing');
      gateway = await startSluice({ args: ['--workers', '1'], config, dataDir: gateway.dataDir });
      const { key: apiKey } = await createKey(gateway.dataDir, 'restart-co');
      await eventually(async () => ((await modelIds(gateway, apiKey)).includes('held-model') ? true : undefined), 30_000, 'the model listed after the restart');
      const claimant = async () => (await queryStore<{ claimed_by: string | null }>(gateway.dataDir, "SELECT claimed_by FROM discovered_models WHERE provider_id = 'held'"))[0]?.claimed_by;
      await eventually(async () => ((await claimant()) === null ? true : undefined), 5000, 'the listing over, its claim let go');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });

  test('a shorter interval_ms set by a reload applies from the last listing', async () => {
    const upstream = await startFakeOpenAI({ listed: [{ id: 'reloaded-model' }] });
    const listings = () => upstream.requests.filter((request) => request.method === 'GET').length;
    const gateway = await startSluice({ args: ['--workers', '1'], config: heldConfig(upstream.url, 600_000) });
    const listedAt = async () => Number((await queryStore<{ listed_at: number | null }>(gateway.dataDir, "SELECT listed_at FROM discovered_models WHERE provider_id = 'held'"))[0]?.listed_at ?? 0);
    try {
      const first = await eventually(async () => ((await listedAt()) > 0 ? listedAt() : undefined), 10_000, 'the first listing');
      assert.equal(listings(), 1);
      writeFileSync(join(gateway.dataDir, 'sluice.yaml'), heldConfig(upstream.url, 2_000));
      const second = await eventually(async () => ((await listedAt()) > first ? listedAt() : undefined), 20_000, 'a listing on the new interval');
      assert.ok(second - first >= 2_000, `the next listing came ${second - first} ms after the last, not before the new interval`);
      assert.equal(listings(), 2, 'listed once more');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});
