import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialCipher } from '../catalogue/credential-cipher.js';
import { withinCap } from '../catalogue/discovered.js';
import { modelFromConfig } from '../catalogue/catalogue.js';
import { readStoredProvider, storedModelEntry } from '../catalogue/live-catalogue.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import { mcpSecretValuesOf, secretValuesOf } from '../config/secret-values.js';
import { ConfigError, deploymentsOf, isStdioServer, loadConfigFile, modelSchema, type GatewayConfig, type McpServerConfig, type ModelConfig, type ProviderConfig } from '../config/config-file.js';
import { readStoredMcpServer } from '../mcp/mcp-server-list.js';
import pino from 'pino';
import { toGatewayError } from '../core/errors.js';
import { redact } from '../core/upstream-errors.js';
import { maskBaseUrl, maskUrl } from '../core/masked-url.js';
import { generationRequest } from '../generation/model.js';
import type { ProviderAdapter } from '../generation/provider.js';
import { createProvider } from '../providers/registry.js';
import { adviceFor } from './advice.js';
import { describeLocation, openStore, SQLITE_FILE, storeLocation } from '../store/open-store.js';
import type { SqlStore } from '../store/sql-store.js';
import type { CatalogueRepository, McpServersRepository } from '../store/store.js';

/** Every network check gives up after this: a doctor that hangs is no help. */
export const CHECK_TIMEOUT_MS = 5_000;

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of the report: what was looked at, how it is, and (when not ok) what to do. */
export interface Check {
  readonly check: string;
  readonly status: CheckStatus;
  readonly message: string;
  readonly fix?: string;
}

export interface DoctorOptions {
  readonly configFile: string | undefined;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly redisUrl: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
}

const check = (name: string, status: CheckStatus, message: string, fix?: string): Check => ({ check: name, status, message, ...(fix === undefined ? {} : { fix }) });

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What `sluice doctor` finds, check by check: the configuration file, the shared secrets, the
 * store, each provider (configuration file and console) with one model listing, the models their
 * upstreams do not list, each MCP server (connected, its tools listed), Redis. Never a secret in a message: credentials stay in the adapters
 * (whose errors redact them) and URLs are masked. Nothing is created or migrated.
 */
export async function runDoctor(options: DoctorOptions): Promise<Check[]> {
  const env = options.env ?? process.env;
  const checks: Check[] = [];
  const config = checkConfig(options.configFile, checks);
  checks.push(...checkSecrets(options, env));
  const stored = await checkStore(options, env, checks);
  const providers = [...(config?.providers ?? []), ...stored.providers.filter((p) => !config?.providers.some((c) => c.id === p.id))];
  const models = [...(config?.models ?? []), ...stored.models.filter((m) => !config?.models.some((c) => c.id === m.id))];
  checks.push(...(await Promise.all(providers.map((provider) => checkProvider(provider, models)))).flat());
  const fileMcpIds = new Set((config?.mcpServers ?? []).map((server) => server.id.toLowerCase()));
  checks.push(...(await checkMcpServers([...(config?.mcpServers ?? []), ...stored.mcpServers.filter((server) => !fileMcpIds.has(server.id.toLowerCase()))])));
  if (options.redisUrl !== undefined) checks.push(await checkRedis(options.redisUrl));
  return checks;
}

function checkConfig(file: string | undefined, checks: Check[]): GatewayConfig | undefined {
  if (file === undefined) {
    checks.push(check('config', 'warn', 'no configuration file (none named, and no ./sluice.yaml)', 'name one with --config FILE or SLUICE_CONFIG, unless every provider is registered in the console'));
    return undefined;
  }
  try {
    const config = loadConfigFile(file);
    checks.push(check('config', 'ok', `${file}: ${config.providers.length} provider(s), ${config.models.length} model(s)`));
    return config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    checks.push(check('config', 'fail', error.message, 'correct the entry and field named above (see docs/configuration.md)'));
    return undefined;
  }
}

