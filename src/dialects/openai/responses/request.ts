import { z } from 'zod';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { GatewayError } from '../../../core/errors.js';
import { generationRequest, type ContentPart, type GenerationRequest, type ImagePart, type Message, type ReasoningEffort, type ResponseFormat, type TextPart, type ToolChoice, type ToolDefinition } from '../../../generation/model.js';
import { invalid, metadataSchema, validationError, withoutProtoKey } from '../validation.js';
import { reasoningPartOf } from './reasoning.js';

/**
 * `POST /v1/responses` bodies. The envelope (what Sluice reads itself: the model, the input items,
 * the conversation fields and the bounds of the sampling fields) is checked for every upstream;
 * fields it does not model stay in the body for a native Responses upstream and are ignored
 * elsewhere, as clients send undocumented ones (Codex's `client_metadata`). Items and their parts
 * are checked loosely for the same reason: what Sluice reads must be well-formed, the rest is kept.
 */
export type Item = Readonly<Record<string, unknown>>;

const number = (min: number, max: number) => z.number().min(min).max(max);
const part = z.looseObject({ type: z.string() });
const content = z.union([z.string(), z.array(part)]);

const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content,
  id: z.string().nullish(),
});
const functionCallItem = z.looseObject({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string().min(1), arguments: z.string(), id: z.string().nullish() });
const functionCallOutputItem = z.looseObject({ type: z.literal('function_call_output'), call_id: z.string().min(1), output: content });
const reasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().nullish(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })),
  encrypted_content: z.string().nullish(),
});
const referenceItem = z.looseObject({ type: z.literal('item_reference').nullish(), id: z.string().min(1) });
const ITEMS = { message: messageItem, function_call: functionCallItem, function_call_output: functionCallOutputItem, reasoning: reasoningItem, item_reference: referenceItem } as const;

/** A Responses body's envelope, as validated before its items (also the OpenAPI document's request schema). */
export const envelope = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({}))]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string() })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z
    .looseObject({
      format: z
        .discriminatedUnion('type', [
          z.looseObject({ type: z.literal('text') }),
          z.looseObject({ type: z.literal('json_object') }),
          z.looseObject({
            type: z.literal('json_schema'),
            name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, underscores or dashes'),
            schema: z.record(z.string(), z.unknown()),
            strict: z.boolean().nullish(),
            description: z.string().nullish(),
          }),
        ])
        .nullish(),
    })
    .nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: number(0, 2).nullish(),
  top_p: number(0, 1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  reasoning: z
    .looseObject({
      effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish(),
      summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
    })
    .nullish(),
  include: z.array(z.string()).nullish(),
  metadata: metadataSchema(z.string().max(512)).nullish(),
  prompt_cache_key: z.string().nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  user: z.string().nullish(),
});

export type ResponsesBody = z.infer<typeof envelope>;

/** The body, a top-level `__proto__` key refused rather than lost. */
const envelopeWithoutProtoKey = withoutProtoKey(envelope);

/** The validated body; the generation model is built from it only when the request is translated. */
export interface ResponsesRequest {
  /** The body as it came, for a native Responses upstream. */
  readonly body: ResponsesBody;
  readonly model: string;
  readonly stream: boolean;
  /** Whether Sluice keeps the response (OpenAI's default: yes). */
  readonly store: boolean;
  readonly previousResponseId: string | undefined;
  /** This turn's input as items (a string input is one user message); references not yet resolved. */
  readonly input: readonly Item[];
}

/** Parses a JSON body already read; throws a GatewayError naming the parameter at fault. */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  const parsed = envelopeWithoutProtoKey.safeParse(body, { reportInput: true });
  if (!parsed.success) throw validationError(parsed.error.issues[0]!);
  const data = parsed.data;
  const input: Item[] = [];
  if (typeof data.input === 'string') input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: data.input }] });
  else {
    (data.input ?? []).forEach((item, i) => {
      const type = typeof item.type === 'string' ? item.type : 'role' in item ? 'message' : 'item_reference';
      const schema = ITEMS[type as keyof typeof ITEMS];
      if (schema !== undefined) {
        const checked = (schema as z.ZodType).safeParse(item, { reportInput: true });
        if (!checked.success) {
          const issue = checked.error.issues[0]!;
          throw validationError({ ...issue, path: ['input', i, ...issue.path] } as z.core.$ZodIssue);
        }
      }
      input.push(type === 'message' && item.type === undefined ? { type: 'message', ...item } : item);
    });
  }
  if (input.length === 0 && data.previous_response_id == null) throw invalid('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  const tools = data.tools ?? [];
  tools.forEach((tool, k) => {
    if (tool.type !== 'function') return;
    if (typeof tool.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) {
      throw invalid(`tools[${k}].name`, `Invalid 'tools[${k}].name': expected a string of 1-128 letters, digits, underscores or dashes.`);
    }
    if (tool.parameters != null && (typeof tool.parameters !== 'object' || Array.isArray(tool.parameters))) {
      throw invalid(`tools[${k}].parameters`, `Invalid type for 'tools[${k}].parameters': expected an object.`, 'invalid_type');
    }
  });
  const choice = data.tool_choice;
  if (typeof choice === 'object' && choice !== null && choice.type === 'function') {
    if (typeof choice.name !== 'string') throw invalid('tool_choice.name', "Missing required parameter: 'tool_choice.name'.", 'missing_required_parameter');
    if (!tools.some((tool) => tool.type === 'function' && tool.name === choice.name)) {
      throw invalid('tool_choice', `Invalid 'tool_choice': no function named '${choice.name}' is in 'tools'.`);
    }
  }
  return {
    body: data,
    model: data.model,
    stream: data.stream === true,
    store: data.store !== false,
    previousResponseId: data.previous_response_id ?? undefined,
    input,
  };
}

