/**
 * The operator's kit, checked without a process: the Kubernetes manifests against the Kubernetes
 * API's own schemas (kubernetes-models) and against what Sluice serves and reads (ports, probes,
 * the ConfigMap's sluice.yaml through Sluice's own parser, every secret and variable it names), and
 * the Grafana dashboard's shape. What needs promtool, systemd-analyze, Prometheus or a running
 * gateway is in test/deploy-kit.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { parse } from 'yaml';
import { defaultBaseUrl, parseConfig } from '../../src/config/config-file.js';
import { dashboardQueries, DEPLOY_DIR, manifestOf, plainEnv, portOf, readDashboard, readManifests, sluiceContainer, withVariables } from '../support/deploy-kit.js';

const MODELS = { Deployment, Service, ConfigMap, Secret } as const;

describe('the Kubernetes manifests', () => {
  test('each is a valid object of its kind under the Kubernetes API schemas', () => {
    const manifests = readManifests();
    assert.deepEqual(manifests.map(({ manifest }) => manifest.kind).sort(), ['ConfigMap', 'Deployment', 'Secret', 'Service']);
    for (const { file, manifest } of manifests) {
      const Model = MODELS[manifest.kind as keyof typeof MODELS];
      assert.doesNotThrow(() => new Model(manifest as never).validate(), `${file}: ${manifest.kind} ${manifest.metadata.name}`);
    }
  });

  test('the kustomization applies every manifest but the example Secret', () => {
    const kustomization = parse(readFileSync(join(DEPLOY_DIR, 'kubernetes', 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    const files = [...new Set(readManifests().map(({ file }) => file))].filter((file) => file !== 'secret.example.yaml');
    assert.deepEqual([...kustomization.resources].sort(), files.sort());
  });

  test('the schema check is real: a wrong type or a probe without its port is refused', () => {
    const deployment = manifestOf('Deployment');
    assert.throws(() => new Deployment({ ...deployment, spec: { ...deployment.spec, replicas: 'two' } } as never).validate(), /replicas must be integer/);
    const container = { ...sluiceContainer(), readinessProbe: { httpGet: { path: '/readyz' } } };
    const spec = { ...deployment.spec, template: { ...deployment.spec.template, spec: { ...deployment.spec.template.spec, containers: [container] } } };
    assert.throws(() => new Deployment({ ...deployment, spec } as never).validate(), /httpGet must have required property port/);
  });

  test("the container listens where its ports say, and the probes ask what the gateway serves on the gateway's port", () => {
    const container = sluiceContainer();
    const ports = new Map(container.ports.map((port) => [port.name, port.containerPort]));
    assert.equal(container.args[0], 'serve', 'the container runs `sluice serve`');
    assert.equal(portOf(plainEnv('SLUICE_LISTEN')!), ports.get('http'), 'SLUICE_LISTEN is the port named http');
    assert.match(plainEnv('SLUICE_LISTEN')!, /^0\.0\.0\.0:/, 'on every interface of the pod (127.0.0.1 would be unreachable)');
    assert.equal(portOf(plainEnv('SLUICE_METRICS_LISTEN')!), ports.get('metrics'), 'SLUICE_METRICS_LISTEN is the port named metrics');
    assert.deepEqual(
      [container.livenessProbe.httpGet, container.readinessProbe.httpGet],
      [
        { path: '/livez', port: 'http' },
        { path: '/readyz', port: 'http' },
      ],
    );
    const service = manifestOf('Service');
    for (const port of service.spec.ports as { targetPort: string }[]) assert.ok(ports.has(port.targetPort), `the Service's targetPort ${port.targetPort} is a container port`);
    const labels = manifestOf('Deployment').spec.template.metadata.labels as Record<string, string>;
    for (const [name, value] of Object.entries(service.spec.selector as Record<string, string>)) assert.equal(labels[name], value, `the Service selects the pods by ${name}`);
    assert.deepEqual(manifestOf('Deployment').spec.selector.matchLabels, service.spec.selector, "the Deployment's selector is the Service's");
  });

  test('a stop has time to drain: the grace period covers preStop, the drain timeout and the ledger', () => {
    const deployment = manifestOf('Deployment');
    const container = sluiceContainer();
    const drainFlag = container.args.indexOf('--drain-timeout');
    const drainSeconds = drainFlag < 0 ? 30 : Number(container.args[drainFlag + 1]) / 1000;
    const preStop = container.lifecycle.preStop.sleep.seconds as number;
    // Sluice gives the ledger at least 2 s after the drain.
    assert.ok(deployment.spec.template.spec.terminationGracePeriodSeconds >= preStop + drainSeconds + 2, 'terminationGracePeriodSeconds');
  });

  test("the ConfigMap is mounted whole where SLUICE_CONFIG looks, and its sluice.yaml passes Sluice's own parser", () => {
    const deployment = manifestOf('Deployment');
    const configFile = plainEnv('SLUICE_CONFIG')!;
    const configMap = manifestOf('ConfigMap');
    const volume = (deployment.spec.template.spec.volumes as any[]).find((v) => v.configMap?.name === configMap.metadata.name);
    assert.ok(volume !== undefined, 'a volume holds the ConfigMap');
    const mount = (sluiceContainer().volumeMounts as any[]).find((m) => m.name === volume.name);
    // A subPath mount never sees the ConfigMap change; the directory's does (and Sluice reloads).
    assert.deepEqual({ mountPath: mount.mountPath, subPath: mount.subPath }, { mountPath: dirname(configFile), subPath: undefined });
    const text = configMap.data[basename(configFile)] as string;
    assert.ok(text !== undefined, `the ConfigMap has ${basename(configFile)}`);

    // Sluice reads ${NAMES} from the container's environment: each is there (or has a default).
    const secret = manifestOf('Secret');
    const env: Record<string, string> = {};
    for (const variable of sluiceContainer().env) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref !== undefined) {
        assert.equal(ref.name, secret.metadata.name, `${variable.name} reads the Secret secret.example.yaml shows`);
        assert.ok(ref.key in secret.stringData, `${variable.name}: the Secret has the key ${ref.key}`);
        env[variable.name] = secret.stringData[ref.key];
      } else {
        env[variable.name] = variable.value!;
      }
    }
    for (const [, name, fallback] of text.matchAll(/\$\{(\w+)(:-[^}]*)?\}/g)) assert.ok(fallback !== undefined || name! in env, `sluice.yaml's \${${name}} is in the container's environment`);
    const config = parseConfig(text, 'the ConfigMap', env);
    assert.deepEqual(config.models.map((model) => model.id).sort(), ['claude-sonnet', 'llama-8b']);
    // The e2e test points every provider at a fake, so a wrong path in a base_url would pass there: a vendor's
    // address given here must keep the path of Sluice's default for its kind (Anthropic's /v1, Google's /v1beta).
    for (const provider of config.providers) {
      const vendorDefault = defaultBaseUrl(provider);
      if (vendorDefault === undefined || provider.base_url === undefined) continue;
      assert.equal(new URL(provider.base_url).pathname.replace(/\/+$/, ''), new URL(vendorDefault).pathname, `${provider.id}: base_url ${provider.base_url}`);
    }
  });
});

describe('the Grafana dashboard', () => {
  const dashboard = readDashboard();

  test('imports anywhere: a schema version, its Prometheus chosen by a datasource variable that every panel and query uses', () => {
    assert.ok(Number.isInteger(dashboard.schemaVersion) && dashboard.schemaVersion >= 36, 'schemaVersion');
    assert.equal(typeof dashboard.uid, 'string');
    const variables = dashboard.templating.list as any[];
    assert.deepEqual(
      variables.map((v) => [v.name, v.type]),
      [
        ['datasource', 'datasource'],
        ['job', 'custom'],
        ['instance', 'query'],
        ['model', 'query'],
      ],
    );
    assert.equal(variables[0].query, 'prometheus');
    const panels = (dashboard.panels as any[]).filter((panel) => panel.type !== 'row');
    assert.ok(panels.length >= 20, `${panels.length} panels`);
    for (const panel of panels) {
      assert.deepEqual(panel.datasource, { type: 'prometheus', uid: '${datasource}' }, `${panel.title}'s datasource`);
      assert.ok(panel.targets.length > 0, `${panel.title} has a query`);
      for (const target of panel.targets) assert.deepEqual(target.datasource, panel.datasource, `${panel.title} ${target.refId}'s datasource`);
    }
    const ids = (dashboard.panels as any[]).map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  });

  test('no two panels overlap on the grid, and none is wider than it', () => {
    const cells = new Set<string>();
    for (const { title, gridPos } of dashboard.panels as any[]) {
      assert.ok(gridPos.x >= 0 && gridPos.x + gridPos.w <= 24, `${title} fits the 24 columns`);
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          assert.ok(!cells.has(`${x},${y}`), `${title} overlaps another panel at ${x},${y}`);
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  test('every query uses only variables the dashboard defines or Grafana provides', () => {
    const queries = dashboardQueries(dashboard);
    for (const { panel, refId, expr } of queries) assert.doesNotThrow(() => withVariables(expr), `${panel} ${refId}`);
    assert.throws(() => withVariables('rate(x{a="$undefined"}[5m])'), /a variable no dashboard defines/);
  });
});
