import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { SecretHasher, maskSecret } from './auth/key-secret.js';
import type { ChangeFeed } from './changes/change-feed.js';
import type { PortSharing } from './wiring/gateway.js';
import { serve } from './wiring/serve.js';
import { DEFAULT_CONFIG_FILE, envSetting, parseListen, resolveRedis, resolveSettings, type RedisSettings, type Settings } from './core/settings.js';
import { BUDGET_PERIODS, describeLimits, limitsSchema, type Limits } from './core/key-limits.js';
import type { KeyRecord, KeyStatus, Store, UsageFigures } from './store/store.js';
import { UserError } from './core/user-error.js';

// The store, the configuration and the services load inside the commands that use them: a
// cluster primary (which only supervises) and each short command then load no more than they need.

const dataOption = () => new Option('--data <dir>', 'data directory (env SLUICE_DATA, default ./data)');
const databaseOption = () =>
  new Option('--database <url>', 'a PostgreSQL store, postgres://USER:PASSWORD@HOST:PORT/DB (env SLUICE_DATABASE_URL; default: SQLite in the data directory)');

/** Where a command's store and local files are. */
interface StoreFlags {
  data?: string;
  database?: string;
}
const configOption = () => new Option('--config <file>', 'configuration file (env SLUICE_CONFIG, default ./sluice.yaml when present)');
const redisOption = (what: string) => new Option('--redis <url>', `Redis: ${what} (env SLUICE_REDIS_URL; redis://[[user]:password@]host[:port][/db])`);
const redisPrefixOption = () => new Option('--redis-prefix <prefix>', 'what every Redis key and channel of this deployment starts with (env SLUICE_REDIS_PREFIX, default sluice:)');

const PORT_SHARING: readonly PortSharing[] = ['reuseport', 'handoff'];

function portSharingSetting(value: string | undefined): PortSharing {
  if (value === undefined) return 'reuseport';
  if ((PORT_SHARING as readonly string[]).includes(value)) return value as PortSharing;
  throw new UserError(`SLUICE_PORT_SHARING must be ${PORT_SHARING.join(' or ')}, not '${value.slice(0, 40)}'.`);
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

/** The limit flags shared by `keys create`, `keys limits` and `accounts limits`; `none` clears one. */
function limitOptions(command: Command): Command {
  // 'none' is kept as is: commander reads a parser's null as "use the raw text".
  const count = (value: string) => (value === 'none' ? value : positiveInt(value));
  return command
    .addOption(new Option('--rpm <n>', 'requests per rolling minute (none: no limit)').argParser(count))
    .addOption(new Option('--tpm <n>', 'tokens per rolling minute, prompt plus output cap reserved at admission (none: no limit)').argParser(count))
    .addOption(new Option('--concurrency <n>', 'requests in flight at once (none: no limit)').argParser(count))
    .addOption(
      new Option('--budget-usd <usd>', 'spend budget in USD per period (none: no budget)').argParser((value) => {
        if (value === 'none') return value;
        const usd = Number(value);
        if (!Number.isFinite(usd) || usd <= 0) throw new InvalidArgumentError('expected a positive amount, e.g. 25 or 0.5');
        return usd;
      }),
    )
    .addOption(new Option('--budget-period <period>', 'the budget period (UTC; default month)').choices(BUDGET_PERIODS));
}

interface LimitFlags {
  rpm?: number | 'none';
  tpm?: number | 'none';
  concurrency?: number | 'none';
  budgetUsd?: number | 'none';
  budgetPeriod?: Limits['budgetPeriod'];
}

/** The flags given, applied over the current limits; throws a UserError for a combination that makes no sense. */
function applyLimitFlags(current: Limits | null, flags: LimitFlags): Limits {
  const next: Record<string, unknown> = { ...current };
  for (const field of ['rpm', 'tpm', 'concurrency', 'budgetUsd', 'budgetPeriod'] as const) {
    if (flags[field] === 'none') delete next[field];
    else if (flags[field] !== undefined) next[field] = flags[field];
  }
  if (flags.budgetPeriod !== undefined && next.budgetUsd === undefined) throw new UserError('--budget-period needs --budget-usd.');
  if (next.budgetUsd === undefined) delete next.budgetPeriod;
  return limitsSchema.parse(next);
}

function isoDate(value: string): number {
  const at = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at)) throw new InvalidArgumentError('expected an ISO 8601 date, e.g. 2027-01-31 or 2027-01-31T12:00:00Z');
  return at;
}

