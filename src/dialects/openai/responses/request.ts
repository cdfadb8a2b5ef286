import { z } from 'zod';
import type { CatalogueModel } from '../../../catalogue/catalogue.js';
import { GatewayError } from '../../../core/errors.js';
import { generationRequest, type ContentPart, type DocumentPart, type GenerationRequest, type ImagePart, type Message, type ReasoningEffort, type ResponseFormat, type TextPart, type ToolChoice } from '../../../generation/model.js';
import { documentOfFileData } from '../file-input.js';
import { invalid, metadataSchema, validationError, withoutProtoKey } from '../validation.js';
import { reasoningPartOf } from './reasoning.js';
import { checkToolList, CUSTOM_INPUT, type ResponsesTools } from './tools.js';

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
const functionCallItem = z.looseObject({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string().min(1), namespace: z.string().min(1).nullish(), arguments: z.string(), id: z.string().nullish() });
const functionCallOutputItem = z.looseObject({ type: z.literal('function_call_output'), call_id: z.string().min(1), output: content });
const customToolCallItem = z.looseObject({ type: z.literal('custom_tool_call'), call_id: z.string().min(1), name: z.string().min(1), namespace: z.string().min(1).nullish(), input: z.string(), id: z.string().nullish() });
const customToolCallOutputItem = z.looseObject({ type: z.literal('custom_tool_call_output'), call_id: z.string().min(1), output: content });
const tool = z.looseObject({ type: z.string() });
/** Tools made available from this item on (Codex's whole tool set, when it sends no `tools`). */
const additionalToolsItem = z.looseObject({ type: z.literal('additional_tools'), role: z.literal('developer').nullish(), tools: z.array(tool) });
const reasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().nullish(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })),
  encrypted_content: z.string().nullish(),
});
const referenceItem = z.looseObject({ type: z.literal('item_reference').nullish(), id: z.string().min(1) });
const ITEMS = {
  message: messageItem,
  function_call: functionCallItem,
  function_call_output: functionCallOutputItem,
  custom_tool_call: customToolCallItem,
  custom_tool_call_output: customToolCallOutputItem,
  additional_tools: additionalToolsItem,
  reasoning: reasoningItem,
  item_reference: referenceItem,
} as const;

