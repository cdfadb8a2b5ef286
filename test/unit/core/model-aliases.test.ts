/**
 * Model aliases and `model_aliases` patterns: the glob matcher, the catalogue's resolution order
 * (an id, then an exact alias, then the first pattern that matches), and the one-line errors a
 * configuration gets for an alias that collides, a target that does not exist or a bad pattern.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Catalogue, modelFromConfig } from '../../../src/catalogue/catalogue.js';
import { Glob } from '../../../src/catalogue/glob.js';
import { ConfigError, parseConfig } from '../../../src/config/config-file.js';

const PROVIDERS = `providers:\n  - { id: p, kind: openai, base_url: "http://127.0.0.1:8000/v1" }\n`;
const MODELS = `models:\n  - { id: big, provider: p, aliases: [large, huge] }\n  - { id: small, provider: p }\n  - { id: claude-own, provider: p }\n`;

describe('a name pattern', () => {
  for (const [pattern, name, matches] of [
    ['claude-*', 'claude-opus-4-8', true],
    ['claude-*', 'claude-', true],
    ['claude-*', 'xclaude-opus', false],
    ['gpt-5*', 'gpt-5.1-sol', true],
    ['gpt-5*', 'gpt-4o', false],
    ['*-flash', 'gemini-3.8-flash', true],
    ['*-flash', 'gemini-3.8-flash-lite', false],
    ['gemini-*-flash*', 'gemini-3.8-flash-lite', true],
    ['gemini-?.?-pro', 'gemini-3.1-pro', true],
    ['gemini-?.?-pro', 'gemini-3.10-pro', false],
    ['*', '', true],
    ['a*b*c', 'aXbYbZc', true],
    ['a*b*c', 'aXbYbZ', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
    ['a.b', 'aXb', false],
  ] as const) {
    test(`'${pattern}' ${matches ? 'matches' : 'does not match'} '${name}'`, () => {
      assert.equal(new Glob(pattern).matches(name), matches);
    });
  }

  test('a long name against a pattern of many stars is decided in time linear in the name (no backtracking blow-up)', () => {
    const name = 'a'.repeat(100_000);
    assert.equal(new Glob('*a*a*a*a*a*a*a*b').matches(name), false);
    assert.equal(new Glob('*a*a*a*a*a*a*a*a').matches(name), true);
  });
});

describe('resolving a name in the catalogue', () => {
  const config = parseConfig(`${PROVIDERS}${MODELS}model_aliases:\n  "claude-*": big\n  "claude-opus-*": small\n  gpt-4o: small\n  "*": small\n`, 'sluice.yaml', {});
  const catalogue = Catalogue.fromConfig(config);

  test('an id is itself, before any alias or pattern (`claude-own` matches `claude-*`)', () => {
    assert.equal(catalogue.resolve('claude-own')?.id, 'claude-own');
    assert.equal(catalogue.resolve('small')?.id, 'small');
  });

  test("a model's aliases and the exact names of model_aliases name their model", () => {
    assert.equal(catalogue.resolve('large')?.id, 'big');
    assert.equal(catalogue.resolve('huge')?.id, 'big');
    assert.equal(catalogue.resolve('gpt-4o')?.id, 'small');
    assert.deepEqual(catalogue.aliasesOf('big'), ['large', 'huge']);
    assert.deepEqual(catalogue.aliasesOf('small'), ['gpt-4o']);
  });

  test('patterns in the order written: the first that matches wins, even over a narrower one after it', () => {
    assert.equal(catalogue.resolve('claude-opus-4-8')?.id, 'big');
    assert.equal(catalogue.resolve('mistral')?.id, 'small', 'the catch-all');
  });

  test('a pattern, even the catch-all, answers only names a model could have', () => {
    for (const name of [`claude-${'z'.repeat(1_000_000)}`, '<script>', 'a b', 'ü-model', '../../etc/passwd', '']) {
      assert.equal(catalogue.resolve(name), undefined, name.slice(0, 20));
    }
    assert.equal(catalogue.resolve(`claude-${'z'.repeat(193)}`)?.id, 'big', '200 characters is a name');
  });

  test('get() knows ids only', () => {
    assert.equal(catalogue.get('large'), undefined);
    assert.equal(catalogue.get('big')?.id, 'big');
  });

  test("a key's list shows each model followed by its exact aliases, as entries of their own", () => {
    const listed = catalogue.permitted(new Set(['big'])).ordered().models;
    assert.deepEqual(listed.map((m) => [m.id, m.aliasOf]), [['big', undefined], ['large', 'big'], ['huge', 'big']]);
    assert.deepEqual(catalogue.permitted(null).ordered().models.map((m) => m.id), ['big', 'large', 'huge', 'small', 'gpt-4o', 'claude-own']);
  });

  test('an alias whose target is not in the snapshot (a discovered model gone) names nothing, and says so', () => {
    const models = [modelFromConfig({ ...config.models[1]!, aliases: ['tiny'] })];
    const gone = new Catalogue(models, [{ name: 'discovered-*', target: 'vanished' }, { name: 'old-name', target: 'vanished' }]);
    assert.equal(gone.resolve('discovered-x'), undefined);
    assert.equal(gone.resolve('old-name'), undefined);
    assert.equal(gone.resolve('tiny')?.id, 'small');
    assert.equal(gone.aliasProblems.length, 2);
    assert.match(gone.aliasProblems[0]!, /model_aliases 'discovered-\*': no model has the id 'vanished'/);
  });

  test('an alias a later entry also claims is kept by the first (a console model against the file), and the clash is told', () => {
    const [big, small] = [modelFromConfig(config.models[0]!), modelFromConfig({ ...config.models[1]!, aliases: ['large'] })];
    const clashed = new Catalogue([big, small]);
    assert.equal(clashed.resolve('large')?.id, 'big');
    assert.match(clashed.aliasProblems[0]!, /model 'small': 'large' is taken by an alias of 'big'/);
  });
});

describe('a configuration with aliases that cannot stand', () => {
  const cases: [string, string, string][] = [
    ['an alias that is a model id', `${PROVIDERS}models:\n  - { id: a, provider: p, aliases: [b] }\n  - { id: b, provider: p }\n`, "models[0] (id: a): field 'aliases': 'b' is the id of a model; an alias must be a name of its own"],
    ['two models claiming one alias', `${PROVIDERS}models:\n  - { id: a, provider: p, aliases: [x] }\n  - { id: b, provider: p, aliases: [x] }\n`, "models[1] (id: b): field 'aliases': 'x' is already an alias of 'a'"],
    ['a model its own alias', `${PROVIDERS}models:\n  - { id: a, provider: p, aliases: [a] }\n`, "models[0] (id: a): field 'aliases': a model cannot be its own alias"],
    ['an exact name of model_aliases already an alias', `${PROVIDERS}${MODELS}model_aliases:\n  large: small\n`, "model_aliases ('large': small): 'large' is already an alias of 'big'"],
    ['an exact name of model_aliases that is a model id', `${PROVIDERS}${MODELS}model_aliases:\n  small: big\n`, "model_aliases ('small': big): 'small' is the id of a model; an alias must be a name of its own"],
    ['a target no model has', `${PROVIDERS}${MODELS}model_aliases:\n  "claude-*": sonnet\n`, "model_aliases ('claude-*': sonnet): no model has the id 'sonnet' (a target is a model of this file, or a discovered one when a provider discovers)"],
    ['a target that is an alias', `${PROVIDERS}${MODELS}model_aliases:\n  "claude-*": large\n`, "model_aliases ('claude-*': large): 'large' is an alias of 'big'; point at the model id 'big'"],
    ['a pattern with characters no model name has', `${PROVIDERS}${MODELS}model_aliases:\n  "claude-[a-z]*": big\n`, "model_aliases ('claude-[a-z]*': big): a name is a model name or a pattern of 1-200 letters, digits or ._:/@+- with '*' (any run of characters) or '?' (one character)"],
    ['an alias with a pattern character (patterns go in model_aliases)', `${PROVIDERS}models:\n  - { id: a, provider: p, aliases: ["a-*"] }\n`, "models[0] (id: a): field 'aliases.0': must be 1-200 letters, digits or ._:/@+- and start with a letter or digit"],
  ];
  for (const [what, text, message] of cases) {
    test(what, () => {
      assert.throws(() => parseConfig(text, 'sluice.yaml', {}), (error) => error instanceof ConfigError && error.message === `sluice.yaml: ${message}`, message);
    });
  }

  test('with a discovering provider, a target may be a model discovery will bring (checked as the catalogue is built)', () => {
    const config = parseConfig(`providers:\n  - { id: p, kind: openai, base_url: "http://127.0.0.1:8000/v1", discover: true }\nmodel_aliases:\n  "claude-*": qwen3-32b\n`, 'sluice.yaml', {});
    assert.deepEqual(config.modelAliases, [{ name: 'claude-*', target: 'qwen3-32b' }]);
  });
});
