import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
