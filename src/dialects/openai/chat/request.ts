import { z } from 'zod';
import { GatewayError } from '../../../core/errors.js';
import type { ContentPart, DocumentPart, GenerationRequest, ImagePart, Message, ReasoningEffort, TextPart, ToolChoice } from '../../../generation/model.js';
import { documentOfFileData } from '../file-input.js';
import { invalid, logitBiasSchema, metadataSchema, withoutProtoKey } from '../validation.js';
import { notPlain, plainOrSchema, plainArray, plainBoolean, plainEither, plainLiteral, plainLooseObject, plainNonEmptyString, plainNullish, plainNumber, plainString, plainTagged } from '../plain-body.js';

/**
 * `POST /v1/chat/completions` bodies, with the types and bounds of OpenAI's reference. What real
 * clients send back is accepted as they send it: `content: null` beside `tool_calls` (the AI SDK),
 * `refusal: null` and `annotations: []` on assistant messages (the openai SDK). Unknown fields are
 * kept, for an OpenAI-compatible upstream.
 */
const number = (min: number, max: number) => z.number().min(min).max(max);

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).nullish() }),
});
// A file inline (`file_data`) or uploaded (`file_id`, which only an OpenAI upstream can read).
const filePart = z.looseObject({
  type: z.literal('file'),
  file: z.looseObject({ file_data: z.string().min(1).nullish(), file_id: z.string().min(1).nullish(), filename: z.string().nullish() }),
});
const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.enum(['system', 'developer']), content: z.union([z.string(), z.array(textPart)]), name: z.string().nullish() }),
  z.looseObject({ role: z.literal('user'), content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textPart, imagePart, filePart]))]), name: z.string().nullish() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.union([textPart, z.looseObject({ type: z.literal('refusal'), refusal: z.string() })]))]).nullish(),
    tool_calls: z.array(toolCall).nullish(),
    refusal: z.string().nullish(),
    reasoning_content: z.string().nullish(),
    name: z.string().nullish(),
  }),
  z.looseObject({ role: z.literal('tool'), content: z.union([z.string(), z.array(textPart)]), tool_call_id: z.string().min(1) }),
]);

const jsonSchemaObject = z.record(z.string(), z.unknown());

/** A chat completions body, as validated (also the OpenAPI document's request schema). */
export const chatBodySchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  tools: z
    .array(
      z.looseObject({
        type: z.literal('function'),
        function: z.looseObject({
          name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, underscores or dashes'),
          description: z.string().nullish(),
          parameters: jsonSchemaObject.nullish(),
          strict: z.boolean().nullish(),
        }),
      }),
    )
    .nullish(),
  tool_choice: z
    .union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1) }) })])
    .nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('text') }),
      z.looseObject({ type: z.literal('json_object') }),
      z.looseObject({
        type: z.literal('json_schema'),
        json_schema: z.looseObject({ name: z.string().min(1), description: z.string().nullish(), schema: jsonSchemaObject.nullish(), strict: z.boolean().nullish() }),
      }),
    ])
    .nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  temperature: number(0, 2).nullish(),
  top_p: number(0, 1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  presence_penalty: number(-2, 2).nullish(),
  frequency_penalty: number(-2, 2).nullish(),
  logit_bias: logitBiasSchema.nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  seed: z.number().int().nullish(),
  user: z.string().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  reasoning_effort: z.enum(['minimal', 'low', 'medium', 'high']).nullish(),
  metadata: metadataSchema(z.string()).nullish(),
});

type ChatBody = z.infer<typeof chatBodySchema>;

/** The body, a top-level `__proto__` key refused rather than lost. */
const chatBodySchemaWithoutProtoKey = withoutProtoKey(chatBodySchema);

const plainNumberOrNull = (min: number, max: number) => plainNullish(plainNumber(min, max));
const plainIntegerOrNull = (min: number, max: number) => plainNullish(plainNumber(min, max, true));
const plainTextPart = plainLooseObject({ type: plainLiteral('text'), text: plainString }, []);
const plainTextContent = plainEither(plainString, plainArray(plainTagged('type', { text: plainTextPart })));
const plainToolCall = plainLooseObject(
  { id: plainNonEmptyString, type: plainLiteral('function'), function: plainLooseObject({ name: plainNonEmptyString, arguments: plainString }, []) },
  ['type'],
);
const plainInstruction = plainLooseObject({ role: plainLiteral('system', 'developer'), content: plainTextContent, name: plainNullish(plainString) }, ['name']);

/**
 * The common bodies (text messages, assistant tool calls, the usual sampling fields), checked by
 * hand as chatBodySchema would check them; anything else (tools, images, files, maps, structured
 * formats), and every error, is the schema's. Each object's keys in the schema's order: the
 * output's order depends on it.
 */
