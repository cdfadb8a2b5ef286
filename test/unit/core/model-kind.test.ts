/**
 * What a discovered model is registered for (src/catalogue/model-kind.ts, src/catalogue/discovered.ts):
 * an embedding or reranking model, as its upstream's list or its name tells, serves `embeddings` or
 * `rerank` instead of the provider's `discover.endpoints`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { entryFor } from '../../../src/catalogue/discovered.js';
import { endpointsByName } from '../../../src/catalogue/model-kind.js';
import { readUpstreamModels } from '../../../src/catalogue/upstream-model.js';
import { parseConfig, type ProviderConfig } from '../../../src/config/config-file.js';

describe('a model told by its name', () => {
  test('embedding models: *embed*, bge-*, e5-*, gte-*, whatever the organisation before the slash or the case', () => {
    const embedders = [
      'text-embedding-3-small',
      'text-embedding-ada-002',
      'gemini-embedding-001',
      'nomic-embed-text:latest',
      'mxbai-embed-large',
      'Snowflake/snowflake-arctic-embed-l-v2.0',
      'jinaai/jina-embeddings-v3',
      'BAAI/bge-m3',
      'bge-large-en-v1.5',
      'intfloat/e5-mistral-7b-instruct',
      'intfloat/multilingual-e5-large',
      'thenlper/gte-large',
      'Alibaba-NLP/gte-Qwen2-7B-instruct',
      'Qwen/Qwen3-Embedding-8B',
    ];
    for (const name of embedders) assert.deepEqual(endpointsByName(name), ['embeddings'], name);
  });

  test('rerankers: *rerank*, bge-reranker-* included (a reranker, not a bge embedder)', () => {
    for (const name of ['BAAI/bge-reranker-v2-m3', 'bge-reranker-large', 'jina-reranker-v2-base-multilingual', 'rerank-v3.5', 'Qwen/Qwen3-Reranker-4B', 'mixedbread-ai/mxbai-rerank-large-v1']) {
      assert.deepEqual(endpointsByName(name), ['rerank'], name);
    }
  });

  test("OpenAI's own moderation, audio and image models, and self-hosted Whisper", () => {
    const expected: [string, string][] = [
      ['omni-moderation-latest', 'moderations'],
      ['text-moderation-stable', 'moderations'],
      ['whisper-1', 'transcriptions'],
      ['openai/whisper-large-v3', 'transcriptions'],
      ['gpt-4o-transcribe', 'transcriptions'],
      ['tts-1', 'speech'],
      ['tts-1-hd', 'speech'],
      ['gpt-4o-mini-tts', 'speech'],
      ['dall-e-3', 'images'],
      ['gpt-image-1', 'images'],
    ];
    for (const [name, endpoint] of expected) assert.deepEqual(endpointsByName(name), [endpoint], name);
  });

  test('generation models are left to the defaults, even when a word merely looks alike', () => {
    const generators = ['gpt-4o', 'meta-llama/Llama-3.1-8B-Instruct', 'Qwen/Qwen3-8B', 'gemini-2.5-flash', 'claude-sonnet-4-5', 'llama3.2:latest', 'gemma-3-27b-it', 'deepseek-r1', 'mistral-7b-e5x', 'org/abge-1', 'gtex-7b', 'gpt-4o-audio-preview', 'gpt-4o-realtime-preview', 'shorttstory-7b', 'attsy'];
    for (const name of generators) assert.equal(endpointsByName(name), undefined, name);
  });
});

describe('the entry a discovered model makes', () => {
  const config = parseConfig(
    `
providers:
  - { id: vllm, kind: openai, base_url: 'http://vllm:8000/v1', discover: true }
  - { id: chat-only, kind: openai, base_url: 'http://ollama:11434/v1', discover: { endpoints: [chat], id_prefix: 'ollama/' } }
`,
    'sluice.yaml',
  );
  const [vllm, chatOnly] = config.providers as [ProviderConfig, ProviderConfig];

  test("a generation model serves the provider's discover.endpoints", () => {
    assert.deepEqual(entryFor(vllm, { id: 'Qwen/Qwen3-8B' })?.endpoints, ['completions', 'chat']);
    assert.deepEqual(entryFor(chatOnly, { id: 'llama3.2:latest' })?.endpoints, ['chat']);
  });

  test('an embedding or reranking name serves embeddings or rerank instead, whatever discover.endpoints says', () => {
    assert.deepEqual(entryFor(vllm, { id: 'BAAI/bge-m3' })?.endpoints, ['embeddings']);
    assert.deepEqual(entryFor(vllm, { id: 'BAAI/bge-reranker-v2-m3' })?.endpoints, ['rerank']);
    const ollama = entryFor(chatOnly, { id: 'nomic-embed-text:latest' });
    assert.deepEqual([ollama?.id, ollama?.endpoints], ['ollama/nomic-embed-text:latest', ['embeddings']]);
  });

  test("what the upstream's list says beats the name (Gemini's methods, a vLLM alias's root)", () => {
    assert.deepEqual(entryFor(vllm, { id: 'my-retriever', endpoints: ['embeddings'] })?.endpoints, ['embeddings']);
    assert.deepEqual(entryFor(vllm, { id: 'my-retriever' })?.endpoints, ['completions', 'chat']);
  });

  test('the stored list keeps what the upstream said; an operation this version does not know leaves it to the name', () => {
    const stored = readUpstreamModels([
      { id: 'text-embedding-004', endpoints: ['embeddings'] },
      { id: 'my-retriever', endpoints: ['holograms'] },
      { id: 'BAAI/bge-m3', endpoints: ['holograms'] },
    ]);
    assert.deepEqual(
      stored.map((model) => [model.id, model.endpoints]),
      [
        ['text-embedding-004', ['embeddings']],
        ['my-retriever', undefined],
        ['BAAI/bge-m3', undefined],
      ],
    );
    assert.deepEqual(entryFor(vllm, stored[2]!)?.endpoints, ['embeddings']);
  });
});
