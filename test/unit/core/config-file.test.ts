/**
 * The configuration file: what a good one parses to (typed values, defaults, the environment
 * read), and the one-line error a bad one gives, naming the file, the entry and the field.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Catalogue } from '../../../src/catalogue/catalogue.js';
import { ConfigError, deploymentsOf, emptyConfig, loadConfigFile, parseConfig, readConfigText } from '../../../src/config/config-file.js';

const OPENAI = `providers:\n  - { id: p, kind: openai, base_url: "http://127.0.0.1:8000/v1" }\n`;

describe('a good configuration', () => {
  test('an empty file is the empty configuration', () => {
    assert.deepEqual(parseConfig('', 'sluice.yaml'), emptyConfig('sluice.yaml'));
    assert.deepEqual(parseConfig('# nothing yet\n', 'sluice.yaml').limits, { leaseMs: 30_000, defaultMaxOutputTokens: 4_096 });
  });

  test('a provider and a model in the short form, every default filled in', () => {
    const config = parseConfig(`${OPENAI}models:\n  - { id: m, provider: p }\n`, 'sluice.yaml', {});
    assert.equal(config.source, 'sluice.yaml');
    assert.deepEqual(config.providers, [
      {
        id: 'p',
        kind: 'openai',
        base_url: 'http://127.0.0.1:8000/v1',
        connect_timeout_ms: 10_000,
        response_timeout_ms: 120_000,
        idle_timeout_ms: 60_000,
        keep_alive_timeout_ms: 4_000,
        max_response_bytes: 32 * 1024 * 1024,
        anthropic_version: '2023-06-01',
      },
    ]);
    // Without `endpoints`, a model serves both generation operations.
    assert.deepEqual(config.models, [{ id: 'm', provider: 'p', created: 0, endpoints: ['completions', 'chat'] }]);
    assert.deepEqual(deploymentsOf(config.models[0]!), [{ provider: 'p', upstream_model: undefined, upstream_api: undefined, weight: 1, priority: 0 }]);
    assert.deepEqual(config.responses, { retentionDays: 30 });
    assert.deepEqual(config.limits, { leaseMs: 30_000, defaultMaxOutputTokens: 4_096 });
    assert.equal(config.routing, undefined);
  });

  test('endpoints: absent is completions and chat, whatever the provider kind or upstream_api; a list is kept as written', () => {
    const config = parseConfig(
      `providers:\n  - { id: p, kind: openai, base_url: 'http://h/v1' }\n  - { id: c, kind: anthropic }\n  - { id: g, kind: gemini }\nmodels:\n` +
        '  - { id: a, provider: p }\n  - { id: b, provider: p, upstream_api: chat }\n  - { id: r, provider: p, upstream_api: responses }\n  - { id: c, provider: c }\n  - { id: g, provider: g }\n' +
        '  - { id: legacy, provider: p, endpoints: [completions] }\n  - { id: embed, provider: p, endpoints: [embeddings] }\n',
      'sluice.yaml',
      {},
    );
    assert.deepEqual(
      config.models.map((model) => [model.id, model.endpoints]),
      [['a', ['completions', 'chat']], ['b', ['completions', 'chat']], ['r', ['completions', 'chat']], ['c', ['completions', 'chat']], ['g', ['completions', 'chat']], ['legacy', ['completions']], ['embed', ['embeddings']]],
    );
    // Each entry has its own list: the default is not one array shared between them.
    assert.notEqual(config.models[0]!.endpoints, config.models[1]!.endpoints);
  });

  test('Anthropic and Gemini providers need no base URL', () => {
    const config = parseConfig('providers:\n  - { id: c, kind: anthropic }\n  - { id: g, kind: gemini }\n', 'sluice.yaml', {});
    assert.deepEqual(
      config.providers.map((provider) => provider.base_url),
      ['https://api.anthropic.com/v1', 'https://generativelanguage.googleapis.com/v1beta'],
    );
  });

  test('${NAME} reads the environment; ${NAME:-fallback} gives a default, also for a variable set but empty; an empty key is no key', () => {
    const config = parseConfig(
      `providers:
  - { id: p, kind: openai, base_url: "http://\${HOST}:\${PORT:-8000}/v1", api_key: "\${KEY:-}", headers: { X-Org: "\${ORG:-acme}" } }
  - { id: q, kind: openai, base_url: "http://h/v1", api_key: "\${SECRET}" }
`,
      'sluice.yaml',
      { HOST: 'gpu-1', PORT: '', ORG: 'umbrella', SECRET: 'sk-1' },
    );
    const [p, q] = config.providers;
    assert.equal(p!.base_url, 'http://gpu-1:8000/v1');
    assert.equal(p!.api_key, undefined);
    assert.deepEqual(p!.headers, { 'X-Org': 'umbrella' });
    assert.equal(q!.api_key, 'sk-1');
  });

  test('discover: true takes every default; false is off', () => {
    const config = parseConfig(
      'providers:\n  - { id: on, kind: openai, base_url: "http://h/v1", discover: true }\n  - { id: off, kind: openai, base_url: "http://h/v1", discover: false }\n',
      'sluice.yaml',
      {},
    );
    assert.deepEqual(config.providers[0]!.discover, { interval_ms: 300_000, max_models: 10_000, endpoints: ['completions', 'chat'] });
    assert.equal(config.providers[1]!.discover, undefined);
  });

  test('deployments, fallbacks and routing blocks: a model beats its provider, which beats the top level', () => {
    const config = parseConfig(
      `routing: { retries: 5, first_token_timeout_ms: 1000, circuit: { failures: 9 } }
providers:
  - { id: p, kind: openai, base_url: "http://h/v1", routing: { retries: 4, first_token_timeout_ms: 2000, retry_on: [503] } }
  - { id: c, kind: anthropic }
models:
  - id: m
    deployments: [{ provider: p, upstream_model: big, weight: 3 }, { provider: c, upstream_model: claude, priority: 1 }]
    fallbacks: [n]
    routing: { retries: 1, strategy: weighted }
  - { id: n, provider: c, upstream_model: claude }
`,
      'sluice.yaml',
      {},
    );
    const catalogue = Catalogue.fromConfig(config);
    const m = catalogue.get('m')!;
    assert.deepEqual(
      m.deployments.map((d) => [d.name, d.weight, d.priority]),
      [['p/big', 3, 0], ['c/claude', 1, 1]],
    );
    assert.deepEqual(m.fallbacks, ['n']);
    assert.deepEqual([m.routing.retries, m.routing.strategy], [1, 'weighted'], "the model's own");
    assert.equal(m.deployments[0]!.routing.firstTokenTimeoutMs, 2_000, "the provider's");
    assert.deepEqual([...m.deployments[0]!.routing.retryOn], [503], "the provider's");
    assert.equal(m.deployments[1]!.routing.firstTokenTimeoutMs, 1_000, 'the top level’s');
    assert.equal(m.deployments[1]!.routing.circuit.failures, 9);
    const n = catalogue.get('n')!;
    assert.deepEqual(
      { ...n.routing, retryOn: [...n.routing.retryOn] },
      {
        strategy: 'latency',
        retries: 5,
        backoffMs: { initial: 200, max: 5_000 },
        retryOn: [429, 500, 502, 503, 504, 529, 'connect_error', 'timeout'],
        firstTokenTimeoutMs: 1_000,
        deadlineMs: 300_000,
        retryAfterMaxMs: 60_000,
        circuit: { failures: 9, windowMs: 30_000, cooldownMs: 30_000 },
      },
      'the defaults beneath the top level',
    );
  });

  test('hosted_tools: the model’s own, else its deployment’s provider’s, else drop; drop_hosted_tools is its old spelling', () => {
    const config = parseConfig(
      `providers:
  - { id: p, kind: openai, base_url: "http://h/v1" }
  - { id: strict, kind: anthropic, hosted_tools: refuse }
models:
  - { id: plain, provider: p }
  - { id: cautious, provider: p, hosted_tools: refuse }
  - { id: old-drop, provider: strict, drop_hosted_tools: true }
  - { id: old-refuse, provider: p, drop_hosted_tools: false }
  - { id: mixed, deployments: [{ provider: p }, { provider: strict }] }
`,
      'sluice.yaml',
      {},
    );
    const catalogue = Catalogue.fromConfig(config);
    const policy = (id: string) => catalogue.get(id)!.hostedTools;
    assert.deepEqual(['plain', 'cautious', 'old-drop', 'old-refuse', 'mixed'].map(policy), ['drop', 'refuse', 'drop', 'refuse', 'drop']);
    assert.deepEqual(catalogue.get('mixed')!.deployments.map((d) => d.model.hostedTools), ['drop', 'refuse'], 'each deployment its provider’s');
  });

  test('sluice.example.yaml parses', () => {
    const config = loadConfigFile(new URL('../../../sluice.example.yaml', import.meta.url).pathname, {});
    assert.ok(config.providers.length > 0 && config.models.length > 0);
  });
});

describe('a bad configuration', () => {
  const M = (model: string) => `${OPENAI}models:\n  - ${model}\n`;
  const cases: [string, string, string][] = [
    ['YAML that is not a mapping', '- 1\n', 'top level: Invalid input: expected object, received array'],
    ['an unknown top-level field', 'provider: []\n', "top level: unknown field(s) 'provider'"],
    ['models as a mapping', 'models: { a: 1 }\n', "field 'models': Invalid input: expected array, received object"],
    ['a provider without a kind', 'providers:\n  - { id: p, base_url: "http://x" }\n', 'providers[0] (id: p): field \'kind\': Invalid option: expected one of "openai"|"anthropic"|"gemini"|"azure"|"bedrock"|"vertex"'],
    ['an unknown kind', 'providers:\n  - { id: p, kind: telepathy, base_url: "http://x" }\n', 'providers[0] (id: p): field \'kind\': Invalid option: expected one of "openai"|"anthropic"|"gemini"|"azure"|"bedrock"|"vertex"'],
    ['a bad provider id', 'providers:\n  - { id: "-p", kind: openai, base_url: "http://x" }\n', "providers[0] (id: -p): field 'id': must be 1-200 letters, digits or ._:/@+- and start with a letter or digit"],
    ['a base URL that is not http', 'providers:\n  - { id: p, kind: openai, base_url: "ftp://x" }\n', "providers[0] (id: p): field 'base_url': must be an http:// or https:// URL"],
    ['an OpenAI-compatible provider without a base URL', 'providers:\n  - { id: p, kind: openai }\n', "providers[0] (id: p): field 'base_url': is required for kind 'openai'"],
    ['a duplicate provider', `${OPENAI}  - { id: p, kind: anthropic }\n`, "providers[1] (id: p): field 'id': duplicate provider id 'p'"],
    ['a typo in a provider field', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", api_kye: k }\n', "providers[0] (id: p): unknown field(s) 'api_kye'"],
    ['discovery with upstream_api on Anthropic', 'providers:\n  - { id: c, kind: anthropic, discover: { upstream_api: chat } }\n', "providers[0] (id: c): field 'discover.upstream_api': applies to 'openai' providers only ('anthropic' is always reached through its chat API)"],
    ['discovery too often', 'providers:\n  - { id: o, kind: openai, base_url: "http://x", discover: { interval_ms: 10 } }\n', "providers[0] (id: o): field 'discover.interval_ms': Too small: expected number to be >=1000"],
    ['a probe too often', 'providers:\n  - { id: o, kind: openai, base_url: "http://x", probe: { interval_ms: 500, model: m } }\n', "providers[0] (id: o): field 'probe.interval_ms': Too small: expected number to be >=1000"],
    ['a model without an id', M('{ provider: p }'), "models[0]: field 'id': is required (string)"],
    ['a model without a provider', M('{ id: m }'), "models[0] (id: m): field 'provider': give either 'provider' (one deployment) or 'deployments', not both"],
    ['an unknown provider', M('{ id: m, provider: ghost }'), "models[0] (id: m): field 'provider': no provider has the id 'ghost'"],
    ['upstream_model beside deployments', M('{ id: m, upstream_model: x, deployments: [{ provider: p }] }'), "models[0] (id: m): field 'upstream_model': belongs on each of 'deployments' when they are given"],
    ['no endpoints', M('{ id: m, provider: p, endpoints: [] }'), "models[0] (id: m): field 'endpoints': Too small: expected array to have >=1 items"],
    ['an unknown endpoint', M('{ id: m, provider: p, endpoints: [embedding] }'), 'models[0] (id: m): field \'endpoints.0\': Invalid option: expected one of "completions"|"chat"|"responses"|"embeddings"|"rerank"|"images"|"transcriptions"|"speech"|"moderations"'],
    ['a price written as a word', M('{ id: m, provider: p, pricing: { input_per_mtok: cheap, output_per_mtok: 1 } }'), "models[0] (id: m): field 'pricing.input_per_mtok': Invalid input: expected number, received string"],
    ['a negative priority', M('{ id: m, deployments: [{ provider: p, priority: -1 }] }'), "models[0] (id: m): field 'deployments.0.priority': Too small: expected number to be >=0"],
    ['a duplicate model', `${OPENAI}models:\n  - { id: m, provider: p }\n  - { id: m, provider: p }\n`, "models[1] (id: m): field 'id': duplicate model id 'm'"],
    ['an unknown fallback', M('{ id: m, provider: p, fallbacks: [ghost] }'), "models[0] (id: m): field 'fallbacks': no model has the id 'ghost'"],
    ['too many retries', M('{ id: m, provider: p, routing: { retries: 21 } }'), "models[0] (id: m): field 'routing.retries': Too big: expected number to be <=20"],
    ['a negative backoff', 'routing: { backoff_ms: { initial: -1 } }\n', "field 'routing.backoff_ms.initial': Too small: expected number to be >=0"],
    ['a circuit that never opens', 'routing: { circuit: { failures: 0 } }\n', "field 'routing.circuit.failures': Too small: expected number to be >0"],
    ['a bad retry condition', M('{ id: m, provider: p, routing: { retry_on: [503, sometimes] } }'), "models[0] (id: m): field 'routing.retry_on.1': must be an HTTP status (400-599), 'connect_error' or 'timeout'"],
    ['a lease too short', 'limits: { lease_ms: 50 }\n', "field 'limits.lease_ms': Too small: expected number to be >=100"],
    ['an unknown hosted_tools', M('{ id: m, provider: p, hosted_tools: keep }'), 'models[0] (id: m): field \'hosted_tools\': Invalid option: expected one of "drop"|"refuse"'],
    ['hosted_tools and its old spelling at odds', M('{ id: m, provider: p, hosted_tools: refuse, drop_hosted_tools: true }'), "models[0] (id: m): field 'drop_hosted_tools': says the opposite of hosted_tools: refuse (it is that key's old spelling: keep one)"],
    ['a retention of zero days', 'responses: { retention_days: 0 }\n', "field 'responses.retention_days': Too small: expected number to be >0"],
    ['an unset variable', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", headers: { X-Org: "${ORG_UNSET}" } }\n', "providers[0] (id: p): field 'headers.X-Org': environment variable ORG_UNSET is not set (write ${ORG_UNSET:-default} for a default)"],
    ['a variable named like an inherited property', 'providers:\n  - { id: p, kind: openai, base_url: "http://x", api_key: "${toString}" }\n', "providers[0] (id: p): field 'api_key': environment variable toString is not set (write ${toString:-default} for a default)"],
  ];
  for (const [what, yaml, message] of cases) {
    test(what, () => {
      assert.throws(
        () => parseConfig(yaml, 'sluice.yaml', {}),
        (error) => error instanceof ConfigError && error.message === `sluice.yaml: ${message}`,
      );
    });
  }

  test('YAML that does not parse', () => {
    assert.throws(() => parseConfig('providers:\n\t- x\n', 'sluice.yaml', {}), (error) => error instanceof ConfigError && error.message.startsWith('sluice.yaml: not valid YAML: Tabs are not allowed as indentation at line 2, column 1'));
  });

  test('a file that cannot be read is named; an optional one that is missing is no file', () => {
    const missing = '/nonexistent/sluice-unit/sluice.yaml';
    assert.throws(() => loadConfigFile(missing, {}), (error) => error instanceof ConfigError && error.message === `${missing}: cannot read the configuration file (ENOENT)`);
    assert.equal(readConfigText(missing, true), undefined);
  });
});

// The example file is read from the repository, not copied: keep the path honest.
test('the example configuration is where this test reads it', () => {
  assert.match(readFileSync(new URL('../../../sluice.example.yaml', import.meta.url), 'utf8'), /^# Sluice configuration/);
});

test('max_upload_bytes: 25 MiB unless set; a positive whole number', () => {
  assert.equal(parseConfig('', 'sluice.yaml').maxUploadBytes, 25 * 1024 * 1024);
  assert.equal(parseConfig('max_upload_bytes: 1048576\n', 'sluice.yaml').maxUploadBytes, 1_048_576);
  for (const bad of ['0', '-5', '1.5', 'lots']) assert.throws(() => parseConfig(`max_upload_bytes: ${bad}\n`, 'sluice.yaml'), (error: unknown) => error instanceof ConfigError && /max_upload_bytes/.test(error.message));
});
