import type { ProviderKind } from '../config/config-file.js';
import type { PriceFamily } from './price-list.js';

/** Whose model a deployment serves, and the names it may go by in that vendor's list, most specific first. */
export interface VendorModel {
  readonly family: PriceFamily;
  readonly names: readonly string[];
}

/** What comes before a Bedrock model id in an inference profile: the geography it is routed within. */
const INFERENCE_PROFILE_PREFIX = /^(?:us|eu|apac|us-gov|jp|au|ca|global)\./;

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
  // An ARN ends in its resource: `…:foundation-model/ID` or `…:inference-profile/PROFILE`; an
  // application profile or provisioned model has an opaque name, which no list knows.
  const id = upstreamModel.startsWith('arn:') ? upstreamModel.slice(upstreamModel.lastIndexOf('/') + 1) : upstreamModel;
  const bare = id.replace(INFERENCE_PROFILE_PREFIX, '');
  const dot = bare.indexOf('.');
  const family = dot === -1 ? undefined : BEDROCK_VENDORS[bare.slice(0, dot)];
  if (family === undefined) return undefined;
  const name = bare.slice(dot + 1).replace(BEDROCK_REVISION, '');
  const unversioned = name.replace(BEDROCK_VERSION, '');
  return { family, names: unversioned === name ? [name] : [name, unversioned] };
}

function vertexModel(upstreamModel: string): VendorModel | undefined {
  // `publishers/anthropic/models/claude-…` names the same model as `claude-…`; `@20250929` is its snapshot.
  const name = upstreamModel.replace(/^(?:.*\/)?models\//, '').replace(/@.*$/, '');
  if (name.startsWith('claude-')) return { family: 'anthropic', names: [name] };
  if (/^(?:gemini-|text-embedding-|text-multilingual-embedding-)/.test(name)) return { family: 'google', names: [name] };
  return undefined;
}