/** The item's type, as OpenAI reads it: a message may leave it out. */
export function itemType(item: Item): string {
  return typeof item.type === 'string' ? item.type : 'role' in item ? 'message' : 'item_reference';
}

/** Tool types other than `function`: hosted by OpenAI (web search, file search, computer use, MCP, namespaces…) or free-form. */
export function hostedToolTypes(body: ResponsesBody): string[] {
  return [...new Set((body.tools ?? []).filter((tool) => tool.type !== 'function').map((tool) => tool.type))];
}

function notTranslatable(model: CatalogueModel, param: string, what: string): GatewayError {
  return new GatewayError('unsupported_parameter', `Model \`${model.id}\` cannot take ${what}: it is not served by a Responses API upstream.`, {
    param,
    code: 'unsupported_parameter',
  });
}

/** Documented fields that change the answer in ways no translated upstream can. */
const UNTRANSLATABLE = ['background', 'conversation', 'prompt', 'max_tool_calls'] as const;

export interface Translation {
  readonly request: GenerationRequest;
  /** Hosted tool types left out, as the model's configuration allows. */
  readonly droppedTools: readonly string[];
}

/**
 * The generation model of a Responses request, for an upstream without a Responses API. `items` is
 * the whole conversation (earlier turns and this one, references resolved). Consecutive assistant
 * items (reasoning, text, function calls) become one assistant turn, as the other APIs want them;
 * reasoning is carried only where it came from the same kind of upstream (its signature means
 * nothing to another). What cannot be carried is refused by name.
 */
export function toGenerationRequest(request: ResponsesRequest, items: readonly Item[], model: CatalogueModel, providerKind: string): Translation {
  const b = request.body;
  for (const field of UNTRANSLATABLE) if (b[field] != null && b[field] !== false) throw notTranslatable(model, field, `the parameter '${field}'`);
  if (b.top_logprobs != null && b.top_logprobs > 0) throw notTranslatable(model, 'top_logprobs', "'top_logprobs'");

  const hosted = hostedToolTypes(b);
  if (hosted.length > 0 && !model.dropHostedTools) {
    const k = (b.tools ?? []).findIndex((tool) => tool.type !== 'function');
    throw notTranslatable(model, `tools[${k}].type`, `tools of type ${hosted.map((t) => `\`${t}\``).join(', ')} (only \`function\` tools are translated; a model configured with drop_hosted_tools leaves them out)`);
  }
  const tools: ToolDefinition[] = (b.tools ?? [])
    .filter((tool) => tool.type === 'function')
    .map((tool) => ({
      name: tool.name as string,
      description: typeof tool.description === 'string' ? tool.description : undefined,
      parameters: (tool.parameters as Record<string, unknown> | null | undefined) ?? { type: 'object', properties: {} },
      strict: typeof tool.strict === 'boolean' ? tool.strict : undefined,
    }));

  const messages: Message[] = [];
  if (b.instructions != null && b.instructions !== '') messages.push({ role: 'system', content: [{ type: 'text', text: b.instructions }] });
  const toolNames = new Map<string, string>();
  let assistant: ContentPart[] = [];
  const flush = () => {
    if (assistant.length > 0) messages.push({ role: 'assistant', content: assistant });
    assistant = [];
  };
  items.forEach((item, i) => {
    const type = itemType(item);
    const at = `input[${i}]`;
    switch (type) {
      case 'message': {
        const role = item.role as 'user' | 'assistant' | 'system' | 'developer';
        if (role === 'assistant') {
          assistant.push(...assistantParts(item.content as string | Item[], model, at));
          return;
        }
        flush();
        const parts = userParts(item.content as string | Item[], model, at, role === 'user');
        messages.push({ role: role === 'user' ? 'user' : 'system', content: parts });
        return;
      }
      case 'function_call': {
        const callId = item.call_id as string;
        toolNames.set(callId, item.name as string);
        assistant.push({ type: 'tool_call', id: callId, name: item.name as string, arguments: item.arguments as string });
        return;
      }
      case 'function_call_output': {
        flush();
        const callId = item.call_id as string;
        const output = item.output as string | Item[];
        const parts = typeof output === 'string' ? [{ type: 'text' as const, text: output }] : (userParts(output, model, `${at}.output`, true) as (TextPart | ImagePart)[]);
        messages.push({ role: 'tool', content: [{ type: 'tool_result', toolCallId: callId, name: toolNames.get(callId), content: parts }] });
        return;
      }
      case 'reasoning': {
        const reasoning = reasoningPartOf(item, providerKind);
        if (reasoning !== undefined) assistant.push(reasoning);
        return;
      }
      default:
        throw notTranslatable(model, `${at}.type`, `an input item of type \`${type}\``);
    }
  });
  flush();

  const format = b.text?.format ?? undefined;
  const responseFormat: ResponseFormat | undefined =
    format === undefined
      ? undefined
      : format.type === 'json_schema'
        ? { type: 'json_schema', name: format.name, schema: format.schema, strict: format.strict ?? undefined, description: format.description ?? undefined }
        : { type: format.type };
  const effort = b.reasoning?.effort;
  return {
    request: generationRequest({
      model: b.model,
      messages,
      tools,
      toolChoice: toolChoiceOf(b, model, hosted.length > 0),
      parallelToolCalls: tools.length > 0 ? (b.parallel_tool_calls ?? undefined) : undefined,
      responseFormat,
      maxOutputTokens: b.max_output_tokens ?? undefined,
      temperature: b.temperature ?? undefined,
      topP: b.top_p ?? undefined,
      user: b.user ?? undefined,
      reasoning: effort == null || effort === 'none' ? undefined : { effort: (effort === 'xhigh' ? 'high' : effort) as ReasoningEffort },
    }),
    droppedTools: hosted,
  };
}

