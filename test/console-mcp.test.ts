/**
 * The operator's side of the MCP gateway through the real console over HTTP: the MCP servers page
 * (every server with its origin, state and tools; HTTP servers added, edited and removed by an admin,
 * their headers sealed and never shown back; stdio servers, ids of the configuration file and the
 * gateway's own address refused, whatever the form posted), `/status` and `/status.json`, and the MCP
 * allow-list in the limits forms. Upstreams are real MCP servers built with the official SDK.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startStreamableHttpMcpUpstream, STDIO_FAKE_PATH, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore, storeContains } from './support/store.js';

const ADMIN_PASSWORD = 'admin-password-1';
const MEMBER_PASSWORD = 'member-password-1';
const FILE_TOKEN = 'file-header-secret-7c1e9a';
const CONSOLE_TOKEN = 'console-header-secret-4b2d8f';
const CONSOLE_TOKEN_2 = 'console-header-secret-second-91aa';
const STDIO_ENV_SECRET = 'stdio-env-secret-55e0c3';

let fileUpstream: FakeMcpUpstream;
let consoleUpstream: FakeMcpUpstream;
let sluice: RunningSluice;
let admin: ConsoleClient;
let csrf: string;

before(async () => {
  fileUpstream = await startStreamableHttpMcpUpstream({ token: FILE_TOKEN });
  consoleUpstream = await startStreamableHttpMcpUpstream({ token: CONSOLE_TOKEN });
  const dataDir = tempDir('console-mcp-');
  await createAccount(dataDir, 'root', ADMIN_PASSWORD, true);
  await createAccount(dataDir, 'mia', MEMBER_PASSWORD);
  sluice = await startSluice({
    dataDir,
    // Two workers: each has its own list and connections, and each must follow the console.
    args: ['--workers', '2'],
    config: `mcp_servers:
  - id: files-http
    url: ${fileUpstream.url}
    headers: { Authorization: "Bearer ${FILE_TOKEN}" }
  - id: local
    command: ${process.execPath}
    args: [${JSON.stringify(STDIO_FAKE_PATH)}]
    env: { FAKE_STDIO_TOKEN: ${STDIO_ENV_SECRET} }
  - id: gone
    url: http://127.0.0.1:9/mcp
`,
  });
  admin = new ConsoleClient(sluice.url);
  csrf = await admin.signIn('root', ADMIN_PASSWORD);
});

after(async () => {
  assert.equal(await sluice.stop(), 0, 'the gateway stops cleanly');
  await fileUpstream.close();
  await consoleUpstream.close();
});

/** A server's row on the MCP page, as markup. */
function rowOf(page: string, id: string): string | undefined {
  return new RegExp(`<tr data-mcp-server="${id}">([\\s\\S]*?)</tr>`).exec(page)?.[1];
}

const stateOf = (row: string | undefined) => (row === undefined ? undefined : /data-state="(\w+)"/.exec(row)?.[1]);

/** The MCP page once the server's row shows `state` (connections are made in the background). */
async function pageWith(id: string, state: string, ms = 10_000): Promise<string> {
  return eventually(async () => {
    const page = await admin.get('/app/mcp');
    return stateOf(rowOf(page.text, id)) === state ? page.text : undefined;
  }, ms, `${id} ${state} on the MCP page`);
}

async function consoleRows(): Promise<{ id: string; config: string; secrets: string | null }[]> {
  return queryStore(sluice.dataDir, 'SELECT id, config, secrets FROM console_mcp_servers ORDER BY id');
}

