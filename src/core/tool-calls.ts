/**
 * The ledger's operations of MCP calls that reach an upstream server. They have no tokens; their
 * `provider_id` is the server. Their `model`: `server/tool` for a tool call, `server/prompt` for a
 * prompt, the server alone for a resource read (a URI per row would make the roll-ups unbounded).
 */
export const TOOL_CALL_OPERATION = 'mcp.tools/call';
export const RESOURCE_READ_OPERATION = 'mcp.resources/read';
export const PROMPT_GET_OPERATION = 'mcp.prompts/get';

const MCP_OPERATION_PREFIX = 'mcp.';

/** Whether a ledger row is an MCP call rather than a model request. */
export function isMcpOperation(operation: string): boolean {
  return operation.startsWith(MCP_OPERATION_PREFIX);
}

/**
 * The daily roll-ups file an MCP call behind this prefix, which no catalogue model id has (ids have
 * no space): a tool is never added up with a model of the same name (`github/search` may be
 * either), and reports tell MCP calls from models without the ledger. A tool call is filed under
 * its `server/tool`, any other MCP call under its method and model (`resources/read files`).
 */
const ROLLED_UP_MCP_PREFIX = 'mcp ';

/** The roll-up's `model` of a ledger row. */
export function rolledUpName(operation: string, model: string): string {
  if (operation === TOOL_CALL_OPERATION) return ROLLED_UP_MCP_PREFIX + model;
  if (isMcpOperation(operation)) return `${ROLLED_UP_MCP_PREFIX}${operation.slice(MCP_OPERATION_PREFIX.length)} ${model}`;
  return model;
}

/** The MCP line of a roll-up's `model` (`server/tool`, `resources/read server`, `prompts/get server/prompt`); undefined for a model's. */
export function toolOfRolledUp(name: string): string | undefined {
  return name.startsWith(ROLLED_UP_MCP_PREFIX) ? name.slice(ROLLED_UP_MCP_PREFIX.length) : undefined;
}

/** The pieces of the same rule in SQL (the whole-ledger backfill): see rolledUpName. */
export const ROLLED_UP_NAME_SQL = { toolOperation: TOOL_CALL_OPERATION, operationPrefix: MCP_OPERATION_PREFIX, prefix: ROLLED_UP_MCP_PREFIX } as const;

/** Control characters (terminal escapes, newlines) and format characters (bidirectional overrides): never in a label, a ledger name or a terminal. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}]/gu;

/** A name from an upstream (a tool's, a prompt's) as labels, the ledger and reports may show it: unprintable characters taken out, at most `max` characters. */
export function printableName(name: string, max: number): string {
  const printable = name.slice(0, max * 2).replace(UNPRINTABLE, '');
  return printable.length > max ? printable.slice(0, max) : printable;
}
