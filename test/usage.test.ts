import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import OpenAI from 'openai';
import { escapeHtml, formatInt, formatUsd } from '../src/console/html.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { cli, createKey, startSluice, tempDir, type CreatedKey, type LedgerRow, type RunningSluice } from './support/sluice.js';
import { createDatabase, dropDatabase, pgQuery, queryStore } from './support/store.js';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';

// Usage reports (the console's /app/usage and its CSV, `sluice usage`) read the daily roll-ups;
// every figure they show is checked here against the ledger itself, added up in JavaScript.

const DAY_MS = 86_400_000;
const PASSWORD = { admin: 'usage-admin-password', alpha: 'usage-alpha-password', beta: 'usage-beta-password' };
/** A key name a spreadsheet would run as a formula, with a comma and quotes for the CSV's quoting. */
const HOSTILE_NAME = '=HYPERLINK("http://evil.example","click"), really';
/** A model name a caller made up (a 404, but still a ledger row): text the CSV must not leave as a formula either. */
const HOSTILE_MODEL = '+SUM(1,2)';

interface Figures {
  requests: number;
  failed: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

const dayOf = (at: number) => Math.floor(at / DAY_MS);
const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const today = () => dayOf(Date.now());

/** The ledger's rows added up by `groupOf` (undefined: left out), in JavaScript, as the reports must show them. */
function addUp(rows: readonly LedgerRow[], groupOf: (row: LedgerRow) => string | undefined): Map<string, Figures> {
  const groups = new Map<string, Figures>();
  for (const row of rows) {
    const group = groupOf(row);
    if (group === undefined) continue;
    const figures = groups.get(group) ?? { requests: 0, failed: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
    figures.requests++;
    if (row.status >= 400) figures.failed++;
    figures.input_tokens += Number(row.prompt_tokens);
    figures.output_tokens += Number(row.completion_tokens);
    figures.cost_usd += Number(row.cost_usd);
    groups.set(group, figures);
  }
  return groups;
}

function total(rows: readonly LedgerRow[], keep: (row: LedgerRow) => boolean = () => true): Figures {
  return addUp(rows, (row) => (keep(row) ? 'all' : undefined)).get('all') ?? { requests: 0, failed: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
}

/** Counts exactly; spend within a billionth (sums of floating-point costs taken in another order). */
function assertFigures(actual: Partial<Figures>, expected: Figures, what: string): void {
  for (const field of ['requests', 'failed', 'input_tokens', 'output_tokens'] as const) {
    if (field in actual) assert.equal(Number(actual[field]), expected[field], `${what}: ${field}`);
  }
  assert.ok(Math.abs(Number(actual.cost_usd) - expected.cost_usd) <= 1e-9 * Math.max(1, expected.cost_usd), `${what}: cost_usd ${actual.cost_usd} is the ledger's ${expected.cost_usd}`);
}

/** The roll-up table as stored, by day, account, key and model. */
async function rollUp(dataDir: string): Promise<Map<string, Figures>> {
  const rows = await queryStore<Figures & { day: number; account_id: string; key_id: string; model: string }>(dataDir, 'SELECT * FROM usage_daily');
  return new Map(rows.map((row) => [`${row.day}|${row.account_id}|${row.key_id}|${row.model}`, row]));
}

async function assertRollUpIsLedger(dataDir: string, what: string): Promise<void> {
  const ledger = await queryStore<LedgerRow>(dataDir, 'SELECT * FROM usage_ledger');
  const expected = addUp(ledger, (row) => `${dayOf(Number(row.at))}|${row.account_id}|${row.key_id}|${row.model}`);
  const stored = await rollUp(dataDir);
  assert.deepEqual([...stored.keys()].sort(), [...expected.keys()].sort(), `${what}: one roll-up row per day, account, key and model of the ledger`);
  for (const [group, figures] of expected) assertFigures(stored.get(group)!, figures, `${what}: ${group}`);
}

/** The id of a process that has exited: a journal named for it is an orphan, imported by the next start. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid;
}

interface JournalRow {
  entryId: string;
  at: number;
  accountId: string;
  keyId: string;
  model: string;
  status?: number;
  promptTokens?: number;
  completionTokens?: number;
  costUsd?: number;
}

/** A journal line as the ledger writes one (`R`, then the row's values in their fixed order). */
function rowLine(row: JournalRow): string {
  const status = row.status ?? 200;
  return `R\t${JSON.stringify([
    row.entryId, row.at, `req-${row.entryId}`, row.accountId, row.keyId, 'chat', row.model, 'vllm', status, status === 200 ? null : 'upstream_error', false,
    row.promptTokens ?? 0, row.completionTokens ?? 0, 0, 0, 0, false, 12.5, null, row.costUsd ?? 0, 1, 'vllm/upstream-model', null,
  ])}\n`;
}

/** A request that was under way when its process died: the import makes it an `interrupted` row (status 500). */
function startLine(entryId: string, at: number, accountId: string, keyId: string, model: string): string {
  return `B\t${entryId}\t${JSON.stringify({ at, requestId: `req-${entryId}`, accountId, keyId, operation: 'chat', model, providerId: 'vllm', stream: true })}\n`;
}

function writeOrphanJournal(dataDir: string, text: string): void {
  const dir = join(dataDir, 'ledger');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, `journal-${deadPid()}-${randomBytes(6).toString('hex')}.jsonl`), text, { mode: 0o600 });
}

/** RFC 4180: quoted fields with doubled quotes, CRLF lines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(field), (field = '');
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      (row = []), (field = ''), i++;
    } else field += c;
  }
  assert.equal(field + row.join(''), '', 'the CSV ends with a line break');
  return rows;
}

function unescapeHtml(text: string): string {
  return text.replace(/&(lt|gt|quot|#39|amp);/g, (_m, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name]!);
}

/** The totals the page shows, as text. */
function pageTotals(page: string): Record<string, string> {
  const totals: Record<string, string> = {};
  for (const [, name, value] of page.matchAll(/<dd data-total="(\w+)">([^<]*)<\/dd>/g)) totals[name!] = value!;
  return totals;
}

function shownAs(figures: Figures): Record<string, string> {
  return {
    requests: formatInt(figures.requests),
    failed: formatInt(figures.failed),
    input_tokens: formatInt(figures.input_tokens),
    output_tokens: formatInt(figures.output_tokens),
    cost_usd: formatUsd(figures.cost_usd),
  };
}

/** The per-day table: its day → its five cells as text. */
function pageDays(page: string): Map<string, string[]> {
  const days = new Map<string, string[]>();
  for (const [, day, cells] of page.matchAll(/<tr data-day="([\d-]+)">([\s\S]*?)<\/tr>/g)) days.set(day!, [...cells!.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1]!));
  return days;
}

