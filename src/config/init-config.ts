import { AWS_REGION, GOOGLE_CLOUD_LOCATION, GOOGLE_CLOUD_PROJECT, parseConfig, PROVIDER_KINDS, type ProviderKind } from './config-file.js';
import { inferenceProfilePrefixOf } from './cloud-model-ids.js';
import { UserError } from '../core/user-error.js';
import { distinctIds, providerIdCandidates } from './init-provider-id.js';

/** An environment variable the written file (or the provider's own lookup: AWS's environment and profile file) reads, for `sluice init`'s "Next:" lines. */
export interface InitVariable {
  readonly name: string;
  /** It may be left unset (a self-hosted server without a key; AWS credentials that come from a profile). */
  readonly optional: boolean;
  /** What it is, when the name does not say. */
  readonly note?: string;
}

/**
 * A provider named on `sluice init`'s command line: `openai=http://127.0.0.1:8000/v1`, `anthropic`,
 * `gemini`, `azure=https://RESOURCE.openai.azure.com`, `bedrock[=REGION]`, `vertex[=PROJECT[/LOCATION]]`.
 */
export interface InitProvider {
  readonly id: string;
  readonly kind: ProviderKind;
  /** undefined: the vendor's own API. */
  readonly baseUrl: string | undefined;
  /** bedrock: the region given; undefined reads AWS_REGION (default us-east-1). */
  readonly region?: string;
  /** vertex: the project and location given; undefined reads GOOGLE_CLOUD_PROJECT / GOOGLE_CLOUD_LOCATION (default global). */
  readonly project?: string;
  readonly location?: string;
  /** The environment variables the file reads the credentials (and the unset places) from, the credential's first. */
  readonly variables: readonly InitVariable[];
}

/** `openai` has no default base URL (it names any compatible server): OpenAI's own is written out. */
const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** The vendors' own variable names, which their SDKs read too. */
const VENDOR_KEY_VARIABLES: Partial<Record<ProviderKind, string>> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY', gemini: 'GEMINI_API_KEY', azure: 'AZURE_OPENAI_API_KEY' };

/** What the clouds' own SDKs read: the file names them too, so that a gateway runs where those run. */
const BEDROCK_VARIABLES: readonly InitVariable[] = [
  { name: 'AWS_ACCESS_KEY_ID', optional: true, note: 'with AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); or AWS_PROFILE naming a profile with keys in ~/.aws/credentials (instance, ECS and web-identity roles, SSO and assumed roles are not read)' },
  { name: 'AWS_SECRET_ACCESS_KEY', optional: true },
];
const VERTEX_VARIABLES: readonly InitVariable[] = [
  { name: 'GOOGLE_APPLICATION_CREDENTIALS', optional: false, note: "a service-account key file's path" },
  { name: 'GOOGLE_CLOUD_PROJECT', optional: false },
];


const USAGE =
  'name at least one provider: --provider openai=http://127.0.0.1:8000/v1, --provider openai (OpenAI itself), --provider anthropic, --provider gemini, --provider azure=https://RESOURCE.openai.azure.com, --provider bedrock[=REGION] or --provider vertex[=PROJECT[/LOCATION]]';

/** What follows `=` in a `--provider` value, by kind: a base URL, else (bedrock, vertex) where the cloud serves it. */
interface ParsedSpec {
  readonly spec: string;
  readonly kind: ProviderKind;
  readonly baseUrl: string | undefined;
  readonly url: URL | undefined;
  readonly region?: string;
  readonly project?: string;
  readonly location?: string;
}

