import type { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { envSetting } from './settings.js';

/** How long an exit waits for the log lines still buffered to be written. */
const EXIT_FLUSH_MS = 1_000;

/**
 * Structured logs on stderr (stdout belongs to command output such as a new key). Request headers
 * and bodies are never logged, so no key or upstream credential can reach a log.
 */
export function createLogger(level: string = envSetting('SLUICE_LOG_LEVEL') ?? 'info'): Logger {
  return pino({ level, base: { service: 'sluice' } }, pino.destination({ fd: 2, sync: false }));
}

/** The part of pino's stderr destination (a SonicBoom) an exit uses. */
interface Destination extends EventEmitter {
  end(): void;
  flushSync(): void;
}

/**
 * Writes the lines still buffered, then exits. Pino's own flush at exit is synchronous and retries
 * a failing write every 100 ms for ever: with stderr's reader gone and the EPIPE not yet seen by
 * the asynchronous writes, the process would hang in its exit, deaf to every signal. So the lines
 * are written asynchronously and the destination closed first (an EPIPE makes pino drop the rest),
 * and whatever is left after EXIT_FLUSH_MS is dropped rather than waited for.
 */
export function exitAfterLogFlush(logger: Logger, code: number): void {
  const destination = (logger as unknown as Record<symbol, Destination>)[pino.symbols.streamSym]!;
  const exit = () => {
    destination.flushSync = () => undefined;
    process.exit(code);
  };
  setTimeout(exit, EXIT_FLUSH_MS).unref();
  destination.once('close', exit);
  destination.once('error', exit);
  try {
    destination.end();
  } catch {
    exit(); // already closed
  }
}
