import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { importOrphanedJournals, runningJournalOwners } from '../usage/ledger-journal.js';
import { UserError } from '../core/user-error.js';
import { copyStore } from '../store/copy-store.js';
import { maskUrl } from '../core/masked-url.js';
import { checkPostgresUrl, openSqliteStore, openStore, SQLITE_FILE } from '../store/open-store.js';

/** Rows between two progress lines on stderr while a table is copied. */
const PROGRESS_EVERY = 100_000;

/**
 * `sluice store copy --from DIR --to URL`. Refuses while a gateway runs on DIR (its last ledger
 * rows would be missed); otherwise first imports the journals a stopped gateway left in DIR, as
 * the next start would, so that the copy has every row.
 */
export async function copyCommand(options: { from: string; to: string; batch: number }): Promise<void> {
  const from = resolve(options.from);
  checkPostgresUrl(options.to, '--to');
  const masked = maskUrl(options.to);
  if (!existsSync(join(from, SQLITE_FILE))) throw new UserError(`${from} has no ${SQLITE_FILE}: nothing to copy.`);
  const running = runningJournalOwners(from);
  if (running.length > 0) {
    throw new UserError(`a gateway is running on ${from} (process ${running.join(', ')}): stop it first, so that the copy has its last ledger rows.`);
  }

  const source = await openSqliteStore(from);
  try {
    const imported = await importOrphanedJournals(from, source.usage, pino({ level: 'silent' }));
    if (imported > 0) console.log(`Imported ${imported} ledger rows left in ${join(from, 'ledger')} into ${source.location}.`);
    const target = await openStore({ kind: 'postgres', url: options.to });
    try {
      const shown = new Map<string, number>();
      const tables = await copyStore(source.db, target.db, {
        batch: options.batch,
        progress: (table, done) => {
          const step = Math.floor(done / PROGRESS_EVERY);
          if (step > (shown.get(table) ?? 0)) process.stderr.write(`  ${table}: ${done} rows…\n`);
          shown.set(table, step);
        },
      });
      console.log(`Copied ${source.location} into ${masked}:`);
      const width = Math.max(...tables.map((t) => t.table.length));
      for (const { table, copied, present } of tables) console.log(`  ${table.padEnd(width)}  ${String(copied).padStart(9)} copied  ${String(present).padStart(9)} already there`);
      console.log('Console sessions are not copied: people sign in again.');
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
  printSecretsReminder(from, masked);
}

/** Names where the replicas get the source's secrets from; never prints a secret. */
function printSecretsReminder(from: string, masked: string): void {
  console.log(`\nEvery gateway on ${masked} needs this deployment's key pepper and credential key, or its keys are refused and the console's upstream credentials cannot be read:`);
  for (const [name, file, what] of [
    ['SLUICE_KEY_PEPPER', 'key-pepper', 'key pepper'],
    ['SLUICE_CREDENTIAL_KEY', 'credential-key', 'credential key'],
  ] as const) {
    const path = join(from, file);
    if (existsSync(path)) console.log(`  ${name}_FILE=${path}  (or a copy of that file, or a secret holding its bytes; the ${what} is not in the database)`);
    else console.log(`  ${name}: ${from} has no ${file}: the source ran with ${name} or ${name}_FILE (or never needed one); give every gateway the same`);
  }
}
