// postgres-pass: skip (the kit reads metrics, probes and signals; the store holds only keys and ledger rows here, which usage, limits and ledger-durability run on PostgreSQL)
/**
 * The operator's kit in deploy/, driven by the real tools: the alert rules through promtool (its
 * checks, lints and the rules' own unit tests) and loaded into a real Prometheus scraping a real
 * gateway, where they fire on real events; every query of the Grafana dashboard run by that
 * Prometheus after traffic of every kind; the systemd unit through systemd-analyze, and its
 * command line, environment and signals run as systemd would; and a gateway started from the
 * Kubernetes ConfigMap and the Deployment's environment, probed where the Deployment probes it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { parse, stringify } from 'yaml';
import { dashboardQueries, DEPLOY_DIR, manifestOf, readDashboard, readUnit, REPO_ROOT, sluiceContainer, UNIT_FILE, unitEnvironment, withVariables } from './support/deploy-kit.js';
import { startPrometheus } from './support/prometheus.js';
import { closedPort, REDIS_URL, uniqueRedisPrefix } from './support/redis.js';
import { cli, createKey, eventually, startSluice, tempDir } from './support/sluice.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';

const RULES_FILE = join(DEPLOY_DIR, 'prometheus', 'sluice-alerts.yml');

let upstreams: ThreeUpstreams;

before(async () => {
  upstreams = await startThreeUpstreams();
});

after(async () => {
  await upstreams.close();
});

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** Runs a tool to its end; a tool that is not installed fails the test with the package to install. */
function run(command: string, args: readonly string[], options: { cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => reject(new Error(`${command} could not run: ${error.message} (scripts/test-prerequisites.sh installs Debian's prometheus; systemd-analyze is Debian's systemd)`)));
    child.once('close', (code) => resolve({ code, output }));
  });
}

interface AlertRule {
  readonly alert: string;
  readonly expr: string;
}

function alertRules(): AlertRule[] {
  return (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: AlertRule[] }[] }).groups.flatMap((group) => group.rules);
}

test("the alert rules pass promtool's checks and lints and their own unit tests; the scrape example is a valid Prometheus configuration", async () => {
  const rules = alertRules();
  const check = await run('promtool', ['check', 'rules', '--lint=all', '--lint-fatal', RULES_FILE]);
  assert.equal(check.code, 0, check.output);
  assert.match(check.output, new RegExp(`SUCCESS: ${rules.length} rules found`));

  const unit = await run('promtool', ['test', 'rules', 'sluice-alerts.test.yml'], { cwd: join(DEPLOY_DIR, 'prometheus') });
  assert.equal(unit.code, 0, unit.output);
  assert.match(unit.output, /SUCCESS/);
  // Each alert has a case in which it fires (a rule no case fires is untested).
  const cases = parse(readFileSync(join(DEPLOY_DIR, 'prometheus', 'sluice-alerts.test.yml'), 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] };
  const fired = new Set(cases.tests.flatMap((t) => t.alert_rule_test).filter((t) => t.exp_alerts.length > 0).map((t) => t.alertname));
  assert.deepEqual(rules.map((rule) => rule.alert).filter((name) => !fired.has(name)), [], 'alerts no unit test fires');

  // A rule that does not parse is refused: the check above can fail.
  const broken = join(tempDir(), 'broken.yml');
  writeFileSync(broken, readFileSync(RULES_FILE, 'utf8').replace('up{job="sluice"} == 0', 'up{job="sluice"} == == 0'));
  assert.notEqual((await run('promtool', ['check', 'rules', broken])).code, 0, 'promtool refuses a broken expression');

  // scrape.yml names the places a Prometheus server keeps these files: here, copies of them.
  const dir = tempDir();
  mkdirSync(join(dir, 'rules'));
  writeFileSync(join(dir, 'rules', 'sluice-alerts.yml'), readFileSync(RULES_FILE));
  writeFileSync(join(dir, 'token'), 'a-metrics-token-0123456789');
  const scrape = readFileSync(join(DEPLOY_DIR, 'prometheus', 'scrape.yml'), 'utf8').replaceAll('/etc/prometheus/rules/', `${dir}/rules/`).replace('/etc/prometheus/sluice-metrics-token', join(dir, 'token'));
  writeFileSync(join(dir, 'prometheus.yml'), scrape);
  const config = await run('promtool', ['check', 'config', join(dir, 'prometheus.yml')]);
  assert.equal(config.code, 0, config.output);
  assert.match(config.output, /SUCCESS: 1 rule files found/);
});

