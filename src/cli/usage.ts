// `sluice usage`: requests, tokens and spend from the daily roll-ups, per day, model or key.
import { toolOfRolledUp } from '../core/tool-calls.js';
import { UserError } from '../core/user-error.js';
import type { UsageFigures } from '../store/store.js';
import type { JsonFlag, SluiceCommand, StoreFlags } from './command.js';
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

  const { groups, toolCalls } = await withStore(opts, async (store) => {
    const account = opts.account === undefined ? undefined : await store.accounts.byName(opts.account);
    if (opts.account !== undefined && account === undefined) throw new UserError(`No account is named '${opts.account}'.`);
    const key = opts.key === undefined ? undefined : await store.keys.get(opts.key);
    if (opts.key !== undefined && key === undefined) throw new UserError(`No key has the id '${opts.key}'.`);
    if (key !== undefined && account !== undefined && key.accountId !== account.id) throw new UserError(`Key ${key.id} belongs to the account ${key.accountName}, not ${account.name}.`);
    const filter = { fromDay, toDay, ...(account && { accountId: account.id }), ...(key && { keyId: key.id }) };
    const groups = await store.usageDaily.summary(filter, [grouping]);
    const byModel = grouping === 'model' ? groups : await store.usageDaily.summary(filter, ['model']);
    return { groups, toolCalls: byModel.filter((g) => toolOfRolledUp(g.model!) !== undefined).reduce((sum, g) => sum + g.requests, 0) };
  });

  if (opts.json) return console.log(JSON.stringify(groups.map((group) => usageRecord(group, grouping))));
  if (groups.length === 0) return console.log(`No usage from ${isoDay(fromDay)} to ${isoDay(toDay)} (UTC).`);
  const figures = (g: UsageFigures) =>
    [g.requests, g.failed, g.inputTokens, g.outputTokens].map((n) => n.toLocaleString('en-US')).concat(spendText(g, (usd) => usd.toFixed(4)));
  const label = { day: ['DAY'], model: ['MODEL'], key: ['ACCOUNT', 'KEY ID', 'KEY NAME'] }[grouping];
  const total = `total ${isoDay(fromDay)} to ${isoDay(toDay)}`;
  // By model, MCP tool calls are a table of their own: calls, failures and spend, no token columns.
  const tools = grouping === 'model' ? groups.filter((g) => toolOfRolledUp(g.model!) !== undefined) : [];
  const lines = grouping === 'model' ? groups.filter((g) => toolOfRolledUp(g.model!) === undefined) : groups;
  if (lines.length > 0) {
    const rows = lines.map((g) => {
      if (grouping === 'day') return [isoDay(g.day!), ...figures(g)];
      if (grouping === 'model') return [g.model!, ...figures(g)];
      return [g.accountName ?? '?', g.keyId!, g.keyName ?? '?', ...figures(g)];
    });
    rows.push([total, ...label.slice(1).map(() => ''), ...figures(lines.reduce<UsageFigures>(addFigures, ZERO))]);
    printTable([...label, 'REQUESTS', 'FAILED', 'INPUT TOKENS', 'OUTPUT TOKENS', 'COST USD'], rows, 5);
  }
  if (tools.length > 0) {
    if (lines.length > 0) console.log('');
    const calls = (g: UsageFigures) => [g.requests.toLocaleString('en-US'), g.failed.toLocaleString('en-US'), spendText(g, (usd) => usd.toFixed(4))];
    const rows = tools.map((g) => [toolOfRolledUp(g.model!)!, ...calls(g)]);
    rows.push([total, ...calls(tools.reduce<UsageFigures>(addFigures, ZERO))]);
    printTable(['MCP TOOL', 'CALLS', 'FAILED', 'COST USD'], rows, 3);
  }
  // By day or key, a line's requests include its MCP tool calls: said once, so that they are not taken for model requests.
  if (grouping !== 'model' && toolCalls > 0) console.log(`Requests include ${toolCalls.toLocaleString('en-US')} MCP tool call${toolCalls === 1 ? '' : 's'} (no tokens); \`--by model\` shows them by tool.`);
}

export function addUsageCommand(program: SluiceCommand): void {
  program
    .command('usage')
    .description('usage from the daily roll-ups (UTC days): requests, tokens and spend per day, model or key (by model, MCP tool calls per tool)')
    .option('--account <name>', 'only this account')
    .option('--key <id>', 'only this key (see `sluice keys list`)')
    .option('--since <date>', `from this day on, YYYY-MM-DD (default: the last ${DEFAULT_USAGE_DAYS} days, today included)`)
    .option('--by <grouping>', 'one line per day, model or key (default day)')
    .option('--json', 'print a JSON array')
    .withStoreFlags()
    .action(usageCommand);
}
