// The usage pages (`/app/usage` and its CSV, `/app/usage.csv`): their handlers, which read the
// daily roll-ups for the session's scope; the CSV is streamed a day at a time.
import type { ServerResponse } from 'node:http';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { toolOfRolledUp } from '../../../core/tool-calls.js';
import type { AccountRecord } from '../../../store/store.js';
import { isoDay, spendText, usageReport } from '../../../usage/usage-report.js';
import { page, requireSession, type ConsoleDeps } from '../../console-context.js';
import { csvLine } from '../../csv.js';
import { FormError, sendHtml } from '../../http.js';
import type { Session } from '../../sessions.js';
import { days, parseParams, type UsageParams } from './params.js';
import { usagePage } from './views.js';

/** Whose usage the session sees: a member's own account; an admin's chosen one, or undefined for every account's. */
async function scope(deps: ConsoleDeps, session: Session, params: UsageParams): Promise<AccountRecord | undefined> {
  if (!session.account.isAdmin) return session.account;
  if (params.account === null) return undefined;
  const account = await deps.store.accounts.byName(params.account);
  if (account === undefined) throw new FormError(404, 'There is no such account.');
  return account;
}

/** Resolves once the response can take more (true), or when the client has gone (false). */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/**
 * The CSV's columns: one line per day, key and model with traffic in the range (days without any have no line).
 * `cost_usd` is "unpriced" where only requests to a model without a price make it up; `unpriced_requests` counts them.
 * `kind` is `model`, or `mcp_tool` for MCP tool calls, whose `model` is their `server/tool` (last, so the columns before keep their places).
 */
const CSV_HEADER = ['day', 'account', 'key_id', 'key_name', 'model', 'requests', 'failed', 'input_tokens', 'output_tokens', 'cost_usd', 'unpriced_requests', 'kind'];

export function usageRoutes(deps: ConsoleDeps): { page: Handler; csv: Handler } {
  const read = async (ctx: RequestContext) => {
    const session = await requireSession(deps, ctx);
    if (!session) return undefined;
    const params = parseParams(new URLSearchParams(ctx.query), session);
    return { session, params, account: await scope(deps, session, params) };
  };

  const usage = page(deps, async (ctx) => {
    const chosen = await read(ctx);
    if (!chosen) return;
    const { session, params, account } = chosen;
    const [report, accounts] = await Promise.all([
      usageReport(deps.store, { ...days(params), accountId: account?.id, breakdown: params.breakdown }),
      session.account.isAdmin ? deps.store.accounts.list() : Promise.resolve([]),
    ]);
    sendHtml(ctx.res, 200, usagePage(session, params, report, accounts, account));
  });

  const csv = page(deps, async (ctx) => {
    const chosen = await read(ctx);
    if (!chosen) return;
    const { params, account } = chosen;
    const range = days(params);
    // Names from before the account-name rule may hold anything: the file name keeps the safe characters.
    const file = `sluice-usage-${(account?.name ?? 'all').replace(/[^A-Za-z0-9._@-]/g, '_')}-${isoDay(range.fromDay)}-to-${isoDay(range.toDay)}.csv`;
    const res = ctx.res;
    res.writeHead(200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${file}"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.write(csvLine(CSV_HEADER));
    // A day at a time, as the client takes it: a deployment with many keys never holds the whole file in memory.
    for (let day = range.fromDay; day <= range.toDay; day++) {
      const groups = await deps.store.usageDaily.summary({ fromDay: day, toDay: day, ...(account && { accountId: account.id }) }, ['day', 'key', 'model']);
      const lines = groups.map((g) => {
        const tool = toolOfRolledUp(g.model!);
        return csvLine([isoDay(day), g.accountName ?? g.accountId!, g.keyId!, g.keyName ?? '', tool ?? g.model!, g.requests, g.failed, g.inputTokens, g.outputTokens, spendText(g, String), g.unpricedRequests, tool === undefined ? 'model' : 'mcp_tool']);
      });
      if (lines.length > 0 && !res.write(lines.join('')) && !(await drained(res))) return;
    }
    res.end();
  });

  return { page: usage, csv };
}
