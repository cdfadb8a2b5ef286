// `sluice accounts`: console accounts (create, list, disable/enable, passwd) and the limits their keys share.
import { describeLimits } from '../core/key-limits.js';
import { resolveRedis } from '../core/settings.js';
import { UserError } from '../core/user-error.js';
import { loadCatalogue, warnOfUnpricedModels } from './catalogue.js';
import { warnOfUnknownMcpServers } from './mcp-servers.js';
import { applyLimitFlags, type ConfigFlags, type JsonFlag, type LimitFlags, type RedisFlags, type SluiceCommand, type StoreFlags } from './options.js';
import { printTable } from './table.js';
import { withStore } from './with-store.js';

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

interface CreateFlags extends StoreFlags {
  admin?: boolean;
  passwordStdin?: boolean;
  signInLink?: boolean;
  url?: string;
}

const STATUS_COMMANDS = [
  ['disable', true, 'refuse an account: it cannot sign in (its sessions end) and its API keys are refused (403)'],
  ['enable', false, 'accept a disabled account again'],
] as const;

export function addAccountsCommands(program: SluiceCommand): void {
  const accounts = program.command('accounts').description('manage console accounts (who can sign in at /app/login)');

  accounts
    .command('create')
    .description('give an account console access (creating the account if new): a password, or a one-time sign-in link')
    .argument('<name>', 'account name, also the sign-in username')
    .option('--admin', 'an admin sees every account and manages the catalogue')
    .option('--password-stdin', 'read the password from standard input')
    .option('--sign-in-link', 'print a one-time link (valid 24 hours) with which the account sets its own password')
    .option('--url <base>', "with --sign-in-link: the console's address, e.g. https://llm.example.com, to print the whole link")
    .withStoreFlags()
    .action(async (name: string, opts: CreateFlags) => {
      if (opts.passwordStdin === opts.signInLink) throw new UserError('Give either --password-stdin or --sign-in-link.');
      if (opts.url !== undefined && !opts.signInLink) throw new UserError('--url goes with --sign-in-link.');
      const base = opts.url === undefined ? undefined : consoleBase(opts.url);
      const choice = opts.passwordStdin ? { password: await readPasswordFromStdin() } : ({ link: true } as const);
      const { createConsoleAccount } = await import('../console/accounts.js');
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
    .withStoreFlags()
    .action(async (opts: JsonFlag & StoreFlags) => {
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

  for (const [command, disabled, description] of STATUS_COMMANDS) {
    accounts
      .command(command)
      .description(description)
      .argument('<name>', 'account name')
      .withStoreFlags()
      .withRedisFlags("running gateways refuse or accept the account's keys at once")
      .action(async (name: string, opts: StoreFlags & RedisFlags) => {
        const { changeAccount } = await import('../console/accounts.js');
        const account = await withStore(opts, (store) => changeAccount(store, name, { disabled }), resolveRedis(opts));
        console.log(`Account ${account.name} is ${account.disabled ? 'disabled: it cannot sign in, and its keys are refused' : 'enabled'}.`);
      });
  }

  accounts
    .command('passwd')
    .description("change an account's console password (signs it out everywhere)")
    .argument('<name>', 'account name')
    .requiredOption('--password-stdin', 'read the new password from standard input')
    .withStoreFlags()
    .action(async (name: string, opts: StoreFlags) => {
      const password = await readPasswordFromStdin();
      const { resetPassword } = await import('../console/accounts.js');
      const { account } = await withStore(opts, (store) => resetPassword(store, name, { password }));
      console.log(`Password of ${account.name} changed; its sessions are ended.`);
    });

  accounts
    .command('limits')
    .description("show or change the limits every key of an account shares (only the flags given change; `none` removes one)")
    .argument('<name>', 'account name')
    .withLimitFlags()
    .option('--json', 'print one JSON object')
    .withStoreFlags()
    .withConfigFlag()
    .withRedisFlags('running gateways are told of the change')
    .action(async (name: string, opts: LimitFlags & StoreFlags & ConfigFlags & RedisFlags & JsonFlag) => {
      const { setAccountLimits, KeyManagementError } = await import('../auth/keys-service.js');
      const account = await withStore(opts, async (store, _hasher, { dataDir, configFile }) => {
        const current = await store.accounts.byName(name);
        if (current === undefined) throw new KeyManagementError(`No account is named '${name}'.`);
        const changed = await setAccountLimits(store, name, applyLimitFlags(current.limits, opts));
        // The account's budget binds on every request of its keys: every model is checked, not one key's list.
        if (opts.budgetUsd !== undefined && opts.budgetUsd !== 'none') await warnOfUnpricedModels(await loadCatalogue(store, dataDir, configFile), null, `The account ${name}`);
        if (opts.mcp !== undefined && opts.mcp !== 'none') await warnOfUnknownMcpServers(store, configFile, opts.mcp, `the account ${name}`);
        return changed;
      }, resolveRedis(opts));
      if (opts.json) console.log(JSON.stringify({ account: account.name, limits: account.limits }));
      else console.log(`Account ${account.name}: ${describeLimits(account.limits)}.`);
    });
}
