import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { UserError } from './user-error.js';

/** Where things are: each from a flag, else the environment, else the embedded default. */
export interface Settings {
  readonly dataDir: string;
  /** undefined when no file was named and ./sluice.yaml does not exist. */
  readonly configFile: string | undefined;
  /** A PostgreSQL URL (`--database`, else SLUICE_DATABASE_URL); undefined: the SQLite file in the data directory. */
  readonly databaseUrl: string | undefined;
}

export const DEFAULT_CONFIG_FILE = 'sluice.yaml';

/**
 * A SLUICE_* variable's value. Set but empty (`SLUICE_CONFIG=` in a compose file or a unit) counts
 * as unset, for every variable alike, rather than as an empty path, URL or number.
 */
export function envSetting(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

export function resolveSettings(flags: { data?: string; config?: string; database?: string }, env: NodeJS.ProcessEnv = process.env): Settings {
  const dataDir = resolve(flags.data ?? envSetting('SLUICE_DATA', env) ?? './data');
  const named = flags.config ?? envSetting('SLUICE_CONFIG', env);
  const configFile = named !== undefined ? resolve(named) : existsSync(DEFAULT_CONFIG_FILE) ? resolve(DEFAULT_CONFIG_FILE) : undefined;
  // An empty --database '' also means the embedded store.
  const database = flags.database ?? envSetting('SLUICE_DATABASE_URL', env);
  return { dataDir, configFile, databaseUrl: database === undefined || database === '' ? undefined : database };
}

export const DEFAULT_REDIS_PREFIX = 'sluice:';

export interface RedisSettings {
  /** undefined: no Redis. */
  readonly redisUrl: string | undefined;
  readonly redisPrefix: string;
}

/** `--redis` (else SLUICE_REDIS_URL) and `--redis-prefix` (else SLUICE_REDIS_PREFIX, else `sluice:`). */
export function resolveRedis(flags: { redis?: string; redisPrefix?: string }, env: NodeJS.ProcessEnv = process.env): RedisSettings {
  const url = flags.redis ?? envSetting('SLUICE_REDIS_URL', env);
  if (url !== undefined) {
    let protocol: string | undefined;
    try {
      protocol = new URL(url).protocol;
    } catch {
      protocol = undefined;
    }
    // The value is not repeated: it may hold a password.
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      throw new UserError(`${flags.redis !== undefined ? '--redis' : 'SLUICE_REDIS_URL'}: expected redis://[[user]:password@]host[:port][/db] or rediss://… (TLS)`);
    }
  }
  return { redisUrl: url, redisPrefix: flags.redisPrefix ?? envSetting('SLUICE_REDIS_PREFIX', env) ?? DEFAULT_REDIS_PREFIX };
}

/** `HOST:PORT`, `[v6]:PORT` or `:PORT`. */
export function parseListen(value: string, flag = '--listen'): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65_535) throw new UserError(`${flag}: expected HOST:PORT, got '${value}'`);
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}
