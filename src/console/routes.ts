import { createHash } from 'node:crypto';
import type { Handler, MountedRoutes } from '../http/handler.js';
import { FAVICON_SVG } from './assets/favicon.js';
import { CONSOLE_JS } from './assets/script.js';
import { CONSOLE_CSS } from './assets/styles.js';
import { SIGN_IN_LINK_PREFIX } from './accounts.js';
import type { ConsoleDeps } from './console-context.js';
import { redirect } from './http.js';
import { accountsRoutes } from './pages/accounts.js';
import { catalogueRoutes } from './pages/catalogue/routes.js';
import { keysRoutes } from './pages/keys/routes.js';
import { loginRoutes } from './pages/login.js';
import { mcpRoutes } from './pages/mcp/routes.js';
import { modelsRoutes } from './pages/models/routes.js';
import { statusRoutes } from './pages/status.js';
import { usageRoutes } from './pages/usage/routes.js';

function asset(body: string, type: string): Handler {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
  return async (ctx) => {
    if (ctx.req.headers['if-none-match'] === etag) return void ctx.res.writeHead(304, { etag }).end();
    ctx.res.writeHead(200, { 'content-type': type, etag, 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }).end(body);
  };
}

/** The web console (`/app/...`) and the public pages (`/models`, `/status`), one handler per page. */
export function consoleRoutes(deps: ConsoleDeps): MountedRoutes {
  const login = loginRoutes(deps);
  const keys = keysRoutes(deps);
  const models = modelsRoutes(deps);
  const status = statusRoutes(deps);
  const catalogue = catalogueRoutes(deps);
  const mcp = mcpRoutes(deps);
  const usage = usageRoutes(deps);
  const accounts = accountsRoutes(deps, keys.accountLimits);
  const to = (location: string): Handler => async (ctx) => redirect(ctx.res, location);
  return {
    exact: [
      ['GET /', to('/models')],
      ['GET /app', to('/app/keys')],
      ['GET /app/login', login.get],
      ['POST /app/login', login.post],
      ['POST /app/logout', login.logout],
      ['GET /app/keys', keys.list],
      ['POST /app/keys', keys.create],
      ['GET /app/usage', usage.page],
      ['GET /app/usage.csv', usage.csv],
      ['GET /app/catalogue', catalogue],
      ['GET /app/mcp', mcp],
      ['GET /app/accounts', accounts.list],
      ['POST /app/accounts', accounts.create],
      ['GET /models', models.list],
      ['GET /models.json', models.json],
      ['GET /status', status.page],
      ['GET /status.json', status.json],
      ['GET /assets/console.css', asset(CONSOLE_CSS, 'text/css; charset=utf-8')],
      ['GET /assets/console.js', asset(CONSOLE_JS, 'text/javascript; charset=utf-8')],
      ['GET /favicon.ico', asset(FAVICON_SVG, 'image/svg+xml')],
    ],
    prefixes: [
      { methods: ['GET', 'POST'], prefix: '/app/keys/', handler: keys.action },
      { methods: ['GET', 'POST'], prefix: '/app/accounts/', handler: accounts.action },
      { methods: ['GET', 'POST'], prefix: SIGN_IN_LINK_PREFIX, handler: login.link },
      { methods: ['GET', 'POST'], prefix: '/app/catalogue/', handler: catalogue },
      { methods: ['GET', 'POST'], prefix: '/app/mcp/', handler: mcp },
      { methods: ['GET'], prefix: '/models/', handler: models.detail },
    ],
  };
}
