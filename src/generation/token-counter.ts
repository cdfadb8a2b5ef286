import { setImmediate as turnOfTheLoop } from 'node:timers/promises';
import { usageOf, type Usage } from './model.js';

type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;
let countTokensPromise: Promise<CountTokens> | undefined;

/**
 * The tokenizer's tables are large, so they are loaded the first time an upstream omits usage,
 * not at start-up. o200k_base is a stand-in: the upstream's own tokenizer is unknown, and the row
 * is marked as counted by Sluice so that nobody mistakes it for the upstream's figure.
 */
function loadTokenizer(): Promise<CountTokens> {
  countTokensPromise ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => module.countTokens as CountTokens);
  return countTokensPromise;
}

/**
 * Text like `<|endoftext|>` is counted as the characters it is: a caller's text is never a control
 * token, and the tokenizer would otherwise throw on it.
 */
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * The longest slice the tokenizer is given. Its byte-pair merge is quadratic in the length of one
 * piece (a run without spaces): 80k `x` took 2 s, so a piece is never allowed to grow past this.
 * A multiple of 3, as digits are taken in threes, so a long number counts the same when it is cut.
 */
export const LONGEST_SLICE = 240;

/** How long one count may hold the event loop before it lets other work run. */
const LOOP_HOLD_MS = 2;
/** And how many slices at most, so that the loop turns during a long count even on a fast machine. */
const SLICES_PER_TURN = 32;

/**
 * Whether the tokenizer's own pre-tokenizer (o200k's split pattern) always starts a piece at `at`,
 * whatever follows, so that the text before it counts the same alone as in the whole. Two places
 * are provably such boundaries (test/token-counter.test.ts tries them): whitespace other than
 * CR/LF after a character that is not whitespace (a piece that starts with anything else takes no
 * whitespace later but CR/LF at its end), and, after a letter, a character that cannot continue
 * the word (not a letter, a combining mark or the apostrophe of "'s").
 */
export function alwaysStartsPiece(text: string, at: number): boolean {
  const before = text.charCodeAt(at - 1);
  const here = text.charCodeAt(at);
  if (isSpaceNotNewline(here)) return !isSpace(before);
  return isLetter(before) && !continuesWord(text, at, here);
}

function isSpace(code: number): boolean {
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return /\s/.test(String.fromCharCode(code));
}

function isSpaceNotNewline(code: number): boolean {
  return code !== 10 && code !== 13 && isSpace(code);
}

/** A lone surrogate is not a letter here, so no cut is taken after half of one. */
function isLetter(code: number): boolean {
  if (code < 128) return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  return /\p{L}/u.test(String.fromCharCode(code));
}

/** The whole code point is tested: an astral letter or mark continues a word too. */
function continuesWord(text: string, at: number, code: number): boolean {
  if (code < 128) return code === 39 || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  return /[\p{L}\p{M}]/u.test(String.fromCodePoint(text.codePointAt(at)!));
}

/**
 * Where the slice starting at `start` ends: at the last boundary within LONGEST_SLICE, so that
 * ordinary text counts exactly as the whole would; else (a run of letters, digits, punctuation or
 * whitespace longer than that) cut hard, never between the halves of a surrogate pair. A hard cut
 * may change the count by a token or two: little for most runs, more for one character repeated,
 * which the tokenizer takes dozens at a time.
 */
export function sliceEnd(text: string, start: number): number {
  const limit = start + LONGEST_SLICE;
  if (limit >= text.length) return text.length;
  for (let at = limit; at > start; at--) if (alwaysStartsPiece(text, at)) return at;
  const high = text.charCodeAt(limit - 1);
  return high >= 0xd800 && high <= 0xdbff ? limit - 1 : limit;
}

/** Cooperative counting: the loop is given back after LOOP_HOLD_MS or SLICES_PER_TURN, so no count can freeze a worker. */
class LoopShare {
  private since = performance.now();
  private slices = 0;

  /** Called after each slice. */
  async take(): Promise<void> {
    if (++this.slices < SLICES_PER_TURN && performance.now() - this.since < LOOP_HOLD_MS) return;
    await turnOfTheLoop();
    this.since = performance.now();
    this.slices = 0;
  }
}

/** Tokens in one text, slice by slice: linear in its length, whatever the text. */
async function countText(text: string, countTokens: CountTokens, share: LoopShare): Promise<number> {
  let tokens = 0;
  for (let start = 0; start < text.length; ) {
    const end = sliceEnd(text, start);
    tokens += countTokens(text.slice(start, end), AS_PLAIN_TEXT);
    start = end;
    await share.take();
  }
  return tokens;
}

/** Input texts (a token-id prompt counts its ids) and generated texts, as Sluice's own usage. */
export async function countUsage(inputs: readonly (string | number | readonly number[])[], outputs: readonly string[]): Promise<Usage> {
  const countTokens = await loadTokenizer();
  const share = new LoopShare();
  let input = 0;
  for (const item of inputs) {
    if (typeof item === 'string') input += await countText(item, countTokens, share);
    else if (typeof item === 'number') input += 1;
    else input += item.length;
  }
  let output = 0;
  for (const text of outputs) output += await countText(text, countTokens, share);
  return usageOf(input, output);
}
