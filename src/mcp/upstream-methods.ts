import { CallToolRequestParamsSchema, GetPromptRequestParamsSchema, ReadResourceRequestParamsSchema, type CallToolRequestParams, type CallToolResult, type GetPromptRequestParams, type GetPromptResult, type ReadResourceRequestParams, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { printableName, PROMPT_GET_OPERATION, RESOURCE_READ_OPERATION, TOOL_CALL_OPERATION } from '../core/tool-calls.js';
import { ERROR_CODES, invalidParams, McpError, parseParams } from './jsonrpc.js';
import { callerUri } from './names.js';
import { MAX_LEDGER_NAME, Unresolved, type UpstreamMethod } from './upstream-call.js';
import { UpstreamMcpError } from './upstream/upstream-server.js';

/** The three methods that reach an upstream server, each as the stage runner (upstream-call.ts) takes it. */

/** The most of a tool's name a metric label or a span name holds. */
const MAX_LABEL = 64;

function shortened(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function byteLengthOf(value: unknown): number {
  return value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** The caller's error for a tool that does not exist or that the key may not use: one message for both. */
function unknownTool(name: string, status: number, kind: string): McpError {
  return new McpError(ERROR_CODES.INVALID_PARAMS, `Unknown tool: ${shortened(name, MAX_LEDGER_NAME)}`, status, kind);
}

export const CALL_TOOL: UpstreamMethod<CallToolRequestParams, CallToolResult> = {
  method: 'tools/call',
  operation: TOOL_CALL_OPERATION,
  parse: (params) => {
    const parsed = parseParams(CallToolRequestParamsSchema, params);
    if (parsed.name === '') throw invalidParams('`name` must be the name of a tool.', { field: 'name' });
    return parsed;
  },
  nameOf: (params) => params.name,
  bytesIn: (params) => byteLengthOf(params.arguments ?? {}),
  resolve: async (directory, ctx, params) => {
    const { name } = params;
    const found = await directory.tool(ctx.access, ctx.endpoint, name);
    if (found === undefined) throw new Unresolved(unknownTool(name, 404, 'unknown_tool'), name, null);
    if ('down' in found) throw new Unresolved(new UpstreamMcpError('unavailable', `${found.down.id} is down`), name, found.down.id);
    if ('denied' in found) throw new Unresolved(unknownTool(name, 403, 'tool_not_permitted'), `${found.denied.server}/${found.denied.tool}`, found.denied.server);
    const { server, tool, named } = found;
    const args = params.arguments;
    return {
      server,
      ledgerModel: `${server.id}/${tool.upstream.name}`,
      // The upstream's name as a label may hold it: no control characters (a terminal escape, a newline), at most 64 characters.
      label: printableName(tool.upstream.name, MAX_LABEL),
      price: server.config.price_per_call,
      check: () => named.checks.check(tool.upstream, name, args ?? {}),
      invoke: (options) => server.callTool(tool.upstream.name, args, options),
      // On `/mcp`, resource URIs in a result are the caller's (`sluice-mcp://{server}/…`), so that a link can be read back through Sluice.
      toCaller: (result) => {
        if (ctx.endpoint !== '' || !Array.isArray(result.content) || !result.content.some((block) => block.type === 'resource_link' || block.type === 'resource')) return result;
        return {
          ...result,
          content: result.content.map((block) => {
            if (block.type === 'resource_link') return { ...block, uri: callerUri(server.id, block.uri) };
            if (block.type === 'resource') return { ...block, resource: { ...block.resource, uri: callerUri(server.id, block.resource.uri) } };
            return block;
          }),
        };
      },
    };
  },
};

export const READ_RESOURCE: UpstreamMethod<ReadResourceRequestParams, ReadResourceResult> = {
  method: 'resources/read',
  operation: RESOURCE_READ_OPERATION,
  parse: (params) => {
    const parsed = parseParams(ReadResourceRequestParamsSchema, params);
    if (parsed.uri === '') throw invalidParams('`uri` must be a resource URI.', { field: 'uri' });
    return parsed;
  },
  // A read is filed under its server alone: a URI per ledger name would make the roll-ups unbounded.
  nameOf: () => '',
  bytesIn: (params) => Buffer.byteLength(params.uri, 'utf8'),
  resolve: async (directory, ctx, params) => {
    const target = directory.resource(ctx.access, ctx.endpoint, params.uri);
    const shown = shortened(params.uri, 256);
    if (target === undefined) throw new Unresolved(new McpError(ERROR_CODES.RESOURCE_NOT_FOUND, `Resource not found: ${shown}`, 404, 'resource_not_found', { uri: shown }), '', null);
    const { server } = target;
    return {
      server,
      ledgerModel: server.id,
      label: null,
      // `price_per_call` prices tool calls: reading a resource or getting a prompt is free (and counted against rpm and concurrency).
      price: undefined,
      invoke: (options) => server.readResource(target.uri, options),
      toCaller: (result) => (ctx.endpoint !== '' ? result : { ...result, contents: result.contents.map((content) => ({ ...content, uri: callerUri(server.id, content.uri) })) }),
    };
  },
};

export const GET_PROMPT: UpstreamMethod<GetPromptRequestParams, GetPromptResult> = {
  method: 'prompts/get',
  operation: PROMPT_GET_OPERATION,
  parse: (params) => {
    const parsed = parseParams(GetPromptRequestParamsSchema, params);
    if (parsed.name === '') throw invalidParams('`name` must be the name of a prompt.', { field: 'name' });
    return parsed;
  },
  nameOf: (params) => params.name,
  bytesIn: (params) => byteLengthOf(params.arguments ?? {}),
  resolve: async (directory, ctx, params) => {
    const found = await directory.prompt(ctx.access, ctx.endpoint, params.name);
    if (found === undefined) throw new Unresolved(invalidParams(`Unknown prompt: ${shortened(params.name, MAX_LEDGER_NAME)}`), params.name, null);
    const { server, prompt } = found;
    return {
      server,
      ledgerModel: `${server.id}/${prompt.upstream.name}`,
      label: null,
      price: undefined,
      invoke: (options) => server.getPrompt(prompt.upstream.name, params.arguments, options),
      toCaller: (result) => result,
    };
  },
};