test("every dashboard query and alert rule runs on a real Prometheus scraping a real gateway after traffic of every kind, and the alerts fire on Sluice's own events", async () => {
  upstreams.reset();
  const token = 'deploy-kit-metrics-token-01';
  const priced = '{ input_per_mtok: 1, output_per_mtok: 2 }';
  const config = `${upstreams.providersYaml}
routing: { backoff_ms: { initial: 10, max: 20 } }
models:
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat], pricing: ${priced}, fallbacks: [claude], routing: { retries: 0 } }
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: ${priced} }
  - { id: flaky, provider: google, upstream_model: gemini-test, endpoints: [chat], pricing: ${priced}, routing: { retries: 0, circuit: { failures: 4, window_ms: 600000, cooldown_ms: 600000 } } }
`;
  // Redis, so that the degraded-component panel and the Redis alert have their series.
  const sluice = await startSluice({ config, args: ['--workers', '2', '--metrics-token', token, '--redis', REDIS_URL, '--redis-prefix', uniqueRedisPrefix()] });
  // The job is `sluice`, as the rules and the dashboard expect.
  const prometheus = await startPrometheus([{ job: 'sluice', target: new URL(sluice.url).host, bearer: token }], { ruleFiles: [RULES_FILE] });
  try {
    const { key } = await createKey(sluice.dataDir, 'kit-co');
    const { key: budgeted } = await createKey(sluice.dataDir, 'kit-budget-co', ['--budget-usd', '0.000001']);
    const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    // Generation requests sent, each of which leaves a ledger row.
    let sent = 0;
    const chat = (apiKey: string, model: string) => {
      sent++;
      return openai(apiKey)
        .chat.completions.create({ model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 })
        .then(
          () => 200,
          (error: { status?: number }) => error.status ?? 0,
        );
    };

    for (let i = 0; i < 3; i++) assert.equal(await chat(key, 'llama'), 200, 'a chat');
    for (let i = 0; i < 2; i++) {
      sent++;
      const stream = await openai(key).chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'stream please' }], max_tokens: 6, stream: true });
      for await (const _chunk of stream) void _chunk;
    }
    // vllm fails the next call: llama falls back to claude.
    const callsSoFar = upstreams.vllm.requests.length;
    upstreams.vllm.behaviour = { fail: { status: 500, body: '{"error":{"message":"boom"}}' }, only: (_request, index) => index === callsSoFar };
    assert.equal(await chat(key, 'llama'), 200, 'served by the fallback');
    upstreams.vllm.behaviour = {};
    // Gemini fails every call. A counter's series is born at its first value, which rate() cannot see
    // as an increase: the failures the alert sees are those after Prometheus has the series.
    upstreams.gemini.behaviour = { fail: { status: 500, body: '{"error":{"code":500,"message":"boom","status":"INTERNAL"}}' } };
    assert.equal(await chat(key, 'flaky'), 502, 'the upstream failed');
    const failedCalls = 'sum(gen_ai_client_operation_duration_seconds_count{job="sluice",sluice_deployment="google/gemini-test",error_type="upstream_error"})';
    await eventually(async () => ((await prometheus.value(failedCalls)) === 1 ? true : undefined), 10_000, 'Prometheus to have the failed call');
    // Four failures open a process's circuit; a request to a process whose circuit is open fails at once.
    await eventually(
      async () => {
        assert.ok((await chat(key, 'flaky')) >= 500, 'failed');
        const open = await prometheus.value('sum(sluice_deployment_state{job="sluice",deployment="google/gemini-test",state="open"})');
        return open !== undefined && open > 0 ? true : undefined;
      },
      20_000,
      "flaky's circuit to open",
    );
    // The refusal counter is exported from 0, so Prometheus sees the first refusal as an increase.
    await eventually(async () => ((await prometheus.value('sum(sluice_limit_refusals_total{job="sluice",scope="key",reason="budget"})')) === 0 ? true : undefined), 10_000, 'the budget refusals at 0');
    assert.equal(await chat(budgeted, 'llama'), 200, 'the first request is within the budget, and spends it all');
    await eventually(async () => ((await chat(budgeted, 'llama')) === 429 ? true : undefined), 5000, 'the budget to refuse');
    const generations = sent;
    await eventually(async () => ((await sluice.ledger()).length === generations ? true : undefined), 5000, 'every ledger row');
    await eventually(async () => ((await prometheus.value('sum(sluice_ledger_rows_written_total{job="sluice"})')) === generations ? true : undefined), 10_000, 'Prometheus to scrape the written rows');

    // Every query of every panel runs, and each yields series: a misspelt metric or label yields none.
    const queries = dashboardQueries();
    assert.ok(queries.length >= 30, `${queries.length} queries`);
    for (const { panel, refId, expr } of queries) {
      const series = await prometheus.query(withVariables(expr));
      assert.ok(series.length > 0, `"${panel}" ${refId} yields no series: ${withVariables(expr)}`);
    }
    // The dashboard's variables find their values.
    for (const variable of (readDashboard().templating.list as any[]).filter((v) => v.type === 'query')) {
      const [, match, label] = /^label_values\((.+), (\w+)\)$/.exec(variable.query.query)!;
      const values = await prometheus.labelValues(label!, withVariables(match!));
      assert.ok(values.length > 0, `the variable ${variable.name} has values`);
    }
    assert.deepEqual(await prometheus.labelValues('gen_ai_request_model', 'gen_ai_server_request_duration_seconds_count{job="sluice"}'), ['flaky', 'llama']);

    // Every metric an alert reads is one the gateway exports.
    const stored = new Set(await prometheus.names());
    for (const rule of alertRules()) {
      for (const [, name] of rule.expr.matchAll(/([a-z_:][a-z0-9_:]*)\{/g)) assert.ok(stored.has(name!), `${rule.alert} reads ${name}, which the gateway exports`);
    }
    // The rules evaluate without error, and fire on what happened.
    await eventually(
      async () => {
        const rules = await prometheus.rules();
        const failing = rules.filter((rule) => rule.health === 'err');
        assert.deepEqual(failing.map((rule) => `${rule.name}: ${rule.lastError}`), [], 'rules whose evaluation failed');
        return rules.every((rule) => rule.health === 'ok') ? true : undefined;
      },
      10_000,
      'every rule to have been evaluated',
    );
    const alert = (name: string, labels: Record<string, string>) => async () =>
      (await prometheus.alerts()).find((a) => a.labels.alertname === name && Object.entries(labels).every(([label, value]) => a.labels[label] === value));
    const budget = await eventually(alert('SluiceBudgetExhausted', { scope: 'key' }), 10_000, 'the budget alert');
    assert.equal(budget.state, 'firing', 'the budget alert fires at once');
    // Rules with `for:` are pending until their time has passed.
    assert.ok(await eventually(alert('SluiceCircuitOpen', { model: 'flaky', deployment: 'google/gemini-test' }), 10_000, 'the circuit alert'));
    assert.ok(await eventually(alert('SluiceUpstreamErrorRate', { sluice_deployment: 'google/gemini-test' }), 10_000, 'the upstream error alert'));
    assert.ok(await eventually(alert('SluiceModelUnavailable', { model: 'flaky' }), 10_000, 'the model alert'));
    const firing = new Set((await prometheus.alerts()).map((a) => a.labels.alertname));
    for (const quiet of ['SluiceDown', 'SluiceAbsent', 'SluiceRedisFallback', 'SluiceLedgerWriteFailures', 'SluiceUpstreamAuthFailed']) assert.ok(!firing.has(quiet), `${quiet} stays quiet`);
  } finally {
    upstreams.gemini.behaviour = {};
    await prometheus.close();
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});