/** The password from standard input (one line; a trailing newline is dropped), so it never appears in argv or shell history. */
async function readPasswordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password (then Enter, Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** `--url`: an http(s) address, without its trailing slash, for a link to be put after. */
function consoleBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError(`--url must be the console's address, e.g. https://llm.example.com, not '${url}'.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UserError(`--url must start with http:// or https://, not '${url}'.`);
  return parsed.origin + parsed.pathname.replace(/\/+$/, '');
}

/**
 * Runs `work` on the store the flags (or the environment) name. With `redis` (the commands that
 * change keys or the catalogue's prices), each change it commits is published there before the command returns, so running
 * gateways see it at once; without Redis they see it on their next poll of the store (every
 * 250 ms). A PostgreSQL store notifies its listeners itself, at commit.
 */
async function withStore<T>(flags: StoreFlags & { config?: string }, work: (store: Store, hasher: SecretHasher, settings: Settings) => Promise<T>, redis?: RedisSettings): Promise<T> {
  const settings = resolveSettings(flags);
  const hasher = SecretHasher.forDataDir(settings.dataDir);
  const { openStore, storeLocation } = await import('./store/open-store.js');
  let changes: ChangeFeed | undefined;
  if (redis?.redisUrl !== undefined) {
    const [{ openChangeFeed }, { createLogger }] = await Promise.all([import('./changes/open-change-feed.js'), import('./core/log.js')]);
    changes = await openChangeFeed({ ...redis, logger: createLogger(envSetting('SLUICE_LOG_LEVEL') ?? 'warn') });
  }
  try {
    const store = await openStore(storeLocation(settings), changes === undefined ? {} : { onChange: (topic) => changes.publish(topic) });
    try {
      return await work(store, hasher, settings);
    } finally {
      await store.close();
    }
  } finally {
    await changes?.close();
  }
}

function keyJson(key: KeyRecord) {
  return {
    id: key.id,
    name: key.name,
    account: key.accountName,
    masked_key: maskSecret(key.secretPrefix, key.secretLastFour),
    status: key.status,
    models: key.models,
    expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    created_at: new Date(key.createdAt).toISOString(),
    last_used_at: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
    limits: key.limits,
    account_limits: key.accountLimits,
  };
}

/** Prints columns padded to their widest cell; the last `numeric` columns are aligned right. */
function printTable(header: readonly string[], rows: readonly (readonly string[])[], numeric = 0): void {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const right = header.length - numeric;
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => (i >= right ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

function printKeyTable(keys: readonly KeyRecord[]): void {
  const rows = keys.map((key) => {
    const json = keyJson(key);
    return [json.id, json.name, json.account, json.masked_key, json.status, key.models?.join(',') ?? '*', json.expires_at ?? '-', json.last_used_at ?? 'never', describeLimits(key.limits)];
  });
  printTable(['ID', 'NAME', 'ACCOUNT', 'KEY', 'STATUS', 'MODELS', 'EXPIRES', 'LAST USED', 'LIMITS'], rows);
}

/** Days `sluice usage` covers without --since, today included. */
const DEFAULT_USAGE_DAYS = 30;

interface UsageFlags {
  account?: string;
  key?: string;
  since?: string;
  by?: string;
  json?: boolean;
}

/** `sluice usage`: its flags checked before the store is opened, each mistake one line naming the flag. */
async function usageCommand(opts: UsageFlags & StoreFlags): Promise<void> {
  const { addFigures, GROUPINGS, isoDay, parseIsoDay, usageRecord, ZERO } = await import('./usage/usage-report.js');
  const { dayOf } = await import('./store/sql-status.js');
  const by = opts.by ?? 'day';
  if (!(GROUPINGS as readonly string[]).includes(by)) throw new UserError(`--by must be one of ${GROUPINGS.join(', ')}, not '${by}'.`);
  const grouping = by as (typeof GROUPINGS)[number];
  const toDay = dayOf(Date.now());
  const fromDay = opts.since === undefined ? toDay - (DEFAULT_USAGE_DAYS - 1) : parseIsoDay(opts.since);
  if (fromDay === undefined) throw new UserError(`--since must be a date written YYYY-MM-DD, not '${opts.since}'.`);

  const groups = await withStore(opts, async (store) => {
    const account = opts.account === undefined ? undefined : await store.accounts.byName(opts.account);
    if (opts.account !== undefined && account === undefined) throw new UserError(`No account is named '${opts.account}'.`);
    const key = opts.key === undefined ? undefined : await store.keys.get(opts.key);
    if (opts.key !== undefined && key === undefined) throw new UserError(`No key has the id '${opts.key}'.`);
    if (key !== undefined && account !== undefined && key.accountId !== account.id) throw new UserError(`Key ${key.id} belongs to the account ${key.accountName}, not ${account.name}.`);
    return store.usageDaily.summary({ fromDay, toDay, ...(account && { accountId: account.id }), ...(key && { keyId: key.id }) }, [grouping]);
  });

  if (opts.json) return console.log(JSON.stringify(groups.map((group) => usageRecord(group, grouping))));
  if (groups.length === 0) return console.log(`No usage from ${isoDay(fromDay)} to ${isoDay(toDay)} (UTC).`);
  const figures = (g: UsageFigures) =>
    [g.requests, g.failed, g.inputTokens, g.outputTokens].map((n) => n.toLocaleString('en-US')).concat(g.costUsd.toFixed(4));
  const label = { day: ['DAY'], model: ['MODEL'], key: ['ACCOUNT', 'KEY ID', 'KEY NAME'] }[grouping];
  const rows = groups.map((g) => {
    if (grouping === 'day') return [isoDay(g.day!), ...figures(g)];
    if (grouping === 'model') return [g.model!, ...figures(g)];
    return [g.accountName ?? '?', g.keyId!, g.keyName ?? '?', ...figures(g)];
  });
  rows.push([`total ${isoDay(fromDay)} to ${isoDay(toDay)}`, ...label.slice(1).map(() => ''), ...figures(groups.reduce<UsageFigures>(addFigures, ZERO))]);
  printTable([...label, 'REQUESTS', 'FAILED', 'INPUT TOKENS', 'OUTPUT TOKENS', 'COST USD'], rows, 5);
}

/**
 * Refuses model ids the catalogue lacks (the configuration file's entries and the store's, as a
 * gateway on this configuration and store would serve them): a typo would make a key that can
 * use nothing.
 */
async function checkModelsKnown(store: Pick<Store, 'catalogue'>, dataDir: string, configFile: string | undefined, models: readonly string[]): Promise<void> {
  const [{ emptyConfig, loadConfigFile }, { LiveCatalogue }, { CredentialCipher }, { createLogger }] = await Promise.all([
    import('./config/config-file.js'),
    import('./catalogue/live-catalogue.js'),
    import('./catalogue/credential-cipher.js'),
    import('./core/log.js'),
  ]);
  const config = configFile === undefined ? emptyConfig() : loadConfigFile(configFile);
  const live = new LiveCatalogue(config, store.catalogue, CredentialCipher.forDataDir(dataDir), createLogger('error'), () => undefined);
  try {
    await live.refresh();
  } finally {
    await live.close();
  }
  const catalogue = live.current();
  const unknown = models.filter((model) => catalogue.get(model) === undefined);
  if (unknown.length === 0) return;
  const known = catalogue.models.length === 0 ? 'it has no models yet' : `it has ${catalogue.models.map((m) => m.id).slice(0, 20).join(', ')}${catalogue.models.length > 20 ? ', …' : ''}`;
  const where = configFile === undefined ? 'no configuration file (./sluice.yaml absent; name one with --config) and the console' : `${configFile} and the console`;
  throw new UserError(`the catalogue (${where}) has no model ${unknown.map((m) => `'${m}'`).join(', ')}; ${known}. Pass --allow-unknown to allow it before it exists.`);
}

/** The installed package's version (src/ and dist/ both sit beside package.json), and the runtime's: `0.1.0 (Node.js v24.21.0)`. */
function versions(): string {
  const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
  return `${version} (Node.js ${process.version})`;
}

export function buildCli(): Command {
  const program = new Command('sluice').description('Sluice, an LLM gateway').showHelpAfterError().version(versions(), '-v, --version', "print Sluice's version and the Node.js it runs on");

  program
    .command('serve')
    .description('run the gateway')
    .option('--listen <host:port>', 'address to listen on (env SLUICE_LISTEN, default 127.0.0.1:8080)')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(configOption())
    .addOption(new Option('--drain-timeout <ms>', 'how long a graceful stop waits for requests in flight').argParser(positiveInt).default(30_000))
    .addOption(new Option('--max-body-bytes <n>', 'largest request body accepted').argParser(positiveInt).default(32 * 1024 * 1024))
    .addOption(new Option('--workers <n>', 'processes serving requests (env SLUICE_WORKERS, default: the number of cores)').argParser(positiveInt))
    .addOption(new Option('--port-sharing <how>', "how workers share the port: reuseport, each its own socket and the kernel spreading connections (falls back to handoff where the platform cannot), or handoff, node:cluster's primary accepting and passing each connection on (env SLUICE_PORT_SHARING, default reuseport)").choices(PORT_SHARING))
    .addOption(new Option('--session-ttl <ms>', 'how long a console sign-in lasts').argParser(positiveInt).default(12 * 3_600_000))
    .addOption(new Option('--session-idle <ms>', 'a console sign-in also ends after this long without activity').argParser(positiveInt).default(2 * 3_600_000))
    .addOption(redisOption('limit counters shared by every replica, and changes reaching every gateway process at once (without it: this machine\'s counters; changes polled every 250 ms)'))
    .addOption(redisPrefixOption())
    .option('--metrics-token <token>', 'serve /metrics on the gateway port to a bearer of this token (env SLUICE_METRICS_TOKEN, which keeps it out of the process list)')
    .option('--metrics-listen <host:port>', 'serve /metrics without a token on a port of its own (env SLUICE_METRICS_LISTEN)')
    .option('--no-access-log', 'no JSON line per request on the log (env SLUICE_ACCESS_LOG=off)')
    .action(async (opts: { listen?: string; data?: string; database?: string; config?: string; drainTimeout: number; maxBodyBytes: number; workers?: number; portSharing?: PortSharing; sessionTtl: number; sessionIdle: number; redis?: string; redisPrefix?: string; metricsToken?: string; metricsListen?: string; accessLog: boolean }) => {
      const { host, port } = parseListen(opts.listen ?? envSetting('SLUICE_LISTEN') ?? '127.0.0.1:8080');
      const metricsListen = opts.metricsListen ?? envSetting('SLUICE_METRICS_LISTEN');
      const metricsToken = opts.metricsToken ?? envSetting('SLUICE_METRICS_TOKEN');
      if (metricsToken !== undefined && metricsToken.trim().length < 16) throw new UserError('The metrics token must be at least 16 characters.');
      const workersVariable = envSetting('SLUICE_WORKERS');
      const workers = opts.workers ?? (workersVariable !== undefined ? positiveInt(workersVariable) : availableParallelism());
      const portSharing = opts.portSharing ?? portSharingSetting(envSetting('SLUICE_PORT_SHARING'));
      await serve({
        ...resolveSettings(opts),
        ...resolveRedis(opts),
        host,
        port,
        maxBodyBytes: opts.maxBodyBytes,
        drainTimeoutMs: opts.drainTimeout,
        workers,
        portSharing,
        sessionTtlMs: opts.sessionTtl,
        sessionIdleMs: opts.sessionIdle,
        metricsToken: metricsToken?.trim(),
        metricsListen: metricsListen === undefined || metricsListen === '' ? undefined : parseListen(metricsListen, '--metrics-listen'),
        accessLog: opts.accessLog && envSetting('SLUICE_ACCESS_LOG') !== 'off',
      });
    });

  program
    .command('init')
    .description('write a commented configuration file for the providers named (credentials stay in environment variables)')
    .addOption(new Option('--provider <kind[=base_url]>', 'openai=http://127.0.0.1:8000/v1 (a self-hosted OpenAI-compatible server), openai, anthropic or gemini; repeat for more').argParser((value: string, previous: string[] = []) => [...previous, value]))
    .addOption(configOption())
    .option('--force', 'replace an existing file')
    .action(async (opts: { provider?: string[]; config?: string; force?: boolean }) => {
      const { writeFileSync } = await import('node:fs');
      const { checkInitConfig, parseInitProviders, renderInitConfig } = await import('./config/init-config.js');
      const providers = parseInitProviders(opts.provider ?? []);
      const text = renderInitConfig(providers);
      checkInitConfig(text, providers);
      const path = opts.config ?? envSetting('SLUICE_CONFIG') ?? DEFAULT_CONFIG_FILE;
      try {
        writeFileSync(path, text, { flag: opts.force ? 'w' : 'wx', mode: 0o644 });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        throw new UserError(code === 'EEXIST' ? `${path} exists already; pass --force to replace it` : `cannot write ${path} (${code ?? String(error)})`);
      }
      console.log(`Wrote ${path} with ${providers.map((p) => `${p.id} (${p.kind})`).join(', ')}.`);
      console.log('Next:');
      for (const p of providers) console.log(`  export ${p.keyVariable}=…${p.keyOptional ? '   (only if the server wants a key)' : ''}`);
      console.log(`  sluice doctor${opts.config === undefined ? '' : ` --config ${path}`}     checks the file, the store and each provider`);
      console.log(`  sluice serve${opts.config === undefined ? '' : ` --config ${path}`}      (a running gateway reads the file again by itself)`);
    });

  const keys = program.command('keys').description('manage API keys');

  limitOptions(keys
    .command('create'))
    .description('create a key (and its account if new); prints the secret once, on the last line')
    .requiredOption('--account <name>', 'owning account')
    .option('--name <name>', 'a name for the key')
    .option('--models <ids>', 'comma-separated model ids the key may use (default: every model); each must be in the catalogue')
    .option('--allow-unknown', 'allow --models ids the catalogue does not have (yet)')
    .addOption(new Option('--expires <iso-date>', 'expiry, e.g. 2027-01-31').argParser(isoDate))
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(configOption())
    .addOption(redisOption('running gateways are told of the new key'))
    .addOption(redisPrefixOption())
    .action(async (opts: { account: string; name?: string; models?: string; allowUnknown?: boolean; expires?: number; json?: boolean; data?: string; database?: string; config?: string; redis?: string; redisPrefix?: string } & LimitFlags) => {
      const models = opts.models?.split(',').map((m) => m.trim()).filter((m) => m !== '');
      // An empty list would silently make an unrestricted key.
      if (models !== undefined && models.length === 0) throw new UserError('--models needs at least one model id.');
      const limits = applyLimitFlags(null, opts);
      const { createKey } = await import('./auth/keys-service.js');
      const { key, secret } = await withStore(
        opts,
        async (store, hasher, { dataDir, configFile }) => {
          if (models !== undefined && !opts.allowUnknown) await checkModelsKnown(store, dataDir, configFile, models);
          return createKey(store, hasher, { accountName: opts.account, name: opts.name, models, expiresAt: opts.expires, limits });
        },
        resolveRedis(opts),
      );
      if (opts.json) {
        console.log(JSON.stringify({ ...keyJson(key), key: secret }));
      } else {
        console.log(`Created key ${key.id} (${key.name}) for account ${key.accountName}. Keep the secret now: it cannot be shown again.`);
        console.log(secret);
      }
    });

  keys
    .command('list')
    .description('list keys (masked)')
    .option('--account <name>', 'only this account')
    .option('--json', 'print a JSON array')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (opts: { account?: string; json?: boolean } & StoreFlags) => {
      const list = await withStore(opts, (store) => store.keys.list(opts.account === undefined ? {} : { accountName: opts.account }));
      if (opts.json) console.log(JSON.stringify(list.map(keyJson)));
      else if (list.length === 0) console.log('No keys.');
      else printKeyTable(list);
    });

  const statusCommands: [string, KeyStatus, string][] = [
    ['disable', 'disabled', 'refuse a key until it is enabled again'],
    ['enable', 'active', 'accept a disabled key again'],
    ['revoke', 'revoked', 'refuse a key for good'],
  ];
  for (const [name, status, description] of statusCommands) {
    keys
      .command(name)
      .description(description)
      .argument('<id>', 'key id (see `sluice keys list`)')
      .addOption(dataOption())
      .addOption(databaseOption())
      .addOption(redisOption('running gateways refuse or accept the key at once'))
      .addOption(redisPrefixOption())
      .action(async (id: string, opts: StoreFlags & { redis?: string; redisPrefix?: string }) => {
        const { changeKeyStatus } = await import('./auth/keys-service.js');
        const key = await withStore(opts, (store) => changeKeyStatus(store, id, status), resolveRedis(opts));
        console.log(`Key ${key.id} is ${key.status}.`);
      });
  }

  limitOptions(
    keys
      .command('limits')
      .description("show or change a key's limits (only the flags given change; `none` removes one)")
      .argument('<id>', 'key id (see `sluice keys list`)'),
  )
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(redisOption('running gateways are told of the change'))
    .addOption(redisPrefixOption())
    .action(async (id: string, opts: LimitFlags & StoreFlags & { json?: boolean; redis?: string; redisPrefix?: string }) => {
      const { setKeyLimits, KeyManagementError } = await import('./auth/keys-service.js');
      const key = await withStore(opts, async (store) => {
        const current = await store.keys.get(id);
        if (current === undefined) throw new KeyManagementError(`No key has the id '${id}'.`);
        return setKeyLimits(store, id, applyLimitFlags(current.limits, opts));
      }, resolveRedis(opts));
      if (opts.json) console.log(JSON.stringify(keyJson(key)));
      else console.log(`Key ${key.id}: ${describeLimits(key.limits)}${key.accountLimits === null ? '' : ` (account ${key.accountName}: ${describeLimits(key.accountLimits)})`}.`);
    });

  const accounts = program.command('accounts').description('manage console accounts (who can sign in at /app/login)');

  accounts
    .command('create')
    .description('give an account console access (creating the account if new): a password, or a one-time sign-in link')
    .argument('<name>', 'account name, also the sign-in username')
    .option('--admin', 'an admin sees every account and manages the catalogue')
    .option('--password-stdin', 'read the password from standard input')
    .option('--sign-in-link', 'print a one-time link (valid 24 hours) with which the account sets its own password')
    .option('--url <base>', "with --sign-in-link: the console's address, e.g. https://llm.example.com, to print the whole link")
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (name: string, opts: { admin?: boolean; passwordStdin?: boolean; signInLink?: boolean; url?: string } & StoreFlags) => {
      if (opts.passwordStdin === opts.signInLink) throw new UserError('Give either --password-stdin or --sign-in-link.');
      if (opts.url !== undefined && !opts.signInLink) throw new UserError('--url goes with --sign-in-link.');
      const base = opts.url === undefined ? undefined : consoleBase(opts.url);
      const choice = opts.passwordStdin ? { password: await readPasswordFromStdin() } : ({ link: true } as const);
      const { createConsoleAccount } = await import('./console/accounts.js');
      const { account, linkPath } = await withStore(opts, (store) => createConsoleAccount(store, name, choice, opts.admin === true));
      const role = account.isAdmin ? ' as an admin' : '';
      if (linkPath === undefined) return console.log(`Account ${account.name} can now sign in at /app/login${role}.`);
      console.log(`Account ${account.name} can sign in${role} once it has set its password through this one-time link, valid for 24 hours. It is shown only now:`);
      console.log(base === undefined ? linkPath : base + linkPath);
      if (base === undefined) console.error("Put the console's address in front of the path (or pass --url https://your-console).");
    });

  accounts
    .command('list')
    .description('list accounts: admin, status, console access, keys')
    .option('--json', 'print a JSON array')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (opts: { json?: boolean } & StoreFlags) => {
      const { list, keys } = await withStore(opts, async (store) => ({ list: await store.accounts.list(), keys: await store.keys.list() }));
      const records = list.map((account) => ({
        name: account.name,
        admin: account.isAdmin,
        status: account.disabled ? 'disabled' : 'active',
        console_access: account.hasPassword,
        keys: keys.filter((key) => key.accountId === account.id).length,
        created_at: new Date(account.createdAt).toISOString(),
        limits: account.limits,
      }));
      if (opts.json) return console.log(JSON.stringify(records));
      if (records.length === 0) return console.log('No accounts.');
      const yes = (flag: boolean) => (flag ? 'yes' : 'no');
      printTable(
        ['NAME', 'ADMIN', 'STATUS', 'CONSOLE', 'CREATED', 'LIMITS', 'KEYS'],
        records.map((r, i) => [r.name, yes(r.admin), r.status, yes(r.console_access), r.created_at.slice(0, 10), describeLimits(list[i]!.limits), String(r.keys)]),
        1,
      );
    });

  for (const [command, disabled, description] of [
    ['disable', true, 'refuse an account: it cannot sign in (its sessions end) and its API keys are refused (403)'],
    ['enable', false, 'accept a disabled account again'],
  ] as const) {
    accounts
      .command(command)
      .description(description)
      .argument('<name>', 'account name')
      .addOption(dataOption())
      .addOption(databaseOption())
      .addOption(redisOption("running gateways refuse or accept the account's keys at once"))
      .addOption(redisPrefixOption())
      .action(async (name: string, opts: StoreFlags & { redis?: string; redisPrefix?: string }) => {
        const { changeAccount } = await import('./console/accounts.js');
        const account = await withStore(opts, (store) => changeAccount(store, name, { disabled }), resolveRedis(opts));
        console.log(`Account ${account.name} is ${account.disabled ? 'disabled: it cannot sign in, and its keys are refused' : 'enabled'}.`);
      });
  }

  accounts
    .command('passwd')
    .description("change an account's console password (signs it out everywhere)")
    .argument('<name>', 'account name')
    .requiredOption('--password-stdin', 'read the new password from standard input')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (name: string, opts: StoreFlags) => {
      const password = await readPasswordFromStdin();
      const { resetPassword } = await import('./console/accounts.js');
      const { account } = await withStore(opts, (store) => resetPassword(store, name, { password }));
      console.log(`Password of ${account.name} changed; its sessions are ended.`);
    });

  limitOptions(
    accounts
      .command('limits')
      .description("show or change the limits every key of an account shares (only the flags given change; `none` removes one)")
      .argument('<name>', 'account name'),
  )
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(redisOption('running gateways are told of the change'))
    .addOption(redisPrefixOption())
    .action(async (name: string, opts: LimitFlags & StoreFlags & { json?: boolean; redis?: string; redisPrefix?: string }) => {
      const { setAccountLimits, KeyManagementError } = await import('./auth/keys-service.js');
      const account = await withStore(opts, async (store) => {
        const current = await store.accounts.byName(name);
        if (current === undefined) throw new KeyManagementError(`No account is named '${name}'.`);
        return setAccountLimits(store, name, applyLimitFlags(current.limits, opts));
      }, resolveRedis(opts));
      if (opts.json) console.log(JSON.stringify({ account: account.name, limits: account.limits }));
      else console.log(`Account ${account.name}: ${describeLimits(account.limits)}.`);
    });

  program
    .command('usage')
    .description('usage from the daily roll-ups (UTC days): requests, tokens and spend per day, model or key')
    .option('--account <name>', 'only this account')
    .option('--key <id>', 'only this key (see `sluice keys list`)')
    .option('--since <date>', `from this day on, YYYY-MM-DD (default: the last ${DEFAULT_USAGE_DAYS} days, today included)`)
    .option('--by <grouping>', 'one line per day, model or key (default day)')
    .option('--json', 'print a JSON array')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(usageCommand);

  program
    .command('doctor')
    .description('check the configuration, the store, the secrets, each provider (one model listing) and Redis; exit status 1 when a check failed')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(configOption())
    .addOption(redisOption('checked with a PING'))
    .option('--json', 'print one JSON document')
    .action(async (opts: { data?: string; database?: string; config?: string; redis?: string; json?: boolean }) => {
      const settings = resolveSettings(opts);
      const { redisUrl } = resolveRedis(opts);
      const { runDoctor, formatChecks } = await import('./doctor/doctor.js');
      const checks = await runDoctor({ ...settings, redisUrl });
      const ok = checks.every((c) => c.status !== 'fail');
      console.log(opts.json ? JSON.stringify({ ok, checks }, null, 2) : formatChecks(checks));
      if (!ok) process.exitCode = 1;
    });

  const prices = program.command('prices').description('the price list that prices catalogue entries without their own pricing');

  prices
    .command('import')
    .description('validate a price list file (the shipped list\'s JSON format) and put it in force in every running gateway; no network needed')
    .argument('<file>', 'the JSON price list')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(redisOption('running gateways reprice at once'))
    .addOption(redisPrefixOption())
    .action(async (file: string, opts: StoreFlags & { redis?: string; redisPrefix?: string }) => {
      const { importPriceList } = await import('./pricing/price-list-admin.js');
      const list = await withStore(opts, (store) => importPriceList(store, file), resolveRedis(opts));
      console.log(`Imported the price list as of ${list.asOf} (${list.document.models.length} models); it is in force.`);
    });

  prices
    .command('show')
    .description('which price list is in force, its date and its prices')
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (opts: StoreFlags & { json?: boolean }) => {
      const { priceListStatus } = await import('./pricing/price-list-admin.js');
      const { inForce, shipped, imported } = await withStore(opts, priceListStatus);
      const models = inForce.list.document.models;
      if (opts.json) {
        return console.log(
          JSON.stringify({
            in_force: { origin: inForce.origin, as_of: inForce.list.asOf },
            shipped: { as_of: shipped.asOf },
            imported: imported === undefined ? null : { as_of: imported.list.asOf, imported_at: new Date(imported.importedAt).toISOString() },
            models,
          }),
        );
      }
      console.log(`In force: the ${inForce.origin} price list as of ${inForce.list.asOf} (${models.length} models).`);
      console.log(`Shipped with Sluice: as of ${shipped.asOf}. Imported: ${imported === undefined ? 'none' : `as of ${imported.list.asOf}, on ${new Date(imported.importedAt).toISOString()}`}.`);
      const usd = (n: number | undefined) => (n === undefined ? '-' : String(n));
      printTable(
        ['FAMILY', 'MODEL', 'INPUT', 'OUTPUT', 'CACHED INPUT', 'CACHE WRITE'],
        models.map((m) => [m.family, [m.model, ...(m.aliases ?? [])].join(', '), usd(m.input_per_mtok), usd(m.output_per_mtok), usd(m.cached_input_per_mtok), usd(m.cache_write_per_mtok)]),
        4,
      );
    });

  prices
    .command('reset')
    .description('drop the imported price list: the shipped one is in force again')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(redisOption('running gateways reprice at once'))
    .addOption(redisPrefixOption())
    .action(async (opts: StoreFlags & { redis?: string; redisPrefix?: string }) => {
      const [{ resetPriceList }, { shippedPriceList }] = await Promise.all([import('./pricing/price-list-admin.js'), import('./pricing/price-list.js')]);
      const removed = await withStore(opts, (store) => resetPriceList(store), resolveRedis(opts));
      console.log(`${removed ? 'Removed the imported price list' : 'No price list was imported'}; the shipped list as of ${shippedPriceList().asOf} is in force.`);
    });

  const storeCommands = program.command('store').description('move the store');

  storeCommands
    .command('copy')
    .description("copy an embedded deployment's store (SQLite in its data directory) into PostgreSQL; safe to run again")
    .requiredOption('--from <dir>', 'the data directory whose sluice.db is copied')
    .requiredOption('--to <url>', 'the PostgreSQL database, postgres://USER:PASSWORD@HOST:PORT/DB (migrated first)')
    .addOption(new Option('--batch <n>', 'rows read and written at a time (at most 2000)').argParser(positiveInt).default(1000))
    .action(async (opts: { from: string; to: string; batch: number }) => {
      const { copyCommand } = await import('./cli/store-copy.js');
      await copyCommand(opts);
    });

  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await buildCli().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof UserError || error instanceof InvalidArgumentError) {
      console.error(`sluice: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
}
