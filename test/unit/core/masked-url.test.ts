import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { maskUrl } from '../../../src/core/masked-url.js';

describe('maskUrl', () => {
  test('a password, a lone Redis user name and credential-like query parameters become ***', () => {
    assert.equal(maskUrl('postgres://sluice:hunter2@db:5432/sluice'), 'postgres://sluice:***@db:5432/sluice');
    assert.equal(maskUrl('redis://only-a-password@cache:6379/0'), 'redis://***@cache:6379/0');
    assert.equal(maskUrl('postgres://db/sluice?password=hunter2&sslmode=require'), 'postgres://db/sluice?password=***&sslmode=require');
    assert.equal(maskUrl('https://upstream.example.com/v1/models?key=AIzaSecret&pageSize=1000'), 'https://upstream.example.com/v1/models?key=***&pageSize=1000');
    assert.equal(maskUrl('https://upstream.example.com/v1/models?api_key=s&access_token=t&client_secret=u&sig=v'), 'https://upstream.example.com/v1/models?api_key=***&access_token=***&client_secret=***&sig=***');
  });

  test('a URL without credentials is kept as it is; an unparsable one is not shown', () => {
    assert.equal(maskUrl('http://10.0.0.5:8000/v1/models?after=gpt-4.1-mini'), 'http://10.0.0.5:8000/v1/models?after=gpt-4.1-mini');
    assert.equal(maskUrl('not a url with a secret in it'), '(an unparsable URL)');
  });
});
