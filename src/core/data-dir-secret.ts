import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from './user-error.js';

/**
 * A 32-byte server-side secret kept in a file of the data directory (mode 0600), created on first
 * use. Several processes may start at once: the first to create the file wins and the others read it.
 */
export function readOrCreateDataSecret(dataDir: string, file: string): Buffer {
  const path = join(dataDir, file);
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  // With a PostgreSQL store nothing else may have made the data directory yet.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Written whole to a private temporary file, then linked into place: link() fails if another
  // process got there first (then read theirs), and no reader ever sees a half-written file.
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(temporary, randomBytes(32), { flag: 'wx', mode: 0o600 });
  try {
    chmodSync(temporary, 0o600);
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  return readFileSync(path);
}

/**
 * A server-side secret that every process of a deployment must share: from the variable `name`
 * (its UTF-8 bytes), from the file named by `${name}_FILE` (its bytes as they are, e.g. the data
 * directory file of an embedded deployment or a mounted secret), else from the data directory's
 * `file`, created on first use. Setting both variables, or naming a file that cannot be read, stops
 * start-up with a message that names the variable and the path, never the secret.
 */
export function sharedSecret(name: string, dataDir: string, file: string, env: NodeJS.ProcessEnv): Buffer {
  const value = env[name];
  const path = env[`${name}_FILE`];
  const hasValue = value !== undefined && value !== '';
  const hasPath = path !== undefined && path !== '';
  if (hasValue && hasPath) throw new UserError(`Set ${name} or ${name}_FILE, not both.`);
  if (hasValue) return Buffer.from(value, 'utf8');
  if (!hasPath) return readOrCreateDataSecret(dataDir, file);
  let secret: Buffer;
  try {
    secret = readFileSync(path);
  } catch (error) {
    throw new UserError(`${name}_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`);
  }
  if (secret.length === 0) throw new UserError(`${name}_FILE: ${path} is empty.`);
  return secret;
}

/** Whether the secret `name` comes from the environment (its value or its file) rather than the data directory. */
export function sharedSecretFromEnv(name: string, env: NodeJS.ProcessEnv): boolean {
  return (env[name] ?? '') !== '' || (env[`${name}_FILE`] ?? '') !== '';
}
