import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';
import type { Handler } from '../handler.js';

/**
 * `GET /metrics` on the gateway's own port, behind `--metrics-token`: a Prometheus scrape sends it
 * as `Authorization: Bearer <token>`. The token is compared by digest, in constant time.
 */
export function metricsRoute(token: string, scrape: () => Promise<string>, contentType: string): Handler {
  const expected = digest(token);
  return async (ctx) => {
    const header = ctx.req.headers.authorization;
    const offered = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
    if (offered === undefined || offered === '') throw new GatewayError('missing_api_key', 'The metrics need the metrics token as `Authorization: Bearer <token>`.', { headers: { 'www-authenticate': 'Bearer' } });
    if (!timingSafeEqual(digest(offered), expected)) throw new GatewayError('invalid_api_key', 'The metrics token is not right.', { headers: { 'www-authenticate': 'Bearer' } });
    let text: string;
    try {
      text = await scrape();
    } catch (error) {
      throw new GatewayError('internal_error', 'The metrics could not be gathered; try again shortly.', { cause: error });
    }
    ctx.res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text);
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
