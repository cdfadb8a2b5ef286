import { z } from 'zod';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { GatewayError } from '../../../core/errors.js';
import { generationRequest, type ContentPart, type DocumentPart, type GenerationRequest, type ImagePart, type Message, type ReasoningEffort, type TextPart, type ToolChoice, type ToolResultPart } from '../../../generation/model.js';
import type { WireRequest } from '../../../generation/operation.js';

/**
 * `POST /v1/messages` bodies. The envelope is checked for every upstream (what Sluice reads itself:
 * model, max_tokens, messages, stream); an Anthropic upstream then gets the body as it came and
 * judges the rest itself. For any other upstream the body is translated, and every block and field
 * must be one Sluice can carry: the rest is refused by name.
 */
const unitInterval = z.number().min(0).max(1);
const looseBlock = z.looseObject({ type: z.string() });

/** A Messages body's envelope, as validated before its blocks (also the OpenAPI document's request schema). */
export const envelope = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  // `system` between turns: Claude Code's mid-conversation system beta.
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant', 'system']), content: z.union([z.string(), z.array(looseBlock)]) })).min(1, 'at least one message is required'),
  system: z.union([z.string(), z.array(looseBlock)]).nullish(),
  stream: z.boolean().nullish(),
  temperature: unitInterval.nullish(),
  top_p: unitInterval.nullish(),
  top_k: z.number().int().min(0).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
});

const cacheControl = z.strictObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).nullish();
const textBlock = z.strictObject({ type: z.literal('text'), text: z.string(), cache_control: cacheControl, citations: z.null().optional() });
const imageBlock = z.strictObject({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('base64'), media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']), data: z.string().min(1) }),
    z.strictObject({ type: z.literal('url'), url: z.string().min(1) }),
  ]),
  cache_control: cacheControl,
});
// A document: a PDF (base64 or by URL) or plain text. Content and file-id sources, and citations, stay Anthropic's.
const documentBlock = z.strictObject({
  type: z.literal('document'),
  source: z.looseObject({ type: z.string() }),
  title: z.string().nullish(),
  context: z.string().nullish(),
  citations: z.looseObject({ enabled: z.boolean().optional() }).nullish(),
  cache_control: cacheControl,
});
const documentSource = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string().min(1) }),
  z.strictObject({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }),
  z.strictObject({ type: z.literal('url'), url: z.string().min(1) }),
]);
const toolUseBlock = z.strictObject({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.record(z.string(), z.unknown()), cache_control: cacheControl });
const toolResultBlock = z.strictObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
const thinkingBlock = z.strictObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() });
const BLOCKS = { text: textBlock, image: imageBlock, document: documentBlock, tool_use: toolUseBlock, tool_result: toolResultBlock, thinking: thinkingBlock, redacted_thinking: redactedThinkingBlock } as const;
type Block = z.infer<(typeof BLOCKS)[keyof typeof BLOCKS]>;

const tool = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, underscores or dashes'),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  strict: z.boolean().optional(),
  cache_control: cacheControl,
  type: z.literal('custom').optional(),
  // Hints on how Anthropic streams and loads the tool (the AI SDK sends eager_input_streaming whenever it streams tools); nothing to carry elsewhere.
  eager_input_streaming: z.boolean().nullish(),
  defer_loading: z.boolean().nullish(),
  input_examples: z.array(z.unknown()).nullish(),
});

