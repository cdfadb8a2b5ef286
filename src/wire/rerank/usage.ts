import { usageOf } from '../../generation/model.js';
import { isObject } from '../json.js';
import type { Consumption } from '../relay-format.js';

/**
 * What a rerank answer says it consumed. Two ways are in use: a token count (`usage.total_tokens`,
 * as vLLM and Jina report it; the tokens of the query and the documents, all input) and Cohere's
 * billed search units (`meta.billed_units.search_units`: one per query of up to 100 documents),
 * billed as requests; an answer without them is one request.
 */
export function rerankConsumption(body: Readonly<Record<string, unknown>>): Consumption {
  const reported = isObject(body.usage) ? body.usage : {};
  const tokens = countOf(reported.total_tokens) ?? countOf(reported.prompt_tokens);
  const meta = isObject(body.meta) ? body.meta : {};
  const billed = isObject(meta.billed_units) ? meta.billed_units : {};
  const searchUnits = countOf(billed.search_units);
  // Cohere's meta also counts tokens (`billed_units.input_tokens`) on some models.
  const cohereTokens = countOf(billed.input_tokens);
  const input = tokens ?? cohereTokens;
  return { usage: input === undefined ? null : usageOf(input, 0), units: { requests: searchUnits ?? 1 } };
}

function countOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}
