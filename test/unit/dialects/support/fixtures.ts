import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Fixture files of the dialect tests (test/unit/fixtures/dialects, see its README). Expectations
 * are stored beside their inputs; with SLUICE_UPDATE_FIXTURES=1 a run writes what the code does
 * instead of comparing, for a person to review in the diff before committing it.
 */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'dialects');
export const UPDATING = process.env.SLUICE_UPDATE_FIXTURES === '1';

/** The request fixtures' folder of each caller operation. */
export const REQUEST_DIRS = {
  'openai.completions': 'openai-completions',
  'openai.chat': 'openai-chat',
  'openai.responses': 'openai-responses',
  'anthropic.messages': 'anthropic-messages',
  'anthropic.count_tokens': 'anthropic-count-tokens',
  'gemini.generateContent': 'gemini-generate-content',
  'gemini.countTokens': 'gemini-count-tokens',
} as const;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** An error as the caller sees it: the status and the JSON body its dialect renders. */
export interface RenderedError {
  readonly status: number;
  readonly body: Json;
}

export interface RequestExpectation {
  /** The dialect's parsed value, the body it keeps aside left out. */
  readonly parsed?: Json;
  /** The body as parsed, where it is not the body as sent (Gemini's bare-string systemInstruction, proto field names, single objects for lists). */
  readonly bodyAsParsed?: Json;
  /** The generation model the request becomes for an upstream of another dialect, or that upstream's refusal. */
  readonly translated?: Json;
  readonly translationError?: RenderedError;
  /** Texts Sluice's own token count counts (count_tokens operations). */
  readonly counted?: Json;
  /** Refused at parsing. */
  readonly error?: RenderedError;
}

export interface RequestFixture {
  readonly about: string;
  /** Where the shape comes from: `recorded (user-agent: …)`, `docs: <url>`, or `hand-written: <why>`. */
  readonly source: string;
  readonly request: {
    readonly path: string;
    readonly query: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: unknown;
  };
  /** The upstream a translation is for, where not the operation's default. */
  readonly upstream?: { readonly kind?: 'openai' | 'anthropic' | 'gemini'; readonly hostedTools?: 'drop' | 'refuse' };
  /**
   * Sluice gets this one wrong: the expectation is written by hand (what a fix must do, as far as
   * it says) and the test is a todo until then; an update leaves it alone.
   */
  readonly knownBug?: string;
  readonly expect?: RequestExpectation;
}

export interface LoadedFixture<T> {
  readonly name: string;
  readonly file: string;
  readonly fixture: T;
}

export function loadJsonFixtures<T>(folder: string): LoadedFixture<T>[] {
  const dir = join(FIXTURES, folder);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ name: file.slice(0, -'.json'.length), file: join(dir, file), fixture: JSON.parse(readFileSync(join(dir, file), 'utf8')) as T }));
}

export function writeJsonFixture(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** What the value is as JSON: undefined members gone, as they would be on the wire. */
export function asJson(value: unknown): Json {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as Json);
}

/** Compares text with a stored snapshot (or stores it, when updating). */
export function matchesSnapshot(file: string, actual: string): void {
  if (UPDATING) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  let expected: string;
  try {
    expected = readFileSync(file, 'utf8');
  } catch {
    assert.fail(`no snapshot ${file}: run with SLUICE_UPDATE_FIXTURES=1, then review it`);
  }
  assert.equal(actual, expected, `differs from ${file}`);
}
