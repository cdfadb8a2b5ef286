// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, SLUICE_BIN, startSluice, tempDir } from './support/sluice.js';

/**
 * The runtime Sluice runs on: Node.js pinned as a registry package, taken over by `bin/sluice.js`
 * when it is started on an older Node.js; and how several workers share the listening port.
 */

const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as { version: string; optionalDependencies: Record<string, string> };
const platformPackage = `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
const pinned = manifest.optionalDependencies[platformPackage];
/** Debian's own Node.js on this kind of machine is 20, older than Sluice takes. */
const OLD_NODE = '/usr/bin/node';
const oldNodeVersion = existsSync(OLD_NODE) ? execFileSync(OLD_NODE, ['--version']).toString().trim() : undefined;
const oldEnough = oldNodeVersion !== undefined && Number(oldNodeVersion.slice(1).split('.')[0]) < 22;
const skipOld = pinned === undefined ? `no runtime is pinned for ${platformPackage}` : oldEnough ? false : `no Node.js older than 22 at ${OLD_NODE}`;

describe('the pinned runtime', () => {
  test('npm test runs on the Node.js that package.json pins', { skip: pinned === undefined ? `no runtime is pinned for ${platformPackage}` : false }, () => {
    assert.equal(process.version, `v${pinned}`);
  });

  test('started on an older Node.js, sluice hands over to the pinned one', { skip: skipOld }, () => {
    const stdout = execFileSync(OLD_NODE, [SLUICE_BIN, '--version']).toString().trim();
    assert.equal(stdout, `${manifest.version} (Node.js v${pinned})`);
  });

  test('a gateway handed over serves, and stops cleanly on the SIGTERM sent to the process that was started', { skip: skipOld }, async () => {
    const dataDir = tempDir();
    const child = spawn(OLD_NODE, [SLUICE_BIN, 'serve', '--listen', '127.0.0.1:0', '--data', dataDir, '--workers', '1'], { env: { ...process.env, SLUICE_LOG_LEVEL: 'warn', SLUICE_DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /sluice listening on (http:\/\/\S+)/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code} before listening: ${stderr}`)));
    });
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    await assert.rejects(fetch(`${url}/healthz`), 'the gateway itself stopped, not only the process that started it');
  });
});

/** The listening sockets on `port`, as the kernel lists them. */
function listeners(port: number): number {
  return execFileSync('ss', ['-Hltn', `sport = :${port}`]).toString().split('\n').filter((line) => line.trim() !== '').length;
}

describe('several workers on one port', () => {
  for (const [mode, sockets] of [
    ['reuseport', 2],
    ['handoff', 1],
  ] as const) {
    test(`--port-sharing ${mode}: ${sockets === 2 ? 'a socket of its own in each worker' : "the primary's one socket"}, every connection answered`, async () => {
      const sluice = await startSluice({ args: ['--workers', '2', '--port-sharing', mode] });
      try {
        assert.match(sluice.stdout(), /\(2 workers\)/);
        assert.equal(listeners(Number(new URL(sluice.url).port)), sockets);
        // A connection each, so that both workers take some.
        const statuses = await Promise.all(Array.from({ length: 20 }, () => fetch(`${sluice.url}/healthz`, { headers: { connection: 'close' } }).then((response) => response.status)));
        assert.deepEqual(statuses, Array(20).fill(200));
      } finally {
        assert.equal(await sluice.stop(), 0);
      }
    });
  }

  test('an unknown SLUICE_PORT_SHARING is refused in one line', async () => {
    const result = await cli(['serve', '--listen', '127.0.0.1:0', '--data', tempDir()], { SLUICE_PORT_SHARING: 'kernel' });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /SLUICE_PORT_SHARING must be reuseport or handoff, not 'kernel'/);
  });
});
