import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UserError } from './user-error.js';

/** Where things are: each from a flag, else the environment, else the embedded default. */
export interface Settings {
  readonly dataDir: string;
  /** undefined when no file was named and ./sluice.yaml does not exist. */
  readonly configFile: string | undefined;
}

export const DEFAULT_CONFIG_FILE = 'sluice.yaml';

export function resolveSettings(flags: { data?: string; config?: string }, env: NodeJS.ProcessEnv = process.env): Settings {
  const dataDir = resolve(flags.data ?? env.SLUICE_DATA ?? './data');
  const named = flags.config ?? env.SLUICE_CONFIG;
  const configFile = named !== undefined ? resolve(named) : existsSync(DEFAULT_CONFIG_FILE) ? resolve(DEFAULT_CONFIG_FILE) : undefined;
  return { dataDir, configFile };
}

/** `HOST:PORT`, `[v6]:PORT` or `:PORT`. */
export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65_535) throw new UserError(`--listen: expected HOST:PORT, got '${value}'`);
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}
