/**
 * OpenTelemetry's GenAI semantic conventions (development status; checked against the
 * semantic-conventions-genai repository, November 2026): the values Sluice reports for
 * `gen_ai.operation.name` and `gen_ai.provider.name`, and the instruments' bucket advice.
 */

/**
 * What the caller asked of Sluice, by the ledger's operation name. The conventions name chat,
 * text completion, content generation and embeddings; the operations they do not name (rerank,
 * images, audio, moderations) keep Sluice's own names. Either way the values are names fixed in
 * code, so the label stays bounded.
 */
export function serverOperationName(operation: string): string {
  switch (operation) {
    case 'completions':
      return 'text_completion';
    case 'generate_content':
      return 'generate_content';
    case 'chat':
    case 'messages':
    case 'responses':
      // Chat completions, Anthropic's messages and OpenAI's responses are all chat.
      return 'chat';
    default:
      // OpenAI's embeddings and Google's embedContent and batchEmbedContents (`gemini.embed_content`, …).
      return isEmbedding(operation) ? 'embeddings' : operation;
  }
}

function isEmbedding(operation: string): boolean {
  return operation === 'embeddings' || (operation.startsWith('gemini.') && operation.includes('embed'));
}

/**
 * What Sluice asked of an upstream: embeddings (however the adapter asked), else the caller's own
 * wire when relayed (an operation the conventions do not name by Sluice's name for it:
 * `openai.images.generations` is `images.generations`), else what the adapter speaks.
 */
export function clientOperationName(providerKind: string, upstreamApi: string, relayed: string | null, embedding = false): string {
  if (embedding) return 'embeddings';
  if (relayed !== null) {
    if (relayed === 'embeddings') return 'embeddings';
    if (relayed === 'openai.completions') return 'text_completion';
    if (relayed === 'openai.chat' || relayed === 'openai.responses' || relayed === 'anthropic.messages') return 'chat';
    if (relayed.startsWith('gemini.')) return isEmbedding(relayed) ? 'embeddings' : 'generate_content';
    return relayed.slice(relayed.indexOf('.') + 1);
  }
  if (providerKind === 'gemini') return 'generate_content';
  if (providerKind === 'openai' && upstreamApi === 'completions') return 'text_completion';
  return 'chat';
}

/**
 * An adapter's kind as the conventions name the provider (`gen_ai.provider.name`): the clouds by
 * their well-known values; an OpenAI-compatible server speaks OpenAI's API, so it is `openai`.
 */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  gemini: 'gcp.gemini',
  azure: 'azure.ai.openai',
  bedrock: 'aws.bedrock',
  vertex: 'gcp.vertex_ai',
};

export function providerName(kind: string | null): string {
  if (kind === null) return '_OTHER';
  return PROVIDER_NAMES[kind] ?? kind;
}

const servers = new Map<string, { readonly address: string; readonly port: number }>();

/** `server.address` and `server.port` of an upstream's origin, parsed once per origin. */
export function serverOf(origin: string): { readonly address: string; readonly port: number } {
  let server = servers.get(origin);
  if (server === undefined) {
    const url = new URL(origin);
    server = { address: url.hostname, port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port) };
    servers.set(origin, server);
  }
  return server;
}

/** `gen_ai.operation.name` of an MCP tool call, as the conventions name tool execution. */
export const EXECUTE_TOOL = 'execute_tool';

/** The tool label of a call whose name the gateway did not resolve (unknown, or not the key's): a caller's text is never a label. */
export const UNRESOLVED_TOOL = '(unresolved)';

export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
export const TIME_TO_FIRST_TOKEN_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];
export const TIME_PER_OUTPUT_TOKEN_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5];
