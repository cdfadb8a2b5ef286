// The `sluice` program: its version, one registration per command group, and how a mistake is reported.
// The store, the configuration and the services load inside the commands that use them: a
// cluster primary (which only supervises) and each short command then load no more than they need.
import { createRequire } from 'node:module';
import { InvalidArgumentError, type Command } from 'commander';
import { UserError } from '../core/user-error.js';
import { addAccountsCommands } from './accounts.js';
import { addDoctorCommand } from './doctor.js';
import { addInitCommand } from './init.js';
import { addKeysCommands } from './keys.js';
import { SluiceCommand } from './options.js';
import { addPricesCommands } from './prices.js';
import { addServeCommand } from './serve.js';
import { addStoreCommands } from './store.js';
import { addUsageCommand } from './usage.js';

/** The installed package's version (src/cli/ and dist/cli/ both sit two levels below package.json), and the runtime's: `0.1.0 (Node.js v24.21.0)`. */
function versions(): string {
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  return `${version} (Node.js ${process.version})`;
}

/** In the order `sluice --help` lists them. */
const COMMAND_GROUPS = [addServeCommand, addInitCommand, addKeysCommands, addAccountsCommands, addUsageCommand, addDoctorCommand, addPricesCommands, addStoreCommands];

export function buildCli(): Command {
  const program = new SluiceCommand('sluice').description('Sluice, an LLM gateway').showHelpAfterError().version(versions(), '-v, --version', "print Sluice's version and the Node.js it runs on");
  for (const addGroup of COMMAND_GROUPS) addGroup(program);
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
