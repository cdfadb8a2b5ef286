import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeAzure, type FakeAzure } from './fakes/fake-azure.js';
import { startFakeVertex, type FakeVertex } from './fakes/fake-vertex.js';
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

describe('sluice doctor on Azure OpenAI and a Google key', () => {
  const AZ_KEY = 'doctor-azure-key-4d1e7f';
  const ENTRA_SECRET = 'doctor-entra-secret~9Qx';
  let azure: FakeAzure;
  let vertex: FakeVertex;

  before(async () => {
    azure = await startFakeAzure({ apiKey: AZ_KEY, entra: { tenantId: 'contoso', clientId: 'app', clientSecret: ENTRA_SECRET, tokenLifetimeSeconds: 3600 }, deployments: { 'gpt4o-dep': 'gpt-4o' } });
    vertex = await startFakeVertex({ project: 'doctor-project', location: 'europe-west4' });
  });
  after(async () => {
    await Promise.all([azure.close(), vertex.close()]);
  });

  test('a one-token call shows a wrong api_version; a wrong tenant, an unreachable token endpoint and a base_url ending in /openai each name their setting', async () => {
    const unreachableKey = JSON.stringify({ ...vertex.key, token_uri: 'http://127.0.0.1:9/token' });
    const entra = (tenant: string, authority: string) => `{ tenant_id: ${tenant}, client_id: app, client_secret: '${ENTRA_SECRET}', authority_url: '${authority}' }`;
    const config = writeConfig(`
providers:
  - { id: az-good, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', api_version: '2024-10-21' }
  - { id: az-version, kind: azure, base_url: '${azure.url}', api_key: '${AZ_KEY}', api_version: '2023-01-01' }
  - { id: az-tenant, kind: azure, base_url: '${azure.url}', entra: ${entra('fabrikam', azure.authorityUrl)} }
  - { id: az-authority, kind: azure, base_url: '${azure.url}', entra: ${entra('contoso', 'http://127.0.0.1:9')} }
  - { id: az-path, kind: azure, base_url: '${azure.url}/openai', api_key: '${AZ_KEY}' }
  - { id: vx-token, kind: vertex, project: doctor-project, location: europe-west4, base_url: '${vertex.url}', credentials: '${unreachableKey}' }
models:
  - { id: good-chat, provider: az-good, upstream_model: gpt4o-dep, endpoints: [chat] }
  - { id: version-chat, provider: az-version, upstream_model: gpt4o-dep, endpoints: [chat] }
`);
    const result = await cli(['doctor', '--config', config, '--data', dataDir, '--json']);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    const report = JSON.parse(result.stdout) as Report;
    assert.equal(byCheck(report, 'provider az-good')?.status, 'ok');
    assert.equal(byCheck(report, 'model good-chat')?.status, 'ok', JSON.stringify(report.checks));
    assert.ok(azure.requests.some((r) => r.method === 'POST' && r.path === '/openai/deployments/gpt4o-dep/chat/completions?api-version=2024-10-21'), 'the call went to the deployment with the entry’s api_version');

    assert.equal(byCheck(report, 'provider az-version')?.status, 'ok', 'the listing uses a version of its own');
    const version = byCheck(report, 'model version-chat')!;
    assert.equal(version.status, 'fail');
    assert.match(version.fix!, /check api_version of provider 'az-version' \(2023-01-01\)/);

    const tenant = byCheck(report, 'provider az-tenant')!;
    assert.equal(tenant.status, 'fail');
    assert.match(tenant.message, /AADSTS90002/);
    assert.match(tenant.fix!, /Entra ID token could not be obtained/);
    assert.doesNotMatch(tenant.fix!, /Cognitive Services OpenAI User/);

    const authority = byCheck(report, 'provider az-authority')!;
    assert.equal(authority.status, 'fail');
    assert.match(authority.fix!, /Microsoft Entra ID did not answer: check entra\.authority_url \(http:\/\/127\.0\.0\.1:9\)/);
    assert.doesNotMatch(authority.fix!, /base_url/);

    const path = byCheck(report, 'provider az-path')!;
    assert.equal(path.status, 'fail');
    assert.match(path.fix!, /ends in Azure's API path: give the resource's endpoint alone/);

    const token = byCheck(report, 'provider vx-token')!;
    assert.equal(token.status, 'fail');
    assert.match(token.fix!, /token endpoint did not answer: check the token_uri of the key in credentials/);
    assert.doesNotMatch(token.fix!, /base_url/);

    for (const secret of [AZ_KEY, ENTRA_SECRET, vertex.key.private_key.split('\n')[3]!]) assert.ok(!result.stdout.includes(secret) && !result.stderr.includes(secret), 'no secret printed');
  });
});
