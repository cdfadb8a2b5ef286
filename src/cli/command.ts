// The flags several command groups share (store, configuration, Redis, limits), the parsers they
// use, and SluiceCommand, through which every command adds them in the order its help lists them.
// Without the limits' schema (zod, in options.ts): `sluice serve`'s cluster primary loads this only.
import { Command, InvalidArgumentError, Option } from 'commander';
import { BUDGET_PERIODS } from '../core/budget-periods.js';
import type { Limits } from '../core/key-limits.js';
import { readMcpAllowList } from '../core/mcp-access.js';

/** Where a command's store and local files are. */
export interface StoreFlags {
  data?: string;
  database?: string;
}

export interface ConfigFlags {
  config?: string;
}

/** Where a command publishes its change, so running gateways see it at once. */
export interface RedisFlags {
  redis?: string;
  redisPrefix?: string;
}

export interface JsonFlag {
  json?: boolean;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

export const redisOption = (what: string) => new Option('--redis <url>', `Redis: ${what} (env SLUICE_REDIS_URL; redis://[[user]:password@]host[:port][/db])`);

export interface LimitFlags {
  rpm?: number | 'none';
  tpm?: number | 'none';
  concurrency?: number | 'none';
  budgetUsd?: number | 'none';
  budgetPeriod?: Limits['budgetPeriod'];
  /** The MCP allow-list, replacing the current one whole; `none` removes it (the key or account then reaches no MCP server). */
  mcp?: readonly string[] | 'none';
}

/** `--mcp github,files/read_file`: comma-separated server ids and `server/tool` entries, or `none`. */
export function mcpAllowList(value: string): readonly string[] | 'none' {
  if (value.trim() === 'none') return 'none';
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  // An empty list is not "no limit": it would read as every server to a reader of the command.
  if (entries.length === 0) throw new InvalidArgumentError("expected server ids or 'server/tool' entries, comma-separated (none: no MCP server)");
  const list = readMcpAllowList(entries);
  if ('problem' in list) throw new InvalidArgumentError(list.problem);
  return list;
}

/** A commander Command whose shared flags chain like its own methods; commander builds every subcommand through createCommand. */
export class SluiceCommand extends Command {
  override createCommand(name?: string): SluiceCommand {
    return new SluiceCommand(name);
  }

  /** --data and --database. */
  withStoreFlags(): this {
    return this.addOption(new Option('--data <dir>', 'data directory (env SLUICE_DATA, default ./data)')).addOption(
      new Option('--database <url>', 'a PostgreSQL store, postgres://USER:PASSWORD@HOST:PORT/DB (env SLUICE_DATABASE_URL; default: SQLite in the data directory)'),
    );
  }

  /** --config. */
  withConfigFlag(): this {
    return this.addOption(new Option('--config <file>', 'configuration file (env SLUICE_CONFIG, default ./sluice.yaml when present)'));
  }

  /** --redis (what it serves this command: `what`) and --redis-prefix. */
  withRedisFlags(what: string): this {
    return this.addOption(redisOption(what)).addOption(
      new Option('--redis-prefix <prefix>', 'what every Redis key and channel of this deployment starts with (env SLUICE_REDIS_PREFIX, default sluice:)'),
    );
  }

  /** The limit flags of `keys create`, `keys limits` and `accounts limits`; `none` clears one. */
  withLimitFlags(): this {
    // 'none' is kept as is: commander reads a parser's null as "use the raw text".
    const count = (value: string) => (value === 'none' ? value : positiveInt(value));
    return this.addOption(new Option('--rpm <n>', 'requests per rolling minute (none: no limit)').argParser(count))
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
      .addOption(new Option('--budget-period <period>', 'the budget period (UTC; default month)').choices(BUDGET_PERIODS))
      .addOption(
        new Option('--mcp <entries>', "MCP servers and tools it may use at /mcp: server ids (all their tools) and 'server/tool' entries, comma-separated, replacing the list (none: no MCP server, the default)").argParser(mcpAllowList),
      );
  }
}