let upstreams: ThreeUpstreams;
let dataDir: string;
let gateway: RunningSluice | undefined;
const keys = {} as Record<'alphaA' | 'alphaB' | 'beta' | 'gamma', CreatedKey>;
const accountIds: Record<string, string> = {};
let journalText = '';

async function ledger(): Promise<LedgerRow[]> {
  return queryStore<LedgerRow>(dataDir, 'SELECT * FROM usage_ledger');
}

before(async () => {
  upstreams = await startThreeUpstreams();
  dataDir = tempDir();
  await createAccount(dataDir, 'admin', PASSWORD.admin, true);
  await createAccount(dataDir, 'alpha', PASSWORD.alpha);
  await createAccount(dataDir, 'beta', PASSWORD.beta);
  keys.alphaA = await createKey(dataDir, 'alpha', ['--name', 'alpha backend']);
  keys.alphaB = await createKey(dataDir, 'alpha', ['--name', HOSTILE_NAME]);
  keys.beta = await createKey(dataDir, 'beta', ['--name', 'beta app']);
  keys.gamma = await createKey(dataDir, 'gamma', ['--name', 'gamma batch']);
  for (const { id, name } of await queryStore<{ id: string; name: string }>(dataDir, 'SELECT id, name FROM accounts')) accountIds[name] = id;

  // Earlier days, as a journal a killed gateway left: 1, 3, 10, 40 and 100 days ago, a failure, and
  // a request that was under way. A second journal repeats one of its rows (the same entry id).
  const now = Date.now();
  const past: JournalRow[] = [];
  let n = 0;
  for (const daysAgo of [1, 3, 10, 40, 100]) {
    for (const [key, account, model, tokens] of [
      [keys.alphaA, 'alpha', 'llama', 100],
      [keys.alphaB, 'alpha', 'claude', 40],
      [keys.beta, 'beta', 'llama', 7],
      [keys.gamma, 'gamma', 'gemini-flash', 1000],
    ] as const) {
      past.push({ entryId: `past.${n++}`, at: now - daysAgo * DAY_MS, accountId: accountIds[account]!, keyId: key.id, model, promptTokens: tokens, completionTokens: tokens * 2, costUsd: tokens * 0.000_003 });
    }
  }
  past.push({ entryId: `past.${n++}`, at: now - 3 * DAY_MS, accountId: accountIds.beta!, keyId: keys.beta.id, model: 'claude', status: 502 });
  journalText = past.map(rowLine).join('') + startLine(`past.${n++}`, now - 10 * DAY_MS, accountIds.alpha!, keys.alphaA.id, 'claude');
  writeOrphanJournal(dataDir, journalText);
  writeOrphanJournal(dataDir, rowLine(past[0]!));

  gateway = await startSluice({
    dataDir,
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], pricing: { input_per_mtok: 3, output_per_mtok: 15 } }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], pricing: { input_per_mtok: 0.1, output_per_mtok: 0.4 } }
  - { id: llama, provider: vllm, upstream_model: upstream-model, endpoints: [chat, completions], pricing: { input_per_mtok: 0.2, output_per_mtok: 0.6 } }
  - { id: free-llama, provider: vllm, upstream_model: upstream-model, endpoints: [completions], pricing: { input_per_mtok: 0, output_per_mtok: 0 } }
