import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
