import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import type { UpstreamFailureCondition } from '../core/errors.js';
import { UserError } from '../core/user-error.js';
import { MCP_SERVER_ID, MCP_SERVER_ID_RULE } from '../core/mcp-access.js';

/**
 * Public operations a model can serve, named as in the configuration file. `responses`: OpenAI's
 * Responses API only (a `chat` model serves it too). The rest generate no text: `embeddings`
 * (OpenAI's and Google's embedding calls), `rerank`, `images` (generations and edits),
 * `transcriptions` (transcriptions and translations of audio), `speech` and `moderations`.
 */
export const ENDPOINTS = ['completions', 'chat', 'responses', 'embeddings', 'rerank', 'images', 'transcriptions', 'speech', 'moderations'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/**
 * What a generation model serves when its entry (or its provider's `discover`) names no `endpoints`:
 * chat, which covers Chat Completions, Responses, Anthropic Messages and Gemini generateContent, and
 * legacy completions, which every upstream serves (relayed where an `openai` upstream has the API,
 * else one chat turn per prompt). An entry that lists `endpoints` serves exactly those.
 */
export const GENERATION_ENDPOINTS: readonly Endpoint[] = ['completions', 'chat'];

export const PROVIDER_KINDS = ['openai', 'anthropic', 'gemini', 'azure', 'bedrock', 'vertex'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/**
 * A provider's base URL when it names none: its vendor's, in its region or location (Vertex's
 * `global` has no prefix). An OpenAI-compatible server and an Azure resource must be named.
 */
export function defaultBaseUrl(provider: { readonly kind: ProviderKind; readonly region?: string | undefined; readonly location?: string | undefined }): string | undefined {
  switch (provider.kind) {
    case 'bedrock':
      return provider.region === undefined ? undefined : `https://bedrock-runtime.${provider.region}.amazonaws.com`;
    case 'vertex':
      if (provider.location === undefined) return undefined;
      return provider.location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${provider.location}-aiplatform.googleapis.com`;
    case 'anthropic':
      return 'https://api.anthropic.com/v1';
    case 'gemini':
      return 'https://generativelanguage.googleapis.com/v1beta';
    case 'openai':
    case 'azure':
      return undefined;
  }
}

/** What a bedrock provider's `region` and a vertex provider's `project` and `location` look like (a project may be domain-scoped, `example.com:proj`). */
export const AWS_REGION = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/;
export const GOOGLE_CLOUD_PROJECT = /^[a-z0-9][a-z0-9.:-]{0,99}$/;
export const GOOGLE_CLOUD_LOCATION = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Microsoft Entra ID's public cloud, where `entra` tokens come from unless `authority_url` names another. */
export const ENTRA_AUTHORITY = 'https://login.microsoftonline.com';

/** Fields that belong to one kind of provider only; any other kind refuses them by name. */
const KIND_FIELDS = {
  api_version: 'azure',
  entra: 'azure',
  allow_data_sources: 'azure',
  region: 'bedrock',
  access_key_id: 'bedrock',
  secret_access_key: 'bedrock',
  session_token: 'bedrock',
  project: 'vertex',
  location: 'vertex',
  credentials_file: 'vertex',
  credentials: 'vertex',
} as const satisfies Record<string, ProviderKind>;

/**
 * Which of an `openai` provider's APIs serves the model natively: `completions` (legacy
 * completions relayed, the default), `chat` (legacy completions through its chat API) or
 * `responses` (`/v1/responses` relayed to the provider's own Responses API; legacy completions
 * through its chat API).
 */
export const UPSTREAM_APIS = ['completions', 'chat', 'responses'] as const;
export type UpstreamApi = (typeof UPSTREAM_APIS)[number];

/**
 * What a model reached through translation does with a Responses request's tools that no upstream
 * of its kind runs (web search, file search, code interpreter, …): `drop` leaves them out and names
 * their types in the `x-sluice-dropped-tools` header, `refuse` answers 400 naming them.
 */
export const HOSTED_TOOLS = ['drop', 'refuse'] as const;
export type HostedTools = (typeof HOSTED_TOOLS)[number];

/**
 * Defaults of a provider's limits, which docs/configuration.md states and explains (keep the two together).
 * A stalled upstream is given up on in about a minute or two, well before the official SDKs' own
 * 10-minute timeout, so the caller gets a 504 rather than a hang.
 */
export const PROVIDER_DEFAULTS = {
  connect_timeout_ms: 10_000,
  /** A stream's headers come once the upstream accepts it; a whole answer's only with its end. */
  response_timeout_ms: 120_000,
  /** Tokens come many times a second: a minute of silence is a stall, or a very long prefill. */
  idle_timeout_ms: 60_000,
  /** Below the upstream's own idle timeout (uvicorn, and so vLLM, closes after 5 s), so that Sluice, not the upstream, closes it. */
  keep_alive_timeout_ms: 4_000,
  max_response_bytes: 32 * 1024 * 1024,
} as const;

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/;
/** A name a model could be given here (1-200 of the characters ids are made of). */
export function isModelName(name: string): boolean {
  return idPattern.test(name);
}
const ID_RULE = 'must be 1-200 letters, digits or ._:/@+- and start with a letter or digit';
/** A name pattern of `model_aliases`: a model name's characters, with `*` (any run of characters) and `?` (one). */
const aliasPattern = /^[A-Za-z0-9._:/@+*?-]{1,200}$/;
/** A `model_aliases` key holding `*` or `?` is a pattern; any other is an exact name, an alias like a model's `aliases`. */
export const isNamePattern = (name: string): boolean => name.includes('*') || name.includes('?');
const nonNegativeInt = z.number().int().nonnegative();

/** Upstream failures a routing policy can retry on: an HTTP status, or a connection that failed or timed out. */
export const RETRY_CONDITIONS = ['connect_error', 'timeout'] as const satisfies readonly Exclude<UpstreamFailureCondition, number>[];

export const ROUTING_STRATEGIES = ['weighted', 'least_busy', 'latency'] as const;
export type RoutingStrategy = (typeof ROUTING_STRATEGIES)[number];

/** Defaults of the `routing:` section, which docs/routing.md states and explains (keep the two together). */
export const ROUTING_DEFAULTS = {
  strategy: 'latency' as RoutingStrategy,
  retries: 2,
  backoff_ms: { initial: 200, max: 5000 },
  retry_on: [429, 500, 502, 503, 504, 529, 'connect_error', 'timeout'] as UpstreamFailureCondition[],
  first_token_timeout_ms: 20_000,
  /** Bounds every attempt of a request together, until a whole answer is complete or a stream's first content. */
  deadline_ms: 300_000,
  /** The longest an upstream's `Retry-After` cools a deployment. */
  retry_after_max_ms: 60_000,
  circuit: { failures: 5, window_ms: 30_000, cooldown_ms: 30_000 },
};

/** A `routing:` block: at the top level, on a provider or on a model; every field optional (model beats provider beats top level). */
export const routingSchema = z.strictObject({
  strategy: z.enum(ROUTING_STRATEGIES).optional(),
  retries: z.number().int().min(0).max(20).optional(),
  backoff_ms: z.strictObject({ initial: nonNegativeInt.optional(), max: nonNegativeInt.optional() }).optional(),
  retry_on: z.array(z.union([z.number().int().min(400).max(599), z.enum(RETRY_CONDITIONS)], { error: "must be an HTTP status (400-599), 'connect_error' or 'timeout'" })).optional(),
  first_token_timeout_ms: z.number().int().positive().optional(),
  deadline_ms: z.number().int().positive().optional(),
  retry_after_max_ms: nonNegativeInt.optional(),
  circuit: z
    .strictObject({ failures: z.number().int().positive().optional(), window_ms: z.number().int().positive().optional(), cooldown_ms: z.number().int().positive().optional() })
    .optional(),
});
export type RoutingBlock = z.output<typeof routingSchema>;

/** A routing policy with every field settled. */
export interface RoutingPolicy {
  readonly strategy: RoutingStrategy;
  readonly retries: number;
  readonly backoffMs: { readonly initial: number; readonly max: number };
  readonly retryOn: ReadonlySet<UpstreamFailureCondition>;
  readonly firstTokenTimeoutMs: number;
  readonly deadlineMs: number;
  readonly retryAfterMaxMs: number;
  readonly circuit: { readonly failures: number; readonly windowMs: number; readonly cooldownMs: number };
}

/** Settles a policy from blocks, most specific first. */
export function resolveRouting(...blocks: readonly (RoutingBlock | undefined)[]): RoutingPolicy {
  const pick = <T>(read: (block: RoutingBlock) => T | undefined, fallback: T): T => {
    for (const block of blocks) {
      const value = block === undefined ? undefined : read(block);
      if (value !== undefined) return value;
    }
    return fallback;
  };
  const d = ROUTING_DEFAULTS;
  return {
    strategy: pick((b) => b.strategy, d.strategy),
    retries: pick((b) => b.retries, d.retries),
    backoffMs: { initial: pick((b) => b.backoff_ms?.initial, d.backoff_ms.initial), max: pick((b) => b.backoff_ms?.max, d.backoff_ms.max) },
    retryOn: new Set(pick((b) => b.retry_on, d.retry_on)),
    firstTokenTimeoutMs: pick((b) => b.first_token_timeout_ms, d.first_token_timeout_ms),
    deadlineMs: pick((b) => b.deadline_ms, d.deadline_ms),
    retryAfterMaxMs: pick((b) => b.retry_after_max_ms, d.retry_after_max_ms),
    circuit: {
      failures: pick((b) => b.circuit?.failures, d.circuit.failures),
      windowMs: pick((b) => b.circuit?.window_ms, d.circuit.window_ms),
      cooldownMs: pick((b) => b.circuit?.cooldown_ms, d.circuit.cooldown_ms),
    },
  };
}

const deploymentSchema = z.strictObject({
  provider: z.string(),
  upstream_model: z.string().min(1).optional(),
  /** As a model's `upstream_api`, for this deployment (an `openai` provider's). */
  upstream_api: z.enum(UPSTREAM_APIS).optional(),
  /** Share of traffic among the deployments of one priority, for the `weighted` strategy (and P2C's draw). */
  weight: z.number().positive().default(1),
  /** 0 is tried first; a higher level only once every deployment of the levels before it is out. */
  priority: nonNegativeInt.default(0),
});
export type DeploymentConfig = z.output<typeof deploymentSchema>;

/** Defaults and bounds of a provider's `discover:` block, which docs/discovery.md states (keep the two together). */
export const DISCOVER_DEFAULTS = {
  /** Model lists change when an operator deploys something: minutes are quick enough, and cheap for the upstream. */
  interval_ms: 300_000,
  /** Below this a listing could still be running when the next is due. */
  min_interval_ms: 1_000,
  /** Most models taken from one provider's list: far above a real deployment, low enough that lists stay cheap to serve. */
  max_models: 10_000,
  endpoints: [...GENERATION_ENDPOINTS],
};

/** `*` any run of characters, `?` one; matched against the upstream's model name. */
const globList = z.array(z.string().min(1, 'a pattern cannot be empty')).min(1);

const discoverObject = z.strictObject({
  interval_ms: z.number().int().min(DISCOVER_DEFAULTS.min_interval_ms).default(DISCOVER_DEFAULTS.interval_ms),
  /** Only upstream models matching one of these; default all. */
  include: globList.optional(),
  /** Upstream models matching any of these are left out (embeddings, speech, images), after `include`. */
  exclude: globList.optional(),
  /** Prepended to the upstream's name to make the public id (two providers listing the same name). */
  id_prefix: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,99}$/, 'must be 1-100 letters, digits or ._:/@+- and start with a letter or digit').optional(),
  /** Most models taken from the list (after include/exclude); later ones are left out, with a warning. */
  max_models: z.number().int().min(1).default(DISCOVER_DEFAULTS.max_models),
  /** The operations each discovered model serves. */
  endpoints: z.array(z.enum(ENDPOINTS)).min(1).default(DISCOVER_DEFAULTS.endpoints),
  /** As a model's `upstream_api` (an `openai` provider's only). */
  upstream_api: z.enum(UPSTREAM_APIS).optional(),
});
export type DiscoverConfig = z.output<typeof discoverObject>;

/** `discover: true` is every default; `false` (or none) is off. */
const discoverSchema = z.preprocess((value) => (value === true ? {} : value === false || value === null ? undefined : value), discoverObject.optional());

export const providerSchema = z.strictObject({
  id: z.string().regex(idPattern, 'must be 1-200 letters, digits or ._:/@+- and start with a letter or digit'),
  kind: z.enum(PROVIDER_KINDS),
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  /** Empty (say `${KEY:-}` with KEY unset) means no credential. */
  api_key: z.string().optional().transform((value) => (value === '' ? undefined : value)),
  /** Extra headers sent upstream with every request (e.g. an organisation id). */
  headers: z.record(z.string(), z.string()).optional(),
  /** Upstream time limits, in milliseconds. */
  connect_timeout_ms: z.number().int().positive().default(PROVIDER_DEFAULTS.connect_timeout_ms),
  /** From sending the request to the response headers. */
  response_timeout_ms: z.number().int().positive().default(PROVIDER_DEFAULTS.response_timeout_ms),
  /** The longest silence allowed while reading a body or stream. */
  idle_timeout_ms: z.number().int().positive().default(PROVIDER_DEFAULTS.idle_timeout_ms),
  /** How long an idle connection is kept for the next request. */
  keep_alive_timeout_ms: z.number().int().positive().default(PROVIDER_DEFAULTS.keep_alive_timeout_ms),
  /**
   * The largest whole (non-streamed) answer taken from this upstream, which is held in memory to be
   * read; streams are passed on as they come and not capped.
   */
  max_response_bytes: z.number().int().positive().default(PROVIDER_DEFAULTS.max_response_bytes),
  /**
   * Most connections open to this upstream at once. Unset: no limit, since each HTTP/1.1 stream
   * holds a connection for its whole life and a cap would queue streams behind it.
   */
  max_connections: z.number().int().positive().optional(),
  /**
   * The most inputs one embedding call to this upstream may carry (TEI's `max_client_batch_size`,
   * 32 by default there); a request with more is split into calls of this many. Unset: the
   * upstream API's own limit (OpenAI's 2,048, Gemini's 100), which this cannot raise.
   */
  max_embedding_inputs: z.number().int().positive().max(2048).optional(),
  /** An optional active health check: a one-token completion of `model` (a catalogue id) every `interval_ms`; never billed to a key. */
  probe: z.strictObject({ interval_ms: z.number().int().min(1000), model: z.string().min(1) }).optional(),
  /** The `anthropic-version` header sent to an `anthropic` provider. */
  anthropic_version: z.string().min(1).default('2023-06-01'),
  /** azure: the data-plane API version (`2024-10-21`); unset, the v1 API (`/openai/v1/…`) is used. */
  api_version: z.string().regex(/^\d{4}-\d{2}-\d{2}(?:-preview)?$/, 'must be an Azure OpenAI API version such as 2024-10-21 or 2025-04-01-preview').optional(),
  /** azure: Microsoft Entra ID client credentials (the client-credentials grant), instead of api_key. */
  entra: z
    .strictObject({
      tenant_id: z.string().regex(/^[A-Za-z0-9.-]{1,100}$/, 'must be a tenant id or domain'),
      client_id: z.string().min(1),
      client_secret: z.string().min(1),
      /** Where tokens come from: the public cloud's by default; a sovereign or private cloud names its own. */
      authority_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).default(ENTRA_AUTHORITY),
    })
    .optional(),
  /**
   * azure: let callers' `data_sources` (On Your Data) through. Off by default: the resource would
   * query Search indexes, Cosmos DB or blob storage with its own managed identity for any key holder.
   */
  allow_data_sources: z.boolean().optional(),
  /** bedrock: the AWS region (`us-east-1`). */
  region: z.string().regex(AWS_REGION, 'must be an AWS region such as us-east-1').optional(),
  /** bedrock: static credentials; unset (say `${AWS_ACCESS_KEY_ID:-}` with it unset), the environment and then AWS_PROFILE's shared credentials are read. */
  access_key_id: z.string().optional().transform((value) => (value === '' ? undefined : value)),
  secret_access_key: z.string().optional().transform((value) => (value === '' ? undefined : value)),
  session_token: z.string().optional().transform((value) => (value === '' ? undefined : value)),
  /** vertex: the Google Cloud project and location (`europe-west4`, or `global`). */
  project: z.string().regex(GOOGLE_CLOUD_PROJECT, 'must be a Google Cloud project id').optional(),
  location: z.string().regex(GOOGLE_CLOUD_LOCATION, 'must be a Google Cloud location such as europe-west4 or global').optional(),
  /** vertex: a service-account key file (configuration file only); unset, GOOGLE_APPLICATION_CREDENTIALS. */
  credentials_file: z.string().min(1).optional(),
  /** vertex: a service-account key's JSON itself (what the console takes, sealed like api_key). */
  credentials: z.string().optional().transform((value) => (value === '' ? undefined : value)),
  /** What becomes of a Responses request's hosted tools on this provider's translated models; a model's own `hosted_tools` beats it. */
  hosted_tools: z.enum(HOSTED_TOOLS).optional(),
  /** Routing for the deployments on this provider; a model's own block beats it. */
  routing: routingSchema.optional(),
  /** Its model list, read from the upstream and kept current in the catalogue (see src/discovery). */
  discover: discoverSchema,
}).superRefine((provider, ctx) => {
  if (provider.discover?.upstream_api !== undefined && provider.kind !== 'openai') {
    ctx.addIssue({ code: 'custom', path: ['discover', 'upstream_api'], message: `applies to 'openai' providers only ('${provider.kind}' is always reached through its chat API)` });
  }
  for (const [field, kind] of Object.entries(KIND_FIELDS)) {
    if (provider[field as keyof typeof KIND_FIELDS] !== undefined && provider.kind !== kind) {
      ctx.addIssue({ code: 'custom', path: [field], message: `applies to '${kind}' providers only` });
    }
  }
  const require = (field: string, message: string): void => ctx.addIssue({ code: 'custom', path: [field], message });
  switch (provider.kind) {
    case 'azure':
      if (provider.api_key !== undefined && provider.entra !== undefined) require('entra', 'give api_key or entra, not both');
      if (provider.api_key === undefined && provider.entra === undefined) require('api_key', "is required for kind 'azure' (or Entra ID client credentials under 'entra')");
      break;
    case 'bedrock':
      if (provider.region === undefined) require('region', "is required for kind 'bedrock'");
      if ((provider.access_key_id === undefined) !== (provider.secret_access_key === undefined)) require(provider.access_key_id === undefined ? 'access_key_id' : 'secret_access_key', 'access_key_id and secret_access_key go together');
      if (provider.session_token !== undefined && provider.access_key_id === undefined) require('session_token', 'needs access_key_id and secret_access_key beside it');
      if (provider.api_key !== undefined) require('api_key', "does not apply to kind 'bedrock' (requests are signed with AWS credentials)");
      break;
    case 'vertex':
      if (provider.project === undefined) require('project', "is required for kind 'vertex'");
      if (provider.location === undefined) require('location', "is required for kind 'vertex'");
      if (provider.credentials !== undefined && provider.credentials_file !== undefined) require('credentials', 'give credentials or credentials_file, not both');
      if (provider.api_key !== undefined) require('api_key', "does not apply to kind 'vertex' (requests carry a service account's token)");
      break;
    default:
      break;
  }
});

const price = z.number().nonnegative();

/** A model's prices, each in the unit it is sold in; also the fields of a price list's entries (pricing/price-list.ts). */
export const PRICING_FIELDS = {
  /** USD per million input tokens. */
  input_per_mtok: price.optional(),
  /** USD per million output tokens. */
  output_per_mtok: price.optional(),
  /** Input read from the upstream's prompt cache; default: the input price. */
  cached_input_per_mtok: price.optional(),
  /** Input written to the upstream's prompt cache; default: the input price. */
  cache_write_per_mtok: price.optional(),
  /** USD per image made (images: `n` of them). */
  per_image: price.optional(),
  /** USD per minute of input audio (transcriptions, translations). */
  per_audio_minute: price.optional(),
  /** USD per million input characters (speech). */
  per_mchar: price.optional(),
  /** USD per call (rerank, moderations, where a vendor sells them so). */
  per_request: price.optional(),
} as const;

export type PriceUnit = keyof typeof PRICING_FIELDS;
export const PRICE_UNITS = Object.keys(PRICING_FIELDS) as PriceUnit[];

/**
 * Only the units a model is sold in need be given, but at least one: "unpriced" is no `pricing` at
 * all, never an empty one. A cache price is a share of input, so it needs the input price.
 */
export function checkPricing(pricing: Partial<Record<PriceUnit, number | undefined>>, ctx: z.core.$RefinementCtx): void {
  if (PRICE_UNITS.every((unit) => pricing[unit] === undefined)) {
    ctx.addIssue({ code: 'custom', message: `gives no price: state at least one of ${PRICE_UNITS.join(', ')}` });
  }
  for (const unit of ['cached_input_per_mtok', 'cache_write_per_mtok'] as const) {
    if (pricing[unit] !== undefined && pricing.input_per_mtok === undefined) ctx.addIssue({ code: 'custom', path: [unit], message: 'needs input_per_mtok beside it' });
  }
}

export const pricingSchema = z.strictObject(PRICING_FIELDS).superRefine((pricing, ctx) => checkPricing(pricing, ctx));
export type PricingConfig = z.output<typeof pricingSchema>;

export const modelSchema = z.strictObject({
  id: z.string().regex(idPattern, ID_RULE),
  /** Other names callers may ask for this model by (exact names; patterns go in the top-level `model_aliases`). */
  aliases: z.array(z.string().regex(idPattern, ID_RULE)).optional(),
  /** One deployment: the short form of `deployments: [{ provider, upstream_model, upstream_api }]`. */
  provider: z.string().optional(),
  upstream_model: z.string().min(1).optional(),
  owned_by: z.string().min(1).optional(),
  created: nonNegativeInt.default(0),
  display_name: z.string().min(1).optional(),
  /** The model's version string, shown to Gemini-dialect callers. */
  version: z.string().min(1).optional(),
  description: z.string().optional(),
  context_window: z.number().int().positive().optional(),
  max_output_tokens: z.number().int().positive().optional(),
  endpoints: z.array(z.enum(ENDPOINTS)).min(1).default(() => [...GENERATION_ENDPOINTS]),
  /** For `openai` providers: `chat` serves legacy completions through the upstream's chat API; `responses` relays /v1/responses. */
  upstream_api: z.enum(UPSTREAM_APIS).optional(),
  /** For a model reached through translation: what becomes of a Responses request's hosted tools (see HOSTED_TOOLS); default: the provider's, else `drop`. */
  hosted_tools: z.enum(HOSTED_TOOLS).optional(),
  /** The old spelling: `true` is `hosted_tools: drop` (now the default), `false` is `refuse`. */
  drop_hosted_tools: z.boolean().optional(),
  pricing: pricingSchema.optional(),
  /** Where the model is served: several upstreams, weighted and in priority levels (instead of `provider:`). */
  deployments: z.array(deploymentSchema).min(1).optional(),
  /** Other public models, in order, tried when every deployment of this one failed. */
  fallbacks: z.array(z.string().min(1)).optional(),
  routing: routingSchema.optional(),
}).superRefine((model, ctx) => {
  if ((model.provider === undefined) === (model.deployments === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['provider'], message: "give either 'provider' (one deployment) or 'deployments', not both" });
  }
  if (model.deployments !== undefined) {
    for (const field of ['upstream_model', 'upstream_api'] as const) {
      if (model[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: "belongs on each of 'deployments' when they are given" });
    }
  }
  if (model.fallbacks?.includes(model.id)) ctx.addIssue({ code: 'custom', path: ['fallbacks'], message: 'a model cannot fall back to itself' });
  if (model.aliases?.includes(model.id)) ctx.addIssue({ code: 'custom', path: ['aliases'], message: 'a model cannot be its own alias' });
  if (model.hosted_tools !== undefined && model.drop_hosted_tools !== undefined && model.hosted_tools !== hostedToolsOf(model.drop_hosted_tools)) {
    ctx.addIssue({ code: 'custom', path: ['drop_hosted_tools'], message: `says the opposite of hosted_tools: ${model.hosted_tools} (it is that key's old spelling: keep one)` });
  }
});

/** `drop_hosted_tools`, the old spelling, as `hosted_tools`. */
export function hostedToolsOf(dropHostedTools: boolean): HostedTools {
  return dropHostedTools ? 'drop' : 'refuse';
}

/** The deployments of a model entry, whichever form it was written in. */
export function deploymentsOf(model: ModelConfig): DeploymentConfig[] {
  if (model.deployments !== undefined) return model.deployments;
  return [{ provider: model.provider!, upstream_model: model.upstream_model, upstream_api: model.upstream_api, weight: 1, priority: 0 }];
}

/** Defaults of the `responses:` section, which docs/configuration.md states. */
export const RESPONSES_DEFAULTS = { retention_days: 30 } as const;

const responsesSchema = z.strictObject({
  /** How long a stored response (and its items) is kept for `previous_response_id`, `item_reference` and GET. */
  retention_days: z.number().positive().default(RESPONSES_DEFAULTS.retention_days),
});

/** Defaults of the `limits:` section, which docs/limits.md states. */
export const LIMITS_DEFAULTS = { lease_ms: 30_000, default_max_output_tokens: 4_096 } as const;

const limitsSectionSchema = z.strictObject({
  /** How long a request's in-flight slot outlives a crashed process. */
  lease_ms: z.number().int().min(100).default(LIMITS_DEFAULTS.lease_ms),
  /** Tokens reserved for an answer when neither the request nor the model caps it. */
  default_max_output_tokens: z.number().int().positive().default(LIMITS_DEFAULTS.default_max_output_tokens),
});

/** Defaults of the `mcp:` section (docs/mcp.md). */
export const MCP_DEFAULTS = { max_result_bytes: 4 * 1024 * 1024, call_timeout_ms: 120_000, page_size: 100 } as const;

const mcpSectionSchema = z.strictObject({
  /** The largest answer an upstream MCP server may give one call (a tool result, a resource, a prompt); a larger one is refused. */
  max_result_bytes: z.number().int().min(1024).default(MCP_DEFAULTS.max_result_bytes),
  /** How long a call may wait on an upstream MCP server before the caller gets an error and the upstream a cancellation. */
  call_timeout_ms: z.number().int().min(100).default(MCP_DEFAULTS.call_timeout_ms),
  /** How many tools (resources, prompts) one page of an aggregated list holds; `cursor` gives the next. */
  page_size: z.number().int().min(1).max(10_000).default(MCP_DEFAULTS.page_size),
});

export const MCP_TRANSPORTS = ['streamable_http', 'sse'] as const;
export type McpTransport = (typeof MCP_TRANSPORTS)[number];

const mcpServerFields = {
  id: z.string().regex(MCP_SERVER_ID, MCP_SERVER_ID_RULE),
  /** USD charged per tool call to the key's and account's budgets; absent: tool calls are free and budgets do not count them. */
  price_per_call: z.number().nonnegative().finite().optional(),
};

/** An upstream MCP server reached over HTTP: Streamable HTTP (default) or the older HTTP+SSE transport. */
export const mcpHttpServerSchema = z.strictObject({
  ...mcpServerFields,
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  transport: z.enum(MCP_TRANSPORTS).default('streamable_http'),
  /** Sent on every request to the server (its token): secrets, redacted like a provider's api_key. */
  headers: z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name'), z.string()).default({}),
});

/** A stdio MCP server: a process on the gateway's host, started and kept running by Sluice. Only the configuration file declares one. */
export const mcpStdioServerSchema = z.strictObject({
  ...mcpServerFields,
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to a minimal environment (PATH, HOME, …), never the gateway's whole one: values are secrets, redacted. */
  env: z.record(z.string(), z.string()).default({}),
  /** The working directory; default the gateway's. */
  cwd: z.string().min(1).optional(),
});

const mcpServerSchema = z.union([mcpHttpServerSchema, mcpStdioServerSchema], { error: "must have either 'url' (an HTTP server) or 'command' (a stdio server), with only that kind's fields" });

export type McpHttpServerConfig = z.output<typeof mcpHttpServerSchema>;
export type McpStdioServerConfig = z.output<typeof mcpStdioServerSchema>;
/** One upstream MCP server; `url` tells an HTTP one from a stdio one. `fromConsole` is set on servers registered in the console. */
export type McpServerConfig = (McpHttpServerConfig | McpStdioServerConfig) & { readonly fromConsole?: true };

export function isStdioServer(server: McpServerConfig): server is McpStdioServerConfig & { readonly fromConsole?: true } {
  return 'command' in server;
}

/** The `mcp:` section as the gateway uses it. */
export interface McpSettings {
  readonly maxResultBytes: number;
  readonly callTimeoutMs: number;
  readonly pageSize: number;
}

/** OpenAI's own limit on an uploaded file (25 MiB): the default `max_upload_bytes`. */
export const DEFAULT_MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

const configSchema = z.strictObject({
  providers: z.array(providerSchema).default([]),
  models: z.array(modelSchema).default([]),
  responses: responsesSchema.default({ retention_days: RESPONSES_DEFAULTS.retention_days }),
  routing: routingSchema.optional(),
  limits: limitsSectionSchema.default(LIMITS_DEFAULTS),
  /** The largest multipart request body (file uploads: image edits, audio) the gateway reads; held in memory up to this. */
  max_upload_bytes: z.number().int().positive().default(DEFAULT_MAX_UPLOAD_BYTES),
  /**
   * Names and name patterns (`claude-*`) callers may ask for, each mapped to a model id; in the
   * file's order, the first pattern that matches wins, after every exact id and alias.
   */
  model_aliases: z.record(z.string(), z.string().regex(idPattern, `the target is a model id, which ${ID_RULE}`)).optional(),
  /** Upstream MCP servers, aggregated at `/mcp` (docs/mcp.md). */
  mcp_servers: z.array(mcpServerSchema).default([]),
  mcp: mcpSectionSchema.default(MCP_DEFAULTS),
});

/** One `model_aliases` entry: an exact name or a pattern, and the model id it resolves to. */
export interface ModelAlias {
  readonly name: string;
  readonly target: string;
}

/**
 * A provider entry with its base URL settled (explicit, or the kind's default). `ownCredentialsOnly`
 * is set on providers registered in the console: their adapters use the credentials the entry holds
 * and never the gateway host's (its environment, AWS profiles, GOOGLE_APPLICATION_CREDENTIALS).
 */
export type ProviderConfig = z.output<typeof providerSchema> & { base_url: string; readonly ownCredentialsOnly?: true };
export type ModelConfig = z.output<typeof modelSchema>;
export interface GatewayConfig {
  readonly source: string;
  readonly providers: readonly ProviderConfig[];
  readonly models: readonly ModelConfig[];
  /** Stored Responses-API conversations. */
  readonly responses: { readonly retentionDays: number };
  /** The top-level `routing:` block, beneath providers' and models' own. */
  readonly routing: RoutingBlock | undefined;
  /** How per-key and per-account limits are counted. */
  readonly limits: { readonly leaseMs: number; readonly defaultMaxOutputTokens: number };
  /** The largest multipart request body read (`max_upload_bytes`). */
  readonly maxUploadBytes: number;
  /** `model_aliases`, in the file's order. */
  readonly modelAliases: readonly ModelAlias[];
  /** `mcp_servers`, in the file's order. */
  readonly mcpServers: readonly McpServerConfig[];
  readonly mcp: McpSettings;
}

const mcpSettingsOf = (section: { max_result_bytes: number; call_timeout_ms: number; page_size: number }): McpSettings => ({ maxResultBytes: section.max_result_bytes, callTimeoutMs: section.call_timeout_ms, pageSize: section.page_size });

const limitsOf = (section: { lease_ms: number; default_max_output_tokens: number }) => ({ leaseMs: section.lease_ms, defaultMaxOutputTokens: section.default_max_output_tokens });

export class ConfigError extends UserError {
  override name = 'ConfigError';
}

/** An empty configuration, for a gateway started without a file. */
export function emptyConfig(source = '(no configuration file)'): GatewayConfig {
  return { source, providers: [], models: [], responses: { retentionDays: RESPONSES_DEFAULTS.retention_days }, routing: undefined, limits: limitsOf(LIMITS_DEFAULTS), maxUploadBytes: DEFAULT_MAX_UPLOAD_BYTES, modelAliases: [], mcpServers: [], mcp: mcpSettingsOf(MCP_DEFAULTS) };
}

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseConfig(readConfigText(path, false)!, path, env);
}

/** The file's text; undefined when it is missing and `optional`; else a ConfigError naming the file. */
export function readConfigText(path: string, optional: boolean): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && optional) return undefined;
    throw new ConfigError(`${path}: cannot read the configuration file (${code ?? String(error)})`);
  }
}