function checkSecrets(options: DoctorOptions, env: NodeJS.ProcessEnv): Check[] {
  return (
    [
      ['key pepper', 'SLUICE_KEY_PEPPER', 'key-pepper'],
      ['credential key', 'SLUICE_CREDENTIAL_KEY', 'credential-key'],
    ] as const
  ).map(([name, variable, file]) => {
    const value = env[variable];
    const path = env[`${variable}_FILE`];
    if (value && path) return check(name, 'fail', `both ${variable} and ${variable}_FILE are set`, 'set one of them');
    if (value) return check(name, 'ok', `from ${variable}`);
    if (path) return existsSync(path) ? check(name, 'ok', `from ${variable}_FILE (${path})`) : check(name, 'fail', `${variable}_FILE names ${path}, which does not exist`, `point ${variable}_FILE at the shared secret file`);
    const own = join(options.dataDir, file);
    if (options.databaseUrl !== undefined) {
      return check(name, 'warn', `${variable} is not set: each replica on this database would use its own ${own}`, `give every replica the same ${variable} (or ${variable}_FILE)`);
    }
    return existsSync(own) ? check(name, 'ok', own) : check(name, 'warn', `${own} does not exist yet`, 'it is made on the first start; back it up with the data directory');
  });
}

interface StoredCatalogue {
  readonly providers: ProviderConfig[];
  readonly models: ModelConfig[];
  readonly mcpServers: McpServerConfig[];
}

const NOTHING_STORED: StoredCatalogue = { providers: [], models: [], mcpServers: [] };

async function checkStore(options: DoctorOptions, env: NodeJS.ProcessEnv, checks: Check[]): Promise<StoredCatalogue> {
  const location = storeLocation(options);
  const where = describeLocation(location);
  if (location.kind === 'sqlite') {
    if (!existsSync(location.dataDir)) {
      checks.push(check('store', 'warn', `the data directory ${location.dataDir} does not exist`, 'it is made on the first start; or name the right one with --data'));
      return NOTHING_STORED;
    }
    try {
      accessSync(location.dataDir, constants.R_OK | constants.W_OK);
    } catch {
      checks.push(check('store', 'fail', `the data directory ${location.dataDir} is not readable and writable by this user`, `run as the gateway's user, or chown/chmod ${location.dataDir}`));
      return NOTHING_STORED;
    }
    if (!existsSync(join(location.dataDir, SQLITE_FILE))) {
      checks.push(check('store', 'warn', `${where} does not exist yet`, 'it is made on the first start'));
      return NOTHING_STORED;
    }
  }
  let store: SqlStore;
  try {
    store = await withTimeout(openStore(location, { migrate: false }), 'the store did not answer');
  } catch (error) {
    checks.push(check('store', 'fail', messageOf(error), location.kind === 'postgres' ? 'check --database / SLUICE_DATABASE_URL, that PostgreSQL runs and accepts this user' : 'check the data directory and its sluice.db'));
    return NOTHING_STORED;
  }
  try {
    const pending = await withTimeout(store.pendingMigrations(), 'the store did not answer');
    checks.push(
      pending.length === 0
        ? check('store', 'ok', `${where}: schema current`)
        : check('store', 'warn', `${where}: ${pending.length} migration(s) pending (${pending.join(', ')})`, 'they run on the next start of `sluice serve`'),
    );
    // Before the console's tables exist there is nothing registered in it.
    if (pending.includes('0002_console')) return NOTHING_STORED;
    const catalogue = await storedCatalogue(store.catalogue, options, env, checks);
    return pending.includes('0015_mcp') ? catalogue : { ...catalogue, mcpServers: await storedMcpServers(store.mcpServers, options, env, checks) };
  } catch (error) {
    checks.push(check('store', 'fail', `${where}: ${messageOf(error)}`, 'check the store'));
    return NOTHING_STORED;
  } finally {
    await store.close();
  }
}

