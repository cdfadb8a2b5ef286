/**
 * MCP tool calls in the usage reports: ledger rows of operation `mcp.tools/call` (model
 * `server/tool`, no tokens, bytes in and out) are rolled up apart from models (even a model of the
 * same name), and `sluice usage`, the console's usage page and its CSV show them as tool calls, never
 * as models with zero tokens. The rows reach the store the way a killed gateway's do: its ledger
 * journal, imported by the next start.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, eventually, startSluice, tempDir, type RunningSluice } from './support/sluice.js';
import { queryStore } from './support/store.js';

const PASSWORD = 'admin-password-1';
/** A model and a tool of the same name: each must keep its own figures. */
const SAME_NAME = 'files/read_file';

let sluice: RunningSluice;
let admin: ConsoleClient;

/** A journal line as the ledger writes one, in its fixed order of values. */
function rowLine(values: { entryId: string; at: number; accountId: string; keyId: string; operation: string; model: string; provider: string; status?: number; input?: number; output?: number; cost?: number; bytesIn?: number; bytesOut?: number }): string {
  const status = values.status ?? 200;
  return `R\t${JSON.stringify([
    values.entryId, values.at, `req-${values.entryId}`, values.accountId, values.keyId, values.operation, values.model, values.provider, status, status === 200 ? null : 'upstream_error', false,
    values.input ?? 0, values.output ?? 0, 0, 0, 0, false, 8.5, null, values.cost ?? 0, 1, null, null, false, values.bytesIn ?? null, values.bytesOut ?? null,
  ])}\n`;
}

before(async () => {
  const dataDir = tempDir('mcp-usage-');
  await createAccount(dataDir, 'root', PASSWORD, true);
  const key = await createKey(dataDir, 'tools-co', ['--mcp', 'files']);
  const [account] = await queryStore<{ id: string }>(dataDir, "SELECT id FROM accounts WHERE name = 'tools-co'");
  const now = Date.now();
  const base = { at: now - 60_000, accountId: account!.id, keyId: key.id };
  const lines = [
    rowLine({ ...base, entryId: 'u.1', operation: 'chat', model: 'llama', provider: 'vllm', input: 100, output: 20, cost: 0.5 }),
    rowLine({ ...base, entryId: 'u.2', operation: 'chat', model: SAME_NAME, provider: 'vllm', input: 7, output: 3, cost: 0.25 }),
    rowLine({ ...base, entryId: 't.1', operation: 'mcp.tools/call', model: SAME_NAME, provider: 'files', bytesIn: 40, bytesOut: 900, cost: 0.01 }),
    rowLine({ ...base, entryId: 't.2', operation: 'mcp.tools/call', model: SAME_NAME, provider: 'files', bytesIn: 41, bytesOut: 950, cost: 0.01 }),
    rowLine({ ...base, entryId: 't.3', operation: 'mcp.tools/call', model: SAME_NAME, provider: 'files', status: 502, bytesIn: 39, bytesOut: 0 }),
    rowLine({ ...base, entryId: 't.4', operation: 'mcp.tools/call', model: 'github/create_issue', provider: 'github', bytesIn: 120, bytesOut: 300 }),
  ];
  const dir = join(dataDir, 'ledger');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Named for a process that has exited: an orphan, which the next start imports.
  writeFileSync(join(dir, `journal-${spawnSync(process.execPath, ['-e', '0']).pid}-${randomBytes(6).toString('hex')}.jsonl`), lines.join(''), { mode: 0o600 });
  sluice = await startSluice({ dataDir, config: 'providers: []\nmodels: []\n' });
  await eventually(async () => ((await sluice.ledger()).length === lines.length ? true : undefined), 5000, 'the journal imported');
  admin = new ConsoleClient(sluice.url);
  await admin.signIn('root', PASSWORD);
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
});

