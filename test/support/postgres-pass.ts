import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/**
 * Prints the end-to-end files the PostgreSQL pass runs (SLUICE_TEST_STORE=postgres), one a line,
 * for the test runner's command line: every test/*.test.ts but those whose opening comment says
 *
 *   // postgres-pass: skip (why the store cannot change its outcome)
 *
 * A file runs on both stores unless it says otherwise, so a new test file is never left out of the
 * PostgreSQL pass by being forgotten; a file that skips it must say why.
 */

const TEST_DIR = resolve(import.meta.dirname, '..');
const MARKER = /^\/\/ postgres-pass: skip\b(.*)$/m;
/** The marker is looked for in the file's opening lines only, where a reader sees it. */
const OPENING_CHARS = 2000;

const files = readdirSync(TEST_DIR)
  .filter((name) => name.endsWith('.test.ts'))
  .sort();
const run: string[] = [];
const unexplained: string[] = [];
for (const name of files) {
  const marker = MARKER.exec(readFileSync(join(TEST_DIR, name), 'utf8').slice(0, OPENING_CHARS));
  if (marker === null) run.push(relative(process.cwd(), join(TEST_DIR, name)));
  else if (!/\w/.test(marker[1]!)) unexplained.push(name);
}
// All or nothing: a partial list on stdout would run as if it were the whole pass.
if (unexplained.length > 0) {
  console.error(`postgres-pass: ${unexplained.join(', ')} skip the PostgreSQL pass without saying why`);
  process.exit(1);
}
console.log(run.join('\n'));
