import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { guessDialect, routeHint } from '../../../src/http/route-hints.js';

const ROUTES = new Set(['POST /v1/chat/completions', 'POST /v1/messages', 'GET /v1/models', 'POST /v1beta/models/g:generateContent', 'POST /v1/models/g:generateContent']);
const serves = (method: string, path: string) => ROUTES.has(`${method} ${path}`);

describe('hints for a path no route takes', () => {
  test('a path without a version, served under /v1: the base URL should end in /v1', () => {
    assert.equal(routeHint('POST', '/chat/completions', serves), "did you mean /v1/chat/completions? The client's base URL should end in /v1 (http://host:port/v1).");
    assert.equal(routeHint('GET', '/models', serves), "did you mean /v1/models? The client's base URL should end in /v1 (http://host:port/v1).");
    assert.equal(routeHint('GET', '/chat/completions', serves), undefined, 'the method counts');
  });

  test('a version doubled: the base URL should not end in it', () => {
    assert.match(routeHint('POST', '/v1/v1/messages', serves)!, /^did you mean \/v1\/messages\? The client's base URL should not end in \/v1: the client adds \/v1 itself/);
    assert.match(routeHint('POST', '/v1beta/v1beta/models/g:generateContent', serves)!, /^did you mean \/v1beta\/models\/g:generateContent\? .*should not end in \/v1beta: the client adds \/v1beta itself/);
    assert.match(routeHint('POST', '/v1/v1beta/models/g:generateContent', serves)!, /should not end in \/v1: the client adds \/v1beta itself/);
  });

  test('nothing near: no hint', () => {
    for (const path of ['/', '/v1/nothing', '/v1/v1/nothing', '/nothing', '/v2/v1/messages', '/v1/v1']) assert.equal(routeHint('POST', path, serves), undefined, path);
  });

  test("the dialect of a lost request, from its headers and path", () => {
    assert.equal(guessDialect('/v1/v1/messages', {}), 'anthropic');
    assert.equal(guessDialect('/x', { 'x-api-key': 'k' }), 'anthropic');
    assert.equal(guessDialect('/x', { 'anthropic-version': '2023-06-01' }), 'anthropic');
    assert.equal(guessDialect('/x', { 'x-goog-api-key': 'k' }), 'gemini');
    assert.equal(guessDialect('/v1beta/v1beta/models/g:generateContent', {}), 'gemini');
    assert.equal(guessDialect('/chat/completions', { authorization: 'Bearer k' }), 'openai');
  });
});
