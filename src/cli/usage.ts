// `sluice usage`: requests, tokens and spend from the daily roll-ups, per day, model or key.
import { UserError } from '../core/user-error.js';
import type { UsageFigures } from '../store/store.js';
import type { JsonFlag, SluiceCommand, StoreFlags } from './options.js';
import { printTable } from './table.js';
import { withStore } from './with-store.js';

/** Days `sluice usage` covers without --since, today included. */
const DEFAULT_USAGE_DAYS = 30;

interface UsageFlags extends StoreFlags, JsonFlag {
  account?: string;
  key?: string;
  since?: string;
  by?: string;
}

/** Its flags checked before the store is opened, each mistake one line naming the flag. */
async function usageCommand(opts: UsageFlags): Promise<void> {
  const { addFigures, GROUPINGS, isoDay, parseIsoDay, spendText, usageRecord, ZERO } = await import('../usage/usage-report.js');
  const { dayOf } = await import('../store/sql-status.js');
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
    [g.requests, g.failed, g.inputTokens, g.outputTokens].map((n) => n.toLocaleString('en-US')).concat(spendText(g, (usd) => usd.toFixed(4)));
  const label = { day: ['DAY'], model: ['MODEL'], key: ['ACCOUNT', 'KEY ID', 'KEY NAME'] }[grouping];
  const rows = groups.map((g) => {
    if (grouping === 'day') return [isoDay(g.day!), ...figures(g)];
    if (grouping === 'model') return [g.model!, ...figures(g)];
    return [g.accountName ?? '?', g.keyId!, g.keyName ?? '?', ...figures(g)];
  });
  rows.push([`total ${isoDay(fromDay)} to ${isoDay(toDay)}`, ...label.slice(1).map(() => ''), ...figures(groups.reduce<UsageFigures>(addFigures, ZERO))]);
  printTable([...label, 'REQUESTS', 'FAILED', 'INPUT TOKENS', 'OUTPUT TOKENS', 'COST USD'], rows, 5);
}

export function addUsageCommand(program: SluiceCommand): void {
  program
    .command('usage')
    .description('usage from the daily roll-ups (UTC days): requests, tokens and spend per day, model or key')
    .option('--account <name>', 'only this account')
    .option('--key <id>', 'only this key (see `sluice keys list`)')
    .option('--since <date>', `from this day on, YYYY-MM-DD (default: the last ${DEFAULT_USAGE_DAYS} days, today included)`)
    .option('--by <grouping>', 'one line per day, model or key (default day)')
    .option('--json', 'print a JSON array')
    .withStoreFlags()
    .action(usageCommand);
}
