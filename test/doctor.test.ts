import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';
import { REDIS_URL } from './support/redis.js';
import { cli, createKey, tempDir } from './support/sluice.js';

interface Report {
  ok: boolean;
  checks: { check: string; status: 'ok' | 'warn' | 'fail'; message: string; fix?: string }[];
}

let vllm: FakeUpstream;
let anthropic: FakeUpstream;
let many: FakeUpstream;
let dataDir: string;

before(async () => {
  vllm = await startFakeOpenAI({ apiKey: 'vllm-secret-credential', listed: [{ id: 'served-model' }] });
  anthropic = await startFakeAnthropic({ apiKey: 'anthropic-secret-credential', listed: [{ id: 'claude-x' }] });
  many = await startFakeOpenAI({ listed: ['a', 'skip-b', 'c', 'd', 'e', 'f'].map((id) => ({ id })) });
  dataDir = tempDir();
  // A store that exists (and is migrated), as a gateway's would be.
  await createKey(dataDir, 'acme');
});
after(async () => {
  await Promise.all([vllm.close(), anthropic.close(), many.close()]);
});

function writeConfig(text: string): string {
  const file = join(dataDir, `sluice-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

const byCheck = (report: Report, name: string) => report.checks.find((c) => c.check === name);

describe('sluice doctor', () => {
  test('all well: exit 0, each provider reachable with its credential, an entry the upstream does not list is a warning', async () => {
    const config = writeConfig(`
providers:
  - { id: vllm, kind: openai, base_url: '${vllm.url}', api_key: vllm-secret-credential }
  - { id: claude, kind: anthropic, base_url: '${anthropic.url}', api_key: anthropic-secret-credential }
models:
  - { id: good, provider: vllm, upstream_model: served-model }
  - { id: typo, provider: vllm, upstream_model: served-modle }
  - { id: claude-x, provider: claude }
`);
    const result = await cli(['doctor', '--config', config, '--data', dataDir, '--redis', REDIS_URL, '--json']);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const report = JSON.parse(result.stdout) as Report;
    assert.equal(report.ok, true);
    assert.equal(byCheck(report, 'config')?.status, 'ok');
    assert.equal(byCheck(report, 'store')?.status, 'ok');
    assert.match(byCheck(report, 'store')!.message, /schema current/);
    assert.equal(byCheck(report, 'provider vllm')?.status, 'ok');
    assert.equal(byCheck(report, 'provider claude')?.status, 'ok');
    assert.equal(byCheck(report, 'redis')?.status, 'ok');
    assert.equal(byCheck(report, 'model typo')?.status, 'warn');
    assert.match(byCheck(report, 'model typo')!.fix!, /upstream_model/);
    assert.equal(byCheck(report, 'model good'), undefined);
    assert.ok(vllm.requests.some((r) => r.method === 'GET' && r.path === '/v1/models'));
  });

  test('a discovering provider that lists more than discover.max_models is a warning saying how many are left out', async () => {
    const config = writeConfig(`
providers:
  - { id: many, kind: openai, base_url: '${many.url}', discover: { max_models: 3, exclude: ['skip-*'] } }
`);
    const result = await cli(['doctor', '--config', config, '--data', dataDir, '--json']);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const report = JSON.parse(result.stdout) as Report;
    const capped = byCheck(report, 'discovery many');
    assert.equal(capped?.status, 'warn');
    // Six listed, one excluded by a pattern: five taken, three kept.
    assert.match(capped!.message, /lists 2 model\(s\) beyond discover\.max_models \(3\)/);
    assert.match(capped!.fix!, /discover\.max_models/);
  });

  test('a refused credential and an unreachable upstream fail with their fixes; no secret is printed', async () => {
    const config = writeConfig(`
providers:
  - { id: wrong-key, kind: openai, base_url: '${vllm.url}', api_key: not-the-right-secret-key }
  - { id: nowhere, kind: openai, base_url: 'http://127.0.0.1:9/v1', api_key: nowhere-secret-key }
models: []
`);
    const json = await cli(['doctor', '--config', config, '--data', dataDir, '--json']);
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout) as Report;
    assert.equal(report.ok, false);
    const wrong = byCheck(report, 'provider wrong-key')!;
    assert.equal(wrong.status, 'fail');
    assert.match(wrong.message, /refused the gateway's credentials \(HTTP 401\)/);
    assert.match(wrong.fix!, /api_key/);
    const nowhere = byCheck(report, 'provider nowhere')!;
    assert.equal(nowhere.status, 'fail');
    assert.match(nowhere.message, /could not be reached/);
    assert.match(nowhere.fix!, /base_url/);

    const text = await cli(['doctor', '--config', config, '--data', dataDir]);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /^FAIL {2}provider wrong-key: .* — fix: /m);
    for (const output of [json.stdout, json.stderr, text.stdout, text.stderr]) {
      for (const secret of ['not-the-right-secret-key', 'nowhere-secret-key']) assert.ok(!output.includes(secret), `${secret} printed`);
    }
  });

  test('a configuration file that does not parse is named with its problem', async () => {
    const config = writeConfig(`
providers:
  - { id: x, kind: openai, base_url: 'http://127.0.0.1:9/v1', discover: { interval_ms: 10 } }
`);
    const result = await cli(['doctor', '--config', config, '--data', dataDir, '--json']);
    assert.equal(result.code, 1);
    const failed = byCheck(JSON.parse(result.stdout) as Report, 'config')!;
    assert.equal(failed.status, 'fail');
    assert.match(failed.message, /providers\[0\] \(id: x\): field 'discover\.interval_ms': /);
  });
});