/** A Responses body's envelope, as validated before its items (also the OpenAPI document's request schema). */
export const envelope = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({}))]).nullish(),
  instructions: z.string().nullish(),
  tools: z.array(tool).nullish(),
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
      verbosity: z.enum(['low', 'medium', 'high']).nullish(),
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
      context: z.enum(['auto', 'current_turn', 'all_turns']).nullish(),
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
  checkToolList(tools, 'tools');
  input.forEach((item, i) => {
    if (item.type === 'additional_tools') checkToolList(item.tools as Item[], `input[${i}].tools`);
  });
  const choice = data.tool_choice;
  if (typeof choice === 'object' && choice !== null && choice.type === 'function') {
    if (typeof choice.name !== 'string') throw invalid('tool_choice.name', "Missing required parameter: 'tool_choice.name'.", 'missing_required_parameter');
    // Functions of `tools` and of `additional_tools` items, a namespace's under its name.
    const listed = [...tools, ...input.flatMap((item) => (item.type === 'additional_tools' ? (item.tools as Item[]) : []))];
    const offered: Item[] = listed.flatMap((tool) => (tool.type === 'namespace' ? (tool.tools as Item[]).map((inner) => ({ ...inner, namespace: tool.name })) : [{ ...tool, namespace: undefined }]));
    const namespace = typeof choice.namespace === 'string' ? choice.namespace : undefined;
    if (!offered.some((tool) => tool.type === 'function' && tool.name === choice.name && tool.namespace === namespace)) {
      throw invalid('tool_choice', `Invalid 'tool_choice': no function named '${choice.name}'${namespace === undefined ? '' : ` in namespace '${namespace}'`} is in 'tools'.`);
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

function notTranslatable(model: CatalogueModel, param: string, what: string): GatewayError {
  return new GatewayError('unsupported_parameter', `Model \`${model.id}\` cannot take ${what}: it is not served by a Responses API upstream.`, {
    param,
    code: 'unsupported_parameter',
  });
}

/** Documented fields that change the answer in ways no translated upstream can. */
const UNTRANSLATABLE = ['background', 'conversation', 'prompt', 'max_tool_calls'] as const;

/**
 * The generation model of a Responses request, for an upstream without a Responses API. `items` is
 * the whole conversation (earlier turns and this one, references resolved), `tools` its tools as
 * functions (tools.ts). Consecutive assistant items (reasoning, text, function and custom tool
 * calls) become one assistant turn, as the other APIs want them; reasoning is carried only where it
 * came from the same kind of upstream (its signature means nothing to another). What cannot be
 * carried is refused by name.
 */
export function toGenerationRequest(request: ResponsesRequest, items: readonly Item[], model: CatalogueModel, providerKind: string, tools: ResponsesTools): GenerationRequest {
  const b = request.body;
  for (const field of UNTRANSLATABLE) if (b[field] != null && b[field] !== false) throw notTranslatable(model, field, `the parameter '${field}'`);
  if (b.top_logprobs != null && b.top_logprobs > 0) throw notTranslatable(model, 'top_logprobs', "'top_logprobs'");
  // `hosted_tools: refuse`: a tool no upstream of this kind runs is a 400 naming its type, as before Sluice left such tools out.
  if (tools.dropped.length > 0 && model.hostedTools === 'refuse') {
    const types = tools.dropped.map((t) => `\`${t}\``).join(', ');
    throw notTranslatable(model, tools.firstDroppedAt!, `tools of type ${types} (functions, namespaces of functions and custom tools are translated; the model or its provider is configured with hosted_tools: refuse)`);
  }

  const messages: Message[] = [];
  if (b.instructions != null && b.instructions !== '') messages.push({ role: 'system', content: [{ type: 'text', text: b.instructions }] });
  const toolNames = new Map<string, string>();
  let assistant: ContentPart[] = [];
  const flush = () => {
    if (assistant.length > 0) messages.push({ role: 'assistant', content: assistant });
    assistant = [];
  };
  const call = (callId: string, name: string, args: string) => {
    toolNames.set(callId, name);
    assistant.push({ type: 'tool_call', id: callId, name, arguments: args });
  };
  const result = (item: Item, at: string) => {
    flush();
    const callId = item.call_id as string;
    const output = item.output as string | Item[];
    const parts = typeof output === 'string' ? [{ type: 'text' as const, text: output }] : userParts(output, model, `${at}.output`, true);
    // A tool's output carries text and images to every upstream; a file there has no translation.
    const file = parts.findIndex((part) => part.type === 'document');
    if (file !== -1) throw notTranslatable(model, `${at}.output[${file}].type`, 'a file in a function call output');
    messages.push({ role: 'tool', content: [{ type: 'tool_result', toolCallId: callId, name: toolNames.get(callId), content: parts as (TextPart | ImagePart)[] }] });
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
      case 'function_call':
        return call(item.call_id as string, tools.flatName(item.name as string, (item.namespace as string | null | undefined) ?? undefined), item.arguments as string);
      case 'custom_tool_call':
        return call(item.call_id as string, tools.flatName(item.name as string, (item.namespace as string | null | undefined) ?? undefined), JSON.stringify({ [CUSTOM_INPUT]: item.input }));
      case 'function_call_output':
      case 'custom_tool_call_output':
        return result(item, at);
      case 'additional_tools':
        return; // its tools are in `tools`
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
  const functions = tools.functions;
  return generationRequest({
    model: b.model,
    messages,
    tools: functions,
    toolChoice: toolChoiceOf(b, model, tools),
    parallelToolCalls: functions.length > 0 ? (b.parallel_tool_calls ?? undefined) : undefined,
    responseFormat,
    maxOutputTokens: b.max_output_tokens ?? undefined,
    temperature: b.temperature ?? undefined,
    topP: b.top_p ?? undefined,
    user: b.user ?? undefined,
    reasoning: effort == null || effort === 'none' ? undefined : { effort: (effort === 'xhigh' ? 'high' : effort) as ReasoningEffort },
  });
}

function toolChoiceOf(b: ResponsesBody, model: CatalogueModel, tools: ResponsesTools): ToolChoice | undefined {
  const choice = b.tool_choice;
  if (choice == null) return undefined;
  // Every tool left out: nothing is left to choose.
  if (tools.functions.length === 0) return undefined;
  if (typeof choice === 'string') return { type: choice };
  if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string') {
    const name = tools.flatName(choice.name, typeof choice.namespace === 'string' ? choice.namespace : undefined);
    if (tools.origin(name) !== undefined) return { type: 'tool', name };
    if (choice.type === 'custom') throw invalid('tool_choice', `Invalid 'tool_choice': no custom tool named '${choice.name}' is in 'tools'.`);
  }
  // A hosted tool asked for by type, which was left out: the model chooses among what is left.
  if (tools.dropped.includes(String(choice.type))) return { type: 'auto' };
  throw notTranslatable(model, 'tool_choice', `a tool choice of type \`${String(choice.type)}\``);
}

function imageOf(url: string, detail: unknown): ImagePart {
  const data = /^data:([\w/.+-]+);base64,(.*)$/is.exec(url);
  const source = data === null ? { kind: 'url' as const, url } : { kind: 'inline' as const, mediaType: data[1]!, data: data[2]! };
  return detail === 'low' || detail === 'high' || detail === 'auto' ? { type: 'image', source, detail } : { type: 'image', source };
}

/** An `input_file`: its bytes inline, or a URL (which only some upstreams fetch); a file id is OpenAI's own. */
function fileOf(p: Item, model: CatalogueModel, where: string): DocumentPart {
  const filename = typeof p.filename === 'string' ? p.filename : undefined;
  if (typeof p.file_data === 'string' && p.file_data !== '') return documentOfFileData(p.file_data, filename, `${where}.file_data`);
  if (typeof p.file_url === 'string') {
    if (!/^https?:/i.test(p.file_url)) throw invalid(`${where}.file_url`, `Invalid '${where}.file_url': expected an http(s) URL.`, 'invalid_value');
    return { type: 'document', source: { kind: 'url', url: p.file_url }, ...(filename === undefined ? {} : { name: filename }) };
  }
  if (p.file_id != null) throw notTranslatable(model, `${where}.file_id`, "a file given by id (send its bytes as 'file_data')");
  throw invalid(`${where}.file_data`, `Missing required parameter: '${where}.file_data'.`, 'missing_required_parameter');
}

/** Text, images and files of a user, system or developer message (or a function's output). */
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
    if (p.type === 'input_file' && images) return fileOf(p, model, where);
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
    else if (type === 'custom_tool_call') texts.push(String(item.name), String(item.input));
    else if (type === 'function_call_output' || type === 'custom_tool_call_output') addContent(item.output);
    else if (type === 'reasoning' && Array.isArray(item.summary)) addContent(item.summary);
  }
  return texts;
}