test('the systemd unit passes systemd-analyze verify without a warning, and its security review', async () => {
  // verify needs ExecStart's program to exist: the unit's /opt/sluice is this checkout in a copy.
  const dir = tempDir();
  const unitFile = join(dir, 'sluice.service');
  writeFileSync(unitFile, readFileSync(UNIT_FILE, 'utf8').replaceAll('/opt/sluice', REPO_ROOT));
  const verify = await run('systemd-analyze', ['verify', unitFile]);
  assert.equal(verify.code, 0, verify.output);
  // A bad value is only a warning to verify: the unit must draw none.
  assert.equal(verify.output, '', 'no warning');
  const misspelt = join(dir, 'misspelt.service');
  writeFileSync(misspelt, readFileSync(unitFile, 'utf8').replace('KillMode=mixed', 'KillMode=mixd'));
  assert.match((await run('systemd-analyze', ['verify', misspelt])).output, /kill mode/i, 'a bad value draws a warning');
  // systemd's own exposure score (0 safest, 10 least safe): 2 or less is "OK".
  const security = await run('systemd-analyze', ['security', '--offline=true', '--threshold=20', unitFile]);
  assert.equal(security.code, 0, security.output);
  assert.match(security.output, /Overall exposure level for sluice\.service: [01]\.\d OK/);
});

