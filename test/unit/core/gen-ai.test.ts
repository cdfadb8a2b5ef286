/**
 * The `gen_ai.operation.name` Sluice reports (src/telemetry/gen-ai.ts): OpenTelemetry's GenAI names
 * where the conventions have one (chat, text_completion, generate_content, embeddings), Sluice's own
 * operation names for the rest, and never a value from a request.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientOperationName, providerName, serverOperationName } from '../../../src/telemetry/gen-ai.js';

describe('the operation a caller asked for', () => {
  test('generation keeps the conventions’ names', () => {
    assert.deepEqual(['chat', 'messages', 'responses', 'completions', 'generate_content'].map(serverOperationName), ['chat', 'chat', 'chat', 'text_completion', 'generate_content']);
  });

  test('embeddings, in both dialects, are the conventions’ embeddings', () => {
    for (const operation of ['embeddings', 'gemini.embed_content', 'gemini.batch_embed_contents']) assert.equal(serverOperationName(operation), 'embeddings', operation);
  });

  test('operations the conventions do not name keep Sluice’s names, as the ledger writes them', () => {
    const own = ['rerank', 'images.generations', 'images.edits', 'audio.transcriptions', 'audio.translations', 'audio.speech', 'moderations'];
    assert.deepEqual(own.map(serverOperationName), own);
  });
});

describe('the operation an attempt asked of its upstream', () => {
  test('an embedding call is embeddings, whatever the provider and whether relayed or translated', () => {
    assert.equal(clientOperationName('openai', 'completions', null, true), 'embeddings');
    assert.equal(clientOperationName('gemini', 'completions', null, true), 'embeddings');
  });

  test('relayed generation by the wire it went in', () => {
    assert.equal(clientOperationName('openai', 'completions', 'openai.completions'), 'text_completion');
    assert.equal(clientOperationName('openai', 'completions', 'openai.chat'), 'chat');
    assert.equal(clientOperationName('openai', 'responses', 'openai.responses'), 'chat');
    assert.equal(clientOperationName('anthropic', 'completions', 'anthropic.messages'), 'chat');
    assert.equal(clientOperationName('gemini', 'completions', 'gemini.generateContent'), 'generate_content');
  });

  test('relayed and transferred operations the conventions do not name keep Sluice’s names', () => {
    const relayed = ['openai.rerank', 'openai.moderations', 'openai.images.generations', 'openai.images.edits', 'openai.audio.transcriptions', 'openai.audio.translations', 'openai.audio.speech'];
    assert.deepEqual(
      relayed.map((operation) => clientOperationName('openai', 'completions', operation)),
      ['rerank', 'moderations', 'images.generations', 'images.edits', 'audio.transcriptions', 'audio.translations', 'audio.speech'],
    );
  });

  test('translated generation by what the adapter speaks', () => {
    assert.equal(clientOperationName('gemini', 'completions', null), 'generate_content');
    assert.equal(clientOperationName('openai', 'completions', null), 'text_completion');
    assert.equal(clientOperationName('openai', 'chat', null), 'chat');
    assert.equal(clientOperationName('anthropic', 'completions', null), 'chat');
  });
});

describe('the provider an attempt went to', () => {
  test('each kind by the conventions’ well-known value: the clouds by their own, an OpenAI-compatible server as openai', () => {
    assert.deepEqual(
      ['openai', 'anthropic', 'gemini', 'azure', 'bedrock', 'vertex'].map(providerName),
      ['openai', 'anthropic', 'gcp.gemini', 'azure.ai.openai', 'aws.bedrock', 'gcp.vertex_ai'],
    );
  });

  test('no provider (a request that never reached one) is _OTHER', () => {
    assert.equal(providerName(null), '_OTHER');
  });
});
