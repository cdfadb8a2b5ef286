/**
 * Embedding requests as the two caller dialects parse them (OpenAI's `/v1/embeddings`, Google's
 * `:embedContent` and `:batchEmbedContents`), the OpenAI answer's encodings, and the vendors'
 * embedding answers as the adapters read them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { parseBatchEmbedContentsRequest, parseEmbedContentRequest } from '../../../src/dialects/gemini/embed/request.js';
import { parseEmbeddingsRequest } from '../../../src/dialects/openai/embeddings/request.js';
import { embeddingsBody } from '../../../src/dialects/openai/embeddings/writer.js';
import { floatsToBase64 } from '../../../src/generation/embedding.js';
import { usageOf } from '../../../src/generation/model.js';
import { embeddingsFromGemini } from '../../../src/wire/gemini/embedding.js';
import { embeddingsFromOpenAI } from '../../../src/wire/openai/embedding.js';
import { usageFromOpenAIEmbeddings } from '../../../src/wire/openai/usage.js';

function refusal(parse: () => unknown): GatewayError {
  try {
    parse();
  } catch (error) {
    assert.ok(error instanceof GatewayError, `threw ${String(error)}`);
    return error;
  }
  assert.fail('accepted');
}

describe('OpenAI: POST /v1/embeddings', () => {
  test('every shape of input; float is the default encoding', () => {
    const one = parseEmbeddingsRequest({ model: 'm', input: 'hello' });
    assert.deepEqual([one.model, one.stream, one.encoding, one.embedding.input], ['m', false, 'float', { kind: 'text', texts: ['hello'] }]);
    assert.deepEqual(parseEmbeddingsRequest({ model: 'm', input: ['a', 'b'] }).embedding.input, { kind: 'text', texts: ['a', 'b'] });
    assert.deepEqual(parseEmbeddingsRequest({ model: 'm', input: [1, 2, 0] }).embedding.input, { kind: 'tokens', tokens: [[1, 2, 0]] });
    assert.deepEqual(parseEmbeddingsRequest({ model: 'm', input: [[1], [2, 3]] }).embedding.input, { kind: 'tokens', tokens: [[1], [2, 3]] });
    const asked = parseEmbeddingsRequest({ model: 'm', input: 'x', encoding_format: 'base64', dimensions: 256 });
    assert.deepEqual([asked.encoding, asked.embedding.dimensions], ['base64', 256]);
    assert.equal(parseEmbeddingsRequest({ model: 'm', input: 'x', encoding_format: null, dimensions: null }).encoding, 'float', 'null is absent');
  });

  test('unknown fields and user are extensions; task_type (or taskType) and title are also read as Gemini’s', () => {
    const parsed = parseEmbeddingsRequest({ model: 'm', input: 'x', user: 'u', truncate_prompt_tokens: 5, task_type: 'RETRIEVAL_DOCUMENT', title: 'T' });
    assert.deepEqual(parsed.embedding.extensions, { user: 'u', truncate_prompt_tokens: 5, task_type: 'RETRIEVAL_DOCUMENT', title: 'T' });
    assert.deepEqual([parsed.embedding.taskType, parsed.embedding.title], ['RETRIEVAL_DOCUMENT', 'T']);
    assert.equal(parseEmbeddingsRequest({ model: 'm', input: 'x', taskType: 'CLUSTERING' }).embedding.taskType, 'CLUSTERING');
    assert.equal(parseEmbeddingsRequest({ model: 'm', input: 'x' }).embedding.taskType, undefined);
  });

  test('an empty input, an empty one among them, or more than 2,048 is a 400 naming input', () => {
    for (const input of ['', [], ['a', ''], [[1], []], Array.from({ length: 2049 }, () => 'x'), Array.from({ length: 10_000 }, () => 1)]) {
      const error = refusal(() => parseEmbeddingsRequest({ model: 'm', input }));
      assert.equal(error.status, 400);
      assert.equal(error.param, 'input', JSON.stringify(input).slice(0, 30));
    }
    assert.match(refusal(() => parseEmbeddingsRequest({ model: 'm', input: Array.from({ length: 2049 }, () => 'x') })).message, /at most 2048 inputs.*got 2049/);
    assert.equal(parseEmbeddingsRequest({ model: 'm', input: Array.from({ length: 2048 }, () => 'x') }).embedding.input.kind, 'text', '2,048 is allowed');
  });

  test('wrong types name their parameter, as OpenAI words them', () => {
    const cases: [unknown, string][] = [
      [{ input: 'x' }, 'model'],
      [{ model: 'm' }, 'input'],
      [{ model: 'm', input: ['a', 1] }, 'input'],
      [{ model: 'm', input: [1.5] }, 'input'],
      [{ model: 'm', input: [-1] }, 'input'],
      [{ model: 'm', input: { text: 'x' } }, 'input'],
      [{ model: 'm', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: 'm', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ model: 'm', input: 'x', dimensions: 1.5 }, 'dimensions'],
      [{ model: 'm', input: 'x', user: 5 }, 'user'],
      [JSON.parse('{"model":"m","input":"x","__proto__":{"a":1}}'), '__proto__'],
    ];
    for (const [body, param] of cases) assert.equal(refusal(() => parseEmbeddingsRequest(body)).param, param, JSON.stringify(body));
    assert.match(refusal(() => parseEmbeddingsRequest({ model: 'm', input: ['a', 1] })).message, /expected a string, an array of strings, an array of token ids or an array of token-id arrays/);
    assert.match(refusal(() => parseEmbeddingsRequest({ model: 'm', input: [-1] })).message, /'input\[0\]'/, 'the message says where');
    assert.equal(refusal(() => parseEmbeddingsRequest([1])).status, 400);
  });

  test('the answer: data in order, each vector as the caller asked, usage always present', () => {
    const result = { embeddings: [{ kind: 'float', values: [1, 2] }, { kind: 'base64', data: floatsToBase64([3, 4]) }] as const, usage: null };
    const floats = JSON.parse(embeddingsBody(result, 'float', 'public', usageOf(7, 0)));
    assert.deepEqual(floats, {
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [1, 2] }, { object: 'embedding', index: 1, embedding: [3, 4] }],
      model: 'public',
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    const base64 = JSON.parse(embeddingsBody(result, 'base64', 'public', usageOf(7, 0)));
    assert.deepEqual(base64.data.map((d: { embedding: string }) => d.embedding), [floatsToBase64([1, 2]), floatsToBase64([3, 4])]);
  });
});

const wire = (path: string) => ({ headers: {}, path, query: new URLSearchParams() });
const content = (text: string) => ({ parts: [{ text }] });

describe("Google: :embedContent and :batchEmbedContents", () => {
  test('embedContent: the path names the model; a body model must be the same; proto names are read', () => {
    const parsed = parseEmbedContentRequest({ model: 'models/g', content: content('hi'), task_type: 'RETRIEVAL_QUERY', output_dimensionality: 8 }, wire('/v1beta/models/g:embedContent'));
    assert.deepEqual([parsed.model, parsed.batch, parsed.texts], ['g', false, ['hi']]);
    assert.deepEqual(parsed.requests, [{ input: { kind: 'text', texts: ['hi'] }, dimensions: 8, extensions: {}, taskType: 'RETRIEVAL_QUERY' }]);
    const other = refusal(() => parseEmbedContentRequest({ model: 'models/h', content: content('hi') }, wire('/v1beta/models/g:embedContent')));
    assert.equal(other.param, 'model');
    assert.deepEqual(parseEmbedContentRequest({ content: { parts: [{ text: 'a' }, { text: 'b' }] } }, wire('/v1/models/g:embedContent')).texts, ['a\nb'], 'the parts of one content are one text');
  });

  test('batchEmbedContents: one request per text; runs of the same task, title and dimensions stay together', () => {
    const body = {
      requests: [
        { model: 'models/g', content: content('a'), taskType: 'RETRIEVAL_DOCUMENT', title: 'A' },
        { model: 'models/g', content: content('b'), taskType: 'RETRIEVAL_DOCUMENT', title: 'A' },
        { model: 'models/g', content: content('c'), taskType: 'RETRIEVAL_DOCUMENT', title: 'C' },
        { model: 'g', content: content('d') },
      ],
    };
    const parsed = parseBatchEmbedContentsRequest(body, wire('/v1beta/models/g:batchEmbedContents'));
    assert.deepEqual(parsed.texts, ['a', 'b', 'c', 'd']);
    assert.deepEqual(
      parsed.requests.map((r) => [r.input.kind === 'text' ? r.input.texts : [], r.title ?? null]),
      [[['a', 'b'], 'A'], [['c'], 'C'], [['d'], null]],
    );
    assert.ok(parsed.batch);
  });

  test("bad batches are refused naming the field, in Google's words", () => {
    const path = wire('/v1beta/models/g:batchEmbedContents');
    const cases: [unknown, string][] = [
      [{ requests: [] }, 'requests'],
      [{ requests: [{ content: content('a') }] }, 'requests[0].model'],
      [{ requests: [{ model: 'models/g', content: content('a') }, { model: 'models/x', content: content('b') }] }, 'requests[1].model'],
      [{ requests: [{ model: 'models/g', content: content('') }] }, 'requests[0].content.parts'],
      [{ requests: [{ model: 'models/g', content: { parts: [{ inlineData: { mimeType: 'image/png', data: 'AA==' } }] } }] }, 'requests[0].content.parts[0].text'],
      [{ requests: [{ model: 'models/g', content: content('a'), taskType: 'SUMMARY' }] }, 'requests[0].taskType'],
      [{ requests: [{ model: 'models/g', content: content('a'), outputDimensionality: 0 }] }, 'requests[0].outputDimensionality'],
      [{ requests: Array.from({ length: 2049 }, () => ({ model: 'models/g', content: content('a') })) }, 'requests'],
      [{ requests: [{ model: 'models/g', content: content('a') }], extra: 1 }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const error = refusal(() => parseBatchEmbedContentsRequest(body, path));
      assert.equal(error.status, 400, JSON.stringify(body).slice(0, 60));
      assert.equal(error.param, param, JSON.stringify(body).slice(0, 60));
    }
    assert.match(refusal(() => parseBatchEmbedContentsRequest({ requests: [{ model: 'models/g', content: content('a'), foo: 1 }] }, path)).message, /Unknown name "foo"/);
    assert.match(refusal(() => parseBatchEmbedContentsRequest({ requests: [{ model: 'models/g', content: { parts: [{ inlineData: {} }] } }] }, path)).message, /Missing required field 'requests\[0\]\.content\.parts\[0\]\.text'/, 'only text is embedded');
  });
});

describe('answers as the adapters read them', () => {
  test("OpenAI's data, sorted by index; floats or base64 as given; broken answers named", () => {
    const answer = { data: [{ index: 1, embedding: 'AACAPw==' }, { index: 0, embedding: [0.5] }] };
    assert.deepEqual(embeddingsFromOpenAI(answer, 2), [{ kind: 'float', values: [0.5] }, { kind: 'base64', data: 'AACAPw==' }]);
    assert.deepEqual(embeddingsFromOpenAI({ data: [{ embedding: [1] }, { embedding: [2] }] }, 2), [{ kind: 'float', values: [1] }, { kind: 'float', values: [2] }], 'no index: by position');
    assert.match(String(embeddingsFromOpenAI({ data: [{ embedding: [1] }] }, 2)), /1 vectors for 2 inputs/);
    assert.match(String(embeddingsFromOpenAI({ data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [2] }] }, 2)), /indexes/);
    assert.match(String(embeddingsFromOpenAI({ data: [{ index: 0, embedding: { x: 1 } }] }, 1)), /neither floats nor base64/);
    assert.match(String(embeddingsFromOpenAI({}, 1)), /without data/);
    assert.deepEqual(usageFromOpenAIEmbeddings({ prompt_tokens: 4, total_tokens: 4 }), usageOf(4, 0));
    assert.equal(usageFromOpenAIEmbeddings({ total_tokens: 4 }), null);
  });

  test("Gemini's embeddings in request order", () => {
    assert.deepEqual(embeddingsFromGemini({ embeddings: [{ values: [1] }, { values: [2] }] }, 2), [{ kind: 'float', values: [1] }, { kind: 'float', values: [2] }]);
    assert.match(String(embeddingsFromGemini({ embeddings: [{ values: [1] }] }, 2)), /1 embeddings for 2 requests/);
    assert.match(String(embeddingsFromGemini({ embeddings: [{}] }, 1)), /without values/);
  });
});