describe('tool calls in the usage reports', () => {
  test('the ledger keeps the bytes; the roll-ups keep a tool apart from a model of the same name', async () => {
    const rows = await sluice.ledger();
    assert.deepEqual(rows.filter((r) => r.operation === 'mcp.tools/call').map((r) => [r.model, Number(r.bytes_in), Number(r.bytes_out)]), [[SAME_NAME, 40, 900], [SAME_NAME, 41, 950], [SAME_NAME, 39, 0], ['github/create_issue', 120, 300]]);
    const daily = await queryStore<{ model: string; requests: number; input_tokens: number }>(sluice.dataDir, 'SELECT model, requests, input_tokens FROM usage_daily ORDER BY model');
    assert.deepEqual(daily.map((r) => [r.model, Number(r.requests), Number(r.input_tokens)]), [[SAME_NAME, 1, 7], ['llama', 1, 100], ['mcp files/read_file', 3, 0], ['mcp github/create_issue', 1, 0]]);
  });

  test('sluice usage --by model: models with their tokens, then the tool calls in a table of their own', async () => {
    const result = await cli(['usage', '--by', 'model', '--data', sluice.dataDir]);
    assert.equal(result.code, 0, result.stderr);
    const [models, tools] = result.stdout.split('\n\n');
    assert.match(models!, /^MODEL +REQUESTS +FAILED +INPUT TOKENS +OUTPUT TOKENS +COST USD\n/);
    assert.match(models!, /\nfiles\/read_file +1 +0 +7 +3 +0\.2500\n/, 'the model of that name: its own request and tokens');
    assert.match(models!, /\nllama +1 +0 +100 +20 +0\.5000\n/);
    assert.match(models!, /\ntotal \S+ to \S+ +2 +0 +107 +23 +0\.7500\n?$/, 'the models’ total leaves the tool calls out');
    assert.match(tools!, /^MCP TOOL +CALLS +FAILED +COST USD\n/, 'no token columns for tools');
    assert.match(tools!, /\nfiles\/read_file +3 +1 +0\.0200\n/);
    assert.match(tools!, /\ngithub\/create_issue +1 +0 +0\.0000\n/);
    assert.match(tools!, /\ntotal \S+ to \S+ +4 +1 +0\.0200\n$/);

    const json = JSON.parse((await cli(['usage', '--json', '--by', 'model', '--data', sluice.dataDir])).stdout) as Record<string, unknown>[];
    assert.deepEqual(json.find((line) => line.mcp_tool === SAME_NAME), { mcp_tool: SAME_NAME, calls: 3, failed: 1, cost_usd: 0.02, unpriced_calls: 0 });
    assert.deepEqual(json.find((line) => line.model === SAME_NAME), { model: SAME_NAME, requests: 1, input_tokens: 7, output_tokens: 3, cost_usd: 0.25, unpriced_requests: 0 });
    assert.ok(!json.some((line) => typeof line.model === 'string' && line.model.startsWith('mcp ')), 'the roll-up’s own name never shows');

    const byDay = await cli(['usage', '--data', sluice.dataDir]);
    assert.match(byDay.stdout, /\n\d{4}-\d{2}-\d{2} +6 +1 +107 +23 +0\.7700\n/, 'a day counts every request');
    assert.match(byDay.stdout, /Requests include 4 MCP tool calls \(no tokens\); `--by model` shows them by tool\./);
  });

  test('the console usage page: a table of tools apart from the models, the calls counted in the totals, a chart series of their own', async () => {
    const page = (await admin.get('/app/usage?range=7')).text;
    assert.match(page, /<dd data-total="requests">6<\/dd>/);
    assert.match(page, /<dd data-total="tool_calls">4<\/dd>/);
    const models = /<table class="data" id="top-models"[\s\S]*?<\/table>/.exec(page)![0];
    assert.match(models, new RegExp(`data-model="${SAME_NAME}"><code>${SAME_NAME}</code></th><td class="num">1</td>\\s*<td class="num">0</td>\\s*<td class="num">7</td>`), 'the model line: its own request');
    assert.doesNotMatch(models, /github\/create_issue|All other models/, 'no tool among the models, nor in "other models"');
    const tools = /<table class="data" id="top-tools"[\s\S]*?<\/table>/.exec(page)![0];
    assert.match(tools, /<th scope="col">Server\/tool<\/th><th scope="col" class="num">Calls<\/th><th scope="col" class="num">Failed<\/th><th scope="col" class="num">Spend<\/th>/, 'no token columns');
    assert.match(tools, new RegExp(`data-tool="${SAME_NAME}"><code>${SAME_NAME}</code></th><td class="num">3</td><td class="num">1</td><td class="num">\\$0\\.02</td>`));
    assert.match(tools, /data-tool="github\/create_issue"><code>github\/create_issue<\/code><\/th><td class="num">1<\/td><td class="num">0<\/td><td class="num">\$0<\/td>/);
    assert.match(page, /MCP tool calls/, 'the chart names their series');
    assert.doesNotMatch(page, /mcp files\/read_file/, 'the roll-up’s own name never shows');
  });

  test('the CSV marks each line as a model or a tool call', async () => {
    const csv = (await admin.get('/app/usage.csv?range=7')).text.trim().split('\r\n').map((line) => line.split(','));
    assert.equal(csv[0]!.at(-1), 'kind');
    const lines = csv.slice(1).map((cells) => [cells[4], cells[5], cells[7], cells.at(-1)]);
    assert.deepEqual(lines.sort(), [
      [SAME_NAME, '1', '7', 'model'],
      [SAME_NAME, '3', '0', 'mcp_tool'],
      ['github/create_issue', '1', '0', 'mcp_tool'],
      ['llama', '1', '100', 'model'],
    ]);
  });
});
