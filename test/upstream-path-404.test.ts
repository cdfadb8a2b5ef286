/**
 * An upstream's 404 for the path Sluice built (a provider whose base_url lacks `/v1`, or has one too
 * many) is the operator's to fix: the caller gets a 502 in its dialect naming the provider and its
 * base_url (masked, never a credential), routing tries the next deployment, and the log says it
 * once a minute, not once per request. A 404 for a model the upstream lacks stays the caller's 404.
 * Against the fake vLLM (answering unknown paths as FastAPI, Ollama, a proxy's HTML or nothing),
 * the fake Anthropic and the fake Gemini, through the official SDKs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { createKey, eventually, startSluice, tempDir, type CreatedKey, type RunningSluice } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { thrown } from './support/thrown.js';

let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: CreatedKey;
/** The fake vLLM's address without its /v1: the base_url a new user writes. */
let bareVllm: string;

before(async () => {
  upstreams = await startThreeUpstreams();
  bareVllm = upstreams.vllm.url.replace(/\/v1$/, '');
  const dataDir = tempDir();
  key = await createKey(dataDir, 'path-co');
  const wrongVllm = bareVllm.replace('http://', 'http://operator:hunter2-password@');
  // One worker: the log's once-a-minute is each process's (every worker would say it once).
  sluice = await startSluice({
    dataDir,
    args: ['--workers', '1'],
    config: `${upstreams.providersYaml}
  - { id: vllm-no-v1, kind: openai, base_url: '${wrongVllm}', api_key: vllm-credential }
  - { id: vllm-no-v1-too, kind: openai, base_url: '${bareVllm}', api_key: vllm-credential }
  - { id: claude-v1-twice, kind: anthropic, base_url: '${upstreams.anthropic.url}/v1', api_key: anthropic-credential }
  - { id: gemini-v1beta-twice, kind: gemini, base_url: '${upstreams.gemini.url}/v1beta', api_key: gemini-credential }
models:
  - { id: lost, provider: vllm-no-v1, upstream_model: upstream-model, endpoints: [chat] }
  - { id: absent, provider: vllm, upstream_model: no-such-upstream-model, endpoints: [chat] }
  - id: failover
    endpoints: [chat]
    deployments:
      - { provider: vllm-no-v1-too, upstream_model: upstream-model, priority: 1 }
      - { provider: vllm, upstream_model: upstream-model, priority: 2 }
  - { id: claude-lost, provider: claude-v1-twice, upstream_model: claude-test, endpoints: [chat] }
  - { id: gemini-lost, provider: gemini-v1beta-twice, upstream_model: gemini-test, endpoints: [chat] }
`,
  });
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await upstreams.close();
});

const openai = () => new OpenAI({ apiKey: key.key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
const chat = (model: string) => openai().chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 });
const pathFaultLines = (provider: string) => (sluice.stdout() + sluice.stderr()).split('\n').filter((line) => line.includes(`'${provider}' has no such path`));

