import type { Handler } from '../handler.js';

const READY = JSON.stringify({ status: 'ok' });

/**
 * Mounted once the store, catalogue and providers are ready: while the gateway starts or drains,
 * `/healthz` gets the 503 every route but the probes gets (see probes.ts for `/livez`, `/readyz`).
 */
export function healthzRoute(): Handler {
  return async ({ res }) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(READY);
  };
}
