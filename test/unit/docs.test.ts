import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The README is a front page whose table of contents lists every docs/ page; each page longer than
// a screen opens with its own contents; no link between them points at a file or heading that is gone.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pages = readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading). */
const prose = (text: string) => text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

const headings = (text: string, level = '#{1,6}') => [...prose(text).matchAll(new RegExp(`^${level} (.+)$`, 'gm'))].map((m) => m[1]!);

/** Markdown links to files in the repository: [text](path#anchor), not URLs. */
const localLinks = (text: string) =>
  [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:/.test(target));

describe('the README and the docs pages', () => {
  test('the README is a short front page whose table of contents lists every docs page', () => {
    const readme = read('README.md');
    assert.ok(readme.split('\n').length <= 120, `README.md has ${readme.split('\n').length} lines`);
    const contents = /^## Documentation\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(readme)?.[1];
    assert.ok(contents !== undefined, 'a Documentation section');
    const listed = [...contents.matchAll(/^\| \[[^\]]+\]\((docs\/[^)#]+\.md)\) \|/gm)].map((m) => m[1]);
    assert.deepEqual([...listed].sort(), [...pages].sort(), 'each docs page once in the table');
    assert.match(readme, /^## Quick start\n[\s\S]*?^```sh\n/m, 'a quick start with its shell block');
  });

  test('a page longer than a screen opens with a contents list of its sections, in order', () => {
    for (const page of pages) {
      const text = read(page);
      const sections = headings(text, '##');
      if (text.split('\n').length <= 60 || sections.length < 2) continue;
      const list = /^Contents:\n\n((?:- .+\n)+)/m.exec(text)?.[1];
      assert.ok(list !== undefined, `${page} has no "Contents:" list`);
      const entries = [...list.matchAll(/^- \[([^\]]+)\]\(#([^)]+)\)$/gm)].map((m) => [m[1], m[2]]);
      assert.deepEqual(entries, sections.map((heading) => [heading, anchor(heading)]), `${page}: the contents list and the sections`);
      assert.ok(text.indexOf('Contents:') < text.indexOf(`## ${sections[0]}`), `${page}: the contents come before the first section`);
    }
  });

  test('every link from the README and the docs reaches a file, and an anchor a heading in it', () => {
    for (const from of ['README.md', ...pages]) {
      for (const link of localLinks(read(from))) {
        const [path, hash] = link.split('#') as [string, string | undefined];
        const target = path === '' ? from : join(dirname(from), path);
        assert.ok(existsSync(join(root, target)), `${from} links to ${link}: no such file`);
        if (hash !== undefined && hash !== '') {
          assert.ok(headings(read(target)).map(anchor).includes(hash), `${from} links to ${link}: no such heading`);
        }
      }
    }
  });
});