/** Every top-level field a translated request may hold; anything else only an Anthropic upstream can take. */
const translatable = z.strictObject({
  model: z.string(),
  max_tokens: z.number(),
  messages: z.array(z.unknown()),
  system: z.union([z.string(), z.array(textBlock)]).nullish(),
  stream: z.boolean().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  top_k: z.number().nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  metadata: z.strictObject({ user_id: z.string().nullish() }).nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
      z.strictObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
      z.strictObject({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
      z.strictObject({ type: z.literal('none') }),
    ])
    .nullish(),
  thinking: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
      z.strictObject({ type: z.literal('adaptive') }),
      z.strictObject({ type: z.literal('disabled') }),
    ])
    .nullish(),
  output_config: z
    .object({
      format: z.strictObject({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }).nullish(),
      effort: z.enum(['low', 'medium', 'high', 'max']).nullish(),
    })
    .nullish(),
  // A prompt-cache hint: the other upstreams cache on their own, so it changes nothing there.
  cache_control: cacheControl,
  // Scheduling, not the answer: nothing to carry to an upstream without tiers.
  service_tier: z.enum(['auto', 'standard_only']).nullish(),
  // Anthropic's server-side trimming of old thinking and tool results (Claude Code sends it on
  // every call); the other upstreams get the whole conversation, which is what trimming approximates.
  context_management: z.record(z.string(), z.unknown()).nullish(),
});

export interface MessagesRequest {
  /** The body as it came, for an Anthropic upstream. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly model: string;
  readonly maxTokens: number;
  readonly stream: boolean;
  /** `anthropic-version` and `anthropic-beta` as the caller sent them, for an Anthropic upstream. */
  readonly headers: Readonly<Record<string, string>>;
}

export function parseMessagesRequest(body: unknown, wire: WireRequest): MessagesRequest {
  const parsed = envelope.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error.issues[0]!);
  return { body: parsed.data, model: parsed.data.model, maxTokens: parsed.data.max_tokens, stream: parsed.data.stream === true, headers: anthropicHeaders(wire) };
}

/** `anthropic-version` and `anthropic-beta` as the caller sent them: an Anthropic upstream reads the body by them. */
export function anthropicHeaders(wire: WireRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = wire.headers[name];
    if (typeof value === 'string' && value !== '') headers[name] = value;
  }
  return headers;
}

/** The body for the upstream: max_tokens capped at what the model accepts (clients send 128000 for a model they do not know). */
export function cappedBody(request: MessagesRequest, model: CatalogueModel): Readonly<Record<string, unknown>> {
  const cap = model.maxOutputTokens;
  return cap !== undefined && request.maxTokens > cap ? { ...request.body, max_tokens: cap } : request.body;
}

/** Anthropic words validation errors as `path: message`, the path dotted with indices. */
function validationError(issue: z.core.$ZodIssue): GatewayError {
  const param = issue.path.map(String).join('.') || 'body';
  let message: string;
  if (issue.code === 'invalid_type' && issue.input === undefined) message = 'Field required';
  else if (issue.code === 'unrecognized_keys') {
    const field = [...issue.path, issue.keys[0]].join('.');
    return new GatewayError('invalid_request', `${field}: Extra inputs are not permitted`, { param: field });
  } else message = issue.message;
  return new GatewayError('invalid_request', `${param}: ${message}`, { param });
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, path: readonly (string | number)[]): T {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw validationError({ ...issue, path: [...path, ...issue.path] } as z.core.$ZodIssue);
}

function notTranslatable(model: CatalogueModel, param: string, what: string): GatewayError {
  return new GatewayError('unsupported_parameter', `${param}: model \`${model.id}\` cannot take ${what}: it is not served by the Anthropic Messages API.`, {
    param,
    code: 'unsupported_parameter',
  });
}

/** Budgets as OpenAI's effort levels, for upstreams that think by effort. */
function effortOf(thinking: z.infer<typeof translatable>['thinking'], effort: 'low' | 'medium' | 'high' | 'max' | undefined): ReasoningEffort | undefined {
  if (thinking === undefined || thinking === null || thinking.type === 'disabled') return undefined;
  if (thinking.type === 'adaptive') return effort === 'max' ? 'high' : (effort ?? 'medium');
  const budget = thinking.budget_tokens;
  return budget <= 1024 ? 'minimal' : budget <= 4096 ? 'low' : budget <= 16384 ? 'medium' : 'high';
}

