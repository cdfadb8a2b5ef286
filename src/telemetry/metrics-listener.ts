import http from 'node:http';
import type { Scrape } from './cluster-metrics.js';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * `--metrics-listen HOST:PORT`: `/metrics` without a token on a port of its own, for a network
 * only the scraper reaches. In a cluster the primary listens, so one scrape sees every worker.
 */
export async function listenForScrapes(host: string, port: number, scrape: Scrape, onFailure: (error: Error) => void): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Only /metrics is served here.\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Use GET.\n');
    scrape().then(
      (text) => res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(req.method === 'HEAD' ? undefined : text),
      (error: Error) => {
        onFailure(error);
        res.writeHead(503, { 'content-type': 'text/plain' }).end(`${error.message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
