/**
 * The fakes' deterministic "model": it answers word by word from WORDS, one token per word. Chat
 * fakes lead with `[prompt]` so tests can tell which prompt a choice answers; a prompt containing
 * UNICODE_PROMPT answers with tokens that hold non-ASCII and astral characters, to check offsets.
 */
export const WORDS = [' The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'];
export const UNICODE_PROMPT = 'unicode please';
export const UNICODE_TOKENS = [' caf', 'é', ' 😀', '!'];

export interface Generation {
  readonly tokens: string[];
  readonly finishReason: 'stop' | 'length';
  /** The stop sequence that ended it, if one did. */
  readonly stop: string | null;
}

export function generate(prompt: string, maxTokens: number, stops: readonly string[], options: { lead?: boolean } = {}): Generation {
  const source = prompt.includes(UNICODE_PROMPT) ? UNICODE_TOKENS : options.lead ? [`[${prompt}]`, ...WORDS] : WORDS;
  const tokens: string[] = [];
  let text = '';
  for (const word of source) {
    if (tokens.length >= maxTokens) return { tokens, finishReason: 'length', stop: null };
    const next = text + word;
    const stop = stops.find((s) => next.includes(s));
    if (stop !== undefined) {
      const cut = next.slice(0, next.indexOf(stop)).slice(text.length);
      if (cut) tokens.push(cut);
      return { tokens, finishReason: 'stop', stop };
    }
    tokens.push(word);
    text = next;
  }
  return { tokens, finishReason: 'stop', stop: null };
}

/** A fake log-probability for the i-th generated token. */
export function fakeLogprob(i: number): number {
  return -0.1 * (i + 1);
}

export function countWords(text: string): number {
  return Math.max(1, text.split(/\s+/).filter(Boolean).length);
}