export const plainChatBody = plainLooseObject(
  {
    model: plainNonEmptyString,
    messages: plainArray(
      plainTagged('role', {
        system: plainInstruction,
        developer: plainInstruction,
        user: plainLooseObject({ role: plainLiteral('user'), content: plainTextContent, name: plainNullish(plainString) }, ['name']),
        assistant: plainLooseObject(
          {
            role: plainLiteral('assistant'),
            content: plainNullish(plainTextContent),
            tool_calls: plainNullish(plainArray(plainToolCall)),
            refusal: plainNullish(plainString),
            reasoning_content: plainNullish(plainString),
            name: plainNullish(plainString),
          },
          ['content', 'tool_calls', 'refusal', 'reasoning_content', 'name'],
        ),
        tool: plainLooseObject({ role: plainLiteral('tool'), content: plainTextContent, tool_call_id: plainNonEmptyString }, []),
      }),
      1,
    ),
    tools: plainNullish(notPlain),
    tool_choice: plainNullish(plainLiteral('none', 'auto', 'required')),
    parallel_tool_calls: plainNullish(plainBoolean),
    response_format: plainNullish(plainTagged('type', { text: plainLooseObject({ type: plainLiteral('text') }, []), json_object: plainLooseObject({ type: plainLiteral('json_object') }, []) })),
    max_tokens: plainIntegerOrNull(1, Number.MAX_SAFE_INTEGER),
    max_completion_tokens: plainIntegerOrNull(1, Number.MAX_SAFE_INTEGER),
    temperature: plainNumberOrNull(0, 2),
    top_p: plainNumberOrNull(0, 1),
    n: plainIntegerOrNull(1, 128),
    stop: plainNullish(plainEither(plainString, plainArray(plainString))),
    presence_penalty: plainNumberOrNull(-2, 2),
    frequency_penalty: plainNumberOrNull(-2, 2),
    logit_bias: plainNullish(notPlain),
    logprobs: plainNullish(plainBoolean),
    top_logprobs: plainIntegerOrNull(0, 20),
    seed: plainIntegerOrNull(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    user: plainNullish(plainString),
    stream: plainNullish(plainBoolean),
    stream_options: plainNullish(plainLooseObject({ include_usage: plainNullish(plainBoolean) }, ['include_usage'])),
    reasoning_effort: plainNullish(plainLiteral('minimal', 'low', 'medium', 'high')),
    metadata: plainNullish(notPlain),
  },
  [
    'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'n', 'stop',
    'presence_penalty', 'frequency_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'seed', 'user', 'stream', 'stream_options', 'reasoning_effort', 'metadata',
  ],
);

/** The validated body; the generation model is built from it only when the request is translated. */
export interface ChatRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly body: ChatBody;
}

/** Parses a JSON body already read; throws a GatewayError naming the parameter at fault. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  const data = plainOrSchema(plainChatBody, chatBodySchemaWithoutProtoKey, body);
  const stream = data.stream ?? false;
  if (data.stream_options != null && !stream) throw invalid('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is true.");
  if (data.top_logprobs != null && data.logprobs !== true) throw invalid('top_logprobs', "Invalid 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is given.");
  if (data.tool_choice != null && data.tool_choice !== 'none' && (data.tools == null || data.tools.length === 0)) {
    throw invalid('tool_choice', "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.");
  }
  if (typeof data.tool_choice === 'object' && data.tool_choice !== null && !data.tools!.some((tool) => tool.function.name === (data.tool_choice as { function: { name: string } }).function.name)) {
    throw invalid('tool_choice', `Invalid 'tool_choice': no tool named '${data.tool_choice.function.name}' is in 'tools'.`);
  }
  data.messages.forEach((m, i) => {
    if (m.role !== 'user' || typeof m.content === 'string') return;
    m.content.forEach((part, j) => {
      if (part.type === 'image_url' && !/^(https?:|data:image\/[\w.+-]+;base64,)/i.test(part.image_url.url)) {
        throw invalid(`messages[${i}].content[${j}].image_url.url`, "Invalid 'image_url.url': expected an http(s) URL or a base64 'data:image/…' URL.", 'invalid_image_url');
      }
    });
  });
  return { model: data.model, stream, includeUsage: data.stream_options?.include_usage === true, body: data };
}

/** The fields the generation model holds; any other is an extension (forwarded, or refused by name). */
const MODELLED = new Set([
  'model', 'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'max_tokens', 'max_completion_tokens', 'temperature',
  'top_p', 'n', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'seed', 'user', 'stream',
  'stream_options', 'reasoning_effort', 'metadata', 'top_k',
]);
/** OpenAI's own hints that change nothing in an answer: ignored by an upstream that has no use for them. */
const HINTS = new Set(['store', 'service_tier', 'prompt_cache_key', 'safety_identifier', 'prediction']);

