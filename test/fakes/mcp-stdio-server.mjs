// A stdio MCP server for the gateway's tests, built with the official SDK's `Server` and
// `StdioServerTransport` (plain JavaScript so it runs as `node mcp-stdio-server.mjs`, no tsx).
// It reads FAKE_STDIO_TOKEN from its environment (to prove the configured env reaches it) and
// writes one line to stderr at start that contains it (the gateway must log it redacted).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const token = process.env.FAKE_STDIO_TOKEN ?? '';
process.stderr.write(`fake stdio server ${process.pid} starting with token ${token}\n`);

const server = new Server({ name: 'fake-stdio', version: '1.0.0' }, { capabilities: { tools: {}, resources: {}, prompts: {} } });
const text = (value) => ({ content: [{ type: 'text', text: value }] });

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'echo', description: 'Returns its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
    { name: 'slow', description: 'Waits `ms` milliseconds; stops when cancelled.', inputSchema: { type: 'object', properties: { ms: { type: 'number' } } } },
    { name: 'crash', description: 'Exits the process.', inputSchema: { type: 'object', properties: {} } },
    { name: 'big', description: 'Returns `bytes` bytes of text on one line.', inputSchema: { type: 'object', properties: { bytes: { type: 'number' } } } },
    { name: 'flood', description: 'Writes one answer line of `mib` MiB straight to stdout, in 1 MiB pieces (never held whole).', inputSchema: { type: 'object', properties: { mib: { type: 'number' } } } },
    { name: 'env', description: 'Names of its environment variables, and whether FAKE_STDIO_TOKEN arrived.', inputSchema: { type: 'object', properties: {} } },
    { name: 'pid', description: 'Its process id.', inputSchema: { type: 'object', properties: {} } },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = request.params.arguments ?? {};
  switch (request.params.name) {
    case 'echo':
      return text(String(args.text));
    case 'slow': {
      const ms = typeof args.ms === 'number' ? args.ms : 10_000;
      const token = request.params._meta?.progressToken;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        if (token !== undefined) void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      });
      if (extra.signal.aborted) {
        process.stderr.write(`cancelled request ${extra.requestId}\n`);
        throw new McpError(ErrorCode.RequestTimeout, 'cancelled');
      }
      return text(`slept ${ms} ms`);
    }
    case 'crash':
      process.stderr.write('crashing on purpose\n');
      process.exit(3);
      break;
    case 'big':
      return text('x'.repeat(typeof args.bytes === 'number' ? args.bytes : 6 * 1024 * 1024));
    case 'flood': {
      // Bypasses the SDK's transport: one huge line, written piece by piece with back-pressure.
      const write = (chunk) => new Promise((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once('drain', resolve)));
      await write(`{"jsonrpc":"2.0","id":${JSON.stringify(extra.requestId)},"result":{"content":[{"type":"text","text":"`);
      const piece = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < (typeof args.mib === 'number' ? args.mib : 64); i++) await write(piece);
      await write('"}]}}\n');
      return text('flooded');
    }
    case 'env':
      return text(JSON.stringify({ names: Object.keys(process.env).sort(), tokenArrived: token.length > 0 && token === process.env.FAKE_STDIO_TOKEN }));
    case 'pid':
      return text(String(process.pid));
    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
  }
});

server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [{ uri: 'stdio://notes', name: 'notes', mimeType: 'text/plain' }] }));
server.setRequestHandler(ReadResourceRequestSchema, (request) => {
  if (request.params.uri !== 'stdio://notes') throw new McpError(-32002, `Resource not found: ${request.params.uri}`);
  return { contents: [{ uri: 'stdio://notes', mimeType: 'text/plain', text: 'stdio notes' }] };
});
server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [{ name: 'summarise', arguments: [{ name: 'topic', required: true }] }] }));
server.setRequestHandler(GetPromptRequestSchema, (request) => {
  if (request.params.name !== 'summarise') throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
  return { messages: [{ role: 'user', content: { type: 'text', text: `Summarise ${request.params.arguments?.topic ?? ''}.` } }] };
});

await server.connect(new StdioServerTransport());
// As the spec has it: the client ends the session by closing stdin, and the server then exits.
process.stdin.on('end', () => process.exit(0));
