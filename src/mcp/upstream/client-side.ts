// What talking to an upstream MCP server needs beyond a connection's own bookkeeping: the SDK's
// client and transports (with Ajv, the SDK's validator), the bounded fetch (undici) and the words
// for a failure. upstream-connection.ts loads it with its first connection, so a gateway without
// MCP servers never holds it (about 6 MB of heap a process).
// The argument checks (Ajv, RE2's WebAssembly) load with it, so a server's first call compiles none of them.
import '../arguments.js';
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
export { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
export { boundedFetch, ForeignOriginError } from './bounded-fetch.js';
export { failureReason } from './failure-reason.js';
