// `sluice store`: moving a deployment's store (copy SQLite into PostgreSQL).
import { Option } from 'commander';
import { positiveInt, type SluiceCommand } from './command.js';

export function addStoreCommands(program: SluiceCommand): void {
  const store = program.command('store').description('move the store');

  store
    .command('copy')
    .description("copy an embedded deployment's store (SQLite in its data directory) into PostgreSQL; safe to run again")
    .requiredOption('--from <dir>', 'the data directory whose sluice.db is copied')
    .requiredOption('--to <url>', 'the PostgreSQL database, postgres://USER:PASSWORD@HOST:PORT/DB (migrated first)')
    .addOption(new Option('--batch <n>', 'rows read and written at a time (at most 2000)').argParser(positiveInt).default(1000))
    .action(async (opts: { from: string; to: string; batch: number }) => {
      const { copyCommand } = await import('./store-copy.js');
      await copyCommand(opts);
    });
}
