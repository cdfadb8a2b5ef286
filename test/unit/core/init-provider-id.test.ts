import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseInitProviders, renderInitConfig, checkInitConfig } from '../../../src/config/init-config.js';
import { distinctIds, providerIdCandidates } from '../../../src/config/init-provider-id.js';
import { parseConfig } from '../../../src/config/config-file.js';

const ids = (...specs: string[]) => parseInitProviders(specs).map((provider) => provider.id);

describe('sluice init: a provider id from its base URL', () => {
  test('a vendor is its kind', () => {
    assert.deepEqual(ids('openai', 'anthropic', 'gemini'), ['openai', 'anthropic', 'gemini']);
  });

  test("an IP address or a loopback name is named after the server its port is the default of", () => {
    assert.deepEqual(ids('openai=http://10.0.0.5:8000/v1'), ['vllm']);
    assert.deepEqual(ids('openai=http://127.0.0.1:11434/v1'), ['ollama']);
    assert.deepEqual(ids('openai=http://localhost:8080/v1'), ['llama-cpp']);
    assert.deepEqual(ids('openai=http://[::1]:1234/v1'), ['lmstudio']);
    assert.deepEqual(ids('openai=http://192.168.1.20:30000/v1'), ['sglang']);
  });

  test('else KIND-ADDRESS, never local-2', () => {
    assert.deepEqual(ids('openai=http://10.0.0.5:9000/v1'), ['openai-10-0-0-5']);
    assert.deepEqual(ids('openai=http://10.0.0.5/v1'), ['openai-10-0-0-5']);
    assert.deepEqual(ids('openai=http://127.0.0.1:9000/v1'), ['openai-local']);
    assert.deepEqual(ids('openai=http://[fd00::5]:9000/v1'), ['openai-fd00-5']);
    // The ports are those of OpenAI-compatible servers: an Anthropic-compatible proxy on 8000 is not vLLM.
    assert.deepEqual(ids('anthropic=http://10.0.0.7:8000/v1'), ['anthropic-10-0-0-7']);
  });

  test('a DNS name is named after its first label that says something', () => {
    assert.deepEqual(ids('openai=http://vllm.internal:8000/v1'), ['vllm']);
    assert.deepEqual(ids('openai=https://gpu-box.corp.example.com/v1'), ['gpu-box']);
    assert.deepEqual(ids('openai=https://api.groq.com/openai/v1'), ['groq']);
    assert.deepEqual(ids('openai=http://gpu-box:11434/v1'), ['gpu-box'], "a name the operator gave beats a guess from the port");
    // A label YAML would read as a number or a boolean gets the kind before it.
    assert.deepEqual(ids('openai=http://123.example.com/v1'), ['openai-123']);
    assert.deepEqual(ids('openai=http://127.example.com:8000/v1'), ['openai-127'], 'a name, not a loopback address');
    assert.deepEqual(ids('openai=http://true.example.com/v1'), ['openai-true']);
  });

  test('several servers get distinct ids: by port, then by address, then by path', () => {
    assert.deepEqual(ids('openai=http://127.0.0.1:8000/v1', 'openai=http://127.0.0.1:11434/v1', 'openai=http://127.0.0.1:9000/v1', 'openai=http://127.0.0.1:9001/v1'), [
      'vllm',
      'ollama',
      'openai-local-9000',
      'openai-local-9001',
    ]);
    assert.deepEqual(ids('openai=http://10.0.0.5:8000/v1', 'openai=http://10.0.0.6:8000/v1'), ['vllm-10-0-0-5', 'vllm-10-0-0-6']);
    assert.deepEqual(ids('openai=http://gpu.a.example.com/v1', 'openai=http://gpu.b.example.com/v1'), ['openai-gpu-a-example-com', 'openai-gpu-b-example-com']);
    assert.deepEqual(ids('openai=http://box.internal:8001/v1', 'openai=http://box.internal:8002/v1'), ['box-8001', 'box-8002']);
    assert.deepEqual(ids('openai=http://10.0.0.5:8000/team-a/v1', 'openai=http://10.0.0.5:8000/team-b/v1'), ['vllm-team-a', 'vllm-team-b']);
    // A server named `openai` makes way for the vendor, whose id is its kind.
    assert.deepEqual(ids('openai=http://openai.internal/v1', 'openai'), ['openai-openai-internal', 'openai']);
  });

  test('the same server twice is refused, naming both', () => {
    assert.throws(() => ids('openai=http://10.0.0.5:8000/v1', 'openai=http://10.0.0.5:8000/v1/'), /names the same server as --provider openai=http:\/\/10\.0\.0\.5:8000\/v1/);
    assert.throws(() => ids('anthropic', 'anthropic'), /--provider anthropic: names the same server as --provider anthropic/);
  });

  test('the key variable follows the id, and the file loads with every id as written', () => {
    const providers = parseInitProviders(['openai=http://10.0.0.5:8000/v1', 'openai=http://10.0.0.9:9000/v1', 'anthropic']);
    assert.deepEqual(providers.map((p) => [p.id, p.keyVariable, p.keyOptional]), [
      ['vllm', 'VLLM_API_KEY', true],
      ['openai-10-0-0-9', 'OPENAI_10_0_0_9_API_KEY', true],
      ['anthropic', 'ANTHROPIC_API_KEY', false],
    ]);
    const text = renderInitConfig(providers);
    checkInitConfig(text, providers);
    assert.deepEqual(parseConfig(text, 'sluice.yaml', { ANTHROPIC_API_KEY: 'k' }).providers.map((p) => [p.id, p.base_url]), [
      ['vllm', 'http://10.0.0.5:8000/v1'],
      ['openai-10-0-0-9', 'http://10.0.0.9:9000/v1'],
      ['anthropic', 'https://api.anthropic.com/v1'],
    ]);
  });

  test('candidates run from the most readable to the most specific, each once', () => {
    assert.deepEqual(providerIdCandidates('openai', new URL('http://10.0.0.5:8000/x/v1')), ['vllm', 'vllm-10-0-0-5', 'vllm-x', 'vllm-10-0-0-5-x']);
    assert.deepEqual(providerIdCandidates('openai', new URL('http://box.internal/v1')), ['box', 'openai-box-internal']);
    assert.deepEqual(distinctIds([['a', 'a-1'], ['a', 'a-2'], ['b']]), ['a-1', 'a-2', 'b']);
    assert.deepEqual(distinctIds([['a'], ['a']]), [undefined, undefined]);
  });
});
