/** Short spellings of the canonical values the adapters' cases expect. */
import type { ContentPart, Finish, FinishReason, GeneratedChoice, StreamPart, TokenLogprob, Usage } from '../../../src/generation/model.js';

export const text = (value: string): ContentPart => ({ type: 'text', text: value });
export const toolCall = (id: string, name: string, args: string): ContentPart => ({ type: 'tool_call', id, name, arguments: args });

export const finish = (reason: FinishReason, raw: string | undefined, stopSequence?: string): Finish =>
  stopSequence === undefined ? { reason, raw } : { reason, raw, stopSequence };

export const usage = (input: number, output: number, more: Partial<Omit<Usage, 'input' | 'output'>> = {}): Usage => ({
  input,
  output,
  cachedInput: more.cachedInput ?? 0,
  cacheWrite: more.cacheWrite ?? 0,
  reasoning: more.reasoning ?? 0,
});

export const choice = (index: number, content: readonly ContentPart[], end: Finish, logprobs?: readonly TokenLogprob[]): GeneratedChoice => ({ index, content, finish: end, logprobs });

/** Stream parts of choice 0 (or `choice`). */
export const parts = {
  start: (id: string, created: number): StreamPart => ({ type: 'start', id, created }),
  text: (value: string, choice = 0): StreamPart => ({ type: 'text', choice, text: value }),
  texts: (values: readonly string[], choice = 0): StreamPart[] => values.map((value) => ({ type: 'text', choice, text: value })),
  reasoning: (value: string, choice = 0): StreamPart => ({ type: 'reasoning', choice, text: value }),
  signature: (signature: string, choice = 0): StreamPart => ({ type: 'reasoning_signature', choice, signature }),
  toolStart: (index: number, id: string, name: string, choice = 0): StreamPart => ({ type: 'tool_call_start', choice, index, id, name }),
  toolDeltas: (index: number, fragments: readonly string[], choice = 0): StreamPart[] => fragments.map((args) => ({ type: 'tool_call_delta', choice, index, arguments: args })),
  toolEnd: (index: number, choice = 0): StreamPart => ({ type: 'tool_call_end', choice, index }),
  finish: (end: Finish, choice = 0): StreamPart => ({ type: 'finish', choice, finish: end }),
  usage: (value: Usage): StreamPart => ({ type: 'usage', usage: value }),
};
