import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import { configFor, createKey, eventually, startSluice, tempDir } from './support/sluice.js';

/** A process's children, from Linux's /proc (none once it has gone). */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('serve', () => {
  for (const workers of [2, 1]) {
    test(`--workers ${workers}: SIGTERM stops it and every worker once nobody reads its stdout and stderr`, { timeout: 60_000 }, async () => {
      const sluice = await startSluice({ args: ['--workers', String(workers)], env: { SLUICE_LOG_LEVEL: 'info' } });
      const primary = sluice.child.pid!;
      const processes = new Set([primary, ...childPids(primary)]);
      assert.equal(processes.size, workers === 1 ? 1 : workers + 1, 'the primary and its workers');
      sluice.child.stdout!.destroy();
      sluice.child.stderr!.destroy();
      // Requests after the pipes closed: each writes its access-log line to a pipe nobody reads.
      for (let i = 0; i < 4; i++) assert.equal((await fetch(`${sluice.url}/healthz`)).status, 200);
      if (workers > 1) {
        // A worker dies: the primary says so on its closed stderr, and starts another.
        process.kill([...processes].find((pid) => pid !== primary)!, 'SIGKILL');
        const replacement = await eventually(() => childPids(primary).find((pid) => !processes.has(pid)), 20_000, 'a worker started in place of the one that died');
        processes.add(replacement);
        await eventually(async () => ((await fetch(`${sluice.url}/healthz`)).ok ? true : undefined), 20_000, 'the gateway to answer');
      }
      assert.equal(sluice.child.exitCode, null, 'still running');
      // One that does not stop is killed, so that the test fails rather than leaving it behind.
      const guard = setTimeout(() => [...processes].filter(isRunning).forEach((pid) => process.kill(pid, 'SIGKILL')), 30_000);
      try {
        assert.equal(await sluice.stop('SIGTERM'), 0);
      } finally {
        clearTimeout(guard);
      }
      assert.deepEqual([...processes].filter(isRunning), [], 'no process of the gateway is left');
    });
  }

  test('the exit after a stop ends even when stderr’s reader is gone before the last lines are written', { timeout: 40_000 }, async () => {
    // Two lines at once: the first is being written when the exit starts, the second still buffered
    // (pino's own exit-time flush would retry that one on the broken pipe for ever).
    const script = join(tempDir(), 'exit.ts');
    writeFileSync(script, `import { createLogger, exitAfterLogFlush } from ${JSON.stringify(resolve(import.meta.dirname, '../src/core/log.ts'))};
const logger = createLogger('info');
process.stdin.once('data', () => {
  logger.info('the line being written');
  logger.info('the line still buffered');
  exitAfterLogFlush(logger, 0);
});
`);
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
    child.stdout.destroy();
    child.stderr.destroy();
    child.stdin.write('go\n');
    // One that does not exit is killed, so that the test fails rather than leaving it behind.
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      assert.equal(await exited, 0);
    } finally {
      clearTimeout(guard);
    }
  });

  test('healthz answers 200 and every response carries x-request-id', async () => {
    const sluice = await startSluice();
    try {
      const health = await fetch(`${sluice.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      assert.match(health.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      const missing = await fetch(`${sluice.url}/v1/models`);
      assert.ok(missing.headers.get('x-request-id'));
      const echoed = await fetch(`${sluice.url}/healthz`, { headers: { 'x-request-id': 'trace-123' } });
      assert.equal(echoed.headers.get('x-request-id'), 'trace-123');
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  test('SIGTERM lets a request in flight finish, writes its ledger row, and exits 0', async () => {
    const upstream = await startFakeOpenAI();
    const sluice = await startSluice({ config: configFor(upstream.url) });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    upstream.behaviour = { tokenDelayMs: 100 };
    const stream = await client.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 8, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const exited = sluice.stop('SIGTERM');
    let chunks = 1;
    while (!(await iterator.next()).done) chunks++;
    assert.equal(chunks, 8, 'the stream in flight completes');
    assert.equal(await exited, 0);
    const rows = (await sluice.ledger());
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status, 200);
    assert.equal(rows[0]!.completion_tokens, 8);
    await upstream.close();
  });

  test('a request still running when the drain timeout ends is cut, and its ledger row is still written', async () => {
    const upstream = await startFakeOpenAI();
    upstream.behaviour = { headerDelayMs: 10_000 };
    const sluice = await startSluice({ config: configFor(upstream.url), args: ['--drain-timeout', '300'] });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const pending = fetch(`${sluice.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-request-id': 'cut-at-drain' },
      body: JSON.stringify({ model: 'llama-8b', prompt: 'x' }),
    }).catch((error: unknown) => error);
    await eventually(() => (upstream.requests.length === 1 ? true : undefined), 3000, 'the request to reach the upstream');
    assert.equal(await sluice.stop('SIGTERM'), 0);
    await pending;
    const row = (await sluice.ledger()).find((r) => r.request_id === 'cut-at-drain');
    assert.ok(row, 'the cut request has its ledger row');
    assert.equal(row.status, 499);
    assert.ok(row.prompt_tokens > 0, 'the prompt the upstream received is billed');
    await upstream.close();
  });

  test('no key or upstream credential appears in the logs', async () => {
    const upstream = await startFakeOpenAI();
    upstream.behaviour = { fail: { status: 401, body: '{"error":"Unauthorized: upstream-secret-credential"}' } };
    const sluice = await startSluice({ config: configFor(upstream.url), env: { SLUICE_LOG_LEVEL: 'debug' } });
    const { key } = await createKey(sluice.dataDir, 'acme');
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }));
    assert.equal(await sluice.stop(), 0);
    const logs = sluice.stderr();
    assert.match(logs, /upstream_auth_failed/, 'the failure is logged');
    assert.ok(!logs.includes(key));
    assert.ok(!logs.includes('upstream-secret-credential'));
    await upstream.close();
  });
});
