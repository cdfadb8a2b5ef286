// `sluice keys`: create, list, disable/enable/revoke and limit API keys, and how a key is printed.
import { InvalidArgumentError, Option } from 'commander';
import { maskSecret } from '../auth/key-secret.js';
import { describeLimits } from '../core/key-limits.js';
import { resolveRedis } from '../core/settings.js';
import { UserError } from '../core/user-error.js';
import type { KeyRecord, KeyStatus } from '../store/store.js';
import { applyLimitFlags, type ConfigFlags, type JsonFlag, type LimitFlags, type RedisFlags, type SluiceCommand, type StoreFlags } from './options.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import { loadCatalogue, warnOfUnpricedModels } from './catalogue.js';
import { warnOfUnknownMcpServers } from './mcp-servers.js';
import { printTable } from './table.js';
import { withStore } from './with-store.js';

function isoDate(value: string): number {
  const at = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at)) throw new InvalidArgumentError('expected an ISO 8601 date, e.g. 2027-01-31 or 2027-01-31T12:00:00Z');
  return at;
}

const isoOrNull = (at: number | null) => (at === null ? null : new Date(at).toISOString());

function keyJson(key: KeyRecord) {
  return {
    id: key.id,
    name: key.name,
    account: key.accountName,
    masked_key: maskSecret(key.secretPrefix, key.secretLastFour),
    status: key.status,
    models: key.models,
    expires_at: isoOrNull(key.expiresAt),
    created_at: new Date(key.createdAt).toISOString(),
    last_used_at: isoOrNull(key.lastUsedAt),
    limits: key.limits,
    account_limits: key.accountLimits,
  };
}

function printKeyTable(keys: readonly KeyRecord[]): void {
  const rows = keys.map((key) => {
    const json = keyJson(key);
    return [json.id, json.name, json.account, json.masked_key, json.status, key.models?.join(',') ?? '*', json.expires_at ?? '-', json.last_used_at ?? 'never', describeLimits(key.limits)];
  });
  printTable(['ID', 'NAME', 'ACCOUNT', 'KEY', 'STATUS', 'MODELS', 'EXPIRES', 'LAST USED', 'LIMITS'], rows);
}

/**
 * Refuses model ids the catalogue lacks (as a gateway on this configuration and store would serve
 * them): a typo would make a key that can use nothing.
 */
async function checkModelsKnown(catalogue: Catalogue, configFile: string | undefined, models: readonly string[]): Promise<void> {
  const { aliasedNames, aliasedNamesProblem } = await import('../catalogue/access.js');
  const aliased = aliasedNames(catalogue, models);
  if (aliased.length > 0) throw new UserError(aliasedNamesProblem(aliased));
  const unknown = models.filter((model) => catalogue.get(model) === undefined);
  if (unknown.length === 0) return;
  const known = catalogue.models.length === 0 ? 'it has no models yet' : `it has ${catalogue.models.map((m) => m.id).slice(0, 20).join(', ')}${catalogue.models.length > 20 ? ', …' : ''}`;
  const where = configFile === undefined ? 'no configuration file (./sluice.yaml absent; name one with --config) and the console' : `${configFile} and the console`;
  throw new UserError(`the catalogue (${where}) has no model ${unknown.map((m) => `'${m}'`).join(', ')}; ${known}. Pass --allow-unknown to allow it before it exists.`);
}

interface CreateFlags extends LimitFlags, StoreFlags, ConfigFlags, RedisFlags, JsonFlag {
  account: string;
  name?: string;
  models?: string;
  allowUnknown?: boolean;
  expires?: number;
}

const STATUS_COMMANDS: readonly [string, KeyStatus, string][] = [
  ['disable', 'disabled', 'refuse a key until it is enabled again'],
  ['enable', 'active', 'accept a disabled key again'],
  ['revoke', 'revoked', 'refuse a key for good'],
];