/** A request for any upstream but Anthropic's, through the generation model; refuses what it cannot carry. */
export function toGenerationRequest(request: MessagesRequest, model: CatalogueModel): GenerationRequest {
  for (const field of Object.keys(request.body)) {
    if (!Object.hasOwn(translatable.shape, field)) throw notTranslatable(model, field, `the parameter '${field}'`);
  }
  // A server tool (web search, code execution, …) is valid Anthropic that runs on Anthropic's side:
  // refused as such by its type, before the schema of custom tools would call it malformed.
  if (Array.isArray(request.body.tools)) {
    request.body.tools.forEach((tool: unknown, k) => {
      const type = tool !== null && typeof tool === 'object' ? (tool as { type?: unknown }).type : undefined;
      if (typeof type === 'string' && type !== 'custom') throw notTranslatable(model, `tools.${k}.type`, `the server tool \`${type}\` (only custom tools are translated)`);
    });
  }
  const body = parseOrThrow(translatable, request.body, []);
  const messages: Message[] = [];
  if (body.system !== undefined && body.system !== null) {
    const parts: TextPart[] = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : body.system.map(textPart);
    if (parts.length > 0) messages.push({ role: 'system', content: parts });
  }
  // Tool names by call id: a tool result names its call only, and some upstreams want the name.
  const toolNames = new Map<string, string>();
  body.messages.forEach((raw, i) => {
    const message = raw as { role: 'user' | 'assistant' | 'system'; content: string | unknown[] };
    const blocks: Block[] =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : message.content.map((block, j) => {
            const type = (block as { type: string }).type;
            const path = ['messages', i, 'content', j];
            if (!Object.hasOwn(BLOCKS, type)) throw notTranslatable(model, `${path.join('.')}.type`, `a \`${type}\` block`);
            return parseOrThrow<Block>(BLOCKS[type as keyof typeof BLOCKS] as z.ZodType<Block>, block, path);
          });
    if (message.role === 'system') {
      // Instructions where they stand in the conversation; each upstream places them as it can.
      const content = blocks.map((block) => {
        if (block.type !== 'text') throw new GatewayError('invalid_request', `messages.${i}.content: a system message holds text only`, { param: `messages.${i}.content` });
        return textPart(block);
      });
      messages.push({ role: 'system', content });
      return;
    }
    if (message.role === 'assistant') {
      const content: ContentPart[] = [];
      for (const block of blocks) {
        if (block.type === 'text') content.push({ type: 'text', text: block.text });
        else if (block.type === 'thinking') content.push({ type: 'reasoning', text: block.thinking, signature: block.signature });
        else if (block.type === 'redacted_thinking') content.push({ type: 'reasoning', text: '', redactedData: block.data });
        else if (block.type === 'tool_use') {
          toolNames.set(block.id, block.name);
          content.push({ type: 'tool_call', id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
        } else throw notTranslatable(model, `messages.${i}.content`, `a \`${block.type}\` block in an assistant turn`);
      }
      messages.push({ role: 'assistant', content });
      return;
    }
    // Tool results first, as their own messages (the shape the other upstreams want), then the user's words.
    const userParts: ContentPart[] = [];
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'tool_result') messages.push({ role: 'tool', content: [toolResult(block, toolNames)] });
      else if (block.type === 'text') userParts.push(textPart(block));
      else if (block.type === 'image') userParts.push(imagePart(block));
      else if (block.type === 'document') userParts.push(documentPart(block, model, ['messages', i, 'content', j]));
      else throw notTranslatable(model, `messages.${i}.content`, `a \`${block.type}\` block in a user turn`);
    }
    if (userParts.length > 0) messages.push({ role: 'user', content: userParts });
  });

  const choice = body.tool_choice ?? undefined;
  const toolChoice: ToolChoice | undefined =
    choice === undefined ? undefined : choice.type === 'any' ? { type: 'required' } : choice.type === 'tool' ? { type: 'tool', name: choice.name } : { type: choice.type };
  const format = body.output_config?.format ?? undefined;
  const effort = effortOf(body.thinking, body.output_config?.effort ?? undefined);
  return generationRequest({
    model: body.model,
    messages,
    tools: (body.tools ?? []).map((t) => ({ name: t.name, description: t.description, parameters: t.input_schema, strict: t.strict })),
    toolChoice,
    parallelToolCalls: choice !== undefined && 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true ? false : undefined,
    responseFormat: format === undefined ? undefined : { type: 'json_schema', name: 'output', schema: format.schema, strict: true, description: undefined },
    // Capped at the model's limit by the adapter, as for every caller dialect.
    maxOutputTokens: body.max_tokens,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    topK: body.top_k ?? undefined,
    stop: body.stop_sequences ?? [],
    user: body.metadata?.user_id ?? undefined,
    reasoning: effort === undefined ? undefined : { effort },
  });
}