export function parseConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    throw new ConfigError(`${source}: not valid YAML: ${document.errors[0]!.message}`);
  }
  const raw: unknown = document.toJS() ?? {};
  const interpolated = interpolateEnv(raw, env, source, [], raw);
  const parsed = configSchema.safeParse(interpolated, { reportInput: true });
  if (!parsed.success) {
    throw new ConfigError(`${source}: ${describeIssue(interpolated, parsed.error.issues[0]!)}`);
  }
  const config = parsed.data;
  checkReferences(config, source);
  const providers = config.providers.map((provider) => ({
    ...provider,
    base_url: (provider.base_url ?? defaultBaseUrl(provider))!,
  }));
  return { source, providers, models: config.models, responses: { retentionDays: config.responses.retention_days }, routing: config.routing, limits: limitsOf(config.limits), maxUploadBytes: config.max_upload_bytes, modelAliases: Object.entries(config.model_aliases ?? {}).map(([name, target]) => ({ name, target })), mcpServers: config.mcp_servers, mcp: mcpSettingsOf(config.mcp) };
}

function checkReferences(config: z.output<typeof configSchema>, source: string): void {
  const providerKinds = new Map<string, ProviderKind>();
  config.providers.forEach((provider, index) => {
    const entry = `providers[${index}] (id: ${provider.id})`;
    if (providerKinds.has(provider.id)) {
      throw new ConfigError(`${source}: ${entry}: field 'id': duplicate provider id '${provider.id}'`);
    }
    if (provider.base_url === undefined && defaultBaseUrl(provider) === undefined) {
      throw new ConfigError(`${source}: ${entry}: field 'base_url': is required for kind '${provider.kind}'`);
    }
    providerKinds.set(provider.id, provider.kind);
  });
  const modelIds = new Set<string>();
  config.models.forEach((model, index) => {
    const entry = `models[${index}] (id: ${model.id})`;
    if (modelIds.has(model.id)) {
      throw new ConfigError(`${source}: ${entry}: field 'id': duplicate model id '${model.id}'`);
    }
    modelIds.add(model.id);
    const problem = deploymentProblem(model, (id) => providerKinds.get(id));
    if (problem !== undefined) throw new ConfigError(`${source}: ${entry}: field '${problem.field}': ${problem.message}`);
  });
  config.models.forEach((model, index) => {
    const missing = model.fallbacks?.find((id) => !modelIds.has(id));
    if (missing !== undefined) throw new ConfigError(`${source}: models[${index}] (id: ${model.id}): field 'fallbacks': no model has the id '${missing}'`);
  });
  checkAliases(config, modelIds, source);
  const mcpIds = new Set<string>();
  config.mcp_servers.forEach((server, index) => {
    // Ids are compared without case: `/mcp/GitHub` and `github__…` must not name two servers.
    const folded = server.id.toLowerCase();
    if (mcpIds.has(folded)) throw new ConfigError(`${source}: mcp_servers[${index}] (id: ${server.id}): field 'id': duplicate MCP server id '${server.id}'`);
    mcpIds.add(folded);
  });
}

