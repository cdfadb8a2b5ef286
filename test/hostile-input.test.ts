// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { configFor, createKey, eventually, startSluice } from './support/sluice.js';

/** JSON text nesting `levels` objects and arrays; written by hand, as JSON.stringify would overflow here too. */
function nested(levels: number): string {
  let open = '';
  let close = '';
  for (let i = 0; i < levels; i++) {
    open += i % 2 === 0 ? '{"inner":' : '[';
    close = (i % 2 === 0 ? '}' : ']') + close;
  }
  return `${open}"bottom"${close}`;
}

describe('hostile input', () => {
  test('deeply nested JSON is refused at the edge, naming the field, and never counts against the provider', async () => {
    const upstream = await startFakeOpenAI();
    const sluice = await startSluice({ config: configFor(upstream.url) });
    try {
      const { key } = await createKey(sluice.dataDir, 'acme');
      const post = (body: string) =>
        fetch(`${sluice.url}/v1/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
      for (let i = 0; i < 3; i++) {
        // JSON.stringify overflowed on this when Sluice forwarded it, and the 502 marked the provider down.
        const refused = await post(`{"model":"llama-8b","prompt":"hi","max_tokens":1,"vendor_extension":${nested(10_000)}}`);
        assert.equal(refused.status, 400);
        const { error } = (await refused.json()) as any;
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.param, 'vendor_extension');
        assert.match(error.message, /`vendor_extension` nests objects or arrays more than 64 levels deep/);
      }
      // A known field is held to the same bound.
      const prompt = await post(`{"model":"llama-8b","prompt":${nested(200)},"max_tokens":1}`);
      assert.equal(prompt.status, 400);
      assert.equal(((await prompt.json()) as any).error.param, 'prompt');
      // Real nesting, as tool schemas and vendor options have, passes untouched.
      const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      const fine = await client.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 1, vendor_extension: JSON.parse(nested(60)) } as any);
      assert.equal(fine.object, 'text_completion');
      assert.equal(upstream.requests.length, 1, 'only the acceptable request reached the upstream');

      const rows = await eventually(async () => ((await sluice.ledger()).length === 5 ? (await sluice.ledger()) : undefined));
      assert.deepEqual(rows.map((row) => row.status).sort(), [200, 400, 400, 400, 400]);
      const status = (await (await fetch(`${sluice.url}/status.json`)).json()) as any;
      const provider = status.providers.find((p: any) => p.id === 'fake-vllm');
      assert.equal(provider.last_hour.failures, 0);
      assert.notEqual(provider.status, 'down');
    } finally {
      assert.equal(await sluice.stop(), 0);
      await upstream.close();
    }
  });

  test('a "__proto__" key in logit_bias, metadata or the body is refused by name, as any other bad key, and never dropped on the way upstream', async () => {
    const upstream = await startFakeOpenAI();
    const sluice = await startSluice({ config: configFor(upstream.url, '  - { id: chat-responses, provider: fake-vllm, upstream_model: upstream-model, endpoints: [chat, responses] }\n') });
    try {
      const { key } = await createKey(sluice.dataDir, 'acme');
      // Raw JSON text: only JSON.parse makes "__proto__" an own key, as a hostile client's body does.
      const post = async (path: string, body: string) => {
        const response = await fetch(`${sluice.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        return { status: response.status, error: ((await response.json()) as any).error };
      };
      const chat = (extra: string) => post('/v1/chat/completions', `{"model":"chat-responses","messages":[{"role":"user","content":"hi"}],"max_tokens":1,${extra}}`);
      const legacy = (extra: string) => post('/v1/completions', `{"model":"llama-8b","prompt":"hi","max_tokens":1,${extra}}`);
      for (const send of [chat, legacy]) {
        const letters = await send('"logit_bias":{"abc":5}');
        assert.equal(letters.status, 400);
        assert.equal(letters.error.param, 'logit_bias.abc');
        for (const bias of ['{"__proto__":5}', '{"42":3,"__proto__":5}', '{"__proto__":{"42":100}}']) {
          const refused = await send(`"logit_bias":${bias}`);
          assert.equal(refused.status, 400, bias);
          assert.equal(refused.error.type, 'invalid_request_error');
          assert.equal(refused.error.param, 'logit_bias.__proto__');
          assert.equal(refused.error.message, letters.error.message.replace('logit_bias.abc', 'logit_bias.__proto__'));
        }
      }
      // A field of that name, which Sluice would otherwise refuse as unknown (translated) or relay (compatible upstreams).
      for (const send of [chat, legacy]) {
        const field = await send('"__proto__":{"temperature":2}');
        assert.equal(field.status, 400);
        assert.equal(field.error.param, '__proto__');
      }
      const metadata = await chat('"metadata":{"__proto__":"x"}');
      assert.equal(metadata.status, 400);
      assert.equal(metadata.error.param, 'metadata.__proto__');
      const responsesMetadata = await post('/v1/responses', '{"model":"chat-responses","input":"hi","metadata":{"__proto__":"x"}}');
      assert.equal(responsesMetadata.status, 400);
      assert.equal(responsesMetadata.error.param, 'metadata.__proto__');
      assert.equal(upstream.requests.length, 0);

      // Token ids pass as they came.
      assert.equal((await chat('"logit_bias":{"42":3}')).status, 200);
      assert.deepEqual(upstream.requests.at(-1)!.body.logit_bias, { '42': 3 });
    } finally {
      assert.equal(await sluice.stop(), 0);
      await upstream.close();
    }
  });
});
