import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { modelFromConfig } from '../../../src/catalogue/catalogue.js';
import { modelSchema, providerSchema } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import { imageGenerations } from '../../../src/dialects/openai/images/operation.js';
import { moderations } from '../../../src/dialects/openai/moderations/operation.js';
import { rerank } from '../../../src/dialects/openai/rerank/operation.js';
import { MAX_RERANK_DOCUMENTS } from '../../../src/dialects/openai/rerank/request.js';
import { openAIDialect } from '../../../src/dialects/openai/dialect.js';
import type { Operation, ParsedRequest } from '../../../src/generation/operation.js';
import { usageOf } from '../../../src/generation/model.js';
import { writeReply } from '../../../src/pipeline/write.js';
import { createProvider } from '../../../src/providers/registry.js';
import { clientOperationName, serverOperationName } from '../../../src/telemetry/gen-ai.js';
import { imagesConsumption } from '../../../src/wire/openai/images.js';
import { relayFormat } from '../../../src/wire/relay-format.js';
import { rerankConsumption } from '../../../src/wire/rerank/usage.js';
import { MemorySink } from '../support/memory-sink.js';

/**
 * The JSON operations relayed to OpenAI-compatible upstreams (rerank, moderations, image
 * generations): their parsing and its refusals in OpenAI's error body, what each attempt plans on
 * each kind of upstream, the answer written back with the public model and its billed units, and
 * what the upstreams' answers say of usage.
 */

const wire = { headers: {}, path: '/v1/x', query: new URLSearchParams() };

/** The OpenAI error body the caller would read for what `parse` throws. */
function refusal<R extends ParsedRequest>(operation: Operation<R>, body: unknown): { status: number; error: { message: string; param: string | null; type: string; code: string | null } } {
  try {
    operation.parse(body, wire);
  } catch (thrown) {
    assert.ok(thrown instanceof GatewayError, `a GatewayError, not ${String(thrown)}`);
    const { status, body: rendered } = openAIDialect.renderError(thrown, 'req_1');
    return { status, ...(JSON.parse(rendered) as { error: { message: string; param: string | null; type: string; code: string | null } }) };
  }
  assert.fail(`accepted ${JSON.stringify(body).slice(0, 200)}`);
}

describe('rerank requests', () => {
  test("Cohere's and Jina's shapes parse; documents as strings or {text}; unknown fields kept for the upstream", () => {
    const body = { model: 'r', query: 'q', documents: ['a', { text: 'b', id: 7 }], top_n: 1, return_documents: true, max_tokens_per_doc: 512 };
    const parsed = rerank.parse(structuredClone(body), wire) as unknown as { model: string; body: unknown; query: string; documents: string[] };
    assert.equal(parsed.model, 'r');
    assert.deepEqual(parsed.documents, ['a', 'b'], 'the texts Sluice counts');
    assert.deepEqual(parsed.body, body, 'the body relayed is the caller’s own');
  });

  const bad: readonly [string, unknown, string, RegExp][] = [
    ['no model', { query: 'q', documents: ['d'] }, 'model', /Missing required parameter: 'model'/],
    ['an empty query', { model: 'r', query: '', documents: ['d'] }, 'query', /query/],
    ['a query that is a list', { model: 'r', query: ['q'], documents: ['d'] }, 'query', /expected a string/],
    ['no documents', { model: 'r', query: 'q' }, 'documents', /Missing required parameter: 'documents'/],
    ['an empty list of documents', { model: 'r', query: 'q', documents: [] }, 'documents', />= 1/],
    ['one document too many', { model: 'r', query: 'q', documents: Array.from({ length: MAX_RERANK_DOCUMENTS + 1 }, () => 'd') }, 'documents', /<= 10000/],
    ['a document of neither shape', { model: 'r', query: 'q', documents: ['d', { content: 'x' }] }, 'documents[1]', /a string or an object with a string `text`/],
    ['top_n 0', { model: 'r', query: 'q', documents: ['d'], top_n: 0 }, 'top_n', />= 1/],
    ['top_n 1.5', { model: 'r', query: 'q', documents: ['d'], top_n: 1.5 }, 'top_n', /integer/],
    ['return_documents as a word', { model: 'r', query: 'q', documents: ['d'], return_documents: 'yes' }, 'return_documents', /boolean/],
    ['a __proto__ key', JSON.parse('{"model":"r","query":"q","documents":["d"],"__proto__":{"x":1}}'), '__proto__', /__proto__/],
  ];
  for (const [what, body, param, message] of bad) {
    test(`${what}: 400 naming ${param}`, () => {
      const { status, error } = refusal(rerank, body);
      assert.equal(status, 400);
      assert.equal(error.param, param);
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
    });
  }

  test('10,000 documents are taken', () => {
    assert.doesNotThrow(() => rerank.parse({ model: 'r', query: 'q', documents: Array.from({ length: MAX_RERANK_DOCUMENTS }, () => 'd') }, wire));
  });
});

