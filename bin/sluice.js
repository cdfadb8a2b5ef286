#!/usr/bin/env node
// Sluice runs on Node.js ^22.19 or >=24. Its package pins Node.js 24 as a registry package
// (node-<platform>-<arch>), which npm and npx put first on PATH; started any other way on an older
// Node.js, this hands over to that pinned runtime rather than failing deep inside a module.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const supported = major >= 24 || (major === 22 && minor >= 19);

/** The pinned runtime's executable, or undefined when this platform has none installed. */
function pinnedRuntime() {
  const platform = process.platform === 'win32' ? 'win' : process.platform;
  const manifest = `node-${platform}-${process.arch}/package.json`;
  try {
    const path = createRequire(import.meta.url).resolve(manifest);
    return join(dirname(path), createRequire(import.meta.url)(manifest).bin.node);
  } catch {
    return undefined;
  }
}

// A reload (SIGHUP) sent while the gateway starts, `systemctl reload` just after a start, would end
// it (SIGHUP's default) before the gateway takes the signal itself once it has read its
// configuration (config/config-reload.ts); one sent before then changes nothing, as the file is read next.
if (process.argv[2] === 'serve') process.on('SIGHUP', () => {});

if (supported) {
  const { main } = await import('../dist/cli/main.js');
  await main(process.argv);
} else {
  const runtime = pinnedRuntime();
  if (runtime === undefined) {
    process.stderr.write(`sluice: needs Node.js 22.19 or later (24 LTS recommended); this is ${process.version}.\n`);
    process.exit(1);
  }
  const child = spawn(runtime, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  // Signals meant for the gateway (stop, reload) go on to it; it decides when to exit.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
}
