/** The ledger's operation of an MCP tool call: its `model` is `server/tool`, its `provider_id` the server; it has no tokens. */
export const TOOL_CALL_OPERATION = 'mcp.tools/call';

/**
 * The daily roll-ups file a tool call under its `server/tool` behind this prefix, which no catalogue
 * model id has (ids have no space): a tool is never added up with a model of the same name
 * (`github/search` may be either), and reports tell tool calls from models without the ledger.
 */
const ROLLED_UP_TOOL_PREFIX = 'mcp ';

/** The roll-up's `model` of a ledger row. */
export function rolledUpName(operation: string, model: string): string {
  return operation === TOOL_CALL_OPERATION ? ROLLED_UP_TOOL_PREFIX + model : model;
}

/** The `server/tool` of a roll-up's `model` that is a tool call's; undefined for a model's. */
export function toolOfRolledUp(name: string): string | undefined {
  return name.startsWith(ROLLED_UP_TOOL_PREFIX) ? name.slice(ROLLED_UP_TOOL_PREFIX.length) : undefined;
}

/** SQL for the roll-up's `model` of a ledger row (in the whole-ledger backfill), the same rule as rolledUpName. */
export const ROLLED_UP_NAME_SQL = { operation: TOOL_CALL_OPERATION, prefix: ROLLED_UP_TOOL_PREFIX } as const;