describe('moderation requests', () => {
  test('a string, strings, and text and image parts; only the texts are counted', async () => {
    for (const input of ['hi', ['a', 'b'], [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'https://x.example/i.png' } }]]) {
      const parsed = moderations.parse({ model: 'm', input }, wire);
      assert.equal(parsed.model, 'm');
    }
    const parts = moderations.parse({ model: 'm', input: [{ type: 'text', text: 'hello there' }, { type: 'image_url', image_url: { url: 'https://x.example/i.png' } }] }, wire);
    assert.equal((await moderations.countUsage(parts, [])).input, 2, "the text part's two tokens; the image is not counted");
  });

  const bad: readonly [string, unknown, string, RegExp][] = [
    ['no model (OpenAI would pick omni-moderation-latest; Sluice routes by it)', { input: 'hi' }, 'model', /Missing required parameter: 'model'/],
    ['no input', { model: 'm' }, 'input', /Missing required parameter: 'input'/],
    ['a number', { model: 'm', input: 3 }, 'input', /a string, a non-empty array of strings, or a non-empty array of text and image_url parts/],
    ['an empty list', { model: 'm', input: [] }, 'input', /non-empty/],
    ['strings and parts mixed', { model: 'm', input: ['a', { type: 'text', text: 'b' }] }, 'input', /non-empty array/],
    ['an audio part', { model: 'm', input: [{ type: 'input_audio', input_audio: {} }] }, 'input', /non-empty array/],
  ];
  for (const [what, body, param, message] of bad) {
    test(`${what}: 400 naming ${param}`, () => {
      const { status, error } = refusal(moderations, body);
      assert.equal(status, 400);
      assert.equal(error.param, param);
      assert.match(error.message, message);
    });
  }
});

describe('image generation requests', () => {
  test('every documented field, and unknown ones, pass; n is what admission reserves for, with no output tokens', () => {
    const body = { model: 'i', prompt: 'a fox', n: 3, size: '1024x1536', quality: 'high', background: 'transparent', output_format: 'webp', output_compression: 80, moderation: 'low', user: 'u-1', seed: 4 };
    const parsed = imageGenerations.parse(structuredClone(body), wire);
    assert.deepEqual(imageGenerations.outputBound(parsed), { maxTokens: 0, choices: 1, units: { images: 3 } });
    assert.deepEqual((parsed as unknown as { body: unknown }).body, body);
    assert.deepEqual(imageGenerations.outputBound(imageGenerations.parse({ model: 'i', prompt: 'p' }, wire)), { maxTokens: 0, choices: 1, units: { images: 1 } });
  });

  const bad: readonly [string, unknown, string, RegExp][] = [
    ['no prompt', { model: 'i' }, 'prompt', /Missing required parameter: 'prompt'/],
    ['an empty prompt', { model: 'i', prompt: '' }, 'prompt', /length >= 1/],
    ['n 0', { model: 'i', prompt: 'p', n: 0 }, 'n', />= 1/],
    ['n 11', { model: 'i', prompt: 'p', n: 11 }, 'n', /<= 10/],
    ['a size in words', { model: 'i', prompt: 'p', size: 'large' }, 'size', /WIDTHxHEIGHT/],
    ['response_format gif', { model: 'i', prompt: 'p', response_format: 'gif' }, 'response_format', /url|b64_json/],
    ['output_compression 101', { model: 'i', prompt: 'p', output_compression: 101 }, 'output_compression', /<= 100/],
    ['a stream of partial images', { model: 'i', prompt: 'p', stream: true }, 'stream', /not supported/],
  ];
  for (const [what, body, param, message] of bad) {
    test(`${what}: 400 naming ${param}`, () => {
      const { status, error } = refusal(imageGenerations, body);
      assert.equal(status, 400);
      assert.equal(error.param, param);
      assert.match(error.message, message);
    });
  }
});