function textParts(content: string | readonly { type: 'text'; text: string }[]): TextPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content.map((part) => ({ type: 'text', text: part.text }));
}

function imageOf(url: string, detail: 'auto' | 'low' | 'high' | null | undefined): ImagePart {
  const data = /^data:([\w/.+-]+);base64,(.*)$/is.exec(url);
  const source = data === null ? { kind: 'url' as const, url } : { kind: 'inline' as const, mediaType: data[1]!, data: data[2]! };
  return detail == null ? { type: 'image', source } : { type: 'image', source, detail };
}

function fileOf(file: { file_data?: string | null; file_id?: string | null; filename?: string | null }, at: string): DocumentPart {
  if (file.file_data == null) {
    const param = file.file_id == null ? `${at}.file_data` : `${at}.file_id`;
    if (file.file_id == null) throw invalid(param, `Missing required parameter: '${param}'.`, 'missing_required_parameter');
    throw new GatewayError('unsupported_parameter', `'${param}': a file by id is read by OpenAI's own upstream only: send its bytes as 'file_data'.`, { param, code: 'unsupported_parameter' });
  }
  return documentOfFileData(file.file_data, file.filename, `${at}.file_data`);
}

/** The generation model of a chat request, for an upstream that does not speak OpenAI's chat. */
export function toGenerationRequest(request: ChatRequest): GenerationRequest {
  const b = request.body;
  const toolNames = new Map<string, string>();
  const messages: Message[] = b.messages.map((m, i): Message => {
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textParts(m.content) };
      case 'user':
        return {
          role: 'user',
          content:
            typeof m.content === 'string'
              ? textParts(m.content)
              : m.content.map((part, j): ContentPart => {
                  if (part.type === 'text') return { type: 'text', text: part.text };
                  if (part.type === 'image_url') return imageOf(part.image_url.url, part.image_url.detail);
                  return fileOf(part.file, `messages[${i}].content[${j}].file`);
                }),
        };
      case 'assistant': {
        const content: ContentPart[] = [];
        if (m.reasoning_content != null && m.reasoning_content !== '') content.push({ type: 'reasoning', text: m.reasoning_content });
        if (typeof m.content === 'string') content.push({ type: 'text', text: m.content });
        else for (const part of m.content ?? []) if (part.type === 'text') content.push({ type: 'text', text: (part as { text: string }).text });
        for (const call of m.tool_calls ?? []) {
          toolNames.set(call.id, call.function.name);
          content.push({ type: 'tool_call', id: call.id, name: call.function.name, arguments: call.function.arguments });
        }
        return { role: 'assistant', content };
      }
      case 'tool':
        return { role: 'tool', content: [{ type: 'tool_result', toolCallId: m.tool_call_id, name: toolNames.get(m.tool_call_id), content: textParts(m.content) }] };
    }
  });
  const choice = b.tool_choice;
  const toolChoice: ToolChoice | undefined =
    choice == null ? undefined : typeof choice === 'string' ? { type: choice } : { type: 'tool', name: choice.function.name };
  const format = b.response_format;
  const extensions: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(b)) if (!MODELLED.has(field) && !HINTS.has(field)) extensions[field] = value;
  return {
    model: b.model,
    messages,
    tools: (b.tools ?? []).map((tool) => ({
      name: tool.function.name,
      description: tool.function.description ?? undefined,
      parameters: tool.function.parameters ?? { type: 'object', properties: {} },
      strict: tool.function.strict ?? undefined,
    })),
    toolChoice,
    parallelToolCalls: b.parallel_tool_calls ?? undefined,
    responseFormat:
      format == null
        ? undefined
        : format.type === 'json_schema'
          ? {
              type: 'json_schema',
              name: format.json_schema.name,
              schema: format.json_schema.schema ?? { type: 'object' },
              strict: format.json_schema.strict ?? undefined,
              description: format.json_schema.description ?? undefined,
            }
          : { type: format.type },
    maxOutputTokens: b.max_completion_tokens ?? b.max_tokens ?? undefined,
    temperature: b.temperature ?? undefined,
    topP: b.top_p ?? undefined,
    topK: typeof b.top_k === 'number' ? b.top_k : undefined,
    stop: b.stop == null ? [] : typeof b.stop === 'string' ? [b.stop] : b.stop,
    n: b.n ?? 1,
    presencePenalty: b.presence_penalty ?? undefined,
    frequencyPenalty: b.frequency_penalty ?? undefined,
    logitBias: b.logit_bias ?? undefined,
    seed: b.seed ?? undefined,
    user: b.user ?? undefined,
    logprobs: b.logprobs === true ? { top: b.top_logprobs ?? 0 } : undefined,
    reasoning: b.reasoning_effort == null ? undefined : { effort: b.reasoning_effort as ReasoningEffort },
    metadata: b.metadata ?? undefined,
    extensions,
  };
}
