import { usageOf, type Usage } from '../generation/model.js';

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

/** Input texts (a token-id prompt counts its ids) and generated texts, as Sluice's own usage. */
export async function countUsage(inputs: readonly (string | number | readonly number[])[], outputs: readonly string[]): Promise<Usage> {
  const encode = await loadEncoder();
  let input = 0;
  for (const item of inputs) {
    if (typeof item === 'string') input += encode(item).length;
    else if (typeof item === 'number') input += 1;
    else input += item.length;
  }
  let output = 0;
  for (const text of outputs) output += encode(text).length;
  return usageOf(input, output);
}