function providerOf(kind: 'openai' | 'anthropic' | 'gemini') {
  return createProvider(providerSchema.parse({ id: `p-${kind}`, kind, base_url: 'http://127.0.0.1:9', api_key: 'unused' }) as Parameters<typeof createProvider>[0]);
}

const modelOn = (kind: string) => modelFromConfig(modelSchema.parse({ id: 'public-id', provider: `p-${kind}`, upstream_model: 'upstream-id', endpoints: ['rerank', 'moderations', 'images'] }));

const CASES = [
  { operation: rerank, body: { model: 'public-id', query: 'q', documents: ['d'] }, wireOperation: 'openai.rerank', name: 'rerank', path: '/v1/rerank' },
  { operation: moderations, body: { model: 'public-id', input: 'hi' }, wireOperation: 'openai.moderations', name: 'moderations', path: '/v1/moderations' },
  { operation: imageGenerations, body: { model: 'public-id', prompt: 'p' }, wireOperation: 'openai.images.generations', name: 'images.generations', path: '/v1/images/generations' },
] as const;

describe('plans', () => {
  for (const c of CASES) {
    test(`${c.name}: relayed whole to an OpenAI-compatible upstream; refused by name on Anthropic and Gemini`, () => {
      const op = c.operation as Operation<ParsedRequest>;
      const request = op.parse(structuredClone(c.body), wire);
      const call = op.plan(request, { model: modelOn('openai'), provider: providerOf('openai') });
      assert.deepEqual(call, { kind: 'relay', operation: c.wireOperation, body: c.body, stream: false });
      for (const kind of ['anthropic', 'gemini'] as const) {
        assert.throws(
          () => op.plan(request, { model: modelOn(kind), provider: providerOf(kind) }),
          (error: unknown) =>
            error instanceof GatewayError && error.status === 400 && error.param === 'model' && error.message.includes('`public-id`') && error.message.includes(c.path) && error.message.includes(`does not serve ${c.name}`),
        );
      }
    });
  }
});

describe('answers', () => {
  const write = async (op: Operation<ParsedRequest>, requestBody: unknown, answer: Record<string, unknown>) => {
    const request = op.parse(requestBody, wire);
    const sink = new MemorySink();
    const provider = providerOf('openai');
    const model = modelOn('openai');
    const reply = op.answer(request, { kind: 'relayed', body: answer }, { model, provider, call: op.plan(request, { model, provider }), sink });
    const written = await writeReply(reply, sink, (generated) => op.countUsage(request, generated));
    return { written, sent: JSON.parse(sink.body) as Record<string, unknown> };
  };

  test("rerank: the upstream's model replaced by the public one; its tokens, and one request billed; Cohere's search units where it bills them", async () => {
    const vllm = await write(rerank, { model: 'public-id', query: 'q', documents: ['d'] }, { id: 'rerank-1', model: 'upstream-id', usage: { total_tokens: 9 }, results: [{ index: 0, relevance_score: 0.5 }] });
    assert.equal(vllm.sent.model, 'public-id');
    assert.deepEqual(vllm.written.usage, { ...usageOf(9, 0), units: { requests: 1 } });
    assert.equal(vllm.written.counted, false);
    const cohere = await write(rerank, { model: 'public-id', query: 'hello world', documents: ['one', 'two'] }, { id: 'x', results: [], meta: { billed_units: { search_units: 2 } } });
    assert.equal('model' in cohere.sent, false, 'no model added');
    assert.deepEqual(cohere.written.usage, { ...usageOf(4, 0), units: { requests: 2 } }, "Sluice's count of the query and documents, Cohere's units");
    assert.equal(cohere.written.counted, true);
  });

  test('moderations: counted by Sluice, one request', async () => {
    const { written, sent } = await write(moderations, { model: 'public-id', input: ['hello there', 'again'] }, { id: 'modr-1', model: 'omni-moderation-latest', results: [{ flagged: false }, { flagged: false }] });
    assert.equal(sent.model, 'public-id');
    assert.deepEqual(written.usage, { ...usageOf(3, 0), units: { requests: 1 } });
    assert.equal(written.counted, true);
  });

  test("images: the images in data, gpt-image's tokens; dall-e's prompt counted", async () => {
    const data = [{ b64_json: 'AAAA' }, { b64_json: 'BBBB' }];
    const gpt = await write(imageGenerations, { model: 'public-id', prompt: 'a fox', n: 2 }, { created: 1, data, usage: { input_tokens: 7, output_tokens: 544, total_tokens: 551 } });
    assert.deepEqual(gpt.sent.data, data, 'the images as they came');
    assert.equal('model' in gpt.sent, false);
    assert.deepEqual(gpt.written.usage, { ...usageOf(7, 544), units: { images: 2 } });
    const dalle = await write(imageGenerations, { model: 'public-id', prompt: 'a fox' }, { created: 1, data: [{ url: 'https://x.example/1.png', revised_prompt: 'A fox.' }] });
    assert.deepEqual(dalle.written.usage, { ...usageOf(2, 0), units: { images: 1 } });
    assert.equal(dalle.written.counted, true);
  });
});

