import { parseConfig, PROVIDER_KINDS, type ProviderKind } from './config-file.js';
import { UserError } from '../core/user-error.js';
import { distinctIds, providerIdCandidates } from './init-provider-id.js';

/** A provider named on `sluice init`'s command line: `openai=http://127.0.0.1:8000/v1`, `anthropic`, `gemini`. */
export interface InitProvider {
  readonly id: string;
  readonly kind: ProviderKind;
  /** undefined: the vendor's own API. */
  readonly baseUrl: string | undefined;
  /** The environment variable the file reads the credential from. */
  readonly keyVariable: string;
  /** Self-hosted servers often take no key: the variable may be unset. */
  readonly keyOptional: boolean;
}

/** `openai` has no default base URL (it names any compatible server): OpenAI's own is written out. */
const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** The vendors' own variable names, which their SDKs read too. */
const VENDOR_KEY_VARIABLES: Record<ProviderKind, string> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY', gemini: 'GEMINI_API_KEY', azure: 'AZURE_OPENAI_API_KEY', bedrock: 'AWS_ACCESS_KEY_ID', vertex: 'GOOGLE_APPLICATION_CREDENTIALS' };

/** Reads the `--provider` values, each `KIND` or `KIND=BASE_URL`, and gives each a distinct, readable id. */
export function parseInitProviders(specs: readonly string[]): InitProvider[] {
  if (specs.length === 0) throw new UserError('name at least one provider: --provider openai=http://127.0.0.1:8000/v1, --provider openai (OpenAI itself), --provider anthropic or --provider gemini');
  const parsed = specs.map((spec) => {
    const at = spec.indexOf('=');
    const kind = (at === -1 ? spec : spec.slice(0, at)).trim();
    const baseUrl = at === -1 ? undefined : spec.slice(at + 1).trim();
    if (!(PROVIDER_KINDS as readonly string[]).includes(kind)) throw new UserError(`--provider ${spec}: the kind must be one of ${PROVIDER_KINDS.join(', ')}, optionally followed by =BASE_URL`);
    return { spec, kind: kind as ProviderKind, baseUrl, url: baseUrl === undefined ? undefined : parseBaseUrl(spec, kind, baseUrl) };
  });
  const ids = distinctIds(parsed.map(({ kind, url }) => providerIdCandidates(kind, url)));
  return parsed.map(({ spec, kind, baseUrl }, index) => {
    const id = ids[index];
    if (id === undefined) {
      const same = parsed.filter((_, other) => other !== index && ids[other] === undefined).map((p) => p.spec);
      throw new UserError(`--provider ${spec}: names the same server as --provider ${same.join(', --provider ')}; give each server once`);
    }
    const selfHosted = baseUrl !== undefined && kind === 'openai';
    const keyVariable = selfHosted ? `${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY` : VENDOR_KEY_VARIABLES[kind];
    return { id, kind, baseUrl, keyVariable, keyOptional: selfHosted };
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
  return [
    '    discover: true                 # its model list, read every 5 minutes; never overrides an entry below',
    "    # discover: { interval_ms: 600000, include: ['llama*'], exclude: ['*embed*'], id_prefix: 'team/' }",
  ];
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
    else lines.push(`    # base_url: the vendor's own API`);
    lines.push(provider.keyOptional ? `    api_key: \${${provider.keyVariable}:-}   # optional: set it if the server wants a key` : `    api_key: \${${provider.keyVariable}}`);
    lines.push(...discoverBlock(provider));
    lines.push('    # probe: { interval_ms: 60000, model: MODEL-ID }   # an active health check for /status');
  }
  const first = providers[0]!;
  lines.push(
    '',
    '# Models written here are kept as written; discovered ones fill in the rest. Prices of well-known',
    "# hosted models come from Sluice's price list unless an entry gives its own `pricing`.",
    'models: []',
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
  const env = Object.fromEntries(providers.map((p) => [p.keyVariable, 'set']));
  parseConfig(text, 'sluice init', env);
}