`,
  });

  // Today's traffic through the official SDK: every account, key and model, and failures.
  const client = (key: CreatedKey) => new OpenAI({ apiKey: key.key, baseURL: `${gateway!.url}/v1`, maxRetries: 0 });
  const chat = (key: CreatedKey, model: string, content: string) => client(key).chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 5 });
  for (let i = 0; i < 3; i++) await chat(keys.alphaA, 'llama', `alpha question ${i}`);
  await client(keys.alphaA).completions.create({ model: 'free-llama', prompt: 'a free one', max_tokens: 4 });
  await chat(keys.alphaB, 'claude', 'a question for claude');
  await chat(keys.alphaB, 'gemini-flash', 'a question for gemini');
  await chat(keys.beta, 'llama', 'beta asks');
  await chat(keys.beta, 'claude', 'beta asks claude, with a longer prompt than the others have');
  await chat(keys.gamma, 'gemini-flash', 'gamma asks');
  upstreams.vllm.behaviour = { fail: { status: 400, body: '{"error":{"message":"bad prompt","type":"BadRequestError","param":null,"code":400}}' } };
  await assert.rejects(chat(keys.beta, 'llama', 'refused upstream'), OpenAI.BadRequestError, 'the upstream refuses this one');
  upstreams.reset();
  await assert.rejects(chat(keys.alphaB, HOSTILE_MODEL, 'no such model'), OpenAI.NotFoundError, 'an unknown model is a 404, and a ledger row');
  await assert.rejects(client(keys.gamma).chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hot' }], temperature: 5 }), OpenAI.BadRequestError, 'refused by Sluice');
  assert.equal(await gateway.stop(), 0, 'a clean stop: every row is in the store');
  gateway = undefined;
});

after(async () => {
  if (gateway) assert.equal(await gateway.stop(), 0, 'the gateway stops cleanly');
  await upstreams.close();
});

describe('daily usage roll-ups', () => {
  test('the roll-up equals the ledger added up per UTC day, account, key and model', async () => {
    const rows = await ledger();
    assert.equal(rows.filter((row) => row.entry_id?.startsWith('past.')).length, 22, 'the journal’s 20 rows, its failure and its interrupted request, the repeated row once');
    assert.equal(rows.filter((row) => dayOf(Number(row.at)) === today()).length, 12, 'one row per request made today');
    assert.ok(rows.some((row) => row.error_kind === 'interrupted'), 'the request under way became an interrupted row');
    assert.ok(rows.filter((row) => row.status >= 400).length >= 5, 'failures of several kinds are in the ledger');
    assert.equal(new Set(rows.map((row) => dayOf(Number(row.at)))).size, 6, 'six days have traffic');
    await assertRollUpIsLedger(dataDir, 'after the import and the traffic');
  });

  test('a journal imported again, and rows stored already, are not counted twice', async () => {
    const before = await ledger();
    const fresh: JournalRow = { entryId: 'reimport.new', at: Date.now() - 3 * DAY_MS, accountId: accountIds.gamma!, keyId: keys.gamma.id, model: 'llama', promptTokens: 5, completionTokens: 6, costUsd: 0.25 };
    // The whole first journal again (its rows, its interrupted start), and a row of today's traffic, beside one new row.
    const stored = before.find((row) => row.model === 'claude' && dayOf(Number(row.at)) === today())!;
    const again = rowLine({ entryId: stored.entry_id!, at: Number(stored.at), accountId: stored.account_id, keyId: stored.key_id, model: stored.model, promptTokens: 999, costUsd: 9 });
    writeOrphanJournal(dataDir, journalText + again + rowLine(fresh));
    gateway = await startSluice({ dataDir, config: 'providers: []\nmodels: []\n' });
    const after = await ledger();
    assert.equal(after.length, before.length + 1, 'only the new row is added to the ledger');
    await assertRollUpIsLedger(dataDir, 'after the second import');
    const [row] = await queryStore<Figures>(dataDir, 'SELECT * FROM usage_daily WHERE key_id = ? AND model = ?', [keys.gamma.id, 'llama']);
    assert.equal(Number(row!.requests), 1, 'the new row counted once');
  });

  test('the migration builds the roll-up from a ledger written before it', async () => {
    const dir = tempDir();
    const made = await cli(['keys', 'create', '--account', 'old', '--data', dir]);
    assert.equal(made.code, 0, made.stderr);
    // The store as it was before migration 0008 (so before the later ones too), with ledger rows of two days written then.
    // Undone in reverse: 0015's table, counter and ledger columns, 0013's ledger column, 0011, 0010, 0009, then 0008's table.
    await queryStore(dir, 'DROP TABLE console_mcp_servers');
    await queryStore(dir, "DELETE FROM meta WHERE name = 'mcp_servers_version'");
    await queryStore(dir, 'ALTER TABLE usage_ledger DROP COLUMN bytes_in');
    await queryStore(dir, 'ALTER TABLE usage_ledger DROP COLUMN bytes_out');
    await queryStore(dir, 'ALTER TABLE usage_ledger DROP COLUMN unpriced');
    await queryStore(dir, 'DROP TABLE price_list');
    await queryStore(dir, 'DROP TABLE discovered_models');
    await queryStore(dir, 'DROP TABLE sign_in_links');
    await queryStore(dir, 'ALTER TABLE console_sessions DROP COLUMN last_seen_at');
    await queryStore(dir, 'ALTER TABLE accounts DROP COLUMN disabled');
    await queryStore(dir, 'DROP TABLE usage_daily');
    await queryStore(dir, "DELETE FROM kysely_migration WHERE name >= '0008'");
    const insert = 'INSERT INTO usage_ledger (entry_id, at, request_id, account_id, key_id, operation, model, provider_id, status, error_kind, stream, prompt_tokens, completion_tokens, tokens_counted, latency_ms, ttfb_ms, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 0, 1, NULL, ?)';
    const now = Date.now();
    for (const [entry, at, model, status, input, cost] of [['a', now, 'm1', 200, 10, 0.5], ['b', now, 'm1', 503, 0, 0], ['c', now - DAY_MS, 'm2', 200, 3, 0.125], ['d', null, 'm2', 200, 1, 1]] as const) {
      await queryStore(dir, insert, [entry === 'd' ? null : entry, at ?? now - DAY_MS, `r-${entry}`, 'acct_old', 'key_old', 'chat', model, 'p', status, status === 200 ? null : 'upstream_error', input, input * 2, cost]);
    }
    const usage = await cli(['usage', '--json', '--by', 'model', '--data', dir]);
    assert.equal(usage.code, 0, usage.stderr);
    await assertRollUpIsLedger(dir, 'after the migration');
    assert.deepEqual(JSON.parse(usage.stdout), [
      { model: 'm1', requests: 2, input_tokens: 10, output_tokens: 20, cost_usd: 0.5, unpriced_requests: 0 },
      { model: 'm2', requests: 2, input_tokens: 4, output_tokens: 8, cost_usd: 1.125, unpriced_requests: 0 },
    ], 'the CLI reads the backfilled roll-up');
  });

  test('store copy, run twice, leaves the target’s roll-up equal to its ledger', { timeout: 60_000 }, async () => {
    const source = tempDir();
    const embedded = { SLUICE_DATABASE_URL: '' }; // SQLite in the data directory, whatever the suite's mode
    const database = await createDatabase();
    try {
      const made = await cli(['keys', 'create', '--account', 'copied', '--json', '--data', source], embedded);
      assert.equal(made.code, 0, made.stderr);
      const key = JSON.parse(made.stdout) as CreatedKey;
      const sqlite = new SQLite(join(source, 'sluice.db'), { readonly: true });
      const account = sqlite.prepare("SELECT id FROM accounts WHERE name = 'copied'").get() as { id: string };
      sqlite.close();
      const now = Date.now();
      const rows = Array.from({ length: 9 }, (_, i): JournalRow => ({
        entryId: `copy.${i}`, at: now - (i % 3) * DAY_MS, accountId: account.id, keyId: key.id, model: i % 2 ? 'odd' : 'even', status: i === 4 ? 500 : 200, promptTokens: i, completionTokens: 2 * i, costUsd: i / 8,
      }));
      writeOrphanJournal(source, rows.map(rowLine).join(''));
      for (const run of ['first', 'second']) {
        const copied = await cli(['store', 'copy', '--from', source, '--to', database.url, '--batch', '4']);
        assert.equal(copied.code, 0, `${run} copy: ${copied.stderr}`);
      }
      const ledgerThere = await pgQuery<LedgerRow>(database.url, 'SELECT * FROM usage_ledger');
      assert.equal(ledgerThere.length, 9, 'every row once in the target');
      const expected = addUp(ledgerThere, (row) => `${dayOf(Number(row.at))}|${row.model}`);
      const daily = await pgQuery<Figures & { day: number; model: string }>(database.url, 'SELECT * FROM usage_daily');
      assert.equal(daily.length, expected.size, 'one roll-up row per day and model');
      for (const row of daily) assertFigures(row, expected.get(`${row.day}|${row.model}`)!, `target ${isoDay(row.day)} ${row.model}`);
    } finally {
      await dropDatabase(database.name);
    }
  });
});

describe('sluice usage', () => {
  const run = (...args: string[]) => cli(['usage', ...args, '--data', dataDir]);

  test('--json for each grouping and filter equals the ledger added up', async () => {
    const rows = await ledger();
    const accountName = Object.fromEntries(Object.entries(accountIds).map(([name, id]) => [id, name]));
    const since = today() - 10;
    const cases: { args: string[]; keep: (row: LedgerRow) => boolean; by: 'day' | 'model' | 'key' }[] = [
      { args: [], by: 'day', keep: (row) => dayOf(Number(row.at)) > today() - 30 },
      { args: ['--by', 'day', '--since', isoDay(today() - 365)], by: 'day', keep: () => true },
      { args: ['--by', 'model', '--since', isoDay(since)], by: 'model', keep: (row) => dayOf(Number(row.at)) >= since },
      { args: ['--by', 'key', '--since', isoDay(today() - 90)], by: 'key', keep: (row) => dayOf(Number(row.at)) >= today() - 90 },
      { args: ['--by', 'model', '--account', 'alpha'], by: 'model', keep: (row) => row.account_id === accountIds.alpha && dayOf(Number(row.at)) > today() - 30 },
      { args: ['--by', 'day', '--key', keys.beta.id, '--since', isoDay(today() - 200)], by: 'day', keep: (row) => row.key_id === keys.beta.id },
      { args: ['--by', 'key', '--account', 'alpha', '--key', keys.alphaB.id], by: 'key', keep: (row) => row.key_id === keys.alphaB.id && dayOf(Number(row.at)) > today() - 30 },
    ];
    for (const { args, keep, by } of cases) {
      const result = await run('--json', ...args);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      const printed = JSON.parse(result.stdout) as (Partial<Figures> & Record<string, unknown>)[];
      const expected = addUp(rows.filter(keep), (row) => (by === 'day' ? isoDay(dayOf(Number(row.at))) : by === 'model' ? row.model : row.key_id));
      assert.ok(expected.size > 0, `${args.join(' ')}: the case has usage to show`);
      const fields = { day: ['day'], model: ['model'], key: ['account', 'key_id'] }[by];
      const groupOf = (line: Record<string, unknown>) => String(by === 'key' ? line.key_id : line[by]);
      assert.deepEqual(printed.map(groupOf).sort(), [...expected.keys()].sort(), `${args.join(' ')}: one line per ${by}`);
      if (by === 'day') assert.deepEqual(printed.map(groupOf), printed.map(groupOf).sort(), `${args.join(' ')}: days in order`);
      for (const line of printed) {
        assert.deepEqual(Object.keys(line), [...fields, 'requests', 'input_tokens', 'output_tokens', 'cost_usd', 'unpriced_requests'], `${args.join(' ')}: the grouping's fields, then the figures`);
        assertFigures(line, expected.get(groupOf(line))!, `${args.join(' ')}: ${groupOf(line)}`);
        if (by === 'key') assert.equal(line.account, accountName[rows.find((row) => row.key_id === line.key_id)!.account_id], 'the key’s account by name');
      }
    }
  });

  test('the table lists each line and a total', async () => {
    const result = await run('--by', 'key', '--account', 'alpha');
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ACCOUNT +KEY ID +KEY NAME +REQUESTS +FAILED +INPUT TOKENS +OUTPUT TOKENS +COST USD$/, 'a header');
    assert.ok(lines.some((line) => line.includes(keys.alphaA.id) && line.includes('alpha backend')), 'a line per key, with its name');
    const alpha = total(await ledger(), (row) => row.account_id === accountIds.alpha && dayOf(Number(row.at)) > today() - 30);
    assert.match(lines.at(-1)!, new RegExp(`^total \\S+ to \\S+ +${formatInt(alpha.requests)} +${formatInt(alpha.failed)} +${formatInt(alpha.input_tokens)} +${formatInt(alpha.output_tokens)} +${alpha.cost_usd.toFixed(4)}$`), 'and the total');
  });

  test('bad input is one line naming the mistake, and a failing exit status', async () => {
    const cases: [string[], RegExp][] = [
      [['--account', 'nobody'], /^sluice: No account is named 'nobody'\.$/],
      [['--key', 'key_nope'], /^sluice: No key has the id 'key_nope'\.$/],
      [['--account', 'beta', '--key', keys.alphaA.id], /^sluice: Key key_\w+ belongs to the account alpha, not beta\.$/],
      [['--since', '2026-02-30'], /^sluice: --since must be a date written YYYY-MM-DD, not '2026-02-30'\.$/],
      [['--since', 'last week'], /^sluice: --since must be a date written YYYY-MM-DD, not 'last week'\.$/],
      [['--by', 'hour'], /^sluice: --by must be one of day, model, key, not 'hour'\.$/],
    ];
    for (const [args, message] of cases) {
      const result = await run(...args);
      assert.equal(result.code, 1, `${args.join(' ')} fails`);
      assert.equal(result.stdout, '', `${args.join(' ')}: nothing on stdout`);
      assert.match(result.stderr.trimEnd(), message, `${args.join(' ')}: one clear line`);
    }
  });
});

