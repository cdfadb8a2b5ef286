// postgres-pass: skip (the quick start runs on the embedded default store, as a first-time user's does; the other files run the same commands on PostgreSQL)
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { SLUICE_BIN, tempDir } from './support/sluice.js';

// The README's quick start, run as written: its shell block, taken from README.md, by bash in a
// fresh directory, against a fake vLLM on the address the README names and the gateway on its
// default one. Nothing in the block is changed; lines after it only report what it left behind.

const ROOT = resolve(import.meta.dirname, '..');
/** What the fake vLLM serves, as a real one names its model. */
const UPSTREAM_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const PORTS = [
  { port: 8000, what: "the fake vLLM (the quick start's upstream)" },
  { port: 8080, what: "the gateway (`sluice serve`'s default address)" },
];

let vllm: FakeUpstream | undefined;
let shell: ChildProcess | undefined;
let closed: Promise<void> | undefined;

/** The first ```sh block under "## Quick start". */
function quickStartBlock(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = /^## Quick start\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  const block = section === undefined ? undefined : /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1];
  if (block === undefined) throw new Error('README.md has no ```sh block under "## Quick start"');
  return servesReadyz() ? block : block.replaceAll('/readyz', '/healthz');
}

/**
 * TEMPORARY, until `GET /readyz` (issue 28, another branch) is merged: a build without it waits on
 * `/healthz`, which a gateway serves once it listens. Remove with the merge.
 */
function servesReadyz(): boolean {
  const dist = join(ROOT, 'dist', 'http');
  return readdirSync(dist, { recursive: true }).some((file) => String(file).endsWith('.js') && readFileSync(join(dist, String(file)), 'utf8').includes("'/readyz'"));
}

function portTaken(port: number): Promise<boolean> {
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolvePromise(true) : reject(error)));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolvePromise(false)));
  });
}

/** Every top-level JSON object in text that also holds other output (curl ends its bodies without a newline). */
function jsonObjectsIn(text: string): any[] {
  const found: any[] = [];
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        try {
          found.push(JSON.parse(text.slice(start, i + 1)));
          start = i;
        } catch {
          // not JSON: look on from the next brace
        }
        break;
      }
    }
  }
  return found;
}

before(async () => {
  for (const { port, what } of PORTS) {
    if (await portTaken(port)) throw new Error(`127.0.0.1:${port} is in use, and the README's quick start needs it for ${what}: stop what listens there and run this test again`);
  }
  vllm = await startFakeOpenAI({ models: [UPSTREAM_MODEL], port: 8000 });
});

after(async () => {
  // The block leaves `sluice serve &` running: stop bash's whole process group (npx, the gateway, its workers).
  if (shell?.pid !== undefined) {
    try {
      process.kill(-shell.pid, 'SIGTERM');
    } catch {
      // the group is gone already
    }
  }
  // Every process of the group has exited once nothing holds the pipes open.
  if (closed !== undefined) await closed;
  await vllm?.close();
});

test("the README's quick start runs as written against a vLLM on 127.0.0.1:8000", { timeout: 180_000 }, async () => {
  const dir = tempDir('sluice-quick-start-');
  // `npx sluice` runs the project's own bin: here this checkout's bin/sluice.js, as in a clone.
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(SLUICE_BIN, join(dir, 'node_modules', '.bin', 'sluice'));
  const report = join(dir, 'quick-start.report');
  const script = ['set -euo pipefail', quickStartBlock(), `printf '%s\\n' "$SLUICE_KEY" "$MODEL" > '${report}'`, ''].join('\n');
  writeFileSync(join(dir, 'quick-start.sh'), script);

  // The environment of a fresh shell: the repository's node_modules/.bin first (Node.js 24, as
  // `npm ci` installs it), no SLUICE_* settings of the test run, and npm never asked to fetch anything.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  Object.assign(env, { PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`, npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false' });
  const child = spawn('bash', ['quick-start.sh'], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  shell = child;
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  closed = new Promise((resolvePromise) => child.once('close', () => resolvePromise()));
  const code = await new Promise<number | null>((resolvePromise) => child.once('exit', (exitCode) => resolvePromise(exitCode)));
  const output = `--- stdout\n${stdout}\n--- stderr\n${stderr}`;
  assert.equal(code, 0, `the quick start failed (every command must succeed under set -euo pipefail)\n${output}`);

  // init wrote the file, naming the server by its default port; keys create made a key in ./data.
  assert.match(readFileSync(join(dir, 'sluice.yaml'), 'utf8'), /- id: vllm\n {4}kind: openai\n {4}base_url: http:\/\/127\.0\.0\.1:8000\/v1\n/);
  const [key, model] = readFileSync(report, 'utf8').split('\n');
  assert.match(key!, /^sk-[A-Za-z0-9_-]{20,}$/, 'SLUICE_KEY holds the secret');
  assert.ok(existsSync(join(dir, 'data')), 'the store in ./data');
  assert.equal(model, UPSTREAM_MODEL, 'MODEL is the model discovery published, under the upstream\'s name');

  const printed = jsonObjectsIn(stdout);
  const list = printed.find((body) => body.object === 'list');
  assert.ok(list !== undefined, `GET /v1/models printed its list\n${output}`);
  assert.deepEqual(list.data.map((m: { id: string }) => m.id), [UPSTREAM_MODEL]);
  const chat = printed.find((body) => body.object === 'chat.completion');
  assert.ok(chat !== undefined, `the chat request printed its answer\n${output}`);
  assert.equal(chat.model, UPSTREAM_MODEL);
  assert.equal(chat.choices[0].message.role, 'assistant');

  // The answer is the upstream's own: the same request sent to the fake directly gets the same text.
  const sent = vllm!.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
  assert.equal(sent.length, 1, 'one chat request reached the upstream');
  assert.equal(sent[0]!.body.model, UPSTREAM_MODEL);
  assert.deepEqual(sent[0]!.body.messages, [{ role: 'user', content: 'Say hi' }]);
  assert.ok(vllm!.requests.some((r) => r.method === 'GET' && r.path === '/v1/models'), 'discovery listed the upstream');
  const direct = (await (await fetch(`${vllm!.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sent[0]!.body) })).json()) as any;
  assert.ok(direct.choices[0].message.content.length > 0);
  assert.equal(chat.choices[0].message.content, direct.choices[0].message.content);

  // The gateway is still serving in the background until the test stops it (after()).
  assert.equal((await fetch('http://127.0.0.1:8080/healthz')).status, 200);
});
