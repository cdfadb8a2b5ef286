import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { SecretHasher, maskSecret } from './auth/key-secret.js';
import { serve } from './serve.js';
import { parseListen, resolveSettings } from './settings.js';
import type { KeyRecord, KeyStatus, Store } from './store/store.js';
import { UserError } from './user-error.js';

// The store, the configuration and the services load inside the commands that use them: a
// cluster primary (which only supervises) and each short command then load no more than they need.

const dataOption = () => new Option('--data <dir>', 'data directory (env SLUICE_DATA, default ./data)');
const configOption = () => new Option('--config <file>', 'configuration file (env SLUICE_CONFIG, default ./sluice.yaml when present)');

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
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

async function withStore<T>(data: string | undefined, work: (store: Store, hasher: SecretHasher) => Promise<T>): Promise<T> {
  const { dataDir } = resolveSettings({ ...(data === undefined ? {} : { data }) });
  const { openSqliteStore } = await import('./store/open-store.js');
  const store = await openSqliteStore(dataDir);
  try {
    return await work(store, SecretHasher.forDataDir(dataDir));
  } finally {
    await store.close();
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
  };
}

function printKeyTable(keys: readonly KeyRecord[]): void {
  const rows = keys.map((key) => {
    const json = keyJson(key);
    return [json.id, json.name, json.account, json.masked_key, json.status, key.models?.join(',') ?? '*', json.expires_at ?? '-', json.last_used_at ?? 'never'];
  });
  const header = ['ID', 'NAME', 'ACCOUNT', 'KEY', 'STATUS', 'MODELS', 'EXPIRES', 'LAST USED'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
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
    .addOption(configOption())
    .addOption(new Option('--drain-timeout <ms>', 'how long a graceful stop waits for requests in flight').argParser(positiveInt).default(30_000))
    .addOption(new Option('--max-body-bytes <n>', 'largest request body accepted').argParser(positiveInt).default(32 * 1024 * 1024))
    .addOption(new Option('--workers <n>', 'processes serving requests (env SLUICE_WORKERS, default: the number of cores)').argParser(positiveInt))
    .addOption(new Option('--session-ttl <ms>', 'how long a console sign-in lasts').argParser(positiveInt).default(12 * 3_600_000))
    .action(async (opts: { listen?: string; data?: string; config?: string; drainTimeout: number; maxBodyBytes: number; workers?: number; sessionTtl: number }) => {
      const { host, port } = parseListen(opts.listen ?? process.env.SLUICE_LISTEN ?? '127.0.0.1:8080');
      const workers = opts.workers ?? (process.env.SLUICE_WORKERS ? positiveInt(process.env.SLUICE_WORKERS) : availableParallelism());
      await serve({ ...resolveSettings(opts), host, port, maxBodyBytes: opts.maxBodyBytes, drainTimeoutMs: opts.drainTimeout, workers, sessionTtlMs: opts.sessionTtl });
    });

  const keys = program.command('keys').description('manage API keys');

  keys
    .command('create')
    .description('create a key (and its account if new); prints the secret once, on the last line')
    .requiredOption('--account <name>', 'owning account')
    .option('--name <name>', 'a name for the key')
    .option('--models <ids>', 'comma-separated model ids the key may use (default: every model)')
    .addOption(new Option('--expires <iso-date>', 'expiry, e.g. 2027-01-31').argParser(isoDate))
    .option('--json', 'print one JSON object')
    .addOption(dataOption())
    .addOption(configOption())
    .action(async (opts: { account: string; name?: string; models?: string; expires?: number; json?: boolean; data?: string; config?: string }) => {
      const models = opts.models?.split(',').map((m) => m.trim()).filter((m) => m !== '');
      // An empty list would silently make an unrestricted key.
      if (models !== undefined && models.length === 0) throw new UserError('--models needs at least one model id.');
      if (models !== undefined) await warnUnknownModels(models, opts.config);
      const { createKey } = await import('./auth/keys-service.js');
      const { key, secret } = await withStore(opts.data, (store, hasher) =>
        createKey(store, hasher, { accountName: opts.account, name: opts.name, models, expiresAt: opts.expires }),
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
    .action(async (opts: { account?: string; json?: boolean; data?: string }) => {
      const list = await withStore(opts.data, (store) => store.keys.list(opts.account === undefined ? {} : { accountName: opts.account }));
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
      .action(async (id: string, opts: { data?: string }) => {
        const { changeKeyStatus } = await import('./auth/keys-service.js');
        const key = await withStore(opts.data, (store) => changeKeyStatus(store, id, status));
        console.log(`Key ${key.id} is ${key.status}.`);
      });
  }

  const accounts = program.command('accounts').description('manage console accounts (who can sign in at /app/login)');

  accounts
    .command('create')
    .description('give an account a console password (creating the account if new)')
    .argument('<name>', 'account name, also the sign-in username')
    .option('--admin', 'an admin sees every account and manages the catalogue')
    .requiredOption('--password-stdin', 'read the password from standard input')
    .addOption(dataOption())
    .action(async (name: string, opts: { admin?: boolean; data?: string }) => {
      const password = await readPasswordFromStdin();
      const { createConsoleAccount } = await import('./console/accounts.js');
      const account = await withStore(opts.data, (store) => createConsoleAccount(store, name, password, opts.admin === true));
      console.log(`Account ${account.name} can now sign in at /app/login${account.isAdmin ? ' as an admin' : ''}.`);
    });

  accounts
    .command('passwd')
    .description("change an account's console password (signs it out everywhere)")
    .argument('<name>', 'account name')
    .requiredOption('--password-stdin', 'read the new password from standard input')
    .addOption(dataOption())
    .action(async (name: string, opts: { data?: string }) => {
      const password = await readPasswordFromStdin();
      const { changePassword } = await import('./console/accounts.js');
      const account = await withStore(opts.data, (store) => changePassword(store, name, password));
      console.log(`Password of ${account.name} changed; its sessions are ended.`);
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