describe('a provider whose base_url lacks /v1 (the fake vLLM)', () => {
  for (const how of ['fastapi', 'ollama', 'html', 'empty'] as const) {
    test(`its 404 (${how}) is a 502 naming the provider and its masked base_url, never a credential`, async () => {
      upstreams.reset();
      upstreams.vllm.behaviour = { unknownPath: how };
      const error = await thrown(chat('lost'));
      assert.ok(error instanceof OpenAI.InternalServerError, String(error));
      assert.equal(error.status, 502);
      assert.equal(error.code, 'upstream_error');
      assert.equal(
        error.message,
        `502 The upstream provider 'vllm-no-v1' has no such path (base_url ${bareVllm}, path /chat/completions): it answered 404 for the path the gateway built, so its base_url is probably wrong (an OpenAI-compatible server's usually ends in /v1). This is a gateway configuration problem; see /status.`,
      );
      assert.ok(!error.message.includes('hunter2') && !error.message.includes('operator:') && !error.message.includes('vllm-credential'), 'no user info, password or api key');
      assert.equal(upstreams.vllm.requests.at(-1)?.path, '/chat/completions', 'the path Sluice built went to the upstream');
    });
  }

  test('the ledger row is a 502 upstream_error; the log says it once a minute however many requests meet it', async () => {
    const before = pathFaultLines('vllm-no-v1').length;
    assert.equal(before, 1, `the first request of the four above logged it, the next three did not: ${pathFaultLines('vllm-no-v1').join('\n')}`);
    for (let i = 0; i < 3; i++) await thrown(chat('lost'));
    const rows = await eventually(async () => {
      const lost = (await sluice.ledger()).filter((row) => row.model === 'lost');
      return lost.length >= 7 ? lost : undefined;
    }, 5000, 'the ledger rows');
    assert.ok(rows.every((row) => row.status === 502 && row.error_kind === 'upstream_error'), 'every row a 502 upstream_error');
    assert.equal(pathFaultLines('vllm-no-v1').length, 1, 'still one line');
    const line = JSON.parse(pathFaultLines('vllm-no-v1')[0]!) as { level: number; fix: string; deployment: string; msg: string };
    assert.deepEqual([line.level, line.fix, line.deployment], [40, 'operator', 'vllm-no-v1/upstream-model'], "a warning, the operator's, naming the deployment");
    assert.ok(!JSON.stringify(line).includes('hunter2'), 'no password in the log');
  });

  test('routing tries the next deployment (a deployment whose circuit is still closed): the caller is answered by the one whose base_url is right', async () => {
    upstreams.reset();
    const { data, response } = await openai().chat.completions.create({ model: 'failover', messages: [{ role: 'user', content: 'hello' }], max_tokens: 5 }).withResponse();
    assert.equal(data.choices.length, 1);
    assert.equal(response.headers.get('x-sluice-attempts'), '2', 'the wrong deployment, then the right one');
    assert.deepEqual(upstreams.vllm.requests.map((request) => request.path), ['/chat/completions', '/v1/chat/completions']);
  });
});

describe('a model the upstream lacks stays the caller’s 404', () => {
  test("vLLM's and Ollama's model-not-found answers", async () => {
    for (const how of ['vllm', 'ollama'] as const) {
      upstreams.reset();
      upstreams.vllm.behaviour = { unknownModel: how };
      const error = await thrown(chat('absent'));
      assert.ok(error instanceof OpenAI.NotFoundError, `${how}: ${String(error)}`);
      assert.match(error.message, how === 'vllm' ? /The model `no-such-upstream-model` does not exist\./ : /model 'no-such-upstream-model' not found/, how);
    }
  });
});

describe('other dialects and providers', () => {
  test('an Anthropic provider with /v1 on its base_url: the Anthropic SDK gets a 502 api_error naming it', async () => {
    const error = await thrown(new Anthropic({ apiKey: key.key, baseURL: sluice.url, maxRetries: 0 }).messages.create({ model: 'claude-lost', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof Anthropic.APIError && error.status === 502, String(error));
    const body = error.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'api_error');
    assert.match(body.error.message, new RegExp(`^The upstream provider 'claude-v1-twice' has no such path \\(base_url ${upstreams.anthropic.url}/v1, path /v1/v1/messages\\)`));
    assert.match(body.error.message, /probably wrong \(the vendor's own is https:\/\/api\.anthropic\.com\/v1\)/, 'the hint is the kind’s own, not an OpenAI server’s');
  });

  test('a Gemini provider with /v1beta on its base_url: the Google SDK gets a 502 naming it', async () => {
    const error = await thrown(new GoogleGenAI({ apiKey: key.key, httpOptions: { baseUrl: sluice.url } }).models.generateContent({ model: 'gemini-lost', contents: 'hi' }));
    assert.equal((error as { status?: number }).status, 502, String(error));
    const body = JSON.parse(String((error as Error).message)) as { error: { message: string } };
    assert.match(body.error.message, /^The upstream provider 'gemini-v1beta-twice' has no such path \(base_url .*\/v1beta, path \/v1beta\/v1beta\/models\/gemini-test:generateContent\)/);
    assert.ok(!body.error.message.includes('gemini-credential'), 'no api key');
  });
});