function parseSpec(spec: string): ParsedSpec {
  const at = spec.indexOf('=');
  const kind = (at === -1 ? spec : spec.slice(0, at)).trim();
  const value = at === -1 ? undefined : spec.slice(at + 1).trim();
  if (!(PROVIDER_KINDS as readonly string[]).includes(kind)) throw new UserError(`--provider ${spec}: the kind must be one of ${PROVIDER_KINDS.join(', ')}, optionally followed by =BASE_URL (bedrock: =REGION; vertex: =PROJECT or =PROJECT/LOCATION)`);
  switch (kind) {
    case 'bedrock':
      if (value !== undefined && !AWS_REGION.test(value)) throw new UserError(`--provider ${spec}: '${value}' is not an AWS region such as us-east-1 (bedrock takes a region, not a URL)`);
      return { spec, kind, baseUrl: undefined, url: undefined, ...(value === undefined ? {} : { region: value }) };
    case 'vertex': {
      if (value === undefined) return { spec, kind, baseUrl: undefined, url: undefined };
      const [project, location, ...rest] = value.split('/');
      if (rest.length > 0 || !GOOGLE_CLOUD_PROJECT.test(project ?? '') || (location !== undefined && !GOOGLE_CLOUD_LOCATION.test(location))) {
        throw new UserError(`--provider ${spec}: write vertex=PROJECT or vertex=PROJECT/LOCATION (a Google Cloud project id such as my-project, a location such as europe-west4 or global)`);
      }
      return { spec, kind, baseUrl: undefined, url: undefined, project: project!, ...(location === undefined ? {} : { location }) };
    }
    case 'azure': {
      if (value === undefined) throw new UserError(`--provider ${spec}: give the resource's endpoint: --provider azure=https://RESOURCE.openai.azure.com`);
      const url = parseBaseUrl(spec, kind, value);
      // The portal shows `…/openai/…` URLs; a base_url with that path would be asked for /openai/openai/….
      if (/\/openai(?:\/v1)?\/*$/i.test(url.pathname)) {
        throw new UserError(`--provider ${spec}: give the resource's endpoint without /openai (Sluice adds Azure's paths itself): --provider azure=${url.origin}${url.pathname.replace(/\/openai(?:\/v1)?\/*$/i, '')}`);
      }
      return { spec, kind, baseUrl: value, url };
    }
    default:
      return { spec, kind: kind as ProviderKind, baseUrl: value, url: value === undefined ? undefined : parseBaseUrl(spec, kind, value) };
  }
}

/** The ids a cloud provider may take: its kind, then with where it runs. */
function idCandidates(parsed: ParsedSpec): string[] {
  if (parsed.kind === 'bedrock') return parsed.region === undefined ? ['bedrock'] : ['bedrock', `bedrock-${parsed.region}`];
  if (parsed.kind === 'vertex') return ['vertex', ...(parsed.location === undefined ? [] : [`vertex-${parsed.location}`]), ...(parsed.project === undefined ? [] : [`vertex-${parsed.project}${parsed.location === undefined ? '' : `-${parsed.location}`}`])];
  return providerIdCandidates(parsed.kind, parsed.url);
}

/** Reads the `--provider` values (see InitProvider) and gives each a distinct, readable id. */
export function parseInitProviders(specs: readonly string[]): InitProvider[] {
  if (specs.length === 0) throw new UserError(USAGE);
  const parsed = specs.map(parseSpec);
  const ids = distinctIds(parsed.map(idCandidates));
  return parsed.map(({ spec, kind, baseUrl, region, project, location }, index) => {
    // A second Azure resource has keys of its own: a variable named for its id, the first keeps the vendor's name.
    const ownKey = kind === 'azure' && parsed.slice(0, index).some((other) => other.kind === 'azure');
    const id = ids[index];
    if (id === undefined) {
      const same = parsed.filter((_, other) => other !== index && ids[other] === undefined).map((p) => p.spec);
      throw new UserError(`--provider ${spec}: names the same server as --provider ${same.join(', --provider ')}; give each server once`);
    }
    const where = { ...(region === undefined ? {} : { region }), ...(project === undefined ? {} : { project }), ...(location === undefined ? {} : { location }) };
    if (kind === 'bedrock') return { id, kind, baseUrl, ...where, variables: BEDROCK_VARIABLES };
    if (kind === 'vertex') return { id, kind, baseUrl, ...where, variables: project === undefined ? VERTEX_VARIABLES : VERTEX_VARIABLES.slice(0, 1) };
    const selfHosted = baseUrl !== undefined && kind === 'openai';
    const name = selfHosted || ownKey ? `${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY` : VENDOR_KEY_VARIABLES[kind]!;
    return { id, kind, baseUrl, variables: [{ name, optional: selfHosted }] };
  });
}

function parseBaseUrl(spec: string, kind: string, baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UserError(`--provider ${spec}: '${baseUrl}' is not an http:// or https:// URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UserError(`--provider ${spec}: '${baseUrl}' is not an http:// or https:// URL`);
  if (url.username !== '' || url.password !== '') throw new UserError(`--provider ${kind}=…: put no credential in the URL; the file reads it from an environment variable`);
  return url;
}

/** The discovery block written for each provider: OpenAI's own list also holds models that do not generate text. */
function discoverBlock(provider: InitProvider): string[] {
  if (provider.kind === 'openai' && provider.baseUrl === undefined) {
    return [
      '    discover:                      # OpenAI lists every model it has: keep the text models',
      "      include: ['gpt-*', 'o1*', 'o3*', 'o4*']",
      "      exclude: ['*audio*', '*realtime*', '*tts*', '*transcribe*', '*search*', '*image*', '*embedding*']",
      '      endpoints: [chat, completions]',
      '      upstream_api: chat           # its models answer legacy completions through the chat API',
    ];
  }
  if (provider.kind === 'bedrock' || provider.kind === 'vertex') {
    // Their catalogues hold hundreds of models, most of which an account has not enabled: listed on demand only.
    return [
      `    # discover: { include: ['${provider.kind === 'bedrock' ? '*anthropic.claude*' : 'gemini-*'}'] }   # the ${provider.kind === 'bedrock' ? 'foundation models and inference profiles' : 'publisher models'} it lists`,
    ];
  }
  return [
    `    discover: true                 # its ${provider.kind === 'azure' ? "deployments, read" : 'model list, read'} every 5 minutes; never overrides an entry below`,
    "    # discover: { interval_ms: 600000, include: ['llama*'], exclude: ['*embed*'], id_prefix: 'team/' }",
  ];
}

/** The credential and location lines of an entry, reading everything from the environment. */
function credentialLines(provider: InitProvider): string[] {
  switch (provider.kind) {
    case 'azure':
      return [
        `    api_key: \${${provider.variables[0]!.name}}   # sent as api-key; or, instead, Microsoft Entra ID client credentials:`,
        '    # entra: { tenant_id: ${AZURE_TENANT_ID}, client_id: ${AZURE_CLIENT_ID}, client_secret: ${AZURE_CLIENT_SECRET} }',
        '    # api_version: 2024-10-21        # unset: the v1 API (/openai/v1/...)',
      ];
    case 'bedrock':
      return [
        `    region: ${provider.region ?? '${AWS_REGION:-us-east-1}'}`,
        '    # Credentials: these when set, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,',
        "    # then AWS_PROFILE's keys in the shared credentials file (no instance, ECS or web-identity role, SSO or assumed role).",
        '    access_key_id: ${AWS_ACCESS_KEY_ID:-}',
        '    secret_access_key: ${AWS_SECRET_ACCESS_KEY:-}',
        '    session_token: ${AWS_SESSION_TOKEN:-}',
        '    # base_url: https://bedrock-runtime.REGION.amazonaws.com (from the region)',
      ];
    case 'vertex':
      return [
        `    project: ${provider.project ?? '${GOOGLE_CLOUD_PROJECT}'}`,
        `    location: ${provider.location ?? '${GOOGLE_CLOUD_LOCATION:-global}'}   # global, or a region such as europe-west4`,
        '    # credentials_file: /run/secrets/sa.json   # a service-account key; unset: GOOGLE_APPLICATION_CREDENTIALS',
        '    # base_url: from the location (https://aiplatform.googleapis.com for global)',
      ];
    default: {
      const key = provider.variables[0]!;
      return [key.optional ? `    api_key: \${${key.name}:-}   # optional: set it if the server wants a key` : `    api_key: \${${key.name}}`];
    }
  }
}

/** Sample models of a cloud provider, which a new account there most likely has: written as entries (Azure's is commented: its deployment's name is the operator's). */
function sampleModels(provider: InitProvider): string[] | undefined {
  switch (provider.kind) {
    case 'azure':
      return [
        '#  - id: gpt-4o',
        `#    provider: ${provider.id}`,
        '#    upstream_model: YOUR-DEPLOYMENT   # on Azure, the deployment\'s name',
        '#    endpoints: [chat, completions, responses, embeddings]',
      ];
    case 'bedrock': {
      // Newer Claude models are called through an inference profile of the region's geography (AWS_REGION's default: us-east-1).
      const geography = inferenceProfilePrefixOf(provider.region ?? 'us-east-1') ?? 'global';
      return [
        `  - id: ${provider.id}-claude-sonnet`,
        `    provider: ${provider.id}`,
        `    upstream_model: ${geography}.anthropic.claude-sonnet-4-5-20250929-v1:0   # an inference profile; enable the model under Model access first`,
      ];
    }
    case 'vertex':
      return [
        `  - id: ${provider.id}-gemini-pro`,
        `    provider: ${provider.id}`,
        '    upstream_model: gemini-2.5-pro',
        `  - id: ${provider.id}-claude-sonnet`,
        `    provider: ${provider.id}`,
        '    upstream_model: claude-sonnet-4-5@20250929   # enable it in Model Garden first',
      ];
    default:
      return undefined;
  }
}

/**
 * A commented `sluice.yaml` for the providers given. Credentials are read from environment
 * variables the file names (`${OPENAI_API_KEY}`): no secret is ever written into it.
 */
export function renderInitConfig(providers: readonly InitProvider[]): string {
  const lines = [
    '# Sluice configuration, written by `sluice init`. docs/configuration.md explains every field.',
    '# ${NAME} reads the environment variable NAME (start-up stops when it is unset);',
    '# ${NAME:-} may be unset. A running gateway reads this file again when it changes (or on SIGHUP).',
    '',
    'providers:',
  ];
  for (const provider of providers) {
    lines.push(`  - id: ${provider.id}`);
    lines.push(`    kind: ${provider.kind}`);
    if (provider.baseUrl !== undefined) lines.push(`    base_url: ${provider.baseUrl}`);
    else if (provider.kind === 'openai') lines.push(`    base_url: ${OPENAI_BASE_URL}`);
    else if (provider.kind !== 'bedrock' && provider.kind !== 'vertex') lines.push(`    # base_url: the vendor's own API`);
    lines.push(...credentialLines(provider));
    lines.push(...discoverBlock(provider));
    lines.push('    # probe: { interval_ms: 60000, model: MODEL-ID }   # an active health check for /status');
  }
  const samples = providers.flatMap((provider) => sampleModels(provider) ?? []);
  const entries = samples.filter((line) => !line.startsWith('#'));
  const first = providers[0]!;
  lines.push(
    '',
    '# Models written here are kept as written; discovered ones fill in the rest. Prices of well-known',
    "# hosted models come from Sluice's price list unless an entry gives its own `pricing`.",
    entries.length === 0 ? 'models: []' : 'models:',
    ...samples,
    '#  - id: my-model                  # the public id clients send',
    `#    provider: ${first.id}`,
    '#    upstream_model: NAME-UPSTREAM  # default: the id',
    '#    endpoints: [completions, chat]',
    '#    context_window: 131072',
    '#    pricing: { input_per_mtok: 0.2, output_per_mtok: 0.2 }   # USD per million tokens',
    '',
  );
  return lines.join('\n');
}

/** Throws if the file would not load (every variable it names taken as set): what init writes must start. */
export function checkInitConfig(text: string, providers: readonly InitProvider[]): void {
  const env = Object.fromEntries(providers.flatMap((p) => p.variables.map((variable) => [variable.name, 'set'] as const)));
  parseConfig(text, 'sluice init', env);
}
