import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { documentedRoutes, openApiDocument } from '../../../src/http/openapi.js';
import { mountedRoutes } from '../../../src/http/server.js';
import { DocumentSchemas } from '../../support/openapi.js';
import { parseChatRequest } from '../../../src/dialects/openai/chat/request.js';
import { parseEmbeddingsRequest } from '../../../src/dialects/openai/embeddings/request.js';

const document = openApiDocument('0.0.0-test');

test('the document is valid OpenAPI 3.1', async () => {
  const result = await new Validator().validate(document);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(document.openapi, '3.1.0');
});

test('every route the server mounts is in the document, and the document has no other (the console aside, /metrics mounted by the wiring)', () => {
  assert.deepEqual([...documentedRoutes()].sort(), [...mountedRoutes(), 'GET /metrics'].sort());
  const paths = document.paths as Record<string, Record<string, unknown>>;
  for (const route of documentedRoutes()) {
    const [method, path] = route.split(' ') as [string, string];
    assert.ok(paths[path]?.[method.toLowerCase()], `${route} is under paths`);
  }
});

test('every $ref resolves, every key-carrying operation may use the three carriers, and the probes need none', () => {
  const text = JSON.stringify(document);
  const schemas = (document.components as { schemas: Record<string, unknown> }).schemas;
  for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) assert.ok(name! in schemas, `${name} is defined`);
  assert.deepEqual(Object.keys((document.components as { securitySchemes: object }).securitySchemes).sort(), ['anthropicKey', 'bearer', 'googleKey', 'googleKeyQuery']);
  const paths = document.paths as Record<string, Record<string, { security?: unknown[] }>>;
  for (const path of ['/livez', '/readyz', '/healthz', '/openapi.json']) assert.deepEqual(paths[path]!.get!.security, [], `${path} is unauthenticated`);
  assert.equal(paths['/v1/chat/completions']!.post!.security, undefined, 'the document-wide carriers apply');
});

test('the request schemas are the ones that validate: what the parser accepts fits, what it refuses for its shape does not', () => {
  const schemas = new DocumentSchemas(document);
  const chat = { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 0.5, top_k: 3 };
  assert.doesNotThrow(() => parseChatRequest(chat));
  assert.equal(schemas.check('ChatCompletionRequest', chat), null);
  for (const bad of [{ model: 'm' }, { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 9 }, { model: 'm', messages: [{ role: 'wizard', content: 'hi' }] }]) {
    assert.throws(() => parseChatRequest(bad));
    assert.notEqual(schemas.check('ChatCompletionRequest', bad), null, JSON.stringify(bad));
  }
  const embeddings = { model: 'm', input: ['a', 'b'], encoding_format: 'float' };
  assert.doesNotThrow(() => parseEmbeddingsRequest(embeddings));
  assert.equal(schemas.check('EmbeddingsRequest', embeddings), null);
  const badEmbeddings = { model: 'm', input: ['a'], encoding_format: 'hex' };
  assert.throws(() => parseEmbeddingsRequest(badEmbeddings));
  assert.notEqual(schemas.check('EmbeddingsRequest', badEmbeddings), null);
});

test("the answer schemas tell one dialect's answer from another's", () => {
  const schemas = new DocumentSchemas(document);
  const openAIError = { error: { message: 'm', type: 'invalid_request_error', param: null, code: null } };
  const anthropicError = { type: 'error', error: { type: 'invalid_request_error', message: 'm' }, request_id: 'r' };
  const geminiError = { error: { code: 400, message: 'm', status: 'INVALID_ARGUMENT' } };
  assert.equal(schemas.check('OpenAIError', openAIError), null);
  assert.equal(schemas.check('AnthropicError', anthropicError), null);
  assert.equal(schemas.check('GeminiError', geminiError), null);
  assert.notEqual(schemas.check('OpenAIError', geminiError), null);
  assert.notEqual(schemas.check('AnthropicError', openAIError), null);
  assert.notEqual(schemas.check('GeminiError', openAIError), null);
  const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } };
  assert.equal(schemas.check('Message', message), null);
  assert.notEqual(schemas.check('ChatCompletion', message), null);
  assert.notEqual(schemas.check('Readiness', { status: 'unready' }), null, 'an unready answer names its reasons');
});