describe('the wire of the answers', () => {
  test('rerank consumption: vLLM and Jina tokens, Cohere search units (and its billed tokens), none', () => {
    assert.deepEqual(rerankConsumption({ usage: { total_tokens: 12 }, results: [] }), { usage: usageOf(12, 0), units: { requests: 1 } });
    assert.deepEqual(rerankConsumption({ usage: { prompt_tokens: 5, total_tokens: 5 }, results: [] }), { usage: usageOf(5, 0), units: { requests: 1 } });
    assert.deepEqual(rerankConsumption({ meta: { billed_units: { search_units: 3 } }, results: [] }), { usage: null, units: { requests: 3 } });
    assert.deepEqual(rerankConsumption({ meta: { billed_units: { search_units: 1, input_tokens: 40 } }, results: [] }), { usage: usageOf(40, 0), units: { requests: 1 } });
    assert.deepEqual(rerankConsumption({ usage: { total_tokens: -1 }, results: [] }), { usage: null, units: { requests: 1 } }, 'a nonsense count is none');
  });

  test("images: the images in data, and gpt-image's tokens", () => {
    assert.deepEqual(imagesConsumption({ data: [{ url: 'u' }, { url: 'v' }] }), { usage: null, units: { images: 2 } });
    assert.deepEqual(imagesConsumption({}), { usage: null, units: { images: 0 } });
    const reported = { input_tokens: 3, output_tokens: 272, total_tokens: 275, input_tokens_details: { text_tokens: 3, image_tokens: 0 } };
    assert.deepEqual(imagesConsumption({ data: [{ b64_json: 'AA==' }], usage: reported }), { usage: usageOf(3, 272), units: { images: 1 } });
  });

  test('readable answers: results and data as their APIs shape them; anything else is the upstream’s 502', () => {
    const rerankFormat = relayFormat('openai.rerank');
    assert.equal(rerankFormat.wholeProblem({ results: [{ index: 0, relevance_score: 0.1 }] }), undefined);
    assert.match(rerankFormat.wholeProblem({ data: [] }) ?? '', /without results/);
    assert.match(rerankFormat.wholeProblem({ results: [{ index: 0 }] }) ?? '', /relevance_score/);
    const moderationFormat = relayFormat('openai.moderations');
    assert.equal(moderationFormat.wholeProblem({ results: [] }), undefined);
    assert.match(moderationFormat.wholeProblem({ result: {} }) ?? '', /without results/);
    const imagesFormat = relayFormat('openai.images.generations');
    assert.equal(imagesFormat.wholeProblem({ data: [{ url: 'u' }, { b64_json: 'AA==' }] }), undefined);
    assert.match(imagesFormat.wholeProblem({ data: [{ revised_prompt: 'x' }] }) ?? '', /b64_json or url/);
    assert.match(imagesFormat.wholeProblem({ images: [] }) ?? '', /without data/);
  });

  test("metrics names: Sluice's own operation names, on the gateway's side and the upstream's", () => {
    for (const c of CASES) {
      assert.equal(serverOperationName(c.name), c.name);
      assert.equal(clientOperationName('openai', 'chat', c.wireOperation), c.name);
    }
    assert.equal(serverOperationName('chat'), 'chat', 'chat unchanged');
  });
});
