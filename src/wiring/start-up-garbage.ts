import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Once a process has loaded its modules: one full collection that also hands back what loading made
 * V8 grow. Loading and compiling the gateway's modules allocates in bursts that grow the young
 * generation to its largest (about 30 MB per worker, touched and so resident) and no collection
 * that follows shrinks it while the process stays idle: V8 shrinks it only in a collection that
 * asks to reduce memory ("last resort"). Under load it grows again as it would have. Called before
 * anything is opened (store, Redis, sockets, workers), so nothing waits on its pause: about 0.1 s of
 * CPU in a worker, once.
 *
 * `gc` is taken from a fresh context, so the gateway's own global scope never sees it.
 */
export function collectStartUpGarbage(): void {
  type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
  // Started with --expose-gc (NODE_OPTIONS), the flag is left as it was.
  let gc = (globalThis as { gc?: Gc }).gc;
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as Gc;
    setFlagsFromString('--no-expose-gc');
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
