// The bench's upstream MCP server: the official SDK's Server over its Streamable HTTP transport
// (stateful: one transport per session, as SDK servers are usually written), with one tool,
// `echo`, that answers its `text` argument back. `GET /healthz` answers 200, `GET /stats` the
// sessions opened and tool calls answered since start.
//
//   node bench/mcp-upstream.mjs --port 47401
//
// The SDK is not a bench/ dependency: it is loaded from the repository's own node_modules by
// path (the version the gateway is built against), so the bench installs nothing more.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fromRoot = createRequire(path.join(ROOT, 'package.json'));
const sdk = async (subpath) => import(pathToFileURL(fromRoot.resolve(`@modelcontextprotocol/sdk/${subpath}`)).href);
const { Server } = await sdk('server/index.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } = await sdk('types.js');

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? fallback : argv[i + 1];
};
const port = Number(option('port', '0'));

const ECHO_TOOL = {
  name: 'echo',
  description: 'Answers its text back.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
};

const stats = { sessions: 0, calls: 0 };
const transports = new Map();

function mcpServer() {
  const server = new Server({ name: 'bench-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [ECHO_TOOL] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    if (request.params.name !== 'echo') throw new Error(`unknown tool ${request.params.name}`);
    stats.calls++;
    return { content: [{ type: 'text', text: String(request.params.arguments?.text ?? '') }] };
  });
  return server;
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

const httpServer = http.createServer(async (req, res) => {
  try {
    if (req.method === 'GET' && req.url === '/healthz') return void res.writeHead(200).end('ok');
    if (req.method === 'GET' && req.url === '/stats') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    if (!req.url?.startsWith('/mcp')) return void res.writeHead(404).end();
    const sessionId = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      if (req.method !== 'POST' || sessionId !== undefined || !isInitializeRequest(body)) {
        res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: sessionId === undefined ? 'no session' : 'unknown session' }, id: null }));
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, transport);
          stats.sessions++;
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) transports.delete(transport.sessionId);
      };
      await mcpServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(error?.message ?? error));
  }
});
httpServer.keepAliveTimeout = 120_000;
httpServer.listen(port, '127.0.0.1', () => console.log(`mcp upstream listening on http://127.0.0.1:${httpServer.address().port}/mcp`));