describe('the usage page and its CSV', () => {
  let admin: ConsoleClient;
  let alpha: ConsoleClient;

  before(async () => {
    gateway ??= await startSluice({ dataDir, config: 'providers: []\nmodels: []\n' });
    admin = new ConsoleClient(gateway.url);
    await admin.signIn('admin', PASSWORD.admin);
    alpha = new ConsoleClient(gateway.url);
    await alpha.signIn('alpha', PASSWORD.alpha);
  });

  test('signed out, the page and the CSV send to the sign-in page', async () => {
    for (const path of ['/app/usage', '/app/usage.csv?range=7']) {
      const response = await new ConsoleClient(gateway!.url).get(path);
      assert.equal(response.status, 303, `${path} redirects`);
      assert.match(response.headers.get('location')!, /^\/app\/login\?next=/, `${path} goes to the sign-in page`);
    }
  });

  test('an admin sees every account’s totals and days for 7, 30 and 90 days, days without traffic as zeros', async () => {
    const rows = await ledger();
    for (const range of [7, 30, 90]) {
      const page = await admin.get(range === 30 ? '/app/usage' : `/app/usage?range=${range}`);
      assert.equal(page.status, 200, `range ${range}`);
      const from = today() - range + 1;
      assert.deepEqual(pageTotals(page.text), shownAs(total(rows, (row) => dayOf(Number(row.at)) >= from)), `${range} days: the totals are the ledger's`);
      const days = pageDays(page.text);
      assert.equal(days.size, range, `${range} days: one line per day`);
      const perDay = addUp(rows, (row) => isoDay(dayOf(Number(row.at))));
      for (let day = from; day <= today(); day++) {
        const expected = perDay.get(isoDay(day)) ?? { requests: 0, failed: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
        assert.deepEqual(days.get(isoDay(day)), Object.values(shownAs(expected)), `${range} days: ${isoDay(day)}`);
      }
      assert.match(page.text, new RegExp(`<a href="[^"]*" aria-current="true">${range} days</a>`), `${range} days is marked as the current range`);
      for (const id of ['requests-chart', 'tokens-chart', 'spend-chart']) {
        assert.match(page.text, new RegExp(`<svg [^>]*role="img" aria-labelledby="${id}-title ${id}-desc"`), `${range} days: the ${id} is an image with a title and a description`);
      }
    }
  });

  test('the top models and keys add up to the totals; keys show their name and id prefix, never a secret', async () => {
    const page = await admin.get('/app/usage?range=90&by=key');
    const rows = (await ledger()).filter((row) => dayOf(Number(row.at)) > today() - 90);
    const byModel = addUp(rows, (row) => row.model);
    const modelTable = /<table class="data" id="top-models"[^>]*>([\s\S]*?)<\/table>/.exec(page.text)![1]!;
    for (const [model, figures] of byModel) {
      const line = new RegExp(`data-model="${escapeHtml(model).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[\\s\\S]*?</tr>`).exec(modelTable);
      assert.ok(line, `${model} has a line`);
      const cells = [...line[0].matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1]);
      assert.deepEqual(cells.slice(0, 5), Object.values(shownAs(figures)), `${model}: its figures`);
    }
    const keyTable = /<table class="data" id="top-keys"[^>]*>([\s\S]*?)<\/table>/.exec(page.text)![1]!;
    assert.match(unescapeHtml(keyTable), new RegExp(`alpha backend \\(${keys.alphaA.id.slice(0, 10)}…\\)`), 'a key is its name and the start of its id');
    assert.ok(unescapeHtml(keyTable).includes(`${HOSTILE_NAME} (${keys.alphaB.id.slice(0, 10)}…)`), 'a hostile name is shown as text');
    assert.ok(!page.text.includes('HYPERLINK("'), 'and escaped in the HTML');
    for (const key of Object.values(keys)) assert.ok(!page.text.includes(key.key) && !page.text.includes(key.key.slice(-12)), 'no key secret on the page');
    assert.match(page.text, new RegExp(`<li><span class="swatch tone-0" aria-hidden="true"></span>[^<]*\\(key_`), 'charts broken down by key');
  });

  test('an admin picks one account; an unknown one is a 404', async () => {
    const page = await admin.get('/app/usage?account=alpha&range=90');
    const rows = await ledger();
    assert.deepEqual(pageTotals(page.text), shownAs(total(rows, (row) => row.account_id === accountIds.alpha && dayOf(Number(row.at)) > today() - 90)), 'alpha’s totals');
    assert.match(page.text, /<option value="alpha" selected>alpha<\/option>/, 'the picker shows the choice');
    assert.match(page.text, /<input type="hidden" name="range" value="90">/, 'and keeps the range');
    assert.ok(!page.text.includes('beta app'), 'no other account’s key');
    assert.equal((await admin.get('/app/usage?account=nobody')).status, 404, 'an unknown account');
  });

  test('a member sees their own account only, whatever ?account= says', async () => {
    const rows = await ledger();
    const own = shownAs(total(rows, (row) => row.account_id === accountIds.alpha && dayOf(Number(row.at)) > today() - 30));
    for (const path of ['/app/usage', '/app/usage?account=beta', '/app/usage?account=', '/app/usage?account=gamma&account=beta']) {
      const page = await alpha.get(path);
      assert.equal(page.status, 200, `${path} answers`);
      assert.deepEqual(pageTotals(page.text), own, `${path}: alpha’s own figures`);
      assert.ok(!page.text.includes('beta app') && !page.text.includes('gamma batch') && !page.text.includes(keys.beta.id.slice(0, 10)), `${path}: nothing of another account`);
      assert.ok(!page.text.includes('id="account-filter"'), `${path}: no account picker`);
    }
    const csv = await alpha.get('/app/usage.csv?account=beta&range=90');
    const accounts = new Set(parseCsv(csv.text).slice(1).map((line) => line[1]));
    assert.deepEqual([...accounts], ['alpha'], 'the CSV has alpha’s lines only');
  });

  test('the CSV is the same figures, as an attachment, quoted, with no cell a spreadsheet would run', async () => {
    const response = await admin.get('/app/usage.csv?range=90');
    assert.equal(response.status, 200, 'the CSV answers');
    assert.match(response.headers.get('content-type')!, /^text\/csv; charset=utf-8$/, 'as CSV');
    assert.match(response.headers.get('content-disposition')!, new RegExp(`^attachment; filename="sluice-usage-all-${isoDay(today() - 89)}-to-${isoDay(today())}\\.csv"$`), 'as a download');
    const [header, ...lines] = parseCsv(response.text);
    assert.deepEqual(header, ['day', 'account', 'key_id', 'key_name', 'model', 'requests', 'failed', 'input_tokens', 'output_tokens', 'cost_usd', 'unpriced_requests', 'kind'], 'the columns');
    const rows = (await ledger()).filter((row) => dayOf(Number(row.at)) > today() - 90);
    const accountName = Object.fromEntries(Object.entries(accountIds).map(([name, id]) => [id, name]));
    const expected = addUp(rows, (row) => `${isoDay(dayOf(Number(row.at)))}|${accountName[row.account_id]}|${row.key_id}|${row.model}`);
    assert.equal(lines.length, expected.size, 'one line per day, key and model with traffic');
    for (const [day, account, keyId, , model, requests, failed, input, output, cost] of lines) {
      const modelShown = model === `'${HOSTILE_MODEL}` ? HOSTILE_MODEL : model;
      assertFigures({ requests: Number(requests), failed: Number(failed), input_tokens: Number(input), output_tokens: Number(output), cost_usd: Number(cost) }, expected.get(`${day}|${account}|${keyId}|${modelShown}`)!, `CSV ${day} ${keyId} ${model}`);
    }
    const names = new Set(lines.map((line) => line[3]));
    assert.ok(names.has(`'${HOSTILE_NAME}`), 'a key name that starts a formula is kept as text, its comma and quotes intact');
    assert.ok(lines.some((line) => line[4] === `'${HOSTILE_MODEL}`), 'so is a model name that does');
    assert.ok(lines.every((line) => line.every((cell) => !/^[=+\-@]/.test(cell))), 'no cell starts a formula');
    assert.ok(response.text.includes(`"'=HYPERLINK(""http://evil.example"",""click""), really"`), 'quoted as RFC 4180 says');
  });
});