/**
 * Every exact alias names one model and is no model's id; every `model_aliases` target is a model
 * of this file, or (when a provider discovers) may be a discovered one, checked as the catalogue is built.
 */
function checkAliases(config: z.output<typeof configSchema>, modelIds: ReadonlySet<string>, source: string): void {
  const aliasOf = new Map<string, string>();
  const claim = (alias: string, target: string, entry: string): void => {
    if (modelIds.has(alias)) throw new ConfigError(`${source}: ${entry}: '${alias}' is the id of a model; an alias must be a name of its own`);
    const earlier = aliasOf.get(alias);
    if (earlier !== undefined) throw new ConfigError(`${source}: ${entry}: '${alias}' is already an alias of '${earlier}'`);
    aliasOf.set(alias, target);
  };
  config.models.forEach((model, index) => {
    for (const alias of model.aliases ?? []) claim(alias, model.id, `models[${index}] (id: ${model.id}): field 'aliases'`);
  });
  const discovers = config.providers.some((provider) => provider.discover !== undefined);
  for (const [name, target] of Object.entries(config.model_aliases ?? {})) {
    const entry = `model_aliases ('${name}': ${target})`;
    if (!aliasPattern.test(name)) {
      throw new ConfigError(`${source}: ${entry}: a name is a model name or a pattern of 1-200 letters, digits or ._:/@+- with '*' (any run of characters) or '?' (one character)`);
    }
    const targetAlias = aliasOf.get(target);
    if (targetAlias !== undefined) throw new ConfigError(`${source}: ${entry}: '${target}' is an alias of '${targetAlias}'; point at the model id '${targetAlias}'`);
    if (!modelIds.has(target) && !discovers) {
      throw new ConfigError(`${source}: ${entry}: no model has the id '${target}' (a target is a model of this file, or a discovered one when a provider discovers)`);
    }
    if (!isNamePattern(name)) claim(name, target, entry);
  }
}

