import type { Handler } from '../handler.js';

const READY = JSON.stringify({ status: 'ok' });

/** The server only listens once the store, catalogue and providers are ready. */
export function healthzRoute(): Handler {
  return async ({ res }) => {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(READY);
  };
}
