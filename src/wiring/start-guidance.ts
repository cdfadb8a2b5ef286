import { relative } from 'node:path';

/** What a gateway that serves no models yet knows of its set-up. */
export interface SetupFacts {
  /** The gateway's address, `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The configuration file read (or, when none was named, the one watched for). */
  readonly configPath: string;
  readonly configFound: boolean;
  /** Any account can manage the console catalogue. */
  readonly hasAdmin: boolean;
  /** The flags a CLI command needs to reach the same store (`--data ./other`), or none for the defaults. */
  readonly storeFlags: string;
  /** The MCP servers it offers at `/mcp` (ids), which serve without any model. */
  readonly mcpServerIds?: readonly string[];
}

/**
 * The next steps for an operator whose gateway serves no models: where the configuration goes,
 * the console, the first admin. Printed once on the terminal and logged, so that `"models":0` is
 * never the only hint.
 */
export function startGuidance(facts: SetupFacts): { lines: string[]; summary: string } {
  const shown = relative(process.cwd(), facts.configPath);
  const path = shown.startsWith('..') || shown === '' ? facts.configPath : `./${shown}`;
  const store = facts.storeFlags === '' ? '' : ` ${facts.storeFlags}`;
  const mcp = facts.mcpServerIds ?? [];
  const shownIds = mcp.length > 5 ? `${mcp.slice(0, 5).join(', ')} and ${mcp.length - 5} more` : mcp.join(', ');
  const serving = mcp.length === 0 ? '' : ` Its ${mcp.length} MCP server${mcp.length === 1 ? '' : 's'} (${shownIds}) ${mcp.length === 1 ? 'is' : 'are'} offered at ${facts.url}/mcp all the same, to keys whose MCP allow-list names them.`;
  const lines = [
    `No models are configured yet: every generation request gets 404 (model not found) until one is.${serving}`,
    facts.configFound
      ? `  Configuration file: ${path} declares no models; add some (or a provider with \`discover: true\`): it is read again when it changes.`
      : `  Configuration file: ${path} does not exist; it is read as soon as it appears, and again whenever it changes.`,
    '    Write one: sluice init --provider openai=http://127.0.0.1:8000/v1   (or --provider anthropic, --provider gemini)',
    `  Console: ${facts.url}/app/catalogue (an admin registers providers and models there; public catalogue at ${facts.url}/models)`,
  ];
  const makeAdmin = `sluice accounts create admin --admin --sign-in-link --url ${facts.url}${store}`;
  if (!facts.hasAdmin) lines.push(`  No console admin yet. Make one (it prints a one-time sign-in link): ${makeAdmin}`);
  lines.push(`  Check the set-up: sluice doctor${store}`);
  const admin = facts.hasAdmin ? '' : `; make the first console admin with \`${makeAdmin}\``;
  const summary = `no models are configured${mcp.length === 0 ? '' : ` (MCP servers are offered at ${facts.url}/mcp: ${shownIds})`}: write ${path} (\`sluice init\`, read again when it changes) or register models in the console at ${facts.url}/app/catalogue${admin}`;
  return { lines, summary };
}