/** The console's providers (credentials unsealed as the gateway would) and models. */
async function storedCatalogue(catalogue: CatalogueRepository, options: DoctorOptions, env: NodeJS.ProcessEnv, checks: Check[]): Promise<StoredCatalogue> {
  const rows = await catalogue.providers();
  const models = (await catalogue.models()).flatMap((row) => {
    const parsed = modelSchema.safeParse(storedModelEntry(row));
    return parsed.success ? [parsed.data] : [];
  });
  if (rows.length === 0) return { providers: [], models, mcpServers: [] };
  // Without its key the credentials cannot be read; the doctor makes no key of its own.
  const keyed = Boolean(env.SLUICE_CREDENTIAL_KEY || env.SLUICE_CREDENTIAL_KEY_FILE) || existsSync(join(options.dataDir, 'credential-key'));
  if (!keyed) {
    checks.push(check('console providers', 'fail', `${rows.length} console provider(s), but no credential key to read their credentials`, 'set SLUICE_CREDENTIAL_KEY (or _FILE) as the gateway has it, or pass its --data'));
    return { providers: [], models, mcpServers: [] };
  }
  const cipher = CredentialCipher.forDataDir(options.dataDir, env);
  const providers: ProviderConfig[] = [];
  for (const row of rows) {
    const read = readStoredProvider(row, cipher);
    if ('problem' in read) checks.push(check(`provider ${row.id}`, 'fail', `console provider: ${read.problem}`, 'use the credential key the gateway uses, or re-enter the credential in the console'));
    else providers.push(read.config);
  }
  return { providers, models, mcpServers: [] };
}

/** The console's MCP servers, their headers unsealed as the gateway would. */
async function storedMcpServers(repository: McpServersRepository, options: DoctorOptions, env: NodeJS.ProcessEnv, checks: Check[]): Promise<McpServerConfig[]> {
  const rows = await repository.list();
  if (rows.length === 0) return [];
  const keyed = Boolean(env.SLUICE_CREDENTIAL_KEY || env.SLUICE_CREDENTIAL_KEY_FILE) || existsSync(join(options.dataDir, 'credential-key'));
  const sealed = rows.filter((row) => row.secrets !== null);
  if (!keyed && sealed.length > 0) {
    checks.push(check('console MCP servers', 'fail', `${sealed.length} console MCP server(s) with headers, but no credential key to read them`, 'set SLUICE_CREDENTIAL_KEY (or _FILE) as the gateway has it, or pass its --data'));
    return [];
  }
  const cipher = CredentialCipher.forDataDir(options.dataDir, env);
  const servers: McpServerConfig[] = [];
  for (const row of rows) {
    const read = readStoredMcpServer(row, cipher);
    if ('problem' in read) checks.push(check(`MCP server ${row.id}`, 'fail', `console MCP server: ${read.problem}`, 'use the credential key the gateway uses, or re-enter the headers in the console'));
    else servers.push(read.config);
  }
  return servers;
}

/**
 * Each MCP server as the gateway would reach it: connected (a stdio server started, then stopped
 * again) and its tools listed, within CHECK_TIMEOUT_MS. Its error is redacted of its own secrets.
 */
async function checkMcpServers(servers: readonly McpServerConfig[]): Promise<Check[]> {
  if (servers.length === 0) return [];
  // Loaded only here: the MCP SDK is not needed by a doctor without MCP servers.
  const { UpstreamMcpServerRegistry } = await import('../mcp/upstream/upstream-servers.js');
  // One attempt each: the doctor reports, it does not retry.
  const registry = new UpstreamMcpServerRegistry(pino({ level: 'silent' }), { connectTimeoutMs: CHECK_TIMEOUT_MS, killGraceMs: 1_000 });
  registry.sync(servers);
  try {
    return await Promise.all(
      servers.map(async (server) => {
        const name = `MCP server ${server.id}`;
        const where = isStdioServer(server) ? `stdio (${server.command})` : `${server.transport} at ${maskBaseUrl(server.url)}`;
        const upstream = registry.get(server.id)!;
        try {
          const lists = await upstream.lists(CHECK_TIMEOUT_MS);
          return check(name, 'ok', `${where}: connected (protocol ${upstream.state().protocolVersion ?? 'unknown'}), ${lists.tools.length} tool(s) listed`);
        } catch (error) {
          const why = redact(upstream.state().error ?? messageOf(error), mcpSecretValuesOf(server));
          const fix = isStdioServer(server) ? `check the command, args, env and cwd of MCP server '${server.id}' (run the command by hand as the gateway's user)` : `check the url, transport and headers (its token) of MCP server '${server.id}', and that it answers from here`;
          return check(name, 'fail', `${where}: ${why}`, fix);
        }
      }),
    );
  } finally {
    await registry.close();
  }
}