/**
 * What is wrong with a model's deployments given the providers there are (shared with the console,
 * which validates by the same rules): an unknown provider, `upstream_api` on a provider that is not `openai`.
 */
export function deploymentProblem(model: ModelConfig, kindOf: (providerId: string) => ProviderKind | undefined): { field: string; message: string } | undefined {
  const listed = model.deployments !== undefined;
  for (const [index, deployment] of deploymentsOf(model).entries()) {
    const at = listed ? `deployments.${index}.` : '';
    const kind = kindOf(deployment.provider);
    if (kind === undefined) return { field: `${at}provider`, message: `no provider has the id '${deployment.provider}'` };
    if (deployment.upstream_api !== undefined && kind !== 'openai') {
      return { field: `${at}upstream_api`, message: `applies to 'openai' providers only ('${deployment.provider}' is '${kind}', which is always reached through its chat API)` };
    }
  }
  return undefined;
}

/** `${NAME}` reads the environment; `${NAME:-fallback}` gives a default. An unset name is an error. */
function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, source: string, path: PropertyKey[], root: unknown): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback?: string) => {
      // Own variables only: every object inherits `constructor`, `toString`, … and so would process.env.
      const found = Object.hasOwn(env, name) ? env[name] : undefined;
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      throw new ConfigError(
        `${source}: ${describePath(root, path)}: environment variable ${name} is not set (write \${${name}:-default} for a default)`,
      );
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolateEnv(item, env, source, [...path, index], root));
  if (value !== null && typeof value === 'object') {
    // Object.fromEntries defines own properties: assigning a `__proto__` key would set the prototype
    // instead, and the schema would then read the fields under it as the entry's own.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolateEnv(item, env, source, [...path, key], root)]));
  }
  return value;
}

/** "models[2] (id: llama-8b): field 'pricing.input_per_mtok': …", one line naming where in `root` the issue is. */
export function describeIssue(root: unknown, issue: z.core.$ZodIssue): string {
  return `${describePath(root, issue.path)}: ${issueMessage(issue)}`;
}

/** "models[2] (id: llama-8b): field 'pricing.input_per_mtok'" from a path into the document (an entry is named by its `id`, else its `model`). */
function describePath(root: unknown, path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'top level';
  const [section, index, ...rest] = path;
  if (typeof section === 'string' && typeof index === 'number') {
    const entry = (root as Record<string, unknown[] | undefined> | undefined)?.[section]?.[index] as Record<string, unknown> | undefined;
    const name = (['id', 'model'] as const).find((field) => typeof entry?.[field] === 'string');
    const id = name === undefined ? '' : ` (${name}: ${String(entry![name])})`;
    const field = rest.length > 0 ? `: field '${rest.map(String).join('.')}'` : '';
    return `${section}[${index}]${id}${field}`;
  }
  return `field '${path.map(String).join('.')}'`;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s) ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  if (issue.code === 'invalid_type' && issue.input === undefined) return `is required (${issue.expected})`;
  return issue.message;
}
