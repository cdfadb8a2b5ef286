import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { SecretHasher, maskSecret } from './auth/key-secret.js';
import type { ChangeFeed } from './changes/change-feed.js';
import { serve } from './serve.js';
import { parseListen, resolveRedis, resolveSettings, type RedisSettings } from './settings.js';
import { BUDGET_PERIODS, describeLimits, limitsSchema, type Limits } from './limits/limits.js';
import type { KeyRecord, KeyStatus, Store, UsageFigures } from './store/store.js';
import { UserError } from './user-error.js';

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

/**
 * Runs `work` on the store the flags (or the environment) name. With `redis` (the commands that
 * change keys or the catalogue's prices), each change it commits is published there before the command returns, so running
 * gateways see it at once; without Redis they see it on their next poll of the store (every
 * 250 ms). A PostgreSQL store notifies its listeners itself, at commit.
 */
async function withStore<T>(flags: StoreFlags, work: (store: Store, hasher: SecretHasher) => Promise<T>, redis?: RedisSettings): Promise<T> {
  const settings = resolveSettings({ ...(flags.data === undefined ? {} : { data: flags.data }), ...(flags.database === undefined ? {} : { database: flags.database }) });
  const hasher = SecretHasher.forDataDir(settings.dataDir);
  const { openStore, storeLocation } = await import('./store/open-store.js');
  let changes: ChangeFeed | undefined;
  if (redis?.redisUrl !== undefined) {
    const [{ openChangeFeed }, { createLogger }] = await Promise.all([import('./changes/open-change-feed.js'), import('./log.js')]);
    changes = await openChangeFeed({ ...redis, logger: createLogger(process.env.SLUICE_LOG_LEVEL ?? 'warn') });
  }
  try {
    const store = await openStore(storeLocation(settings), changes === undefined ? {} : { onChange: (topic) => changes.publish(topic) });
    try {
      return await work(store, hasher);
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

/** Warns about model ids the configuration does not know, when a configuration can be found. */
async function warnUnknownModels(models: readonly string[], config: string | undefined): Promise<void> {
  const { configFile } = resolveSettings({ ...(config === undefined ? {} : { config }) });
  if (configFile === undefined) return;
  const { loadConfigFile } = await import('./config/config-file.js');
  const known = new Set(loadConfigFile(configFile).models.map((model) => model.id));
  const unknown = models.filter((model) => !known.has(model));
  if (unknown.length > 0) console.error(`warning: not in ${configFile}: ${unknown.join(', ')}`);
}

export function buildCli(): Command {
  const program = new Command('sluice').description('Sluice, an LLM gateway').showHelpAfterError();

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
    .addOption(new Option('--session-ttl <ms>', 'how long a console sign-in lasts').argParser(positiveInt).default(12 * 3_600_000))
    .addOption(redisOption('limit counters shared by every replica, and changes reaching every gateway process at once (without it: this machine\'s counters; changes polled every 250 ms)'))
    .addOption(redisPrefixOption())
    .option('--metrics-token <token>', 'serve /metrics on the gateway port to a bearer of this token (env SLUICE_METRICS_TOKEN, which keeps it out of the process list)')
    .option('--metrics-listen <host:port>', 'serve /metrics without a token on a port of its own (env SLUICE_METRICS_LISTEN)')
    .option('--no-access-log', 'no JSON line per request on the log (env SLUICE_ACCESS_LOG=off)')
    .action(async (opts: { listen?: string; data?: string; database?: string; config?: string; drainTimeout: number; maxBodyBytes: number; workers?: number; sessionTtl: number; redis?: string; redisPrefix?: string; metricsToken?: string; metricsListen?: string; accessLog: boolean }) => {
      const { host, port } = parseListen(opts.listen ?? process.env.SLUICE_LISTEN ?? '127.0.0.1:8080');
      const metricsListen = opts.metricsListen ?? process.env.SLUICE_METRICS_LISTEN;
      const metricsToken = opts.metricsToken ?? process.env.SLUICE_METRICS_TOKEN;
      if (metricsToken !== undefined && metricsToken.trim().length < 16) throw new UserError('The metrics token must be at least 16 characters.');
      const workers = opts.workers ?? (process.env.SLUICE_WORKERS ? positiveInt(process.env.SLUICE_WORKERS) : availableParallelism());
      await serve({
        ...resolveSettings(opts),
        ...resolveRedis(opts),
        host,
        port,
        maxBodyBytes: opts.maxBodyBytes,
        drainTimeoutMs: opts.drainTimeout,
        workers,
        sessionTtlMs: opts.sessionTtl,
        metricsToken: metricsToken?.trim(),
        metricsListen: metricsListen === undefined || metricsListen === '' ? undefined : parseListen(metricsListen, '--metrics-listen'),
        accessLog: opts.accessLog && process.env.SLUICE_ACCESS_LOG !== 'off',
      });
    });

  const keys = program.command('keys').description('manage API keys');

  limitOptions(keys
    .command('create'))
    .description('create a key (and its account if new); prints the secret once, on the last line')
    .requiredOption('--account <name>', 'owning account')
    .option('--name <name>', 'a name for the key')
    .option('--models <ids>', 'comma-separated model ids the key may use (default: every model)')
    .addOption(new Option('--expires <iso-date>', 'expiry, e.g. 2027-01-31').argParser(isoDate))
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(databaseOption())
    .addOption(configOption())
    .addOption(redisOption('running gateways are told of the new key'))
    .addOption(redisPrefixOption())
    .action(async (opts: { account: string; name?: string; models?: string; expires?: number; json?: boolean; data?: string; database?: string; config?: string; redis?: string; redisPrefix?: string } & LimitFlags) => {
      const models = opts.models?.split(',').map((m) => m.trim()).filter((m) => m !== '');
      // An empty list would silently make an unrestricted key.
      if (models !== undefined && models.length === 0) throw new UserError('--models needs at least one model id.');
      if (models !== undefined) await warnUnknownModels(models, opts.config);
      const { createKey } = await import('./auth/keys-service.js');
      const { key, secret } = await withStore(
        opts,
        (store, hasher) => createKey(store, hasher, { accountName: opts.account, name: opts.name, models, expiresAt: opts.expires, limits: applyLimitFlags(null, opts) }),
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
    .description('give an account a console password (creating the account if new)')
    .argument('<name>', 'account name, also the sign-in username')
    .option('--admin', 'an admin sees every account and manages the catalogue')
    .requiredOption('--password-stdin', 'read the password from standard input')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (name: string, opts: { admin?: boolean } & StoreFlags) => {
      const password = await readPasswordFromStdin();
      const { createConsoleAccount } = await import('./console/accounts.js');
      const account = await withStore(opts, (store) => createConsoleAccount(store, name, password, opts.admin === true));
      console.log(`Account ${account.name} can now sign in at /app/login${account.isAdmin ? ' as an admin' : ''}.`);
    });

  accounts
    .command('passwd')
    .description("change an account's console password (signs it out everywhere)")
    .argument('<name>', 'account name')
    .requiredOption('--password-stdin', 'read the new password from standard input')
    .addOption(dataOption())
    .addOption(databaseOption())
    .action(async (name: string, opts: StoreFlags) => {
      const password = await readPasswordFromStdin();
      const { changePassword } = await import('./console/accounts.js');
      const account = await withStore(opts, (store) => changePassword(store, name, password));
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
      const { copyCommand } = await import('./store/copy-command.js');
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
