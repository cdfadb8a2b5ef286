import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { configFor, createKey, startSluice, type RunningSluice } from './support/sluice.js';

let sluice: RunningSluice;

before(async () => {
  sluice = await startSluice({ config: configFor('http://127.0.0.1:9/v1') });
});
after(async () => {
  assert.equal(await sluice.stop(), 0);
});

function clientFor(key: string) {
  return new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
}

describe('GET /v1/models in the OpenAI format', () => {
  test('lists every model for an unrestricted key, in the configuration order', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme');
    const page = await clientFor(key).models.list();
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['llama-8b', 'other-model', 'chat-only'],
    );
    assert.deepEqual(page.data[0], { id: 'llama-8b', object: 'model', created: 1721692800, owned_by: 'meta' });
    assert.deepEqual(page.data[1], { id: 'other-model', object: 'model', created: 0, owned_by: 'fake-vllm' });
    const raw = (await (await fetch(`${sluice.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    assert.equal(raw.object, 'list');
  });

  test('lists only the models a restricted key may use', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme', ['--models', 'other-model,chat-only']);
    const page = await clientFor(key).models.list();
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['other-model', 'chat-only'],
    );
  });

  test('a key whose permissions reach no model gets 403', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme', ['--models', 'retired-model']);
    await assert.rejects(clientFor(key).models.list(), OpenAI.PermissionDeniedError);
  });

  test('retrieves one model; unknown is 404 and forbidden is 403', async () => {
    const { key } = await createKey(sluice.dataDir, 'acme', ['--models', 'llama-8b']);
    const client = clientFor(key);
    const model = await client.models.retrieve('llama-8b');
    assert.deepEqual({ ...model }, { id: 'llama-8b', object: 'model', created: 1721692800, owned_by: 'meta' });
    await assert.rejects(client.models.retrieve('missing'), (e: any) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
    await assert.rejects(client.models.retrieve('other-model'), OpenAI.PermissionDeniedError);
  });

  test('401 for a missing or invalid key, 403 for a disabled key, each in the OpenAI error shape', async () => {
    const missing = await fetch(`${sluice.url}/v1/models`);
    assert.equal(missing.status, 401);
    assert.deepEqual(Object.keys(((await missing.json()) as any).error).sort(), ['code', 'message', 'param', 'type']);
    await assert.rejects(clientFor('sk-wrong').models.list(), OpenAI.AuthenticationError);
  });

  test('unknown routes are 404 and wrong methods 405, in the OpenAI shape', async () => {
    const notFound = await fetch(`${sluice.url}/v1/nothing`);
    assert.equal(notFound.status, 404);
    assert.equal(((await notFound.json()) as any).error.code, 'route_not_found');
    const wrongMethod = await fetch(`${sluice.url}/v1/completions`, { method: 'GET' });
    assert.equal(wrongMethod.status, 405);
  });
});