function textPart(block: z.infer<typeof textBlock>): TextPart {
  return block.cache_control ? { type: 'text', text: block.text, cacheBreakpoint: true } : { type: 'text', text: block.text };
}

function imagePart(block: z.infer<typeof imageBlock>): ImagePart {
  const source = block.source;
  return { type: 'image', source: source.type === 'url' ? { kind: 'url', url: source.url } : { kind: 'inline', mediaType: source.media_type, data: source.data } };
}

function documentPart(block: z.infer<typeof documentBlock>, model: CatalogueModel, at: readonly (string | number)[]): DocumentPart {
  const path = at.join('.');
  const kind = block.source.type;
  if (kind !== 'base64' && kind !== 'text' && kind !== 'url') throw notTranslatable(model, `${path}.source.type`, `a document with a \`${kind}\` source`);
  if (block.citations?.enabled === true) throw notTranslatable(model, `${path}.citations`, 'citations');
  if (block.context != null && block.context !== '') throw notTranslatable(model, `${path}.context`, "a document's context");
  const source = parseOrThrow(documentSource, block.source, [...at, 'source']);
  return {
    type: 'document',
    source:
      source.type === 'url'
        ? { kind: 'url', url: source.url }
        : // Plain text is carried as base64 like every document, encoded once here.
          { kind: 'inline', mediaType: source.media_type, data: source.type === 'text' ? Buffer.from(source.data, 'utf8').toString('base64') : source.data },
    ...(block.title == null || block.title === '' ? {} : { name: block.title }),
    ...(block.cache_control ? { cacheBreakpoint: true } : {}),
  };
}

function toolResult(block: z.infer<typeof toolResultBlock>, toolNames: ReadonlyMap<string, string>): ToolResultPart {
  const content = block.content === undefined ? [] : typeof block.content === 'string' ? [{ type: 'text' as const, text: block.content }] : block.content.map((inner) => (inner.type === 'text' ? textPart(inner) : imagePart(inner)));
  return { type: 'tool_result', toolCallId: block.tool_use_id, name: toolNames.get(block.tool_use_id), content, ...(block.is_error ? { isError: true } : {}) };
}

/** Every text of a request, for Sluice's own count (an upstream that reports no usage, or count_tokens off Anthropic). */
export function inputTexts(body: Readonly<Record<string, unknown>>): string[] {
  const texts: string[] = [];
  const addBlocks = (content: unknown) => {
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const block of content as Record<string, unknown>[]) {
        if (typeof block.text === 'string') texts.push(block.text);
        else if (typeof block.thinking === 'string') texts.push(block.thinking);
        else if (block.type === 'tool_use') texts.push(String(block.name), JSON.stringify(block.input ?? {}));
        else if (block.type === 'tool_result') addBlocks(block.content);
      }
    }
  };
  addBlocks(body.system);
  if (Array.isArray(body.messages)) for (const message of body.messages as { content?: unknown }[]) addBlocks(message.content);
  if (Array.isArray(body.tools)) for (const t of body.tools as Record<string, unknown>[]) texts.push(JSON.stringify(t));
  return texts;
}
