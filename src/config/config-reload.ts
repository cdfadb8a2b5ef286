import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { emptyConfig, parseConfig, readConfigText, type GatewayConfig } from './config-file.js';

/** Editors write a file in several steps (truncate, write, rename): one reload once they are done. */
const SETTLE_MS = 150;

/**
 * Keeps the configuration file in force while the gateway runs: it is read again on SIGHUP and
 * whenever it changes (its folder is watched, so an editor's replace-by-rename is seen, and so is a
 * file that appears later). A file that does not parse or validate is not applied: the previous
 * configuration stays, and the log says why. A file that was not named (`./sluice.yaml`) may be
 * absent, which is an empty configuration; a named one that disappears keeps the previous one.
 */
export class ConfigReload {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastText: string | undefined;
  private running: Promise<void> = Promise.resolve();
  private started = false;
  /** A SIGHUP came before start(): start() applies it. */
  private hungUpEarly = false;
  private readonly onSignal = () => {
    if (this.started) void this.reload('SIGHUP');
    else this.hungUpEarly = true;
  };

  constructor(
    readonly path: string,
    /** The file was found by default rather than named: its absence is an empty configuration. */
    private readonly optional: boolean,
    private readonly apply: (config: GatewayConfig) => Promise<void>,
    private readonly logger: Logger,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** The file existed when last read. */
  get found(): boolean {
    return this.lastText !== undefined;
  }

  /** The configuration to start with; a ConfigError (one line) when the file cannot be read or is invalid. */
  load(): GatewayConfig {
    this.lastText = readConfigText(this.path, this.optional);
    return this.lastText === undefined ? emptyConfig() : parseConfig(this.lastText, this.path, this.env);
  }

  /**
   * Takes SIGHUP from now on, before start(): a reload sent while the gateway starts (`systemctl
   * reload` just after a start, during a long migration) would otherwise end the process, SIGHUP's
   * default. start() applies it.
   */
  catchSignals(): void {
    process.off('SIGHUP', this.onSignal);
    process.on('SIGHUP', this.onSignal);
  }

  /** Reloads on SIGHUP and on changes to the file from now on. */
  start(): void {
    this.catchSignals();
    this.started = true;
    if (this.hungUpEarly) void this.reload('SIGHUP');
    const file = basename(this.path);
    try {
      this.watcher = watch(dirname(this.path), (_event, name) => {
        // `..data`: a Kubernetes ConfigMap volume swaps a directory behind the file's symlink.
        if (name !== null && name !== file && !name.startsWith('..')) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.reload('file changed'), SETTLE_MS);
      });
      this.watcher.on('error', (error) => this.logger.warn({ err: error, config: this.path }, 'watching the configuration file failed; reload it with SIGHUP'));
    } catch (error) {
      this.logger.warn({ err: error, config: this.path }, 'cannot watch the configuration file; reload it with SIGHUP');
    }
  }

  stop(): void {
    process.off('SIGHUP', this.onSignal);
    clearTimeout(this.timer);
    this.watcher?.close();
  }

  /** Reads the file again and applies it when its text changed and it is valid; one reload at a time. */
  reload(reason: string): Promise<void> {
    this.running = this.running.then(() => this.reloadNow(reason));
    return this.running;
  }

  private async reloadNow(reason: string): Promise<void> {
    let text: string | undefined;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' || !this.optional) {
        this.logger.error({ config: this.path, reason, code }, `configuration not reloaded: cannot read ${this.path} (${code ?? String(error)}); the previous configuration stays in force`);
        return;
      }
    }
    if (text === this.lastText) {
      // Asked for by hand: say it was heard.
      if (reason === 'SIGHUP') this.logger.info({ config: this.path, reason }, 'configuration file unchanged');
      return;
    }
    let config: GatewayConfig;
    try {
      config = text === undefined ? emptyConfig() : parseConfig(text, this.path, this.env);
    } catch (error) {
      this.logger.error({ config: this.path, reason }, `configuration not reloaded: ${(error as Error).message}; the previous configuration stays in force`);
      return;
    }
    this.lastText = text;
    try {
      await this.apply(config);
    } catch (error) {
      this.logger.error({ err: error, config: this.path, reason }, 'applying the reloaded configuration failed');
      return;
    }
    this.logger.info({ config: this.path, reason, providers: config.providers.length, models: config.models.length }, 'configuration reloaded');
  }
}