export function addKeysCommands(program: SluiceCommand): void {
  const keys = program.command('keys').description('manage API keys');

  keys
    .command('create')
    .description('create a key (and its account if new); prints the secret once, on the last line')
    .withLimitFlags()
    .requiredOption('--account <name>', 'owning account')
    .option('--name <name>', 'a name for the key')
    .option('--models <ids>', 'comma-separated model ids the key may use (default: every model); each must be in the catalogue')
    .option('--allow-unknown', 'allow --models ids the catalogue does not have (yet)')
    .addOption(new Option('--expires <iso-date>', 'expiry, e.g. 2027-01-31').argParser(isoDate))
    .option('--json', 'print one JSON object')
    .withStoreFlags()
    .withConfigFlag()
    .withRedisFlags('running gateways are told of the new key')
    .action(async (opts: CreateFlags) => {
      const models = opts.models?.split(',').map((m) => m.trim()).filter((m) => m !== '');
      // An empty list would silently make an unrestricted key.
      if (models !== undefined && models.length === 0) throw new UserError('--models needs at least one model id.');
      const limits = applyLimitFlags(null, opts);
      const { createKey } = await import('../auth/keys-service.js');
      const { key, secret } = await withStore(
        opts,
        async (store, hasher, { dataDir, configFile }) => {
          const checked = (models !== undefined && !opts.allowUnknown) || limits.budgetUsd !== undefined;
          const catalogue = checked ? await loadCatalogue(store, dataDir, configFile) : undefined;
          if (catalogue !== undefined && models !== undefined && !opts.allowUnknown) await checkModelsKnown(catalogue, configFile, models);
          const created = await createKey(store, hasher, { accountName: opts.account, name: opts.name, models, expiresAt: opts.expires, limits });
          if (catalogue !== undefined && limits.budgetUsd !== undefined) await warnOfUnpricedModels(catalogue, models ?? null, 'This key');
          if (limits.mcp !== undefined) await warnOfUnknownMcpServers(store, configFile, limits.mcp, 'this key');
          return created;
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
    .withStoreFlags()
    .action(async (opts: { account?: string } & JsonFlag & StoreFlags) => {
      const list = await withStore(opts, (store) => store.keys.list(opts.account === undefined ? {} : { accountName: opts.account }));
      if (opts.json) console.log(JSON.stringify(list.map(keyJson)));
      else if (list.length === 0) console.log('No keys.');
      else printKeyTable(list);
    });

  for (const [name, status, description] of STATUS_COMMANDS) {
    keys
      .command(name)
      .description(description)
      .argument('<id>', 'key id (see `sluice keys list`)')
      .withStoreFlags()
      .withRedisFlags('running gateways refuse or accept the key at once')
      .action(async (id: string, opts: StoreFlags & RedisFlags) => {
        const { changeKeyStatus } = await import('../auth/keys-service.js');
        const key = await withStore(opts, (store) => changeKeyStatus(store, id, status), resolveRedis(opts));
        console.log(`Key ${key.id} is ${key.status}.`);
      });
  }

  keys
    .command('limits')
    .description("show or change a key's limits (only the flags given change; `none` removes one)")
    .argument('<id>', 'key id (see `sluice keys list`)')
    .withLimitFlags()
    .option('--json', 'print one JSON object')
    .withStoreFlags()
    .withConfigFlag()
    .withRedisFlags('running gateways are told of the change')
    .action(async (id: string, opts: LimitFlags & StoreFlags & ConfigFlags & RedisFlags & JsonFlag) => {
      const { setKeyLimits, KeyManagementError } = await import('../auth/keys-service.js');
      const key = await withStore(opts, async (store, _hasher, { dataDir, configFile }) => {
        const current = await store.keys.get(id);
        if (current === undefined) throw new KeyManagementError(`No key has the id '${id}'.`);
        const changed = await setKeyLimits(store, id, applyLimitFlags(current.limits, opts));
        if (opts.budgetUsd !== undefined && opts.budgetUsd !== 'none') await warnOfUnpricedModels(await loadCatalogue(store, dataDir, configFile), changed.models, 'This key');
        if (opts.mcp !== undefined && opts.mcp !== 'none') await warnOfUnknownMcpServers(store, configFile, opts.mcp, 'this key');
        return changed;
      }, resolveRedis(opts));
      if (opts.json) console.log(JSON.stringify(keyJson(key)));
      else console.log(`Key ${key.id}: ${describeLimits(key.limits)}${key.accountLimits === null ? '' : ` (account ${key.accountName}: ${describeLimits(key.accountLimits)})`}.`);
    });
}
