import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Handler } from '../handler.js';
import { openApiDocument } from '../openapi.js';

/**
 * `GET /openapi.json`: built on the first request (converting every schema costs a few
 * milliseconds no start-up should pay), then served from memory with an ETag; it changes only
 * with the installed version.
 */
export function openApiRoute(): Handler {
  let built: { readonly body: string; readonly etag: string } | undefined;
  return async ({ req, res }) => {
    if (built === undefined) {
      // src/http/routes/ and dist/http/routes/ both sit three levels below package.json.
      const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };
      const body = JSON.stringify(openApiDocument(version));
      built = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    }
    const headers = { etag: built.etag, 'cache-control': 'public, max-age=3600' };
    if (req.headers['if-none-match'] === built.etag) {
      res.writeHead(304, headers).end();
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': 'application/json' }).end(built.body);
  };
}
