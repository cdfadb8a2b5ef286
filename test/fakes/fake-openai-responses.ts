import type { ServerResponse } from 'node:http';
import { answer, isPlainObject, planToolCalls, promptTokens, signatureFor, type OfferedTool, type ToolMode } from './chat-model.js';
import { endStream, json, writeEvent, type Behaviour } from './fake-server.js';

/**
 * `POST /v1/responses` as OpenAI's Responses API answers it, for the OpenAI fake; the model is
 * chat-model.ts's, spelled the Responses way. This fake keeps nothing (as OpenAI with
 * `store: false`): a `previous_response_id` is 400 `previous_response_not_found` and an
 * `item_reference` 404, so a gateway must send whole conversations. Checks, worded as OpenAI's:
 * `input` a string or items (messages with roles user / system / developer / assistant and parts
 * input_text / input_image / output_text / refusal; function_call with call_id, name and string
 * arguments; function_call_output answering an earlier function_call's call_id; reasoning items
 * only with encrypted content this fake issued; `additional_tools` with a tools list, whose tools,
 * like hosted ones, are never called); `tools` (function tools flat, with a name;
 * hosted types are accepted and never called); `tool_choice`; `text.format` (json_schema needs a
 * name and a schema); `max_output_tokens` ≥ 16; `temperature` 0..2; `reasoning.effort`. Unknown
 * fields are ignored.
 *
 * Answers: output items `reasoning` (with `reasoning.effort` other than none: summary
 * "Let me think." when `reasoning.summary` is set, encrypted content when `include` asks for
 * `reasoning.encrypted_content`), then a `message` with one `output_text`, or `function_call`s
 * (ids `fc_…`, call ids `call_…`). Usage `input_tokens` (`cached_tokens` 16 above 20 prompt
 * tokens), `output_tokens` (reasoning included, in `reasoning_tokens`). Streams are the typed
 * events with `sequence_number`, ending with `response.completed` or `response.incomplete`
 * (max_output_tokens reached); `errorAfterChunks` sends `response.failed` then `error` instead.
 */
class BadRequest {
  constructor(
    readonly status: number,
    readonly message: string,
    readonly param: string | null,
    readonly code: string | null = null,
  ) {}
}

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);
let served = 0;

function openaiError(res: ServerResponse, error: BadRequest): void {
  json(res, error.status, { error: { message: error.message, type: 'invalid_request_error', param: error.param, code: error.code } });
}

function partsText(content: unknown, at: string, allowed: readonly string[]): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  if (!Array.isArray(content)) throw new BadRequest(400, `Invalid type for '${at}': expected a string or an array.`, at);
  const texts: string[] = [];
  let images = 0;
  content.forEach((part: any, j: number) => {
    if (!isPlainObject(part) || !allowed.includes(part.type)) {
      throw new BadRequest(400, `Invalid value: '${part?.type}'. Supported values are: ${allowed.map((t) => `'${t}'`).join(', ')}.`, `${at}[${j}].type`, 'invalid_value');
    }
    if (part.type === 'input_image') {
      if (typeof part.image_url !== 'string' && typeof part.file_id !== 'string') throw new BadRequest(400, `Missing required parameter: '${at}[${j}].image_url'.`, `${at}[${j}].image_url`);
      images++;
    } else if (part.type === 'refusal') texts.push(String(part.refusal ?? ''));
    else if (typeof part.text !== 'string') throw new BadRequest(400, `Missing required parameter: '${at}[${j}].text'.`, `${at}[${j}].text`);
    else texts.push(part.text);
  });
  return { text: texts.join(' '), images };
}

interface ReadRequest {
  readonly prompt: string;
  readonly images: number;
  readonly toolResults: string[] | null;
  readonly promptTokens: number;
  readonly tools: OfferedTool[];
  readonly mode: ToolMode;
  readonly parallel: boolean;
  readonly json: { schema: unknown } | 'object' | null;
  readonly reasoning: boolean;
  readonly maxTokens: number;
}

