import { pino, type Logger } from 'pino';
import { envSetting } from './settings.js';

/**
 * Structured logs on stderr (stdout belongs to command output such as a new key). Request headers
 * and bodies are never logged, so no key or upstream credential can reach a log.
 */
export function createLogger(level: string = envSetting('SLUICE_LOG_LEVEL') ?? 'info'): Logger {
  return pino({ level, base: { service: 'sluice' } }, pino.destination({ fd: 2, sync: false }));
}
