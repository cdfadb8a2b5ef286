import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isPathNotFound, upstreamHttpError } from '../../../src/core/upstream-errors.js';
import { maskBaseUrl } from '../../../src/core/masked-url.js';
import { readErrorBody } from '../../../src/providers/upstream-client.js';

const failure = (status: number, body: string) => ({ providerId: 'vllm', status, retryAfter: undefined, ...readErrorBody(body), secrets: ['sk-secret-key'], body });

describe("an upstream's 404: the path's or the model's", () => {
  test('a missing model is named in a JSON error: the caller\'s 404, as the upstream said it', () => {
    for (const body of [
      '{"error":{"message":"The model `x` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}',
      '{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}',
      '{"error":"model \'x\' not found"}',
      '{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}',
      '{"error":{"code":404,"message":"models/gemini-x is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}',
      '{"error":{"message":"Item with id \'msg_1\' not found.","type":"invalid_request_error","param":"input","code":null}}',
      '{"error":{"code":"model_not_found"}}',
    ]) {
      assert.equal(isPathNotFound(failure(404, body)), false, body);
      const error = upstreamHttpError({ ...failure(404, body), baseUrl: 'http://10.0.0.5:8000/v1', path: '/v1/chat/completions' });
      assert.deepEqual([error.kind, error.status, error.upstreamFailure], ['upstream_rejected_request', 404, 404], body);
    }
  });

  test("a path no route takes gets something generic: a 502 naming the provider, its base_url and the path; the operator's, logged once a minute", () => {
    for (const body of ['{"detail":"Not Found"}', '404 page not found', '<html><body><h1>404 Not Found</h1></body></html>', '', '{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}', '{"error":{"message":"Invalid URL (POST /v1/chat/completionz)","type":"invalid_request_error","param":null,"code":null}}', '{"error":{"code":404,"message":"Not found: /v1beta/v1beta/models/g:generateContent","status":"NOT_FOUND"}}']) {
      assert.equal(isPathNotFound(failure(404, body)), true, body);
      const error = upstreamHttpError({ ...failure(404, body), baseUrl: 'http://10.0.0.5:8000', path: '/chat/completions' });
      assert.deepEqual([error.kind, error.status, error.upstreamFailure, error.logOnceAs], ['upstream_error', 502, 502, 'upstream_path:vllm'], body);
      assert.match(error.message, /^The upstream provider 'vllm' has no such path \(base_url http:\/\/10\.0\.0\.5:8000, path \/chat\/completions\): /);
    }
    assert.equal(isPathNotFound(failure(400, '{"detail":"Not Found"}')), false, 'only a 404');
  });

  test('a base_url is shown without user info, query or fragment; a secret in it is redacted', () => {
    assert.equal(maskBaseUrl('http://user:pw@10.0.0.5:8000/v1/?key=abc#x'), 'http://10.0.0.5:8000/v1');
    assert.equal(maskBaseUrl('not a url'), '(an unparsable URL)');
    const error = upstreamHttpError({ ...failure(404, ''), baseUrl: 'https://gw.example/sk-secret-key', path: '/sk-secret-key/chat' });
    assert.ok(!error.message.includes('sk-secret-key'), error.message);
  });
});