function readRequest(body: any): ReadRequest {
  if (body.previous_response_id != null) {
    throw new BadRequest(400, `Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found');
  }
  const items: any[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
  if (!Array.isArray(items)) throw new BadRequest(400, "Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  const texts: string[] = typeof body.instructions === 'string' ? [body.instructions] : [];
  let prompt = '';
  let promptImages = 0;
  let images = 0;
  const calls = new Set<string>();
  let trailing: string[] = [];
  items.forEach((item: any, i: number) => {
    const at = `input[${i}]`;
    if (!isPlainObject(item)) throw new BadRequest(400, `Invalid type for '${at}': expected an object.`, at);
    const type = item.type ?? ('role' in item ? 'message' : 'item_reference');
    if (type !== 'function_call_output') trailing = [];
    switch (type) {
      case 'message': {
        if (!ROLES.has(item.role)) throw new BadRequest(400, `Invalid value: '${item.role}'. Supported values are: 'user', 'system', 'developer', and 'assistant'.`, `${at}.role`, 'invalid_value');
        const allowed = item.role === 'assistant' ? ['output_text', 'refusal'] : item.role === 'user' ? ['input_text', 'input_image', 'input_file'] : ['input_text'];
        const { text, images: n } = partsText(item.content, `${at}.content`, allowed);
        texts.push(text);
        images += n;
        if (item.role === 'user') {
          prompt = text;
          promptImages = n;
        }
        return;
      }
      case 'function_call':
        if (typeof item.call_id !== 'string') throw new BadRequest(400, `Missing required parameter: '${at}.call_id'.`, `${at}.call_id`);
        if (typeof item.arguments !== 'string') throw new BadRequest(400, `Invalid type for '${at}.arguments': expected a string.`, `${at}.arguments`);
        calls.add(item.call_id);
        texts.push(item.arguments);
        return;
      case 'function_call_output': {
        if (!calls.has(item.call_id)) throw new BadRequest(400, `No tool call found for function call output with call_id ${item.call_id}.`, 'input');
        const output = typeof item.output === 'string' ? item.output : partsText(item.output, `${at}.output`, ['input_text', 'input_image']).text;
        texts.push(output);
        trailing.push(output);
        return;
      }
      case 'reasoning':
        if (typeof item.encrypted_content !== 'string' || !item.encrypted_content.startsWith('enc:')) {
          throw new BadRequest(404, `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`, 'input');
        }
        return;
      case 'additional_tools':
        // Tools offered from here on (Codex's whole set, in namespaces): accepted, never called, as hosted tools are.
        if (!Array.isArray(item.tools)) throw new BadRequest(400, `Missing required parameter: '${at}.tools'.`, `${at}.tools`);
        return;
      case 'item_reference':
        throw new BadRequest(404, `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`, 'input');
      default:
        throw new BadRequest(400, `Invalid value: '${type}'.`, `${at}.type`, 'invalid_value');
    }
  });
  const tools: OfferedTool[] = [];
  (body.tools ?? []).forEach((tool: any, k: number) => {
    if (!isPlainObject(tool) || typeof tool.type !== 'string') throw new BadRequest(400, `Missing required parameter: 'tools[${k}].type'.`, `tools[${k}].type`);
    if (tool.type !== 'function') return;
    if (typeof tool.name !== 'string') throw new BadRequest(400, `Missing required parameter: 'tools[${k}].name'.`, `tools[${k}].name`);
    tools.push({ name: tool.name, schema: tool.parameters ?? {} });
  });
  const choice = body.tool_choice;
  const mode: ToolMode =
    choice == null || choice === 'auto' ? (tools.length > 0 ? { type: 'auto' } : { type: 'none' }) : choice === 'none' ? { type: 'none' } : choice === 'required' ? { type: 'required' } : choice.type === 'function' ? { type: 'named', name: choice.name } : { type: 'auto' };
  const format = body.text?.format;
  let jsonMode: ReadRequest['json'] = null;
  if (format?.type === 'json_schema') {
    if (typeof format.name !== 'string') throw new BadRequest(400, "Missing required parameter: 'text.format.name'.", 'text.format.name');
    if (!isPlainObject(format.schema)) throw new BadRequest(400, "Missing required parameter: 'text.format.schema'.", 'text.format.schema');
    jsonMode = { schema: format.schema };
  } else if (format?.type === 'json_object') jsonMode = 'object';
  if (body.max_output_tokens != null && (!Number.isInteger(body.max_output_tokens) || body.max_output_tokens < 16)) {
    throw new BadRequest(400, `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${body.max_output_tokens} instead.`, 'max_output_tokens', 'integer_below_min_value');
  }
  if (body.temperature != null && (body.temperature < 0 || body.temperature > 2)) {
    throw new BadRequest(400, `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got ${body.temperature} instead.`, 'temperature', 'decimal_above_max_value');
  }
  return {
    prompt,
    images: promptImages,
    toolResults: trailing.length > 0 ? trailing : null,
    promptTokens: promptTokens(texts, images),
    tools,
    mode,
    parallel: body.parallel_tool_calls !== false,
    json: jsonMode,
    reasoning: body.reasoning?.effort != null && body.reasoning.effort !== 'none',
    maxTokens: body.max_output_tokens ?? 1_000_000,
  };
}

export async function fakeResponses(res: ServerResponse, body: any, behaviour: Behaviour): Promise<void> {
  let request: ReadRequest;
  try {
    if (!isPlainObject(body)) throw new BadRequest(400, 'We could not parse the JSON body of your request.', null);
    request = readRequest(body);
  } catch (error) {
    if (error instanceof BadRequest) return openaiError(res, error);
    throw error;
  }
  served++;
  const id = `resp_fake${String(served).padStart(6, '0')}`;
  const created = 1_700_000_000 + served;
  const calls = request.toolResults === null ? planToolCalls(request.prompt, request.tools, request.mode, request.parallel) : [];
  const a = answer({ ...request, stops: [], calls });
  const reasoningText = a.reasoning.join('');
  const items: Record<string, any>[] = [];
  if (a.reasoning.length > 0) {
    items.push({
      id: `rs_fake${served}`,
      type: 'reasoning',
      summary: body.reasoning?.summary != null ? [{ type: 'summary_text', text: reasoningText }] : [],
      ...(Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content') ? { encrypted_content: `enc:${signatureFor('openai', reasoningText)}` } : {}),
    });
  }
  a.calls.forEach((call, j) => items.push({ id: `fc_fake${served}${j}`, type: 'function_call', status: 'completed', arguments: JSON.stringify(call.args), call_id: `call_fake${served}${j}`, name: call.name }));
  if (a.calls.length === 0) items.push({ id: `msg_fake${served}`, type: 'message', status: a.finish === 'length' ? 'incomplete' : 'completed', role: 'assistant', content: [{ type: 'output_text', text: a.text.join(''), annotations: [], logprobs: [] }] });
  const cached = request.promptTokens > 20 ? 16 : 0;
  const usage = {
    input_tokens: request.promptTokens,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: a.outputTokens,
    output_tokens_details: { reasoning_tokens: a.reasoning.length },
    total_tokens: request.promptTokens + a.outputTokens,
  };
  const incomplete = a.finish === 'length';
  const response = (status: string, output: unknown[], withUsage: boolean) => ({
    id,
    object: 'response',
    created_at: created,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: body.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: withUsage && !behaviour.omitUsage ? usage : null,
    user: null,
    metadata: body.metadata ?? {},
  });
  const finalStatus = incomplete ? 'incomplete' : 'completed';
  if (body.stream !== true) return json(res, 200, response(finalStatus, items, true));

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sequence = 0;
  let sent = 0;
  const send = async (type: string, data: Record<string, unknown>): Promise<boolean> => {
    if (behaviour.errorAfterChunks !== undefined && sent === behaviour.errorAfterChunks) {
      res.write(`event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: sequence++, response: { ...response('failed', [], false), error: { code: 'server_error', message: 'The model failed.' } } })}\n\n`);
      res.write(`event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: sequence++, code: 'server_error', message: 'The model failed.', param: null })}\n\n`);
      res.end();
      return false;
    }
    sent++;
    return writeEvent(res, `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`, behaviour);
  };
  if (!(await send('response.created', { response: response('in_progress', [], false) }))) return;
  if (!(await send('response.in_progress', { response: response('in_progress', [], false) }))) return;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const base = { item_id: item.id, output_index: index };
    if (item.type === 'reasoning') {
      if (!(await send('response.output_item.added', { output_index: index, item: { ...item, summary: [] } }))) return;
      if (item.summary.length > 0) {
        if (!(await send('response.reasoning_summary_part.added', { ...base, summary_index: 0, part: { type: 'summary_text', text: '' } }))) return;
        for (const token of a.reasoning) if (!(await send('response.reasoning_summary_text.delta', { ...base, summary_index: 0, delta: token }))) return;
        if (!(await send('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: reasoningText }))) return;
        if (!(await send('response.reasoning_summary_part.done', { ...base, summary_index: 0, part: item.summary[0] }))) return;
      }
    } else if (item.type === 'function_call') {
      if (!(await send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } }))) return;
      const call = a.calls[index - (a.reasoning.length > 0 ? 1 : 0)]!;
      for (const fragment of call.fragments) if (!(await send('response.function_call_arguments.delta', { ...base, delta: fragment }))) return;
      if (!(await send('response.function_call_arguments.done', { ...base, arguments: item.arguments }))) return;
    } else {
      if (!(await send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }))) return;
      if (!(await send('response.content_part.added', { ...base, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }))) return;
      for (const token of a.text) if (!(await send('response.output_text.delta', { ...base, content_index: 0, delta: token, logprobs: [] }))) return;
      if (!(await send('response.output_text.done', { ...base, content_index: 0, text: a.text.join(''), logprobs: [] }))) return;
      if (!(await send('response.content_part.done', { ...base, content_index: 0, part: item.content[0] }))) return;
    }
    if (!(await send('response.output_item.done', { output_index: index, item }))) return;
  }
  if (!(await send(incomplete ? 'response.incomplete' : 'response.completed', { response: response(finalStatus, items, true) }))) return;
  if (behaviour.endDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, behaviour.endDelayMs));
  await endStream(res, '');
}