describe('the MCP servers page', () => {
  test('lists every server: the file’s read-only, each with its state and tools, header names only', async () => {
    const page = await pageWith('files-http', 'ready');
    await pageWith('local', 'ready');
    const down = await pageWith('gone', 'down');
    const files = rowOf(page, 'files-http')!;
    assert.match(files, /configuration file/, 'marked as from the file');
    assert.doesNotMatch(files, /\/edit|\/delete/, 'no edit or removal of a file server');
    assert.match(files, /<code>Authorization: ••••••••<\/code>/, 'its header by name, the value masked');
    assert.match(files, /Streamable HTTP<br><code>http:\/\/127\.0\.0\.1:\d+\/mcp<\/code>/);
    for (const tool of ['echo', 'add']) assert.match(files, new RegExp(`data-tool="${tool}"`), `its tool ${tool}`);
    assert.match(files, /Returns its text\./, 'with its description');
    const local = rowOf(await pageWith('local', 'ready'), 'local')!;
    assert.match(local, /stdio: <code>[^<]*node[^<]*<\/code>/, 'a stdio server by its command');
    assert.match(local, /environment: FAKE_STDIO_TOKEN/, 'its environment by name');
    assert.match(local, /data-tool="echo"/);
    const gone = rowOf(down, 'gone')!;
    assert.match(gone, /Down/);
    assert.match(gone, /since <time datetime="\d{4}-/, 'down since when');
    assert.match(gone, /data-mcp-error>[^<]+</, 'and why');
    for (const text of [page, down]) {
      for (const secret of [FILE_TOKEN, STDIO_ENV_SECRET]) assert.ok(!text.includes(secret), 'no header or environment value on the page');
    }
    assert.match(page, /<a href="\/app\/mcp" aria-current="page">MCP servers<\/a>/, 'in the admin’s navigation');
  });

  test('an admin adds, edits and removes an HTTP server; its headers are sealed, never shown, kept when left blank', async () => {
    const form = await admin.get('/app/mcp/new');
    assert.equal(form.status, 200);
    assert.doesNotMatch(form.text, /name="command"|name="args"|name="env"/, 'the form has no field for a command');
    const added = await admin.post('/app/mcp/new', { csrf, id: 'team-tools', url: consoleUpstream.url, transport: 'streamable_http', price_per_call: '', headers: `Authorization: Bearer ${CONSOLE_TOKEN}\nX-Team: blue` });
    assert.equal(added.status, 303, added.text);
    assert.equal(added.headers.get('location'), `/app/mcp?done=${encodeURIComponent('MCP server team-tools added.')}`);
    const page = await pageWith('team-tools', 'ready');
    const row = rowOf(page, 'team-tools')!;
    assert.match(row, /console/);
    assert.match(row, /href="\/app\/mcp\/team-tools\/edit"/, 'editable');
    assert.match(row, /<code>Authorization: ••••••••<\/code><\/li><li><code>X-Team: ••••••••<\/code>/);
    assert.match(row, /data-tool="echo"/, 'its tools, listed through the sealed header');
    assert.ok(consoleUpstream.requests.some((r) => r.headers.authorization === `Bearer ${CONSOLE_TOKEN}` && r.headers['x-team'] === 'blue'), 'the upstream got the headers');
    assert.ok(!page.includes(CONSOLE_TOKEN), 'never on the page');

    const [stored] = await consoleRows();
    assert.equal(stored!.id, 'team-tools');
    assert.deepEqual(JSON.parse(stored!.config), { url: consoleUpstream.url, transport: 'streamable_http' }, 'the plain fields only');
    assert.match(stored!.secrets!, /^v1\./, 'the headers sealed');
    assert.equal(await storeContains(sluice.dataDir, CONSOLE_TOKEN), false, 'the token is nowhere in the store');

    // Both workers follow the console: every /status.json answer (whichever worker) shows it ready.
    await eventually(async () => {
      const answers = await Promise.all(Array.from({ length: 6 }, async () => (await (await fetch(`${sluice.url}/status.json`)).json()) as { mcp_servers: { id: string; status: string }[] }));
      return answers.every((a) => a.mcp_servers.some((s) => s.id === 'team-tools' && s.status === 'ready')) ? true : undefined;
    }, 10_000, 'every worker connected to the console server');

    const edit = await admin.get('/app/mcp/team-tools/edit');
    assert.equal(edit.status, 200);
    assert.ok(!edit.text.includes(CONSOLE_TOKEN), 'the edit form never holds the value');
    assert.match(edit.text, /Set now: <code>Authorization: ••••••••<\/code>, <code>X-Team: ••••••••<\/code>\. Leave blank to keep them/);
    assert.match(edit.text, /id="f-id" name="id" type="text" value="team-tools" required readonly/);

    const before = consoleUpstream.requests.length;
    // Another address on the same host (a new connection), the headers left blank: they are kept, and sent there.
    const kept = await admin.post('/app/mcp/team-tools/edit', { ...ConsoleClient.formFields(edit.text, '/app/mcp/team-tools/edit'), url: `${consoleUpstream.url}?edition=2`, price_per_call: '0.05' });
    assert.equal(kept.status, 303, kept.text);
    const repriced = await eventually(async () => {
      const text = (await admin.get('/app/mcp')).text;
      const again = rowOf(text, 'team-tools');
      return again?.includes('$0.05') && stateOf(again) === 'ready' ? again : undefined;
    }, 10_000, 'the new price, reconnected');
    assert.match(repriced, /<code>Authorization: ••••••••<\/code>/, 'the headers kept');
    const reconnected = consoleUpstream.requests.slice(before).filter((r) => r.method === 'POST' && r.path.includes('edition=2'));
    assert.ok(reconnected.length > 0 && reconnected.every((r) => r.headers.authorization === `Bearer ${CONSOLE_TOKEN}`), 'the changed entry reconnects with the kept token');

    const moved = await admin.post('/app/mcp/team-tools/edit', { csrf, url: consoleUpstream.url.replace('127.0.0.1', 'localhost'), transport: 'streamable_http' });
    assert.equal(moved.status, 400, 'kept headers never follow a new host');
    assert.match(moved.text, /the URL’s host changed: enter the headers again/);
    const movedWith = await admin.post('/app/mcp/team-tools/edit', { csrf, url: consoleUpstream.url.replace('127.0.0.1', 'localhost'), transport: 'streamable_http', headers: `Authorization: Bearer ${CONSOLE_TOKEN_2}` });
    assert.equal(movedWith.status, 303, 'with the headers entered again');
    await eventually(async () => (consoleUpstream.requests.some((r) => r.headers.authorization === `Bearer ${CONSOLE_TOKEN_2}`) ? true : undefined), 10_000, 'the new token used');
    const after = rowOf((await admin.get('/app/mcp')).text, 'team-tools')!;
    assert.match(after, /<code>Authorization: ••••••••<\/code><\/li><\/ul>/, 'the new lines replaced both headers');

    const cleared = await admin.post('/app/mcp/team-tools/edit', { csrf, url: consoleUpstream.url, transport: 'streamable_http', clear_headers: '1' });
    assert.equal(cleared.status, 303);
    assert.equal((await consoleRows())[0]!.secrets, null, 'removed headers leave nothing sealed');
    assert.match(rowOf((await admin.get('/app/mcp')).text, 'team-tools')!, /<td><span class="muted">none<\/span><\/td>/);

    const confirm = await admin.get('/app/mcp/team-tools/delete');
    assert.equal(confirm.status, 200);
    const removed = await admin.post('/app/mcp/team-tools/delete', { csrf });
    assert.equal(removed.status, 303);
    assert.equal(rowOf((await admin.get('/app/mcp')).text, 'team-tools'), undefined, 'gone from the page');
    assert.deepEqual(await consoleRows(), []);
    await eventually(async () => {
      const answers = await Promise.all(Array.from({ length: 6 }, async () => (await (await fetch(`${sluice.url}/status.json`)).json()) as { mcp_servers: { id: string }[] }));
      return answers.every((a) => !a.mcp_servers.some((s) => s.id === 'team-tools')) ? true : undefined;
    }, 5000, 'every worker dropped it');
    assert.equal((await admin.post('/app/mcp/team-tools/delete', { csrf })).status, 404, 'a second removal finds nothing');
  });

  test('refused, with nothing stored: a stdio server however posted, a file server’s id, the gateway itself, bad fields, no CSRF', async () => {
    const refusals: [Record<string, string | string[]>, RegExp][] = [
      [{ id: 'evil', command: 'sh', args: ['-c', 'touch /tmp/pwned'] }, /<code>command<\/code>: a stdio MCP server \(a command Sluice starts on the gateway&#39;s host\) can be declared only in the configuration file/],
      [{ id: 'evil', url: consoleUpstream.url, command: 'sh' }, /<code>command<\/code>: a stdio MCP server/],
      [{ id: 'evil', url: consoleUpstream.url, env: 'X=1' }, /<code>env<\/code>: a stdio MCP server/],
      [{ id: 'evil', url: consoleUpstream.url, cwd: '/' }, /<code>cwd<\/code>: a stdio MCP server/],
      [{ id: 'FILES-HTTP', url: consoleUpstream.url }, /The configuration file already declares an MCP server &#39;files-http&#39;/],
      [{ id: 'loop', url: `${sluice.url}/mcp` }, /points at this gateway itself/],
      [{ id: 'loop', url: sluice.url.replace('127.0.0.1', 'localhost') + '/mcp/files-http' }, /points at this gateway itself/],
      [{ id: 'two__under', url: consoleUpstream.url }, /<code>id<\/code>: must be 1-32 letters/],
      [{ id: 'files', url: 'file:///etc/passwd' }, /<code>url<\/code>: must be an http:\/\/ or https:\/\/ URL/],
      [{ id: 'files', url: consoleUpstream.url, transport: 'stdio' }, /<code>transport<\/code>/],
      [{ id: 'files', url: consoleUpstream.url, price_per_call: '-1' }, /<code>price_per_call<\/code>/],
      [{ id: 'files', url: consoleUpstream.url, headers: 'no colon here' }, /<code>headers<\/code>: each line must be/],
    ];
    for (const [fields, message] of refusals) {
      const answer = await admin.post('/app/mcp/new', { csrf, transport: 'streamable_http', ...fields });
      assert.equal(answer.status, 400, `${JSON.stringify(fields)} is refused`);
      assert.match(answer.text, message, `${JSON.stringify(fields)}: ${message}`);
    }
    const noCsrf = await admin.post('/app/mcp/new', { id: 'x', url: consoleUpstream.url });
    assert.equal(noCsrf.status, 403, 'no CSRF token');
    const otherOrigin = await admin.post('/app/mcp/new', { csrf, id: 'x', url: consoleUpstream.url }, { origin: 'http://evil.example' });
    assert.equal(otherOrigin.status, 403, 'another origin');
    for (const path of ['/app/mcp/files-http/edit', '/app/mcp/files-http/delete', '/app/mcp/local/edit']) {
      assert.equal((await admin.get(path)).status, 404, `${path}: the file’s servers are changed in the file`);
      assert.equal((await admin.post(path, { csrf, url: consoleUpstream.url })).status, 404, `${path}: refused on POST too`);
    }
    assert.deepEqual(await consoleRows(), [], 'nothing was stored');
  });

  test('a member is refused the page and its forms; a visitor is sent to sign in', async () => {
    const member = new ConsoleClient(sluice.url);
    const memberCsrf = await member.signIn('mia', MEMBER_PASSWORD);
    assert.doesNotMatch((await member.get('/app/keys')).text, /href="\/app\/mcp"/, 'no MCP link for a member');
    assert.equal((await member.get('/app/mcp')).status, 403);
    assert.equal((await member.get('/app/mcp/new')).status, 403);
    assert.equal((await member.post('/app/mcp/new', { csrf: memberCsrf, id: 'sneaky', url: consoleUpstream.url })).status, 403);
    assert.deepEqual(await consoleRows(), [], 'nothing was stored');
    const visitor = await new ConsoleClient(sluice.url).get('/app/mcp');
    assert.equal(visitor.status, 303);
    assert.match(visitor.headers.get('location')!, /^\/app\/login\?next=%2Fapp%2Fmcp/);
  });
});

describe('/status', () => {
  test('shows each MCP server’s state (down with since), never its address, headers or error', async () => {
    await pageWith('gone', 'down');
    const json = (await (await fetch(`${sluice.url}/status.json`)).json()) as { status: string; mcp_servers: { id: string; status: string; since: string | null }[] };
    assert.equal(json.status, 'degraded', 'a gateway of MCP servers alone, one of them down');
    const byId = new Map(json.mcp_servers.map((s) => [s.id, s]));
    assert.equal(byId.get('gone')?.status, 'down');
    assert.match(byId.get('gone')!.since!, /^\d{4}-\d{2}-\d{2}T/);
    assert.equal(byId.get('files-http')?.status, 'ready');
    assert.deepEqual(Object.keys(byId.get('gone')!), ['id', 'status', 'since'], 'nothing but the id, state and since');
    const text = await (await fetch(`${sluice.url}/status`)).text();
    assert.match(text, /<tr data-mcp-server="gone"><th scope="row"><code>gone<\/code><\/th><td><span class="pill pill-down" data-state="down">Down<\/span><\/td><td><time/);
    assert.match(text, /<tr data-mcp-server="files-http">[\s\S]*?data-state="ready"/);
    const both = text + JSON.stringify(json);
    for (const hidden of [FILE_TOKEN, STDIO_ENV_SECRET, 'Authorization', String(fileUpstream.port), '127.0.0.1:9']) assert.ok(!both.includes(hidden), `${hidden} is not shown`);
  });
});

describe('the MCP allow-list in the console', () => {
  test('set on a key and an account through their limits forms, shown in the key list, kept when other limits change', async () => {
    const { id } = await createKey(sluice.dataDir, 'tools-co');
    const action = `/app/keys/${id}/limits`;
    const form = await admin.get(action);
    assert.match(form.text, /<label for="key-limits-mcp">MCP servers and tools<\/label>/);
    assert.match(form.text, /empty means <strong>no<\/strong> MCP server/);
    const bad = await admin.post(action, { ...ConsoleClient.formFields(form.text, action), mcp: 'files-http, two__under' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /&#39;two__under&#39; must be an MCP server id or &#39;server\/tool&#39;/);
    const saved = await admin.post(action, { ...ConsoleClient.formFields(form.text, action), mcp: 'files-http/echo local' });
    assert.equal(saved.status, 303, saved.text);
    const keys = (await admin.get(saved.headers.get('location')!)).text;
    assert.match(keys, /Limits of the key “default” saved: mcp files-http\/echo,local\./);
    assert.match(keys, new RegExp(`data-key-id="${id}"[\\s\\S]*?<li data-scope="mcp"><span class="limit-scope">MCP:</span> <code>files-http/echo</code>, <code>local</code></li>`));

    const again = await admin.get(action);
    assert.match(again.text, /name="mcp" value="files-http\/echo, local"/, 'the form shows the list');
    const withRpm = await admin.post(action, { ...ConsoleClient.formFields(again.text, action), rpm: '30' });
    assert.equal(withRpm.status, 303);
    const listed = JSON.parse((await cli(['keys', 'list', '--json', '--data', sluice.dataDir])).stdout) as { id: string; limits: unknown }[];
    assert.deepEqual(listed.find((k) => k.id === id)?.limits, { rpm: 30, mcp: ['files-http/echo', 'local'] }, 'another limit saved through the form keeps the list');

    const accountAction = '/app/accounts/tools-co/limits';
    const accountForm = await admin.get(accountAction);
    const ceiling = await admin.post(accountAction, { ...ConsoleClient.formFields(accountForm.text, accountAction), mcp: 'files-http' });
    assert.equal(ceiling.status, 303);
    const shown = (await admin.get('/app/keys')).text;
    assert.match(shown, new RegExp(`data-key-id="${id}"[\\s\\S]*?MCP:</span> <code>files-http/echo</code>, <code>local</code> <span class="muted small">\\(account: <code>files-http</code>\\)</span>`));

    // The CLI knows the console's servers as well as the file's.
    const added = await admin.post('/app/mcp/new', { csrf, id: 'cli-seen', url: consoleUpstream.url, transport: 'streamable_http' });
    assert.equal(added.status, 303);
    const known = await cli(['keys', 'limits', id, '--mcp', 'cli-seen,files-http', '--data', sluice.dataDir, '--config', `${sluice.dataDir}/sluice.yaml`]);
    assert.equal(known.code, 0, known.stderr);
    assert.equal(known.stderr, '', 'a console server and a file server: no warning');
    const unknown = await cli(['keys', 'limits', id, '--mcp', 'nowhere', '--data', sluice.dataDir, '--config', `${sluice.dataDir}/sluice.yaml`]);
    assert.match(unknown.stderr, /names a server that neither .* nor the console has: 'nowhere' \(the MCP servers are files-http, local, gone, cli-seen\)/);
    assert.equal((await admin.post('/app/mcp/cli-seen/delete', { csrf })).status, 303);
  });
});

describe('a configuration reload', () => {
  test('adds and removes file servers in every worker; a file server takes over a console server of the same id while it is there', async () => {
    const added = await admin.post('/app/mcp/new', { csrf, id: 'shadowed', url: consoleUpstream.url, transport: 'streamable_http', headers: `Authorization: Bearer ${CONSOLE_TOKEN}` });
    assert.equal(added.status, 303);
    const consoleRow = rowOf(await pageWith('shadowed', 'ready'), 'shadowed')!;
    assert.match(consoleRow, /tag-console/);
    const file = join(sluice.dataDir, 'sluice.yaml');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, `${original}  - id: later
    url: ${fileUpstream.url}
    headers: { Authorization: "Bearer ${FILE_TOKEN}" }
  - id: SHADOWED
    url: ${fileUpstream.url}
    headers: { Authorization: "Bearer ${FILE_TOKEN}" }
`);
    try {
      const page = await pageWith('later', 'ready');
      assert.match(rowOf(page, 'later')!, /tag-config/);
      const shadowed = await eventually(async () => {
        const text = (await admin.get('/app/mcp')).text;
        return rowOf(text, 'SHADOWED') !== undefined && rowOf(text, 'shadowed') === undefined ? text : undefined;
      }, 10_000, 'the file’s SHADOWED in place of the console’s shadowed');
      assert.match(rowOf(shadowed, 'SHADOWED')!, /tag-config/);
      await eventually(async () => {
        const answers = await Promise.all(Array.from({ length: 6 }, async () => (await (await fetch(`${sluice.url}/status.json`)).json()) as { mcp_servers: { id: string; status: string }[] }));
        return answers.every((a) => a.mcp_servers.some((s) => s.id === 'later' && s.status === 'ready') && !a.mcp_servers.some((s) => s.id === 'shadowed')) ? true : undefined;
      }, 10_000, 'every worker reloaded');
      assert.equal((await admin.post('/app/mcp/new', { csrf, id: 'Later', url: consoleUpstream.url, transport: 'streamable_http' })).status, 400, 'a reloaded file’s id is refused too');
    } finally {
      writeFileSync(file, original);
    }
    const back = await eventually(async () => {
      const text = (await admin.get('/app/mcp')).text;
      return rowOf(text, 'later') === undefined && stateOf(rowOf(text, 'shadowed')) === 'ready' ? text : undefined;
    }, 10_000, 'the file server gone, the console’s back');
    assert.match(rowOf(back, 'shadowed')!, /tag-console/);
    assert.equal((await admin.post('/app/mcp/shadowed/delete', { csrf })).status, 303);
  });
});

describe('the logs', () => {
  test('never hold a header or environment value', async () => {
    const logs = sluice.stdout() + sluice.stderr();
    assert.ok(logs.length > 0, 'there are logs to look at');
    for (const secret of [FILE_TOKEN, CONSOLE_TOKEN, CONSOLE_TOKEN_2, STDIO_ENV_SECRET]) assert.ok(!logs.includes(secret), `${secret.slice(0, 12)}… is not logged`);
  });
});
