/**
 * The layering check (`npm run check:layers`, .dependency-cruiser.cjs) run over small made-up trees:
 * it fails on a tree that breaks the layers, naming each broken rule with the import that broke it,
 * and passes on one that keeps them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';

const root = fileURLToPath(new URL('../../', import.meta.url));
const checkScript = join(root, 'scripts', 'check-layers.mjs');

/** Each file of a tree: its path under the tree and its one or two lines. */
type Tree = Record<string, string>;

const breaking: Tree = {
  // (a) a dialect importing a provider
  'src/dialects/openai.ts': "import { usageOf } from '../providers/openai.js';\nexport const usage = usageOf;",
  'src/providers/openai.ts': 'export const usageOf = 1;',
  // (b) the core importing a dialect, by a type alone
  'src/core/model.ts': "import type { Dialect } from '../dialects/dialect.js';\nexport type Model = Dialect;",
  'src/dialects/dialect.ts': 'export type Dialect = { name: string };',
  // (c) two folders importing each other through different modules: no module cycle, a folder cycle
  'src/limits/admission.ts': "import { keys } from '../store/keys.js';\nexport const admit = keys;",
  'src/store/keys.ts': 'export const keys = 0;',
  'src/store/copy.ts': "import { counter } from '../limits/counter.js';\nexport const copy = counter;",
  'src/limits/counter.ts': 'export const counter = 0;',
  // a module cycle that spans two folders
  'src/catalogue/catalogue.ts': "import { price } from '../pricing/price.js';\nexport const model = price;",
  'src/pricing/price.ts': "import { model } from '../catalogue/catalogue.js';\nexport const price = 1;\nexport const of = () => model;",
  // routing holding the HTTP server's response
  'src/routing/router.ts': "import type { ServerResponse } from 'node:http';\nexport type Sink = ServerResponse;",
  // the HTTP layer importing the wiring, the wiring importing the command line
  'src/http/server.ts': "import { start } from '../wiring/gateway.js';\nexport const serve = start;",
  'src/wiring/gateway.ts': 'export const start = 0;',
  'src/wiring/run.ts': "import { main } from '../cli.js';\nexport const run = main;",
  'src/cli.ts': 'export const main = 0;',
  // a folder the layer list does not know
  'src/gadgets/operation.ts': "import type { Model } from '../core/model.js';\nexport type Operation = Model;",
};

const keeping: Tree = {
  'src/core/model.ts': 'export type Model = { id: string };',
  'src/wire/openai.ts': "import type { Model } from '../core/model.js';\nexport const usageOf = (model: Model) => model.id;",
  'src/dialects/openai.ts': "import { usageOf } from '../wire/openai.js';\nexport const usage = usageOf;",
  'src/providers/openai.ts': "import { usageOf } from '../wire/openai.js';\nexport const usage = usageOf;",
  // a cycle inside one folder is the folder's own business
  'src/store/keys.ts': "import { rows } from './rows.js';\nexport const keys = () => rows;",
  'src/store/rows.ts': "import { keys } from './keys.js';\nexport const rows = 0;\nexport const again = () => keys;",
  'src/limits/admission.ts': "import { keys } from '../store/keys.js';\nexport const admit = keys;",
  'src/pipeline/pipeline.ts': "import { usage } from '../dialects/openai.js';\nimport { admit } from '../limits/admission.js';\nexport const run = [usage, admit];",
  'src/http/server.ts': "import { createServer } from 'node:http';\nimport { run } from '../pipeline/pipeline.js';\nexport const serve = () => [createServer, run];",
  'src/wiring/gateway.ts': "import { serve } from '../http/server.js';\nimport { usage } from '../providers/openai.js';\nexport const start = [serve, usage];",
  'src/cli.ts': "import { start } from './wiring/gateway.js';\nexport const main = start;",
};

const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function plant(tree: Tree): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-layers-'));
  made.push(dir);
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), `${text}\n`);
  }
  return dir;
}