function toolChoiceOf(b: ResponsesBody, model: CatalogueModel, hostedDropped: boolean): ToolChoice | undefined {
  const choice = b.tool_choice;
  const functions = (b.tools ?? []).filter((tool) => tool.type === 'function');
  if (choice == null) return undefined;
  if (typeof choice === 'string') {
    // Every tool left out: nothing is left to choose.
    if (functions.length === 0) return undefined;
    return { type: choice };
  }
  if (choice.type === 'function') return { type: 'tool', name: choice.name as string };
  // A hosted tool asked for by type, which was left out: the model chooses among what is left.
  if (hostedDropped && choice.type !== 'allowed_tools' && choice.type !== 'custom' && choice.type !== 'mcp') return functions.length === 0 ? undefined : { type: 'auto' };
  throw notTranslatable(model, 'tool_choice', `a tool choice of type \`${choice.type}\``);
}

function imageOf(url: string, detail: unknown): ImagePart {
  const data = /^data:([\w/.+-]+);base64,(.*)$/is.exec(url);
  const source = data === null ? { kind: 'url' as const, url } : { kind: 'inline' as const, mediaType: data[1]!, data: data[2]! };
  return detail === 'low' || detail === 'high' || detail === 'auto' ? { type: 'image', source, detail } : { type: 'image', source };
}

/** Text and images of a user, system or developer message (or a function's output). */
function userParts(content: string | readonly Item[], model: CatalogueModel, at: string, images: boolean): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((p, j): ContentPart => {
    const where = `${at}.content[${j}]`;
    if ((p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') && typeof p.text === 'string') return { type: 'text', text: p.text };
    if (p.type === 'input_image' && images) {
      if (typeof p.image_url !== 'string') throw notTranslatable(model, `${where}.file_id`, 'an image given by file id (send it as `image_url`)');
      if (!/^(https?:|data:image\/[\w.+-]+;base64,)/i.test(p.image_url)) {
        throw invalid(`${where}.image_url`, `Invalid '${where}.image_url': expected an http(s) URL or a base64 'data:image/…' URL.`, 'invalid_image_url');
      }
      return imageOf(p.image_url, p.detail);
    }
    if (p.type === 'input_text' || p.type === 'output_text') throw invalid(`${where}.text`, `Missing required parameter: '${where}.text'.`, 'missing_required_parameter');
    throw notTranslatable(model, `${where}.type`, `a content part of type \`${String(p.type)}\``);
  });
}

/** An assistant message's text (a refusal is text too, once said). */
function assistantParts(content: string | readonly Item[], model: CatalogueModel, at: string): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((p, j): ContentPart => {
    if ((p.type === 'output_text' || p.type === 'input_text') && typeof p.text === 'string') return { type: 'text', text: p.text };
    if (p.type === 'refusal' && typeof p.refusal === 'string') return { type: 'text', text: p.refusal };
    throw notTranslatable(model, `${at}.content[${j}].type`, `an assistant content part of type \`${String(p.type)}\``);
  });
}

/** Every text of a conversation, for Sluice's own count. */
export function inputTexts(instructions: string | null | undefined, items: readonly Item[]): string[] {
  const texts: string[] = instructions ? [instructions] : [];
  const addContent = (content: unknown) => {
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) for (const p of content as Item[]) if (typeof p.text === 'string') texts.push(p.text);
  };
  for (const item of items) {
    const type = itemType(item);
    if (type === 'message') addContent(item.content);
    else if (type === 'function_call') texts.push(String(item.name), String(item.arguments));
    else if (type === 'function_call_output') addContent(item.output);
    else if (type === 'reasoning' && Array.isArray(item.summary)) addContent(item.summary);
  }
  return texts;
}
