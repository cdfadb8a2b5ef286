import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { cli, configFor, createKey, eventually, SLUICE_BIN, startSluice, tempDir, type RunningSluice } from './support/sluice.js';

/** The operator's first hour: what `serve`, `init` and `keys create` say when something is missing or wrong. */

const packageVersion = (JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as { version: string }).version;

/** Only the lines a person reads: no stack frame, no second line about a worker. */
function assertOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm warn'));
  assert.equal(lines.length, 1, `expected one line, got:\n${stderr}`);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(stderr, /^\s+at /m);
}

/** Writes a file the way editors and deploy tools do: whole, then renamed into place. */
function replaceFile(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

describe('sluice --version', () => {
  test("prints the package's version and the runtime's", async () => {
    for (const flag of ['--version', '-v']) {
      const result = await cli([flag]);
      assert.equal(result.code, 0);
      assert.equal(result.stdout.trim(), `${packageVersion} (Node.js ${process.version})`);
    }
  });
});

describe('serve refuses to start with one plain line', () => {
  let taken: Server;
  let port: number;
  before(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  after(() => taken.close());

  for (const workers of ['1', '2']) {
    test(`a port already in use (--workers ${workers})`, async () => {
      const data = tempDir();
      const result = await cli(['serve', '--listen', `127.0.0.1:${port}`, '--workers', workers, '--data', data]);
      assert.equal(result.code, 1);
      assertOneLine(result.stderr, new RegExp(`^sluice: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use.*--listen`));
    });
  }

  test('a data directory that is a file', async () => {
    const file = join(tempDir(), 'not-a-directory');
    writeFileSync(file, 'x');
    const result = await cli(['serve', '--listen', '127.0.0.1:0', '--workers', '2', '--data', join(file, 'data')], { SLUICE_DATABASE_URL: '' });
    assert.equal(result.code, 1);
    assertOneLine(result.stderr, /^sluice: cannot use the data directory .*not-a-directory\/data: it, or a folder on its path, is a file; choose another with --data/);
  });

  test('a bad configuration file, with several workers', async () => {
    const dir = tempDir();
    const config = join(dir, 'sluice.yaml');
    writeFileSync(config, 'models:\n  - id: x\n    provider: nowhere\n');
    const result = await cli(['serve', '--listen', '127.0.0.1:0', '--workers', '2', '--data', join(dir, 'data'), '--config', config]);
    assert.equal(result.code, 1);
    assertOneLine(result.stderr, /^sluice: .*sluice\.yaml: models\[0\] \(id: x\): field 'provider': no provider has the id 'nowhere'$/);
  });
});

describe('keys create --models checks the catalogue', () => {
  test('an unknown model is refused unless --allow-unknown; catalogue models are accepted', async () => {
    const dir = tempDir();
    const data = join(dir, 'data');
    const config = join(dir, 'sluice.yaml');
    writeFileSync(config, configFor('http://127.0.0.1:9/v1'));
    const refused = await cli(['keys', 'create', '--account', 'acme', '--models', 'llama-8b,lama-8b', '--config', config, '--data', data]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /the catalogue \(.*sluice\.yaml and the console\) has no model 'lama-8b'; it has llama-8b, other-model, chat-only\. Pass --allow-unknown/);
    assert.doesNotMatch(refused.stderr, /'llama-8b'/);
    assert.equal((await cli(['keys', 'list', '--json', '--data', data])).stdout.trim(), '[]', 'nothing was created');

    const known = await cli(['keys', 'create', '--account', 'acme', '--models', 'llama-8b,chat-only', '--json', '--config', config, '--data', data]);
    assert.equal(known.code, 0, known.stderr);
    assert.deepEqual(JSON.parse(known.stdout).models, ['llama-8b', 'chat-only']);

    const allowed = await cli(['keys', 'create', '--account', 'acme', '--models', 'coming-soon', '--allow-unknown', '--json', '--config', config, '--data', data]);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.deepEqual(JSON.parse(allowed.stdout).models, ['coming-soon']);

    // Without a configuration file the catalogue is the console's alone, and says so.
    const bare = await cli(['keys', 'create', '--account', 'acme', '--models', 'llama-8b', '--data', join(tempDir(), 'data')]);
    assert.equal(bare.code, 1);
    assert.match(bare.stderr, /no configuration file \(\.\/sluice\.yaml absent; name one with --config\).*it has no models yet/);
  });
});

describe('sluice init', () => {
  test('writes a commented file naming environment variables, never a secret, and will not overwrite', async () => {
    const dir = tempDir();
    const config = join(dir, 'sluice.yaml');
    const env = { OPENAI_API_KEY: 'sk-should-never-appear', ANTHROPIC_API_KEY: 'sk-ant-never' };
    const result = await cli(['init', '--provider', 'openai=http://127.0.0.1:8000/v1', '--provider', 'anthropic', '--provider', 'gemini', '--provider', 'openai', '--config', config], env);
    assert.equal(result.code, 0, result.stderr);
    const text = readFileSync(config, 'utf8');
    for (const secret of Object.values(env)) {
      assert.ok(!text.includes(secret), 'no secret in the file');
      assert.ok(!result.stdout.includes(secret), 'no secret on the terminal');
    }
    assert.match(text, /- id: vllm\n {4}kind: openai\n {4}base_url: http:\/\/127\.0\.0\.1:8000\/v1\n {4}api_key: \$\{VLLM_API_KEY:-\}/);
    assert.match(text, /- id: anthropic\n {4}kind: anthropic\n.*\n {4}api_key: \$\{ANTHROPIC_API_KEY\}/);
    assert.match(text, /- id: gemini\n {4}kind: gemini\n.*\n {4}api_key: \$\{GEMINI_API_KEY\}/);
    assert.match(text, /- id: openai\n {4}kind: openai\n.*\n {4}api_key: \$\{OPENAI_API_KEY\}/);
    assert.match(result.stdout, /export ANTHROPIC_API_KEY=…/);
    assert.match(result.stdout, /sluice doctor --config /);

    // The file loads: `keys create` reads it (the variables set) and finds an empty catalogue.
    const loaded = await cli(['keys', 'create', '--account', 'a', '--models', 'x', '--config', config, '--data', join(dir, 'data')], { ...env, GEMINI_API_KEY: 'g' });
    assert.match(loaded.stderr, /has no model 'x'; it has no models yet/);
    // A variable left unset is named when the file is read.
    const unset = await cli(['keys', 'create', '--account', 'a', '--models', 'x', '--config', config, '--data', join(dir, 'data')], { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: 'a', GEMINI_API_KEY: 'g' });
    assert.match(unset.stderr, /environment variable OPENAI_API_KEY is not set/);

    const again = await cli(['init', '--provider', 'gemini', '--config', config]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists already; pass --force/);
    assert.equal(readFileSync(config, 'utf8'), text, 'unchanged');
    assert.equal((await cli(['init', '--provider', 'gemini', '--config', config, '--force'])).code, 0);
    assert.match(readFileSync(config, 'utf8'), /- id: gemini/);
    assert.doesNotMatch(readFileSync(config, 'utf8'), /- id: anthropic/);
  });

  test('init --provider azure=URL, bedrock=REGION and vertex write entries that read their credentials from the environment', async () => {
    const dir = tempDir();
    const config = join(dir, 'sluice.yaml');
    const env = { AZURE_OPENAI_API_KEY: 'azure-key-never-printed', AWS_SECRET_ACCESS_KEY: 'aws-secret-never-printed', GOOGLE_CLOUD_PROJECT: 'env-project' };
    const result = await cli(['init', '--provider', 'azure=https://my-resource.openai.azure.com', '--provider', 'bedrock=eu-west-1', '--provider', 'vertex', '--config', config], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /with my-resource \(azure\), bedrock \(bedrock\), vertex \(vertex\)\./);
    for (const variable of ['AZURE_OPENAI_API_KEY', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'GOOGLE_CLOUD_PROJECT']) assert.match(result.stdout, new RegExp(`export ${variable}=…`));
    const text = readFileSync(config, 'utf8');
    for (const secret of Object.values(env).slice(0, 2)) {
      assert.ok(!text.includes(secret) && !result.stdout.includes(secret), 'no secret in the file or on the terminal');
    }
    assert.match(text, /- id: my-resource\n {4}kind: azure\n {4}base_url: https:\/\/my-resource\.openai\.azure\.com\n {4}api_key: \$\{AZURE_OPENAI_API_KEY\}/);
    assert.match(text, /- id: bedrock\n {4}kind: bedrock\n {4}region: eu-west-1\n/);
    assert.match(text, /- id: vertex\n {4}kind: vertex\n {4}project: \$\{GOOGLE_CLOUD_PROJECT\}\n {4}location: \$\{GOOGLE_CLOUD_LOCATION:-global\}/);
    // The file loads as written, with only the variables it cannot do without.
    const loaded = await cli(['keys', 'create', '--account', 'a', '--models', 'x', '--config', config, '--data', join(dir, 'data')], { AZURE_OPENAI_API_KEY: 'k', GOOGLE_CLOUD_PROJECT: 'env-project' });
    assert.match(loaded.stderr, /has no model 'x'; it has bedrock-claude-sonnet, vertex-gemini-pro, vertex-claude-sonnet\./, 'the sample models are in the catalogue');
    const unset = await cli(['keys', 'create', '--account', 'a', '--models', 'x', '--config', config, '--data', join(dir, 'data')], { AZURE_OPENAI_API_KEY: 'k', GOOGLE_CLOUD_PROJECT: '' });
    assert.match(unset.stderr, /environment variable GOOGLE_CLOUD_PROJECT is not set/);
  });

  test('init with two Azure resources: the second reads a key variable of its own; Next: names each variable once; …/openai is refused', async () => {
    const dir = tempDir();
    const config = join(dir, 'sluice.yaml');
    const result = await cli(['init', '--provider', 'azure=https://east-res.openai.azure.com', '--provider', 'azure=https://west-res.openai.azure.com', '--provider', 'bedrock=eu-west-1', '--provider', 'bedrock=us-east-1', '--config', config]);
    assert.equal(result.code, 0, result.stderr);
    const text = readFileSync(config, 'utf8');
    assert.match(text, /- id: east-res\n {4}kind: azure\n {4}base_url: https:\/\/east-res\.openai\.azure\.com\n {4}api_key: \$\{AZURE_OPENAI_API_KEY\}/);
    assert.match(text, /- id: west-res\n {4}kind: azure\n {4}base_url: https:\/\/west-res\.openai\.azure\.com\n {4}api_key: \$\{WEST_RES_API_KEY\}/);
    const exports = result.stdout.split('\n').filter((line) => line.trim().startsWith('export ')).map((line) => line.trim().split('=')[0]);
    assert.deepEqual(exports, ['export AZURE_OPENAI_API_KEY', 'export WEST_RES_API_KEY', 'export AWS_ACCESS_KEY_ID', 'export AWS_SECRET_ACCESS_KEY'], result.stdout);
    // The file starts with each resource's own key.
    const loaded = await cli(['keys', 'create', '--account', 'a', '--models', 'x', '--config', config, '--data', join(dir, 'data')], { AZURE_OPENAI_API_KEY: 'k1', WEST_RES_API_KEY: 'k2' });
    assert.match(loaded.stderr, /has no model 'x'/);

    const withPath = await cli(['init', '--provider', 'azure=https://east-res.openai.azure.com/openai/', '--config', join(dir, 'other.yaml')]);
    assert.notEqual(withPath.code, 0);
    assert.match(withPath.stderr, /give the resource's endpoint without \/openai .*--provider azure=https:\/\/east-res\.openai\.azure\.com/);
  });

  test('a server on an IP address gets a readable id, several get distinct ones, and the file starts', async () => {
    const upstream = await startFakeOpenAI({ models: ['served-by-ip'] });
    try {
      const dir = tempDir();
      const config = join(dir, 'sluice.yaml');
      const address = await cli(['init', '--provider', 'openai=http://10.0.0.5:8000/v1', '--config', join(dir, 'first.yaml')]);
      assert.equal(address.code, 0, address.stderr);
      assert.match(address.stdout, /Wrote .*first\.yaml with vllm \(openai\)\./);
      assert.match(address.stdout, /export VLLM_API_KEY=…/);
      assert.match(readFileSync(join(dir, 'first.yaml'), 'utf8'), /- id: vllm\n {4}kind: openai\n {4}base_url: http:\/\/10\.0\.0\.5:8000\/v1\n/);

      // The fake on 127.0.0.1 and an unreachable second server on another port: distinct ids, and a gateway serves the first's models.
      const port = new URL(upstream.url).port;
      const both = await cli(['init', '--provider', `openai=${upstream.url}`, '--provider', 'openai=http://127.0.0.1:9/v1', '--config', config]);
      assert.equal(both.code, 0, both.stderr);
      assert.match(both.stdout, new RegExp(`with openai-local-${port} \\(openai\\), openai-local-9 \\(openai\\)\\.`));
      const sluice = await startSluice({ args: ['--config', config] });
      try {
        const { key } = await createKey(sluice.dataDir, 'acme');
        const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
        const model = await eventually(async () => (await client.models.list()).data.find((m) => m.id === 'served-by-ip'), 10_000, 'the discovered model');
        assert.equal(model.id, 'served-by-ip');
        const chat = await client.chat.completions.create({ model: 'served-by-ip', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
        assert.equal(chat.model, 'served-by-ip');
        assert.equal(upstream.requests.at(-1)!.path, '/v1/chat/completions');
        const row = await eventually(async () => (await sluice.ledger()).find((r) => r.model === 'served-by-ip'), 5000, 'the ledger row');
        assert.equal(row.provider_id, `openai-local-${port}`);
      } finally {
        assert.equal(await sluice.stop(), 0);
      }
    } finally {
      await upstream.close();
    }
  });

  test('bad provider specs are refused', async () => {
    const config = join(tempDir(), 'sluice.yaml');
    const cases: [string[], RegExp][] = [
      [[], /name at least one provider/],
      [['--provider', 'mistral'], /the kind must be one of openai, anthropic, gemini, azure, bedrock, vertex/],
      [['--provider', 'azure'], /give the resource's endpoint: --provider azure=https:\/\/RESOURCE\.openai\.azure\.com/],
      [['--provider', 'bedrock=https://bedrock-runtime.us-east-1.amazonaws.com'], /is not an AWS region such as us-east-1/],
      [['--provider', 'vertex=a/b/c'], /write vertex=PROJECT or vertex=PROJECT\/LOCATION/],
      [['--provider', 'openai=ftp://x'], /is not an http:\/\/ or https:\/\/ URL/],
      [['--provider', 'openai=http://user:pw@host/v1'], /put no credential in the URL/],
      [['--provider', 'openai=http://10.0.0.5:8000/v1', '--provider', 'openai=http://10.0.0.5:8000/v1'], /names the same server as --provider openai=http:\/\/10\.0\.0\.5:8000\/v1; give each server once/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(['init', ...args, '--config', config]);
      assert.equal(result.code, 1);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, /pw/);
    }
  });
});

describe('a gateway with no models guides its operator', () => {
  let upstream: FakeUpstream;
  let sluice: RunningSluice;
  let dir: string;
  before(async () => {
    upstream = await startFakeOpenAI({ models: ['served-by-vllm'] });
    dir = tempDir();
    sluice = await startSluice({ cwd: dir, dataDir: join(dir, 'data'), args: ['--workers', '2'] });
  });
  after(async () => {
    await sluice.stop();
    await upstream.close();
  });

  test('says on the terminal and in the log where the configuration goes, the console and the first admin', async () => {
    const out = await eventually(() => (/Check the set-up/.test(sluice.stdout()) ? sluice.stdout() : undefined), 5000, 'the guidance');
    assert.match(out, /No models are configured yet/);
    assert.match(out, /Configuration file: \.\/sluice\.yaml does not exist; it is read as soon as it appears/);
    assert.match(out, /sluice init --provider openai=/);
    assert.match(out, new RegExp(`Console: ${sluice.url}/app/catalogue`));
    assert.match(out, new RegExp(`No console admin yet\\. Make one \\(it prints a one-time sign-in link\\): sluice accounts create admin --admin --sign-in-link --url ${sluice.url}`));
    assert.equal(out.match(/No models are configured yet/g)!.length, 1, 'said once, not once per worker');
    const warning = await eventually(() => sluice.stderr().split('\n').find((line) => line.includes('no models are configured')), 3000, 'the log line');
    assert.equal(JSON.parse(warning).level, 40);
  });

  test('`sluice init` in its folder serves the upstream\'s models without a restart', async () => {
    const init = await cli(['init', '--provider', `openai=${upstream.url}`], { SLUICE_CONFIG: join(dir, 'sluice.yaml') });
    assert.equal(init.code, 0, init.stderr);
    const { key } = await createKey(sluice.dataDir, 'acme');
    const client = new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });
    await eventually(async () => ((await client.models.list()).data.some((m) => m.id === 'served-by-vllm') ? true : undefined), 10_000, 'the discovered model');
    // Each worker learns of the discovered models from the store on its own (the change feed): the one
    // that listed them may answer first. New connections reach every worker in turn.
    const onNewConnection = () => postOnNewConnection(`${sluice.url}/v1/completions`, key, { model: 'served-by-vllm', prompt: 'hi', max_tokens: 3 });
    await eventually(async () => ((await Promise.all([onNewConnection(), onNewConnection(), onNewConnection(), onNewConnection()])).every((status) => status === 200) ? true : undefined), 10_000, 'every worker serving it');
    const completion = await client.completions.create({ model: 'served-by-vllm', prompt: 'hi', max_tokens: 3 });
    assert.equal(completion.model, 'served-by-vllm');
  });
});

/** The status of a POST on a connection of its own (closed after it), so that the cluster hands it to the next worker. */
function postOnNewConnection(url: string, key: string, body: object): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

describe('an upstream\'s own error body is logged for the operator', () => {
  test('redacted and truncated, while the caller gets the gateway\'s own error', async () => {
    const upstream = await startFakeOpenAI();
    const secret = 'upstream-secret-credential';
    upstream.behaviour = {
      fail: { status: 401, body: (request) => JSON.stringify({ error: { message: `Incorrect API key provided: ${String(request.headers.authorization)}. ${'x'.repeat(3000)}`, type: 'invalid_request_error' } }) },
    };
    const sluice = await startSluice({ config: configFor(upstream.url) });
    try {
      const client = new OpenAI({ apiKey: (await createKey(sluice.dataDir, 'acme')).key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
      const error = await client.completions.create({ model: 'llama-8b', prompt: 'hi', max_tokens: 2 }).catch((e: unknown) => e);
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 502);
      assert.doesNotMatch(error.message, /Incorrect API key/, 'the upstream\'s words stay in the log');
      const line = await eventually(() => sluice.stderr().split('\n').find((l) => l.includes('"upstreamBody"')), 3000, 'the logged body');
      const logged = JSON.parse(line) as { upstreamStatus: number; upstreamBody: string; deployment: string; requestId: string; msg: string };
      assert.equal(logged.upstreamStatus, 401);
      assert.equal(logged.deployment, 'fake-vllm/upstream-model');
      assert.equal(logged.requestId, error.requestID ?? logged.requestId);
      assert.match(logged.msg, /upstream fake-vllm answered HTTP 401/);
      assert.match(logged.upstreamBody, /Incorrect API key provided: Bearer \[redacted\]\. x+… \(\d+ characters\)$/);
      assert.ok(logged.upstreamBody.length < 1100, 'truncated');
      assert.ok(!sluice.stderr().includes(secret), 'the credential is never logged');
    } finally {
      await sluice.stop();
      await upstream.close();
    }
  });
});

describe('configuration reload', () => {
  for (const workers of ['1', '2']) {
    test(`SIGHUP from the first moment of a start (systemctl reload just after start), --workers ${workers}: it comes up, serves and stops cleanly`, async () => {
      const dataDir = join(tempDir(), 'data');
      const child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--listen', '127.0.0.1:0', '--data', dataDir, '--workers', workers], {
        env: { ...process.env, SLUICE_LOG_LEVEL: 'info', SLUICE_DATABASE_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // Hang-ups all through start-up: from the moment serve makes its data directory (Node's own boot
      // before the CLI's first line cannot take a signal), while the store opens, as workers start.
      await eventually(() => (existsSync(dataDir) ? true : undefined), 20_000, 'serve to make its data directory');
      const hangups = setInterval(() => child.kill('SIGHUP'), 15);
      try {
        const url = await eventually(() => /sluice listening on (http:\/\/\S+)/.exec(stdout)?.[1] ?? (child.exitCode === null ? undefined : `exited ${child.exitCode}`), 20_000, 'the gateway to listen');
        assert.match(url, /^http:/, `${url}: ${stderr}`);
        clearInterval(hangups);
        assert.equal(child.exitCode, null, 'still running');
        assert.equal((await fetch(`${url}/readyz`)).status, 200);
        assert.ok(stderr.includes('configuration file unchanged'), 'a hang-up after start-up is a reload');
      } finally {
        clearInterval(hangups);
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0, stderr);
    });
  }

  test('every worker follows the file while requests flow; a bad file keeps the previous one; SIGHUP is heard', async () => {
    const upstream = await startFakeOpenAI({ models: ['upstream-model', 'second-upstream'] });
    const sluice = await startSluice({ config: configFor(upstream.url), args: ['--workers', '2', '--no-access-log'], env: { SLUICE_LOG_LEVEL: 'info' } });
    const configPath = join(sluice.dataDir, 'sluice.yaml');
    const client = new OpenAI({ apiKey: (await createKey(sluice.dataDir, 'acme')).key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });
    /** Model ids as several lists see them, so that both workers answer at least once in all likelihood. */
    const listed = async () => {
      const lists = await Promise.all(Array.from({ length: 8 }, () => client.models.list()));
      return lists.map((list) => list.data.map((m) => m.id));
    };
    let flowing = true;
    const failures: unknown[] = [];
    let served = 0;
    const flow = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (flowing) {
          try {
            await client.completions.create({ model: 'llama-8b', prompt: 'hello', max_tokens: 4 });
            served++;
          } catch (error) {
            failures.push(error);
          }
        }
      }),
    );
    // A model added, and the provider changed (its adapter is replaced under the flowing requests).
    const withAdded = configFor(upstream.url, '  - { id: added, provider: fake-vllm, upstream_model: second-upstream, endpoints: [chat] }').replace('api_key: upstream-secret-credential', 'api_key: upstream-secret-credential\n    headers: { X-Reloaded: "1" }');
    try {
      replaceFile(configPath, withAdded);
      await eventually(async () => ((await listed()).every((ids) => ids.includes('added')) ? true : undefined), 10_000, 'every worker to list the added model');
      const chat = await client.chat.completions.create({ model: 'added', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
      assert.equal(chat.model, 'added');
      assert.equal(upstream.requests.at(-1)!.headers['x-reloaded'], '1', 'the changed provider is in force');

      // An invalid file: said why in the log, and the previous configuration stays.
      replaceFile(configPath, configFor(upstream.url, '  - { id: broken, provider: missing-provider }'));
      const refusal = await eventually(() => sluice.stderr().split('\n').find((l) => l.includes('configuration not reloaded')), 10_000, 'the refusal in the log');
      assert.match(JSON.parse(refusal).msg, /models\[3\] \(id: broken\): field 'provider': no provider has the id 'missing-provider'; the previous configuration stays in force/);
      for (const ids of await listed()) {
        assert.ok(ids.includes('added') && !ids.includes('broken'));
      }

      // SIGHUP to the primary reaches every worker, which finds the file as it last applied it.
      const heard = () => sluice.stderr().split('\n').filter((l) => l.includes('"reason":"SIGHUP"')).length;
      replaceFile(configPath, withAdded);
      await eventually(async () => ((await listed()).every((ids) => ids.includes('added')) ? true : undefined), 10_000, 'the repaired file');
      sluice.child.kill('SIGHUP');
      await eventually(() => (heard() >= 2 ? true : undefined), 5000, 'both workers to hear SIGHUP');
      assert.ok(sluice.stderr().includes('configuration file unchanged'));

      // The model removed again: gone from every worker's list, and refused as unknown.
      replaceFile(configPath, configFor(upstream.url));
      await eventually(async () => ((await listed()).every((ids) => !ids.includes('added')) ? true : undefined), 10_000, 'the model gone everywhere');
      const gone = await client.chat.completions.create({ model: 'added', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
      assert.ok(gone instanceof OpenAI.NotFoundError);
    } finally {
      flowing = false;
      await flow;
      assert.equal(sluice.child.exitCode, null, 'the gateway still runs');
      await sluice.stop();
      await upstream.close();
    }
    assert.deepEqual(failures, [], 'no request failed during the reloads');
    assert.ok(served > 20, `requests flowed throughout (${served})`);
  });
});
