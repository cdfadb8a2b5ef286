import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './sluice.js';

/** The coding agents' launchers, installed from test/package.json. */
export const AGENT_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.bin');

/** The PATH an agent runs with: this Node and the system's tools, nothing of the developer's. */
const SYSTEM_PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;

/** Runs a CLI with stdin closed (each waits for more input on an open pipe), an environment of its own and a hard timeout. */
export function runCli(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: SYSTEM_PATH, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: 90_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A fresh home for Claude Code (its config directory inside), with an empty work directory `work` in it. */
export function claudeCodeHome(): string {
  const home = tempDir('sluice-claude-');
  mkdirSync(join(home, 'work'));
  return home;
}

/**
 * Claude Code's environment against the gateway: its home and config directory, and no telemetry,
 * auto-update, error reports or retries, so that every call it makes is the test's.
 */
export function claudeCodeEnv(home: string, gatewayUrl: string, apiKey: string): Record<string, string> {
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: gatewayUrl,
    ANTHROPIC_API_KEY: apiKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
  };
}

/**
 * A fresh home for the Gemini CLI, with an empty work directory `work` in it, and its environment
 * against the gateway. Headless, the CLI takes the API-key sign-in only from its settings file (the
 * base URL from the environment); telemetry, auto-update, the IDE and retries are off.
 */
export function geminiCli(gatewayUrl: string, apiKey: string): { readonly home: string; readonly work: string; readonly env: Record<string, string> } {
  const home = tempDir('sluice-gemini-');
  const work = join(home, 'work');
  mkdirSync(join(home, '.gemini'), { recursive: true });
  mkdirSync(work);
  writeFileSync(
    join(home, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1 },
      ide: { enabled: false },
    }),
  );
  const env = { HOME: home, GEMINI_CLI_HOME: home, GOOGLE_GEMINI_BASE_URL: gatewayUrl, GEMINI_API_KEY: apiKey, GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_CLI_NO_RELAUNCH: 'true', TERM: 'dumb' };
  return { home, work, env };
}

/**
 * Claude Code in print mode (`claude -p PROMPT --output-format json`, with `--model MODEL` when given,
 * then `options.args`) against the gateway, in the work directory of `options.home` (a fresh home
 * when not given: one set up beforehand, e.g. by `claude mcp add`, keeps its configuration).
 */
export function runClaudeCode(
  gatewayUrl: string,
  apiKey: string,
  model: string | undefined,
  prompt: string,
  options: { readonly home?: string; readonly args?: readonly string[] } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const home = options.home ?? claudeCodeHome();
  return runCli(
    join(AGENT_BIN, 'claude'),
    ['-p', prompt, '--output-format', 'json', ...(model === undefined ? [] : ['--model', model]), ...(options.args ?? [])],
    claudeCodeEnv(home, gatewayUrl, apiKey),
    join(home, 'work'),
  );
}
