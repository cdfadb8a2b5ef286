// The `sluice` program: its version, one registration per command group, and how a mistake is reported.
// The store, the configuration and the services load inside the commands that use them, and a
// command group's module loads only when its command runs (or the help lists them all): a cluster
// primary (which only supervises) and each short command then load no more than they need.
import { createRequire } from 'node:module';
import { InvalidArgumentError, type Command } from 'commander';
import { UserError } from '../core/user-error.js';
import { SluiceCommand } from './command.js';

/** The installed package's version (src/cli/ and dist/cli/ both sit two levels below package.json), and the runtime's: `0.1.0 (Node.js v24.21.0)`. */
function versions(): string {
  const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
  return `${version} (Node.js ${process.version})`;
}

type AddGroup = (program: SluiceCommand) => void;

/** Each group's first word and its registration, in the order `sluice --help` lists them. */
const COMMAND_GROUPS: Readonly<Record<string, () => Promise<AddGroup>>> = {
  serve: async () => (await import('./serve.js')).addServeCommand,
  init: async () => (await import('./init.js')).addInitCommand,
  keys: async () => (await import('./keys.js')).addKeysCommands,
  accounts: async () => (await import('./accounts.js')).addAccountsCommands,
  usage: async () => (await import('./usage.js')).addUsageCommand,
  doctor: async () => (await import('./doctor.js')).addDoctorCommand,
  prices: async () => (await import('./prices.js')).addPricesCommands,
  store: async () => (await import('./store.js')).addStoreCommands,
};

/**
 * The program for `argv`: with the one command group its first word names, which is all commander
 * looks at then; with every group otherwise (no command, `help`, an option, a mistyped command).
 */
export async function buildCli(argv: readonly string[] = []): Promise<Command> {
  const program = new SluiceCommand('sluice').description('Sluice, an LLM gateway').showHelpAfterError().version(versions(), '-v, --version', "print Sluice's version and the Node.js it runs on");
  const named = argv[2];
  const groups = named !== undefined && Object.hasOwn(COMMAND_GROUPS, named) ? [COMMAND_GROUPS[named]!] : Object.values(COMMAND_GROUPS);
  for (const addGroup of await Promise.all(groups.map((load) => load()))) addGroup(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await (await buildCli(argv)).parseAsync([...argv]);
  } catch (error) {
    if (error instanceof UserError || error instanceof InvalidArgumentError) {
      console.error(`sluice: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
}