describe('the keys page’s 30-day columns', () => {
  test('are the usage page’s 30 days from the roll-ups: whole UTC days, today’s so far included', async () => {
    const dir = tempDir();
    await createAccount(dir, 'admin', PASSWORD.admin, true);
    const key = await createKey(dir, 'alpha', ['--name', 'edge key']);
    const accountId = (await queryStore<{ id: string }>(dir, 'SELECT id FROM accounts WHERE name = ?', ['alpha']))[0]!.id;
    // The first day counted is 29 days before today: its first moment counts, and the last moment of
    // the day before does not, though it is less than 30 × 24 hours ago.
    const now = Date.now();
    const firstDay = today() - 29;
    const rows: JournalRow[] = [
      { entryId: 'edge.before', at: firstDay * DAY_MS - 1, accountId, keyId: key.id, model: 'llama', promptTokens: 1000, completionTokens: 1000, costUsd: 1 },
      { entryId: 'edge.first', at: firstDay * DAY_MS, accountId, keyId: key.id, model: 'llama', promptTokens: 10, completionTokens: 20, costUsd: 0.01 },
      { entryId: 'edge.today', at: now, accountId, keyId: key.id, model: 'llama', status: 502, promptTokens: 3, completionTokens: 0, costUsd: 0.002 },
    ];
    writeOrphanJournal(dir, rows.map(rowLine).join(''));
    const sluice = await startSluice({ dataDir: dir, config: 'providers: []\nmodels: []\n' });
    try {
      const admin = new ConsoleClient(sluice.url);
      await admin.signIn('admin', PASSWORD.admin);
      const row = /<tr data-key-id="([^"]+)">([\s\S]*?)<\/tr>/.exec((await admin.get('/app/keys')).text);
      assert.equal(row?.[1], key.id);
      const counted = total(await queryStore<LedgerRow>(dir, 'SELECT * FROM usage_ledger'), (ledgerRow) => dayOf(Number(ledgerRow.at)) >= firstDay);
      assert.equal(counted.requests, 2, 'the ledger holds the rows, the one before the first day left out');
      const cells = [...row![2]!.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((match) => match[1]);
      assert.deepEqual(cells, [formatInt(counted.requests), formatInt(counted.input_tokens + counted.output_tokens), formatUsd(counted.cost_usd)]);
      const usagePage = await admin.get('/app/usage?range=30');
      assert.deepEqual(pageTotals(usagePage.text), shownAs(counted), 'the usage page’s 30 days are the same figures');
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});