test("the systemd unit's command line and environment serve; ExecReload's SIGHUP reloads and KillSignal drains, with time to spare before TimeoutStopSec", async () => {
  const unit = readUnit();
  const service = unit.get('Service')!;
  const execStart = service.get('ExecStart')![0]!.replaceAll('/opt/sluice', REPO_ROOT).split(' ');
  assert.deepEqual(service.get('ExecReload'), ['/bin/kill -HUP $MAINPID']);
  assert.deepEqual(service.get('KillSignal'), ['SIGTERM']);
  assert.deepEqual(service.get('KillMode'), ['mixed'], 'SIGTERM to the primary alone, which drains its workers');
  const stopSeconds = Number(/^(\d+)s$/.exec(service.get('TimeoutStopSec')![0]!)![1]);
  assert.ok(stopSeconds >= 30 + 2 + 5, "TimeoutStopSec covers the default drain (30 s) and the ledger's 2 s, with room");

  // The unit's environment, with its directories and port made this test's.
  const dir = tempDir();
  const env = unitEnvironment(unit);
  assert.deepEqual(Object.keys(env).sort(), ['SLUICE_CONFIG', 'SLUICE_DATA', 'SLUICE_LISTEN']);
  const configFile = join(dir, 'sluice.yaml');
  writeFileSync(configFile, `${upstreams.providersYaml}\nmodels:\n  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }\n`);
  const port = await closedPort();
  const child = spawn(execStart[0]!, execStart.slice(1), {
    cwd: dir,
    env: { PATH: process.env.PATH, SLUICE_LOG_LEVEL: 'info', SLUICE_WORKERS: '2', ...env, SLUICE_CONFIG: configFile, SLUICE_DATA: join(dir, 'data'), SLUICE_LISTEN: `127.0.0.1:${port}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await eventually(() => (output.includes(`sluice listening on http://127.0.0.1:${port}`) ? true : undefined), 20_000, `the unit's command to serve: ${output}`);
    const { key } = await createKey(join(dir, 'data'), 'unit-co');
    upstreams.vllm.behaviour = { headerDelayMs: 400 };
    const inFlight = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }),
    });
    await eventually(() => (upstreams.vllm.requests.length > 0 ? true : undefined), 5000, 'the request to reach the upstream');
    // SIGHUP's default would end the process: Sluice's primary passes it to each worker, which reads the file again.
    child.kill('SIGHUP');
    await eventually(() => ((output.match(/configuration file unchanged/g) ?? []).length === 2 ? true : undefined), 5000, `each worker to reload: ${output}`);
    child.kill('SIGTERM');
    assert.equal((await inFlight).status, 200, 'the request in flight finishes during the drain');
    assert.equal(await exited, 0, 'a clean exit, for Restart=on-failure');
  } finally {
    upstreams.vllm.behaviour = {};
    child.kill('SIGKILL');
  }
});

