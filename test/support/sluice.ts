import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Selectable } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import { queryStore, STORE_MODE, storeEnv } from './store.js';

const run = promisify(execFile);
export const SLUICE_BIN = resolve(import.meta.dirname, '../../bin/sluice.js');

/** Every directory tempDir made in this process, removed when it exits, whatever the tests' outcome. */
const madeDirs: string[] = [];
process.once('exit', () => {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the system's temporary folder; gone when the test process ends. */
export function tempDir(prefix = 'sluice-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment for a `sluice` command with these arguments: in postgres mode, the store of the
 * data directory it names (`--data DIR`, else SLUICE_DATA), unless the test gives a database itself.
 */
export async function cliEnv(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<NodeJS.ProcessEnv> {
  if (STORE_MODE === 'sqlite' || env.SLUICE_DATABASE_URL !== undefined || args.includes('--database')) return { ...process.env, ...env };
  const flag = args.findIndex((arg) => arg === '--data' || arg.startsWith('--data='));
  const dataDir = flag === -1 ? (env.SLUICE_DATA ?? process.env.SLUICE_DATA) : args[flag] === '--data' ? args[flag + 1] : args[flag]!.slice('--data='.length);
  return { ...process.env, ...(dataDir === undefined ? {} : await storeEnv(dataDir)), ...env };
}

/**
 * Runs the real `sluice` command. One still running after 30 s (a `serve` that should have refused
 * to start) gets SIGTERM, so the test fails instead of hanging. Not execFile's own `timeout`: it
 * closes the output pipes before the signal, and a `serve --workers N` left without them does not stop.
 */
export async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const running = run(process.execPath, [SLUICE_BIN, ...args], { env: await cliEnv(args, env) });
  const timer = setTimeout(() => running.child.kill('SIGTERM'), 30_000);
  try {
    const { stdout, stderr } = await running;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  } finally {
    clearTimeout(timer);
  }
}

export interface CreatedKey {
  id: string;
  key: string;
}

/**
 * A key made by the real CLI. With `--models`, `--allow-unknown` is added unless a `--config` is
 * given: the CLI cannot see the test gateway's configuration file otherwise, and some tests name a
 * model that does not exist on purpose (keys-cli.test.ts checks the refusal itself).
 */
export async function createKey(dataDir: string, account: string, extra: string[] = []): Promise<CreatedKey> {
  const unchecked = extra.includes('--models') && !extra.includes('--config') ? ['--allow-unknown'] : [];
  const result = await cli(['keys', 'create', '--account', account, '--json', '--data', dataDir, ...unchecked, ...extra]);
  if (result.code !== 0) throw new Error(`keys create failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as CreatedKey;
}

export interface RunningSluice {
  readonly url: string;
  readonly dataDir: string;
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Reads the usage ledger from the gateway's real store (SQLite file or PostgreSQL database). */
  ledger(): Promise<LedgerRow[]>;
}

/** A ledger row as stored (the schema's own type). */
export type LedgerRow = Selectable<Database['usage_ledger']>;

/** Starts the real gateway on a free port with a configuration written from YAML text. */
export async function startSluice(options: { config?: string; dataDir?: string; env?: NodeJS.ProcessEnv; args?: string[]; cwd?: string } = {}): Promise<RunningSluice> {
  const dataDir = options.dataDir ?? tempDir();
  const args = [SLUICE_BIN, 'serve', '--listen', '127.0.0.1:0', '--data', dataDir, ...(options.args ?? [])];
  if (options.config !== undefined) {
    const file = join(dataDir, 'sluice.yaml');
    writeFileSync(file, options.config);
    args.push('--config', file);
  }
  // A test that names a database itself (or '' for SQLite whatever the mode) keeps it.
  const ownStore = options.env?.SLUICE_DATABASE_URL !== undefined || options.args?.includes('--database') === true;
  const env = { ...process.env, SLUICE_LOG_LEVEL: 'warn', ...(ownStore ? {} : await storeEnv(dataDir)), ...options.env };
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...(options.cwd === undefined ? {} : { cwd: options.cwd }) });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolvePromise, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /sluice listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolvePromise(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`sluice exited with ${code} before listening: ${stderr}`)));
  });
  const exited = new Promise<number | null>((resolvePromise) => child.once('exit', (code) => resolvePromise(code)));
  return {
    url,
    dataDir,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
    ledger() {
      return queryStore<LedgerRow>(dataDir, 'SELECT * FROM usage_ledger ORDER BY id');
    },
  };
}

/** Polls until `check` returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(check: () => T | undefined | Promise<T | undefined>, ms = 3000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function configFor(upstreamUrl: string, extra = ''): string {
  return `
providers:
  - id: fake-vllm
    kind: openai
    base_url: ${upstreamUrl}
    api_key: upstream-secret-credential
models:
  - id: llama-8b
    provider: fake-vllm
    upstream_model: upstream-model
    owned_by: meta
    created: 1721692800
    display_name: Llama 3.1 8B
    context_window: 131072
    max_output_tokens: 4096
    endpoints: [completions]
    pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6 }
  - id: other-model
    provider: fake-vllm
    upstream_model: upstream-model
  - id: chat-only
    provider: fake-vllm
    endpoints: [chat]
${extra}`;
}
