// The MCP servers pages (`/app/mcp`, `/app/mcp/new`, `/app/mcp/<id>/edit|delete`, admins only): the
// route table and its handlers, which read the list in force and this process's connections, and
// hand parsed forms to the MCP server admin.
import type { IncomingMessage } from 'node:http';
import type { Handler, RequestContext } from '../../../http/handler.js';
import { mcpServerViews } from '../../../mcp/mcp-server-status.js';
import { checkedForm, page, requireSession, type ConsoleDeps } from '../../console-context.js';
import { FormError, isHttps, redirect, sendHtml } from '../../http.js';
import { decodeParam, findRoute, pathRoute, type PathParams } from '../../path-routes.js';
import type { Session } from '../../sessions.js';
import { mcpFormValues, mcpStoredValues, readMcpServerForm } from './forms.js';
import { mcpDeletePage, mcpOverviewPage, mcpServerForm, type McpFormMode } from './views.js';

type McpHandler = (ctx: RequestContext, session: Session, params: PathParams) => Promise<void>;

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|\[::\]|0\.0\.0\.0|\[::ffff:127(?:\.\d{1,3}){3}\])$/i;

/** `host:port` with the scheme's port made explicit, to compare two addresses. */
function hostAndPort(hostname: string, port: string, https: boolean): string {
  return `${hostname.toLowerCase()}:${port === '' ? (https ? '443' : '80') : port}`;
}

/**
 * Whether a URL reaches this gateway: the address the browser reached it at, or a loopback address
 * on the port it listens on. Through `/mcp` such a server would call the gateway itself without end.
 * (A name or a load balancer that leads back here under another address is not seen: see docs.)
 */
export function reachesGateway(req: IncomingMessage): (url: URL) => boolean {
  const own = new Set<string>();
  const host = req.headers.host;
  if (host !== undefined) {
    try {
      const parsed = new URL(`http://${host}`);
      own.add(hostAndPort(parsed.hostname, parsed.port, isHttps(req)));
    } catch {
      // Not a host: nothing to compare with.
    }
  }
  const port = req.socket.localPort;
  return (url) => {
    const target = hostAndPort(url.hostname, url.port, url.protocol === 'https:');
    if (own.has(target)) return true;
    return port !== undefined && LOOPBACK.test(url.hostname) && target.endsWith(`:${port}`);
  };
}

export function mcpRoutes(deps: ConsoleDeps): Handler {
  const { admin, servers, upstreams } = deps.mcp;
  const done = (ctx: RequestContext, message: string) => redirect(ctx.res, `/app/mcp?done=${encodeURIComponent(message)}`);
  const notConsole = (id: string) => new FormError(404, `There is no console MCP server “${id}” (servers from the configuration file are changed there).`);

  const overview: McpHandler = async (ctx, session) => {
    const notice = new URLSearchParams(ctx.query).get('done');
    // Only our own fixed messages come back this way; anything else is dropped.
    const known = notice !== null && /^MCP server [^<>]{1,40} (added|saved|removed)\.$/.test(notice) ? notice : null;
    sendHtml(ctx.res, 200, mcpOverviewPage(session, await mcpServerViews(servers, upstreams, true), known, Date.now()));
  };

  /** GET: the form (blank, or the stored server's plain fields); POST: saves it, or shows the form again with its errors (400). */
  const entry = (mode: McpFormMode): McpHandler => async (ctx, session, params) => {
    const id = mode === 'create' ? '' : decodeParam(params.id!, 'There is no such MCP server.');
    const stored = mode === 'update' ? await admin.stored(id) : undefined;
    if (mode === 'update' && stored === undefined) throw notConsole(id);
    const headerNames = stored?.headerNames ?? [];
    if (ctx.req.method === 'GET') return sendHtml(ctx.res, 200, mcpServerForm(session, mode, stored === undefined ? { transport: 'streamable_http' } : mcpStoredValues(stored.values), {}, headerNames));
    const form = await checkedForm(ctx, session);
    if (mode === 'update') form.set('id', id); // the id names the server; it is not editable
    const { raw, headers, errors } = readMcpServerForm(form);
    const result = Object.keys(errors).length > 0 ? { ok: false as const, errors } : await admin.save(mode, raw, headers, reachesGateway(ctx.req));
    if (!result.ok) return sendHtml(ctx.res, 400, mcpServerForm(session, mode, mcpFormValues(form), result.errors, headerNames));
    done(ctx, `MCP server ${id || form.get('id')} ${mode === 'create' ? 'added' : 'saved'}.`);
  };

  /** GET: the confirmation; POST: removes the console server. */
  const remove: McpHandler = async (ctx, session, params) => {
    const id = decodeParam(params.id!, 'There is no such MCP server.');
    if ((await admin.stored(id)) === undefined) throw notConsole(id);
    if (ctx.req.method === 'GET') return sendHtml(ctx.res, 200, mcpDeletePage(session, id));
    await checkedForm(ctx, session);
    const result = await admin.delete(id);
    if (!result.ok) return sendHtml(ctx.res, 409, mcpDeletePage(session, id, Object.values(result.errors).join(' ')));
    done(ctx, `MCP server ${id} removed.`);
  };

  const routes = [
    pathRoute('GET', '/app/mcp', overview),
    pathRoute(['GET', 'POST'], '/app/mcp/new', entry('create')),
    pathRoute(['GET', 'POST'], '/app/mcp/:id/edit', entry('update')),
    pathRoute(['GET', 'POST'], '/app/mcp/:id/delete', remove),
  ];

  return page(deps, async (ctx) => {
    const session = await requireSession(deps, ctx, { admin: true });
    if (!session) return;
    // Another process may have written a moment ago: show the store as it is, not as last polled.
    await servers.refresh();
    const route = findRoute(routes, ctx.req.method, ctx.path);
    if (route === undefined) throw new FormError(404, 'There is no such page.');
    await route.handler(ctx, session, route.params);
  });
}
