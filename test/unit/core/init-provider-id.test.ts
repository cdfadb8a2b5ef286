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
    assert.deepEqual(providers.map((p) => [p.id, p.variables[0]!.name, p.variables[0]!.optional]), [
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

describe('sluice init: the cloud kinds', () => {
  const env = { AZURE_OPENAI_API_KEY: 'k', GOOGLE_CLOUD_PROJECT: 'env-project' };

  test('azure takes its resource endpoint; bedrock a region; vertex a project and a location, each optional', () => {
    const providers = parseInitProviders(['azure=https://my-resource.openai.azure.com', 'bedrock=eu-west-1', 'vertex=my-project/europe-west4']);
    assert.deepEqual(providers.map((p) => [p.id, p.kind, p.baseUrl, p.region, p.project, p.location]), [
      ['my-resource', 'azure', 'https://my-resource.openai.azure.com', undefined, undefined, undefined],
      ['bedrock', 'bedrock', undefined, 'eu-west-1', undefined, undefined],
      ['vertex', 'vertex', undefined, undefined, 'my-project', 'europe-west4'],
    ]);
    assert.deepEqual(parseInitProviders(['bedrock', 'vertex']).map((p) => [p.id, p.region, p.project]), [['bedrock', undefined, undefined], ['vertex', undefined, undefined]]);
    assert.deepEqual(parseInitProviders(['bedrock=us-east-1', 'bedrock=eu-west-1']).map((p) => p.id), ['bedrock-us-east-1', 'bedrock-eu-west-1'], 'two regions, two ids');
  });

  test('what does not fit the kind is refused, saying what does', () => {
    assert.throws(() => parseInitProviders(['azure']), /give the resource's endpoint: --provider azure=https:\/\/RESOURCE\.openai\.azure\.com/);
    assert.throws(() => parseInitProviders(['bedrock=https://bedrock-runtime.us-east-1.amazonaws.com']), /is not an AWS region such as us-east-1/);
    assert.throws(() => parseInitProviders(['vertex=My Project']), /write vertex=PROJECT or vertex=PROJECT\/LOCATION/);
    assert.throws(() => parseInitProviders(['vertex=my-project/europe-west4/x']), /write vertex=PROJECT or vertex=PROJECT\/LOCATION/);
    assert.throws(() => parseInitProviders(['bedrock', 'bedrock']), /names the same server/);
  });

  test('the file reads every credential from the environment, the AWS ones with :- so the environment and profile file apply, and parses', () => {
    const providers = parseInitProviders(['azure=https://my-resource.openai.azure.com', 'bedrock', 'vertex']);
    const text = renderInitConfig(providers);
    checkInitConfig(text, providers);
    assert.match(text, /api_key: \$\{AZURE_OPENAI_API_KEY\}/);
    assert.match(text, /# entra: \{ tenant_id: \$\{AZURE_TENANT_ID\}, client_id: \$\{AZURE_CLIENT_ID\}, client_secret: \$\{AZURE_CLIENT_SECRET\} \}/);
    for (const line of ['region: ${AWS_REGION:-us-east-1}', 'access_key_id: ${AWS_ACCESS_KEY_ID:-}', 'secret_access_key: ${AWS_SECRET_ACCESS_KEY:-}', 'session_token: ${AWS_SESSION_TOKEN:-}', 'project: ${GOOGLE_CLOUD_PROJECT}', 'location: ${GOOGLE_CLOUD_LOCATION:-global}']) {
      assert.ok(text.includes(`    ${line}`), line);
    }
    assert.match(text, /# credentials_file: .*unset: GOOGLE_APPLICATION_CREDENTIALS/);
    assert.doesNotMatch(text, /^\s+credentials_file:/m, 'credentials_file is left unset');

    const config = parseConfig(text, 'sluice.yaml', env);
    const byId = new Map(config.providers.map((p) => [p.id, p]));
    assert.equal(byId.get('my-resource')!.api_key, 'k');
    const bedrock = byId.get('bedrock')!;
    assert.deepEqual([bedrock.region, bedrock.access_key_id, bedrock.secret_access_key, bedrock.session_token, bedrock.base_url], ['us-east-1', undefined, undefined, undefined, 'https://bedrock-runtime.us-east-1.amazonaws.com'], 'unset AWS variables leave the environment and the profile file to supply credentials');
    const vertex = byId.get('vertex')!;
    assert.deepEqual([vertex.project, vertex.location, vertex.credentials_file, vertex.base_url], ['env-project', 'global', undefined, 'https://aiplatform.googleapis.com']);
    assert.deepEqual(config.models.map((m) => [m.id, m.provider, m.upstream_model]), [
      ['bedrock-claude-sonnet', 'bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'],
      ['vertex-gemini-pro', 'vertex', 'gemini-2.5-pro'],
      ['vertex-claude-sonnet', 'vertex', 'claude-sonnet-4-5@20250929'],
    ]);

    const set = parseConfig(text, 'sluice.yaml', { ...env, AWS_REGION: 'eu-central-1', AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 's', GOOGLE_CLOUD_LOCATION: 'europe-west4' });
    const bedrockSet = set.providers.find((p) => p.id === 'bedrock')!;
    assert.deepEqual([bedrockSet.region, bedrockSet.access_key_id, bedrockSet.secret_access_key], ['eu-central-1', 'AKIA1', 's']);
    assert.equal(set.providers.find((p) => p.id === 'vertex')!.base_url, 'https://europe-west4-aiplatform.googleapis.com');
  });

  test('a region or project given is written out, and the sample profile follows the region’s geography', () => {
    const providers = parseInitProviders(['bedrock=eu-west-1', 'vertex=my-project/europe-west4']);
    const text = renderInitConfig(providers);
    checkInitConfig(text, providers);
    const config = parseConfig(text, 'sluice.yaml', {});
    assert.deepEqual(config.providers.map((p) => [p.id, p.region ?? p.project, p.location]), [['bedrock', 'eu-west-1', undefined], ['vertex', 'my-project', 'europe-west4']]);
    assert.equal(config.models[0]!.upstream_model, 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0');
    assert.deepEqual(providers[1]!.variables.map((v) => v.name), ['GOOGLE_APPLICATION_CREDENTIALS'], 'a project given needs no GOOGLE_CLOUD_PROJECT');
  });

  test('GovCloud gets its own us-gov. profile, a region of no known geography the global one; the hint claims no host role', () => {
    for (const [region, profile] of [['us-gov-west-1', 'us-gov'], ['ap-northeast-1', 'apac'], ['sa-east-1', 'global']] as const) {
      const providers = parseInitProviders([`bedrock=${region}`]);
      const text = renderInitConfig(providers);
      assert.equal(parseConfig(text, 'sluice.yaml', {}).models[0]!.upstream_model, `${profile}.anthropic.claude-sonnet-4-5-20250929-v1:0`, region);
      const hint = providers[0]!.variables.find((v) => v.name === 'AWS_ACCESS_KEY_ID')!.note ?? '';
      assert.doesNotMatch(hint, /nothing on a host with its own role/);
      assert.match(hint, /instance, ECS and web-identity roles.*are not read/);
      assert.doesNotMatch(text, /SDK's chain/);
    }
  });
});
