import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { UserError } from '../core/user-error.js';

/**
 * What `serve` checks before any worker starts, so that the commonest mistakes end in one plain
 * line (a UserError) rather than a stack trace from deep inside start-up, once per worker.
 */

/** The data directory exists (or can be made) and this process can read and write it. */
export function checkDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (!statSync(dataDir).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'EACCES' || code === 'EPERM'
        ? 'permission denied (the gateway reads and writes it: the store, the ledger journals, the key pepper)'
        : code === 'ENOTDIR' || code === 'EEXIST'
          ? 'it, or a folder on its path, is a file'
          : code === 'EROFS'
            ? 'it is on a read-only file system'
            : (code ?? String(error));
    throw new UserError(`cannot use the data directory ${dataDir}: ${why}; choose another with --data (env SLUICE_DATA)`);
  }
}

/**
 * The address can be listened on: tried with a throwaway listener closed at once. A gateway that
 * takes the port in between still fails at its own listen, with the same message (listenFailure).
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error) => reject(listenFailure(error, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** A listen error as one line that names the address and the way out. */
export function listenFailure(error: unknown, host: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'EADDRINUSE') return new UserError(`cannot listen on ${address}: the address is already in use (another gateway?); choose another with --listen (env SLUICE_LISTEN)`);
  if (code === 'EACCES') return new UserError(`cannot listen on ${address}: permission denied (ports below 1024 need privileges); choose another with --listen`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new UserError(`cannot listen on ${address}: this machine has no such address; choose another with --listen`);
  return error instanceof Error ? error : new Error(String(error));
}
