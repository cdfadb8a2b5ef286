import { parseBedrockModelId, parseVertexModelId } from '../config/cloud-model-ids.js';
import type { ProviderKind } from '../config/config-file.js';
import type { PriceFamily } from './price-list.js';

/** Whose model a deployment serves, and the names it may go by in that vendor's list, most specific first. */
export interface VendorModel {
  readonly family: PriceFamily;
  readonly names: readonly string[];
}

/** The vendor in a Bedrock model id (`anthropic.claude-…`), as a price family; other vendors are not priced. */
const BEDROCK_VENDORS: Readonly<Record<string, PriceFamily>> = {
  anthropic: 'anthropic',
  amazon: 'amazon',
  meta: 'meta',
  mistral: 'mistral',
  cohere: 'cohere',
};

/** A Bedrock id's model version (`-v1`) and revision or context variant (`:0`, `:0:200k`). */
const BEDROCK_REVISION = /(?::[0-9a-z]+)+$/;
const BEDROCK_VERSION = /-v\d+$/;

/**
 * The vendor model a deployment carries, by its provider's kind and its upstream model: the direct
 * vendors' own names; a Bedrock model id, inference profile or ARN by the vendor it names; a Vertex
 * publisher model by its name (`claude-…` is Anthropic's, `gemini-…`/`text-embedding-…` Google's);
 * an Azure deployment only by the model its resource reports for it (`reported`), since a
 * deployment's name is the operator's own. Undefined: no list can price it (give it `pricing`).
 */
export function vendorModelOf(kind: ProviderKind, upstreamModel: string, reported?: string): VendorModel | undefined {
  switch (kind) {
    case 'openai':
      return { family: 'openai', names: [upstreamModel] };
    case 'anthropic':
      return { family: 'anthropic', names: [upstreamModel] };
    case 'gemini':
      return { family: 'google', names: [upstreamModel.replace(/^models\//, '')] };
    case 'azure':
      return reported === undefined ? undefined : azureModel(reported);
    case 'bedrock':
      return bedrockModel(upstreamModel);
    case 'vertex':
      return vertexModel(upstreamModel);
  }
}

/** Azure names OpenAI's GPT-3.5 models `gpt-35-turbo…` (no dot in a deployment's model name); OpenAI's list, `gpt-3.5-turbo…`. */
function azureModel(reported: string): VendorModel {
  const openai = reported.replace(/^gpt-35-/, 'gpt-3.5-');
  return { family: 'openai', names: openai === reported ? [reported] : [reported, openai] };
}

function bedrockModel(upstreamModel: string): VendorModel | undefined {
  // An application profile or provisioned model has an opaque name (no vendor), which no list knows.
  const { vendor, model } = parseBedrockModelId(upstreamModel);
  const family = vendor === undefined ? undefined : BEDROCK_VENDORS[vendor];
  if (family === undefined || model === undefined) return undefined;
  const name = model.replace(BEDROCK_REVISION, '');
  const unversioned = name.replace(BEDROCK_VERSION, '');
  return { family, names: unversioned === name ? [name] : [name, unversioned] };
}

function vertexModel(upstreamModel: string): VendorModel | undefined {
  // `publishers/anthropic/models/claude-…` names the same model as `claude-…`; `@20250929` is its snapshot.
  const { publisher, name } = parseVertexModelId(upstreamModel);
  if (publisher === 'anthropic') return { family: 'anthropic', names: [name] };
  if (publisher === 'google' && /^(?:gemini-|text-embedding-|text-multilingual-embedding-)/.test(name)) return { family: 'google', names: [name] };
  return undefined;
}
