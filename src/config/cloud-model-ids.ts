/**
 * The one reading of the clouds' model ids, shared by the adapters (which wire a model speaks) and
 * pricing (whose list prices it), so that both see the same vendor in the same id.
 */

/**
 * The geographies of Bedrock's system inference profiles (`us.anthropic.…`), as they lead an id.
 * `us-gov` before `us`, though `us.` cannot match `us-gov.` anyway.
 */
export const INFERENCE_PROFILE_PREFIXES = ['us-gov', 'us', 'eu', 'apac', 'jp', 'au', 'ca', 'global'] as const;
export type InferenceProfilePrefix = (typeof INFERENCE_PROFILE_PREFIXES)[number];

const PROFILE_PREFIX = new RegExp(`^(${INFERENCE_PROFILE_PREFIXES.join('|')})\\.`);

/** What a Bedrock model id names. */
export interface BedrockModelId {
  /** The geography of a system inference profile, when the id is one. */
  readonly profile: InferenceProfilePrefix | undefined;
  /** The model's vendor (`anthropic`, `amazon`, `cohere`, `meta`, …); undefined when the id names none (an application profile's or a provisioned model's ARN). */
  readonly vendor: string | undefined;
  /** The model past its vendor, version and revision included (`claude-sonnet-4-5-20250929-v1:0`); undefined with the vendor. */
  readonly model: string | undefined;
}

/**
 * A Bedrock model id as the runtime takes it: a foundation model's id (`anthropic.claude-…-v1:0`),
 * a system inference profile's (`us.`, `eu.`, `apac.`, `us-gov.`, `jp.`, `au.`, `ca.`, `global.`
 * before one), or the ARN of a foundation model (`…::foundation-model/ID`) or of a system
 * inference profile (`…:inference-profile/PROFILE`). An application inference profile's or a
 * provisioned model's ARN has an opaque name: no vendor.
 */
export function parseBedrockModelId(id: string): BedrockModelId {
  let rest = id;
  if (id.startsWith('arn:')) {
    const resource = /:(foundation-model|inference-profile)\/([^/]+)$/.exec(id);
    if (resource === null) return { profile: undefined, vendor: undefined, model: undefined };
    rest = resource[2]!;
  }
  const prefix = PROFILE_PREFIX.exec(rest);
  const profile = prefix === null ? undefined : (prefix[1] as InferenceProfilePrefix);
  const bare = prefix === null ? rest : rest.slice(prefix[0].length);
  const dot = bare.indexOf('.');
  if (dot <= 0 || dot === bare.length - 1) return { profile, vendor: undefined, model: undefined };
  return { profile, vendor: bare.slice(0, dot), model: bare.slice(dot + 1) };
}

/**
 * The inference-profile prefix of a region's geography for Claude's cross-region profiles:
 * `us-gov-west-1` → `us-gov`, `eu-west-1` → `eu`, `ap-northeast-1` → `apac`, `us-east-1` → `us`;
 * undefined elsewhere (a `global.` profile serves those regions).
 */
export function inferenceProfilePrefixOf(region: string): InferenceProfilePrefix | undefined {
  if (region.startsWith('us-gov-')) return 'us-gov';
  if (region.startsWith('us-')) return 'us';
  if (region.startsWith('eu-')) return 'eu';
  if (region.startsWith('ap-')) return 'apac';
  return undefined;
}

/** What a Vertex AI model id names. */
export interface VertexModelId {
  /** Its publisher: as its resource name says (`publishers/anthropic/models/…`), else `anthropic` for `claude-…` and `google` for the rest. */
  readonly publisher: string;
  /** The model as Vertex calls it under its publisher, any `@version` kept (`claude-sonnet-4-5@20250929`). */
  readonly model: string;
  /** The model without its version, as a price list names it. */
  readonly name: string;
}

/**
 * A Vertex AI model id: a bare model (`gemini-2.5-pro`, `claude-sonnet-4-5@20250929`) or a
 * publisher model's resource name (`publishers/anthropic/models/claude-…`, with or without
 * `projects/…/locations/…/` before it).
 */
export function parseVertexModelId(id: string): VertexModelId {
  const resource = /(?:^|\/)publishers\/([^/]+)\/models\/([^/]+)$/.exec(id);
  const model = resource === null ? id.replace(/^models\//, '') : resource[2]!;
  const name = model.replace(/@.*$/, '');
  const publisher = resource !== null ? resource[1]! : name.startsWith('claude-') ? 'anthropic' : 'google';
  return { publisher, model, name };
}
