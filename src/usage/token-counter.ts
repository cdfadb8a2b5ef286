import type { Prompt, Usage } from '../completions/completion.js';

type Encode = (text: string) => number[];
let encodePromise: Promise<Encode> | undefined;

/**
 * The tokenizer's tables are large, so they are loaded the first time an upstream omits usage,
 * not at start-up. o200k_base is a stand-in: the upstream's own tokenizer is unknown, and the row
 * is marked as counted by Sluice so that nobody mistakes it for the upstream's figure.
 */
function loadEncoder(): Promise<Encode> {
  encodePromise ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => module.encode as Encode);
  return encodePromise;
}

export async function countUsage(prompt: Prompt, completionTexts: readonly string[]): Promise<Usage> {
  const encode = await loadEncoder();
  let promptTokens = 0;
  if (typeof prompt === 'string') promptTokens = encode(prompt).length;
  else {
    for (const item of prompt) {
      if (typeof item === 'string') promptTokens += encode(item).length;
      else if (typeof item === 'number') promptTokens += 1;
      else promptTokens += item.length;
    }
  }
  let completionTokens = 0;
  for (const text of completionTexts) completionTokens += encode(text).length;
  return { promptTokens, completionTokens };
}