/** Kinds whose model list does not prove that a model can be called (Bedrock's per-model access, Vertex's Model Garden): each model entry gets a one-token call. */
const CALLED_KINDS: ReadonlySet<ProviderConfig['kind']> = new Set(['bedrock', 'vertex']);
/** At most this many one-token calls per provider: the doctor is a check, not a load. */
const MAX_CALLS = 5;
/**
 * Azure's listing reads deployments with a fixed old api-version and says nothing of the entry's
 * api_version: one chat call (chat, since instruct deployments serve completions only) shows a
 * wrong api_version, key or deployment as a request would meet it. The listing already names a
 * deployment the resource lacks, so one call is enough.
 */
const AZURE_CALLS = 1;

/**
 * One model listing: reachable, credential accepted; then each model entry the upstream does not
 * list. On Bedrock and Vertex, where a listing needs a permission of its own and says nothing of a
 * model's access, also a one-token call to each model entry of the provider (at most MAX_CALLS); on
 * Azure, one call (AZURE_CALLS), for the entry's api_version.
 */
async function checkProvider(provider: ProviderConfig, models: readonly ModelConfig[]): Promise<Check[]> {
  const name = `provider ${provider.id}`;
  const hide = secretHider(provider);
  let adapter: ProviderAdapter;
  try {
    adapter = createProvider(provider);
  } catch (error) {
    return [check(name, 'fail', `${provider.kind} at ${maskUrl(provider.base_url)}: cannot be set up: ${hide(messageOf(error))}`, `correct the entry of provider '${provider.id}'`)];
  }
  const mine = models.filter((model) => deploymentsOf(model).some((deployment) => deployment.provider === provider.id));
  try {
    let listed: readonly UpstreamModel[];
    try {
      listed = await adapter.listModels(AbortSignal.timeout(CHECK_TIMEOUT_MS));
    } catch (error) {
      const failure = toGatewayError(error);
      const calls = CALLED_KINDS.has(provider.kind) && failure.kind === 'upstream_auth_failed' ? await callModels(adapter, provider, mine, hide) : [];
      if (calls.length > 0 && calls.every((c) => c.status === 'ok')) {
        // Calls work: only the listing's own permission is missing.
        return [check(name, 'warn', `${provider.kind} at ${maskUrl(provider.base_url)}: the model list was refused (${hide(failure.message)}), but calls succeed`, `discovery and this check need the listing permission too: ${adviceFor(provider, failure)}`), ...calls];
      }
      return [check(name, 'fail', hide(failure.message), adviceFor(provider, failure)), ...calls];
    }
    const ids = new Set(listed.map((model) => model.id));
    const checks = [check(name, 'ok', `${provider.kind} at ${maskUrl(provider.base_url)}: reachable, credential accepted, ${listed.length} model(s) listed`)];
    const capped = provider.discover === undefined ? 0 : withinCap(listed, provider.discover).dropped;
    if (capped > 0) {
      checks.push(check(`discovery ${provider.id}`, 'warn', `the upstream lists ${capped} model(s) beyond discover.max_models (${provider.discover!.max_models}); discovery leaves them out`, `narrow discover.include / exclude, or raise discover.max_models of provider '${provider.id}'`));
    }
    for (const model of mine) {
      for (const deployment of deploymentsOf(model)) {
        const upstream = deployment.upstream_model ?? model.id;
        if (deployment.provider !== provider.id || ids.has(upstream.replace(/^models\//, ''))) continue;
        checks.push(check(`model ${model.id}`, 'warn', `provider '${provider.id}' does not list upstream model '${upstream}'`, `correct upstream_model, or deploy '${upstream}' on the upstream`));
      }
    }
    if (CALLED_KINDS.has(provider.kind)) checks.push(...(await callModels(adapter, provider, mine, hide)));
    if (provider.kind === 'azure') checks.push(...(await callModels(adapter, provider, mine.filter((entry) => modelFromConfig(entry).endpoints.has('chat')), hide, AZURE_CALLS)));
    return checks;
  } finally {
    await adapter.close().catch(() => undefined);
  }
}

/** A one-token call to each generation model of the provider (up to MAX_CALLS): the model's access, region or location, as a request would meet them. */
async function callModels(adapter: ProviderAdapter, provider: ProviderConfig, models: readonly ModelConfig[], hide: (text: string) => string, limit = MAX_CALLS): Promise<Check[]> {
  const generating = models.map((entry) => modelFromConfig(entry)).filter((model) => model.endpoints.has('chat') || model.endpoints.has('completions') || model.endpoints.has('responses'));
  const checks: Check[] = [];
  for (const model of generating.slice(0, limit)) {
    const deployment = model.deployments.find((d) => d.providerId === provider.id)!;
    const name = `model ${model.id}`;
    try {
      const request = generationRequest({ model: model.id, messages: [{ role: 'user', content: [{ type: 'text', text: 'ping' }] }], maxOutputTokens: 1 });
      await adapter.generate({ request, model: deployment.model, requestId: `doctor-${randomUUID()}`, signal: AbortSignal.timeout(CHECK_TIMEOUT_MS), choices: 1 });
      checks.push(check(name, 'ok', `a one-token call to '${deployment.upstreamModel}' on provider '${provider.id}' succeeded`));
    } catch (error) {
      const failure = toGatewayError(error);
      checks.push(check(name, 'fail', `a one-token call to '${deployment.upstreamModel}' on provider '${provider.id}' failed: ${hide(failure.message)}`, adviceFor(provider, failure, model.id)));
    }
  }
  if (limit === MAX_CALLS && generating.length > MAX_CALLS) checks.push(check(`provider ${provider.id}`, 'warn', `${generating.length - MAX_CALLS} more model(s) not called`, `the doctor calls ${MAX_CALLS} models per provider; run a request to each of the others`));
  return checks;
}

/** Blanks the provider's own credentials out of a message: adapters redact theirs, and this is the second guard. */
function secretHider(provider: ProviderConfig): (text: string) => string {
  const secrets = secretValuesOf(provider);
  return (text) => redact(text, secrets);
}

async function checkRedis(url: string): Promise<Check> {
  const masked = maskUrl(url);
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: CHECK_TIMEOUT_MS, commandTimeout: CHECK_TIMEOUT_MS, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await withTimeout(redis.connect(), 'no answer');
    return check('redis', 'ok', `${masked}: ${await withTimeout(redis.ping(), 'no answer')}`);
  } catch (error) {
    // ioredis names the host and port, never the password.
    return check('redis', 'fail', `${masked}: ${messageOf(error)}`, 'check --redis / SLUICE_REDIS_URL, that Redis runs, and its password');
  } finally {
    redis.disconnect();
  }
}

function withTimeout<T>(work: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${message} within ${CHECK_TIMEOUT_MS / 1000} s`)), CHECK_TIMEOUT_MS)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** The report as lines, one per check, the fix after what is wrong. */
export function formatChecks(checks: readonly Check[]): string {
  const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;
  return checks.map((c) => `${mark[c.status]}  ${c.check}: ${c.message}${c.fix === undefined ? '' : ` — fix: ${c.fix}`}`).join('\n');
}
