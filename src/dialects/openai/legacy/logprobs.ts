import type { TokenLogprob } from '../../../generation/model.js';
import type { LegacyLogprobs } from './completion.js';

const encoder = new TextEncoder();

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * Builds the legacy `{tokens, token_logprobs, top_logprobs, text_offset}` for one choice, batch by
 * batch as a stream delivers tokens. Offsets count Unicode code points of the choice's text (as
 * OpenAI's Python server does), decoding the tokens' bytes so that a character split across two
 * tokens is counted once, at the token that starts it.
 */
export class LegacyLogprobsBuilder {
  private offset: number;
  private readonly decoder = new TextDecoder('utf-8');

  /** `startOffset`: characters already in the choice's text before the first token (an echoed prompt). */
  constructor(
    private readonly topCount: number,
    startOffset = 0,
  ) {
    this.offset = startOffset;
  }

  add(tokens: readonly TokenLogprob[]): LegacyLogprobs {
    const textOffset: number[] = [];
    for (const token of tokens) {
      textOffset.push(this.offset);
      const bytes = token.bytes ? Uint8Array.from(token.bytes) : encoder.encode(token.token);
      this.offset += codePoints(this.decoder.decode(bytes, { stream: true }));
    }
    return {
      tokens: tokens.map((t) => t.token),
      token_logprobs: tokens.map((t) => t.logprob),
      top_logprobs:
        this.topCount > 0 ? tokens.map((t) => Object.fromEntries(t.top.slice(0, this.topCount).map((c) => [c.token, c.logprob]))) : null,
      text_offset: textOffset,
    };
  }
}