/** What the check prints and how it exits, run in `dir` as `npm run check:layers` runs it. */
function runCheck(dir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [checkScript], { cwd: dir, encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

/** The violations the real configuration finds in `dir`, as "rule: from → to". */
async function violations(dir: string): Promise<string[]> {
  const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
  const result = await cruise(['src'], { ...options, baseDir: dir, outputType: 'json' });
  const summary = JSON.parse(String(result.output)).summary as { violations: { rule: { name: string }; from: string; to: string }[] };
  return [...new Set(summary.violations.map(({ rule, from, to }) => `${rule.name}: ${from} → ${to}`))].sort();
}

describe('the layering check', () => {
  test('fails on a tree that breaks the layers', () => {
    const { status, output } = runCheck(plant(breaking));
    assert.equal(status, 1, output);
    assert.match(output, /error layer-dialects: src\/dialects\/openai\.ts → src\/providers\/openai\.ts/);
    assert.match(output, /error no-folder-cycle: /);
  });

  test('names each broken rule with the import that broke it', async () => {
    const found = await violations(plant(breaking));
    const expected = [
      'layer-dialects: src/dialects/openai.ts → src/providers/openai.ts',
      'layer-core: src/core/model.ts → src/dialects/dialect.ts',
      'layer-store: src/store/copy.ts → src/limits/counter.ts',
      'layer-pricing: src/pricing/price.ts → src/catalogue/catalogue.ts',
      'no-http-server-below-the-edge: src/routing/router.ts → http',
      'layer-http: src/http/server.ts → src/wiring/gateway.ts',
      'not-to-wiring: src/http/server.ts → src/wiring/gateway.ts',
      'layer-wiring: src/wiring/run.ts → src/cli.ts',
      'not-to-cli: src/wiring/run.ts → src/cli.ts',
      'layer-unlisted-folder: src/gadgets/operation.ts → src/core/model.ts',
    ];
    for (const violation of expected) assert.ok(found.includes(violation), `missing ${violation} in:\n${found.join('\n')}`);
    // A cycle is reported once, from whichever of its members the cruise met first.
    const oneOf = (...candidates: string[]) => assert.ok(candidates.some((c) => found.includes(c)), `none of ${candidates.join(' | ')} in:\n${found.join('\n')}`);
    oneOf('no-cross-folder-cycle: src/catalogue/catalogue.ts → src/pricing/price.ts', 'no-cross-folder-cycle: src/pricing/price.ts → src/catalogue/catalogue.ts');
    oneOf('no-folder-cycle: src/catalogue → src/pricing', 'no-folder-cycle: src/pricing → src/catalogue');
    // Folders that import each other through different modules: a folder cycle, though no module cycle.
    oneOf('no-folder-cycle: src/limits → src/store', 'no-folder-cycle: src/store → src/limits');
    assert.ok(!found.some((violation) => /^no-cross-folder-cycle: src\/(store|limits)\//.test(violation)), found.join('\n'));
  });

  test('passes on a tree that keeps the layers, a cycle inside one folder included', async () => {
    const dir = plant(keeping);
    assert.deepEqual(await violations(dir), []);
    const { status, output } = runCheck(dir);
    assert.equal(status, 0, output);
    assert.match(output, /no dependency violations found/);
  });
});

describe("each folder's README", () => {
  test('says what the folder may import, as the layer rules do', async () => {
    const { default: config } = (await import(join(root, '.dependency-cruiser.cjs'))) as { default: { forbidden: { name: string; to: { pathNot?: string } }[] } };
    const layers = new Map<string, Set<string>>();
    for (const rule of config.forbidden) {
      const folder = /^layer-(?!unlisted-folder$)(.+)$/.exec(rule.name)?.[1];
      const allowed = /^\^src\/\((.+)\)\[/.exec(rule.to.pathNot ?? '')?.[1];
      if (folder !== undefined && allowed !== undefined) layers.set(folder, new Set(allowed.split('|').filter((name) => name !== folder)));
    }
    assert.ok(layers.size >= 20, `the layer rules as read: ${[...layers.keys()].join(', ')}`);
    const all = [...layers.keys()];
    for (const [folder, allowed] of layers) {
      const text = readFileSync(join(root, 'src', folder, 'README.md'), 'utf8');
      const said = /^May import: (.+?)(?: \(checked|$)/m.exec(text)?.[1];
      assert.ok(said !== undefined, `src/${folder}/README.md has no "May import:" line`);
      let listed: string[];
      if (said.startsWith('nothing')) listed = [];
      else if (said.startsWith('every folder of src/')) {
        const but = /but (.+)$/.exec(said.replace(/, http's helpers included$/, ''))?.[1] ?? '';
        const excluded = new Set(but.split(/, | and /).filter(Boolean));
        listed = all.filter((name) => name !== folder && !excluded.has(name));
      } else listed = said.split(', ');
      assert.deepEqual(new Set(listed), allowed, `src/${folder}/README.md says "${said}"`);
    }
  });
});