test("a gateway started from the ConfigMap's sluice.yaml and the Deployment's environment serves its models and answers the probes on the ports the Deployment names", async () => {
  const container = sluiceContainer();
  const configMap = manifestOf('ConfigMap');
  const secret = manifestOf('Secret');
  // The ConfigMap's providers, pointed at this machine's fakes of the same kinds, which serve one model each.
  const yaml = parse(configMap.data['sluice.yaml']) as { providers: { id: string; kind: string; base_url: string }[]; models: { provider: string; upstream_model: string }[] };
  const fakes: Record<string, { url: string; model: string }> = { openai: { url: upstreams.vllm.url, model: 'upstream-model' }, anthropic: { url: upstreams.anthropic.url, model: 'claude-test' } };
  const kinds = new Map(yaml.providers.map((provider) => [provider.id, provider.kind]));
  for (const provider of yaml.providers) provider.base_url = fakes[provider.kind]!.url;
  for (const model of yaml.models) model.upstream_model = fakes[kinds.get(model.provider)!]!.model;
  // The Deployment's environment: plain values as they are, secrets from secret.example.yaml (the
  // credentials the fakes accept); the listeners on this test's ports, the store and Redis the tests'.
  const env: NodeJS.ProcessEnv = {};
  for (const variable of container.env) {
    const ref = variable.valueFrom?.secretKeyRef;
    env[variable.name] = ref === undefined ? variable.value : secret.stringData[ref.key];
  }
  env.ANTHROPIC_API_KEY = 'anthropic-credential';
  env.VLLM_API_KEY = 'vllm-credential';
  env.SLUICE_REDIS_URL = REDIS_URL;
  env.SLUICE_REDIS_PREFIX = uniqueRedisPrefix();
  delete env.SLUICE_DATABASE_URL;
  const metricsPort = await closedPort();
  env.SLUICE_METRICS_LISTEN = `127.0.0.1:${metricsPort}`;
  const sluice = await startSluice({ config: stringify(yaml), env });
  try {
    for (const probe of ['livenessProbe', 'readinessProbe']) {
      const { path, port } = container[probe].httpGet as { path: string; port: string };
      assert.equal(port, 'http', `${probe} asks the gateway's port`);
      const answer = await fetch(`${sluice.url}${path}`);
      assert.equal(answer.status, 200, `${probe}: GET ${path}`);
    }
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status, 200, 'the metrics port serves /metrics');
    // As `kubectl exec … keys create` would: with the container's key pepper.
    const created = await cli(['keys', 'create', '--account', 'k8s-co', '--json', '--data', sluice.dataDir], { SLUICE_KEY_PEPPER: env.SLUICE_KEY_PEPPER });
    assert.equal(created.code, 0, created.stderr);
    const { key } = JSON.parse(created.stdout.trim().split('\n').at(-1)!) as { key: string };
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    const models = (await client.models.list()).data.map((model) => model.id).sort();
    assert.deepEqual(models, ['claude-sonnet', 'llama-8b']);
    for (const model of models) {
      const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
      assert.ok(answer.choices[0]!.message.content, `${model} answers`);
    }
  } finally {
    assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  }
});
