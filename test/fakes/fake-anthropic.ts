import type { ServerResponse } from 'node:http';
import { endStream, json, startFakeServer, writeEvent, type FakeHandler, type FakeUpstream } from './fake-server.js';
import { anthropicModelList, type ListedModel } from './model-lists.js';
import { answer, decodeBase64, isPlainObject, planToolCalls, sniffImage, signatureFor, type Answer, type OfferedTool, type ToolMode } from './chat-model.js';

/**
 * A stand-in for Anthropic's Messages API as documented: the key as `x-api-key` or
 * `Authorization: Bearer` (what the SDKs send since API version 2026-10-21), `anthropic-version`
 * required (with 2026-10-21 or later, temperature / top_p / top_k are refused, as that version
 * removed them), `max_tokens` required, temperature and top_p in 0..1, unknown fields refused, errors as
 * `{"type":"error","error":{type,message},"request_id"}`, and the named-event stream (message_start,
 * content_block_*, message_delta, message_stop, ping). A prompt containing "refuse" is refused
 * (stop_reason "refusal", stop_details {type: refusal}).
 *
 * Requests are checked as the API documents, with its error texts where known:
 * - `system` top-level (a string or text blocks); a message with role "system" is refused, unless the
 *   `mid-conversation-system-2026-04-07` beta is on (Claude Code's), when it holds text only.
 * - Consecutive turns of the same role are combined into one turn, as the API documents (option
 *   `consecutiveTurns: 'reject'` refuses them instead, as the API once did).
 * - Blocks: text (non-empty), image (user; source base64 with media_type image/jpeg, png, gif or
 *   webp and data that is valid base64 of an image of that type, or source url http(s)), document
 *   (user; a base64 source application/pdf whose bytes are a PDF, a text source text/plain, a url,
 *   content or file source; title and context strings),
 *   tool_use (assistant; id `^[a-zA-Z0-9_-]+$`, unique; input an object), tool_result (user;
 *   content a string or text / image / document blocks), thinking (assistant; its `signature`
 *   required and must be the one this fake issued for that text), redacted_thinking (assistant).
 *   A message needs non-empty content, except a final assistant message.
 * - Tools: every tool_use must be answered by a tool_result with its id in the next (user) turn,
 *   and the tool_result blocks must come first in that turn; a tool_result must answer a
 *   tool_use of the turn before; requests holding tool_use / tool_result blocks must define tools.
 *   Custom tools: name `^[a-zA-Z0-9_-]{1,128}$`, unique, input_schema of type object. tool_choice
 *   auto / any / tool (a defined name) / none, with disable_parallel_tool_use; only with tools.
 * - thinking {type: enabled, budget_tokens ≥ 1024 and < max_tokens} | {type: adaptive} |
 *   {type: disabled}; with thinking on, temperature may only be 1, top_p ≥ 0.95, top_k unset, no
 *   forced tool_choice (any / tool), and when the conversation ends in tool results the assistant
 *   turn holding those tool_use blocks must start with a thinking or redacted_thinking block.
 * - Structured outputs: `output_config.format` {type: json_schema, schema} (the beta spelling
 *   `output_format` too); every object in the schema must set additionalProperties false (also in
 *   a tool's input_schema when the tool is `strict`).
 * - cache_control {type: ephemeral, ttl?: 5m | 1h} on at most 4 blocks (system, tools, message
 *   blocks), or top-level (automatic: the last block).
 *
 * The model is chat-model.ts's, spelled the Anthropic way:
 * - tool calls: tool_use blocks (id "toolu_…", input {"city":"Paris"} …), stop_reason "tool_use";
 *   streamed as content_block_start {type: tool_use, input: {}} then one input_json_delta per
 *   argument fragment (3). tool_choice any = required, tool = named, disable_parallel_tool_use
 *   = parallel off.
 * - tool results: a last user turn holding tool_result blocks; the answer quotes each content
 *   (a string, or its text blocks joined): "Result: …".
 * - JSON: output_config.format → the schema's minimal instance as the text.
 * - images: image blocks of the last user turn: "I see <n> image(s)."
 * - reasoning: thinking enabled or adaptive → a first block {type: thinking, thinking:
 *   "Let me think.", signature}, streamed as thinking_delta ×3 then one signature_delta; its 3
 *   tokens count in output_tokens and against max_tokens.
 * - caching: blocks in order tools, system, messages; the last cache_control marks the cached
 *   prefix. A prefix not seen before by this fake is written (cache_creation_input_tokens = its
 *   tokens); one seen before is read (cache_read_input_tokens), the longest such of the marked
 *   prefixes. input_tokens counts only the rest (total = input + creation + read). No minimum
 *   cacheable length (the API has one).
 * - stop_reason: "end_turn", "max_tokens", "stop_sequence" (stop_sequence set), "tool_use",
 *   "refusal". usage in message_start (input_tokens, cache_*, output_tokens 1) and cumulative in
 *   message_delta.
 */
export function startFakeAnthropic(options: FakeAnthropicOptions): Promise<FakeUpstream> {
  return startFakeServer('/v1', anthropicHandler(options));
}

export interface FakeAnthropicOptions {
  apiKey: string;
  models?: string[];
  consecutiveTurns?: 'merge' | 'reject';
  /** What `GET /v1/models` lists (default: `models`), at most `listPageMax` a page (default 1000); the test may change the array. */
  listed?: ListedModel[];
  listPageMax?: number;
}

/** The Messages API's requests answered, for this fake and for another home of the same models (fake-vertex.ts). */
export function anthropicHandler(options: FakeAnthropicOptions): FakeHandler {
  const models = new Set(options.models ?? ['claude-test']);
  const listed = options.listed ?? [...models].map((id) => ({ id }));
  const allowed = new Set([
    'model', 'messages', 'max_tokens', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'metadata', 'stream', 'system',
    'tools', 'tool_choice', 'thinking', 'output_config', 'output_format', 'cache_control', 'service_tier', 'container', 'inference_geo',
    'context_management',
  ]);
  /** Cached prefixes this fake has seen. */
  const cached = new Set<string>();
  let served = 0;
  return async (request, res, behaviour) => {
    const { body, headers } = request;
    // The key as `x-api-key`, or (as the SDKs since API version 2026-10-21 send it) as a bearer token.
    if (headers['x-api-key'] !== options.apiKey && headers.authorization !== `Bearer ${options.apiKey}`) return error(res, 401, 'authentication_error', 'invalid x-api-key');
    const version = headers['anthropic-version'];
    if (typeof version !== 'string') return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (request.method === 'GET' && /^\/v1\/models(\?|$)/.test(request.path)) {
      return anthropicModelList(res, request.path, listed, options.listPageMax ?? 1000, (status, type, message) => error(res, status, type, message));
    }
    if (request.method === 'POST' && request.path === '/v1/messages/count_tokens') return countTokens(res, body, models, options.consecutiveTurns ?? 'merge', version);
    if (request.method !== 'POST' || request.path !== '/v1/messages') return error(res, 404, 'not_found_error', 'Not found');
    if (body === undefined || typeof body !== 'object') return error(res, 400, 'invalid_request_error', 'Invalid JSON');
    for (const field of Object.keys(body)) if (!allowed.has(field)) return error(res, 400, 'invalid_request_error', `${field}: Extra inputs are not permitted`);
    if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return error(res, 400, 'invalid_request_error', 'max_tokens: Field required');
    if (!Array.isArray(body.messages) || body.messages.length === 0) return error(res, 400, 'invalid_request_error', 'messages: at least one message is required');
    if (version >= '2026-10-21') {
      for (const field of ['temperature', 'top_p', 'top_k']) {
        if (body[field] !== undefined) return error(res, 400, 'invalid_request_error', `${field}: this parameter is not supported in API version ${version}; remove it`);
      }
    }
    if (body.temperature !== undefined && (body.temperature < 0 || body.temperature > 1)) {
      return error(res, 400, 'invalid_request_error', 'temperature: range: 0 <= temperature <= 1');
    }
    if (body.top_p !== undefined && (body.top_p < 0 || body.top_p > 1)) return error(res, 400, 'invalid_request_error', 'top_p: range: 0 <= top_p <= 1');
    if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s: unknown) => typeof s !== 'string' || !/\S/.test(s)))) {
      return error(res, 400, 'invalid_request_error', 'stop_sequences: each stop sequence must contain non-whitespace');
    }
    if (!models.has(body.model)) return error(res, 404, 'not_found_error', `model: ${body.model}`);
    let read: MessagesRequest;
    try {
      const betas = new Set(String(headers['anthropic-beta'] ?? '').split(',').map((beta) => beta.trim()));
      read = readMessagesRequest(body, options.consecutiveTurns ?? 'merge', version, betas);
    } catch (e) {
      if (e instanceof InvalidRequest) return error(res, 400, 'invalid_request_error', e.message);
      throw e;
    }

    served++;
    const id = `msg_${String(served).padStart(4, '0')}`;
    const refused = read.prompt.includes('refuse');
    const calls = refused || read.toolResults !== null ? [] : planToolCalls(read.prompt, read.tools, read.mode, read.parallel);
    const generated: Answer = refused
      ? { reasoning: [], calls: [], text: ['I cannot'], finish: 'stop', stop: null, outputTokens: 1 }
      : answer({ ...read, maxTokens: body.max_tokens, stops: body.stop_sequences ?? [], calls });
    const stopReason = refused ? 'refusal' : generated.finish === 'tool_calls' ? 'tool_use' : generated.finish === 'length' ? 'max_tokens' : generated.stop !== null ? 'stop_sequence' : 'end_turn';
    const stopDetails = refused ? { type: 'refusal', category: null, explanation: null } : null;
    const cache = cacheUsage(read, cached);
    const usage = {
      input_tokens: read.promptTokens - cache.read - cache.creation,
      cache_creation_input_tokens: cache.creation,
      cache_read_input_tokens: cache.read,
      cache_creation: { ephemeral_5m_input_tokens: cache.ttl === '5m' ? cache.creation : 0, ephemeral_1h_input_tokens: cache.ttl === '1h' ? cache.creation : 0 },
      output_tokens: generated.outputTokens,
      // Thinking tokens are part of output_tokens; the API says how many since output_tokens_details.
      output_tokens_details: { thinking_tokens: generated.reasoning.length },
      service_tier: 'standard',
    };
    const thinking = generated.reasoning.join('');
    const toolUseId = (j: number) => `toolu_01${String(served).padStart(6, '0')}${j}`;
    const blocks: Block[] = [
      ...(read.reasoning ? [{ type: 'thinking' as const, thinking, signature: signatureFor('thinking', thinking), tokens: generated.reasoning }] : []),
      ...(generated.calls.length > 0
        ? generated.calls.map((c, j) => ({ type: 'tool_use' as const, id: toolUseId(j), name: c.name, input: c.args, fragments: c.fragments }))
        : [{ type: 'text' as const, text: generated.text.join(''), tokens: generated.text }]),
    ];
    const content = blocks.map((b) =>
      b.type === 'thinking' ? { type: 'thinking', thinking: b.thinking, signature: b.signature } : b.type === 'text' ? { type: 'text', text: b.text } : { type: 'tool_use', id: b.id, name: b.name, input: b.input },
    );
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason,
      stop_sequence: generated.stop,
      stop_details: stopDetails,
      usage,
    };
    if (body.stream !== true) return json(res, 200, message);

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const events: [string, unknown][] = [
      ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, stop_details: null, usage: { ...usage, output_tokens: 1 } } }],
    ];
    blocks.forEach((block, index) => {
      const start = block.type === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : block.type === 'text' ? { type: 'text', text: '' } : { type: 'tool_use', id: block.id, name: block.name, input: {} };
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: start }]);
      if (index === 0) events.push(['ping', { type: 'ping' }]);
      const delta = (d: unknown): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index, delta: d }];
      if (block.type === 'thinking') {
        events.push(...block.tokens.map((t) => delta({ type: 'thinking_delta', thinking: t })), delta({ type: 'signature_delta', signature: block.signature }));
      } else if (block.type === 'text') {
        events.push(...block.tokens.map((t) => delta({ type: 'text_delta', text: t })));
      } else {
        events.push(...block.fragments.map((f) => delta({ type: 'input_json_delta', partial_json: f })));
      }
      events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    });
    const { service_tier: _tier, cache_creation: _creation, ...deltaUsage } = usage;
    events.push(
      ['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: generated.stop, stop_details: stopDetails }, usage: deltaUsage }],
      ['message_stop', { type: 'message_stop' }],
    );
    for (const [i, [name, data]] of events.entries()) {
      if (behaviour.errorAfterChunks !== undefined && i === behaviour.errorAfterChunks) {
        const message = behaviour.errorMessage?.(request) ?? 'Overloaded';
        res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message } })}\n\n`);
        return;
      }
      if (!(await writeEvent(res, `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`, behaviour))) return;
    }
    await endStream(res, '');
  };
}

/** `POST /v1/messages/count_tokens`: the request's input tokens, without generating; max_tokens, stream and sampling fields are refused. */
function countTokens(res: ServerResponse, body: any, models: ReadonlySet<string>, turns: 'merge' | 'reject', version: string): void {
  if (body === undefined || typeof body !== 'object') return error(res, 400, 'invalid_request_error', 'Invalid JSON');
  const allowed = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config', 'output_format', 'cache_control', 'mcp_servers']);
  for (const field of Object.keys(body)) if (!allowed.has(field)) return error(res, 400, 'invalid_request_error', `${field}: Extra inputs are not permitted`);
  if (!Array.isArray(body.messages) || body.messages.length === 0) return error(res, 400, 'invalid_request_error', 'messages: at least one message is required');
  if (!models.has(body.model)) return error(res, 404, 'not_found_error', `model: ${body.model}`);
  try {
    return json(res, 200, { input_tokens: readMessagesRequest({ ...body, max_tokens: 1_000_000 }, turns, version).promptTokens });
  } catch (e) {
    if (e instanceof InvalidRequest) return error(res, 400, 'invalid_request_error', e.message);
    throw e;
  }
}

type Block =
  | { type: 'thinking'; thinking: string; signature: string; tokens: string[] }
  | { type: 'text'; text: string; tokens: string[] }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; fragments: string[] };

class InvalidRequest {
  constructor(readonly message: string) {}
}

function fail(message: string): never {
  throw new InvalidRequest(message);
}

/** One block of the prompt, in cache order (tools, system, messages). */
interface PromptBlock {
  readonly key: unknown;
  readonly tokens: number;
  readonly cache: { ttl: '5m' | '1h' } | null;
}

interface MessagesRequest {
  readonly prompt: string;
  readonly images: number;
  readonly toolResults: string[] | null;
  readonly promptTokens: number;
  readonly blocks: PromptBlock[];
  readonly automaticCache: { ttl: '5m' | '1h' } | null;
  readonly tools: OfferedTool[];
  readonly mode: ToolMode;
  readonly parallel: boolean;
  readonly json: { schema: unknown } | null;
  readonly reasoning: boolean;
}

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
const USER_BLOCKS = new Set(['text', 'image', 'document', 'search_result', 'tool_result']);
const ASSISTANT_BLOCKS = new Set(['text', 'thinking', 'redacted_thinking', 'tool_use', 'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result']);

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function readCacheControl(value: unknown, where: string): { ttl: '5m' | '1h' } | null {
  if (value == null) return null;
  if (!isPlainObject(value) || value.type !== 'ephemeral') fail(`${where}.cache_control.type: Input should be 'ephemeral'`);
  if (value.ttl !== undefined && value.ttl !== '5m' && value.ttl !== '1h') fail(`${where}.cache_control.ttl: Input should be '5m' or '1h'`);
  return { ttl: value.ttl ?? '5m' };
}

function withoutCacheControl(block: unknown): unknown {
  if (!isPlainObject(block)) return block;
  const { cache_control: _ignored, ...rest } = block;
  return rest;
}

/** Every object in a structured-output or strict-tool schema must close its properties. */
function checkClosedObjects(schema: unknown, where: string): void {
  if (!isPlainObject(schema)) return;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if ((types.includes('object') || isPlainObject(schema.properties)) && schema.additionalProperties !== false) {
    fail(`${where}: For 'object' type, 'additionalProperties' must be explicitly set to false`);
  }
  for (const sub of Object.values(isPlainObject(schema.properties) ? schema.properties : {})) checkClosedObjects(sub, where);
  for (const key of ['items', 'additionalItems']) checkClosedObjects(schema[key], where);
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) if (Array.isArray(schema[key])) for (const sub of schema[key]) checkClosedObjects(sub, where);
  for (const key of ['$defs', 'definitions']) if (isPlainObject(schema[key])) for (const sub of Object.values(schema[key])) checkClosedObjects(sub, where);
}

function textOfToolResult(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((b: any) => b?.type === 'text').map((b: any) => String(b.text)).join('');
}

function checkImage(block: any, where: string): void {
  const source = block.source;
  if (!isPlainObject(source)) fail(`${where}.image.source: Field required`);
  if (source.type === 'base64') {
    if (!IMAGE_TYPES.includes(source.media_type)) {
      fail(`${where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
    }
    const bytes = decodeBase64(source.data);
    if (bytes === null) fail(`${where}.image.source.base64.data: Invalid base64 data`);
    const actual = sniffImage(bytes);
    if (actual === null) fail(`${where}.image.source.base64.data: Could not process image`);
    if (actual !== source.media_type) {
      fail(`${where}.image.source.base64.data: The image was specified using the ${source.media_type} media type, but the image appears to be a ${actual} image`);
    }
  } else if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\/[^\s/]+/.test(source.url)) fail(`${where}.image.source.url.url: Input should be a valid URL`);
  } else if (source.type !== 'file') {
    fail(`${where}.image.source: Input tag '${source.type}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`);
  }
}

/** A document block as documented: a base64 PDF, plain text, a PDF by URL, content blocks or a file; title and context strings. */
function checkDocument(block: any, where: string): void {
  const source = block.source;
  if (!isPlainObject(source)) fail(`${where}.document.source: Field required`);
  for (const field of Object.keys(block)) {
    if (!['type', 'source', 'title', 'context', 'citations', 'cache_control'].includes(field)) fail(`${where}.document.${field}: Extra inputs are not permitted`);
  }
  for (const field of ['title', 'context']) if (block[field] != null && typeof block[field] !== 'string') fail(`${where}.document.${field}: Input should be a valid string`);
  if (source.type === 'base64') {
    if (source.media_type !== 'application/pdf') fail(`${where}.document.source.base64.media_type: Input should be 'application/pdf'`);
    const bytes = decodeBase64(source.data);
    if (bytes === null) fail(`${where}.document.source.base64.data: Invalid base64 data`);
    if (bytes.subarray(0, 5).toString('latin1') !== '%PDF-') fail('The PDF specified was not valid.');
  } else if (source.type === 'text') {
    if (source.media_type !== 'text/plain') fail(`${where}.document.source.text.media_type: Input should be 'text/plain'`);
    if (typeof source.data !== 'string') fail(`${where}.document.source.text.data: Input should be a valid string`);
  } else if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\/[^\s/]+/.test(source.url)) fail(`${where}.document.source.url.url: Input should be a valid URL`);
  } else if (source.type !== 'content' && source.type !== 'file') {
    fail(`${where}.document.source: Input tag '${source.type}' found using 'type' does not match any of the expected tags: 'base64', 'text', 'content', 'url', 'file'`);
  }
}

interface Turn {
  readonly role: 'user' | 'assistant';
  /** The index of the turn's first message in `messages`. */
  readonly index: number;
  readonly blocks: any[];
}

/** The beta that lets a `system` message stand between turns (Claude Code sends one). */
const MID_CONVERSATION_SYSTEM = 'mid-conversation-system-2026-04-07';

function readMessagesRequest(body: any, consecutiveTurns: 'merge' | 'reject', version: string, betas: ReadonlySet<string> = new Set()): MessagesRequest {
  const promptBlocks: PromptBlock[] = [];
  const texts: string[] = [];
  let images = 0;

  // Tools.
  const tools: OfferedTool[] = [];
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) fail('tools: Input should be a valid list');
    const names = new Set<string>();
    body.tools.forEach((tool: any, k: number) => {
      const where = `tools.${k}`;
      if (!isPlainObject(tool)) fail(`${where}: Input should be a valid dictionary`);
      const custom = tool.type === undefined || tool.type === null || tool.type === 'custom';
      if (custom) {
        if (typeof tool.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) fail(`${where}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
        if (tool.input_schema === undefined) fail(`${where}.custom.input_schema: Field required`);
        if (!isPlainObject(tool.input_schema)) fail(`${where}.custom.input_schema: Input should be a valid dictionary`);
        if (tool.input_schema.type !== 'object') fail(`${where}.custom.input_schema.type: Input should be 'object'`);
        if (tool.strict === true) checkClosedObjects(tool.input_schema, `${where}.custom.input_schema`);
        tools.push({ name: tool.name, schema: tool.input_schema });
      } else if (typeof tool.name !== 'string') {
        fail(`${where}.name: Field required`);
      }
      if (names.has(tool.name)) fail('tools: Tool names must be unique.');
      names.add(tool.name);
      promptBlocks.push({ key: withoutCacheControl(tool), tokens: 0, cache: readCacheControl(tool.cache_control, where) });
    });
  }

  // Tool choice.
  let mode: ToolMode = tools.length > 0 ? { type: 'auto' } : { type: 'none' };
  let parallel = true;
  const choice = body.tool_choice;
  if (choice !== undefined) {
    if (!isPlainObject(choice)) fail('tool_choice: Input should be a valid dictionary');
    if (!['auto', 'any', 'tool', 'none'].includes(choice.type)) {
      fail(`tool_choice: Input tag '${choice.type}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`);
    }
    if (choice.type !== 'none' && tools.length === 0) fail('tool_choice: tool_choice may only be specified while providing tools.');
    if (choice.disable_parallel_tool_use !== undefined && typeof choice.disable_parallel_tool_use !== 'boolean') {
      fail(`tool_choice.${choice.type}.disable_parallel_tool_use: Input should be a valid boolean`);
    }
    parallel = choice.disable_parallel_tool_use !== true;
    if (choice.type === 'tool') {
      if (typeof choice.name !== 'string') fail('tool_choice.tool.name: Field required');
      if (!tools.some((t) => t.name === choice.name)) fail(`tool_choice.tool.name: Tool '${choice.name}' not found in tools`);
      mode = { type: 'named', name: choice.name };
    } else {
      mode = choice.type === 'any' ? { type: 'required' } : { type: choice.type };
    }
  }

  // Thinking.
  let reasoning = false;
  const thinking = body.thinking;
  if (thinking !== undefined) {
    if (!isPlainObject(thinking)) fail('thinking: Input should be a valid dictionary');
    if (thinking.type === 'enabled') {
      if (!Number.isInteger(thinking.budget_tokens)) fail('thinking.enabled.budget_tokens: Field required');
      if (thinking.budget_tokens < 1024) fail('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
      if (thinking.budget_tokens >= body.max_tokens) {
        fail('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
      }
      reasoning = true;
    } else if (thinking.type === 'adaptive') {
      reasoning = true;
    } else if (thinking.type !== 'disabled') {
      fail(`thinking: Input tag '${thinking.type}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'`);
    }
  }
  if (reasoning) {
    const docs = 'Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
    if (body.temperature !== undefined && body.temperature !== 1) fail(`\`temperature\` may only be set to 1 when thinking is enabled or in interleaved thinking mode. ${docs}`);
    if (body.top_p !== undefined && body.top_p < 0.95) fail(`\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. ${docs}`);
    if (body.top_k !== undefined) fail(`\`top_k\` must be unset when thinking is enabled. ${docs}`);
    if (mode.type === 'required' || mode.type === 'named') fail('Thinking may not be enabled when tool_choice forces tool use.');
  }

  // Structured output.
  let jsonOutput: { schema: unknown } | null = null;
  const readFormat = (format: unknown, where: string) => {
    if (format == null) return;
    if (!isPlainObject(format) || format.type !== 'json_schema') fail(`${where}.type: Input should be 'json_schema'`);
    if (!isPlainObject(format.schema)) fail(`${where}.schema: Field required`);
    checkClosedObjects(format.schema, `${where}.schema`);
    jsonOutput = { schema: format.schema };
  };
  if (body.output_config !== undefined) {
    if (!isPlainObject(body.output_config)) fail('output_config: Input should be a valid dictionary');
    for (const key of Object.keys(body.output_config)) if (key !== 'format' && key !== 'effort') fail(`output_config.${key}: Extra inputs are not permitted`);
    readFormat(body.output_config.format, 'output_config.format');
  }
  readFormat(body.output_format, 'output_format');

  // System.
  const system = body.system;
  if (typeof system === 'string') {
    texts.push(system);
    promptBlocks.push({ key: { type: 'text', text: system }, tokens: words(system), cache: null });
  } else if (Array.isArray(system)) {
    system.forEach((block: any, j: number) => {
      if (!isPlainObject(block) || block.type !== 'text') fail(`system.${j}.type: Input should be 'text'`);
      if (typeof block.text !== 'string' || block.text === '') fail('system: text content blocks must be non-empty');
      texts.push(block.text);
      promptBlocks.push({ key: withoutCacheControl(block), tokens: words(block.text), cache: readCacheControl(block.cache_control, `system.${j}`) });
    });
  } else if (system !== undefined) {
    fail('system: Input should be a valid string or a valid list');
  }

  // Messages, combined into turns.
  const turns: Turn[] = [];
  const messages: any[] = body.messages;
  messages.forEach((m, i) => {
    if (!isPlainObject(m)) fail(`messages.${i}: Input should be a valid dictionary`);
    if (m.role === 'system' && betas.has(MID_CONVERSATION_SYSTEM)) {
      const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      if (!Array.isArray(blocks) || blocks.some((b: any) => !isPlainObject(b) || b.type !== 'text' || typeof b.text !== 'string')) fail(`messages.${i}.content: a system message holds text only`);
      for (const b of blocks) texts.push(b.text);
      return;
    }
    if (m.role !== 'user' && m.role !== 'assistant') {
      fail(`messages.${i}.role: Input should be 'user' or 'assistant'${m.role === 'system' ? ' (use the top-level `system` parameter for a system prompt)' : ''}`);
    }
    let content: any[];
    if (typeof m.content === 'string') content = m.content === '' ? [] : [{ type: 'text', text: m.content }];
    else if (Array.isArray(m.content)) content = m.content;
    else fail(`messages.${i}.content: Input should be a valid string or a valid list`);
    if (content.length === 0 && !(i === messages.length - 1 && m.role === 'assistant')) {
      fail(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    }
    const allowedBlocks = m.role === 'user' ? USER_BLOCKS : ASSISTANT_BLOCKS;
    content.forEach((block: any, j: number) => {
      const where = `messages.${i}.content.${j}`;
      if (!isPlainObject(block) || typeof block.type !== 'string') fail(`${where}: Input should be a valid dictionary`);
      if (!USER_BLOCKS.has(block.type) && !ASSISTANT_BLOCKS.has(block.type)) {
        fail(`${where}: Input tag '${block.type}' found using 'type' does not match any of the expected tags`);
      }
      if (!allowedBlocks.has(block.type)) fail(`${where}: \`${block.type}\` blocks are not allowed in \`${m.role}\` messages`);
      const cache = readCacheControl(block.cache_control, where);
      let tokens = 0;
      switch (block.type) {
        case 'text':
          if (typeof block.text !== 'string') fail(`${where}.text.text: Field required`);
          if (block.text === '') fail('messages: text content blocks must be non-empty');
          if (!/\S/.test(block.text)) fail('messages: text content blocks must contain non-whitespace text');
          if (version >= '2026-10-21' && m.role === 'user' && Array.isArray(block.citations) && block.citations.length > 0) {
            fail(`${where}.text.citations: citations are not accepted on text blocks in user messages in API version ${version}`);
          }
          texts.push(block.text);
          tokens = words(block.text);
          break;
        case 'image':
          checkImage(block, where);
          images++;
          tokens = 1;
          break;
        case 'document':
          checkDocument(block, where);
          if (block.source.type === 'text') texts.push(block.source.data);
          tokens = block.source.type === 'text' ? words(block.source.data) : 1;
          break;
        case 'tool_use':
          if (typeof block.id !== 'string' || !/^[a-zA-Z0-9_-]+$/.test(block.id)) fail(`${where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          if (typeof block.name !== 'string' || block.name === '') fail(`${where}.tool_use.name: Field required`);
          if (!isPlainObject(block.input)) fail(`${where}.tool_use.input: Input should be a valid dictionary`);
          texts.push(JSON.stringify(block.input));
          tokens = words(JSON.stringify(block.input));
          break;
        case 'tool_result': {
          if (typeof block.tool_use_id !== 'string') fail(`${where}.tool_result.tool_use_id: Field required`);
          const inner = block.content;
          if (inner !== undefined && typeof inner !== 'string') {
            if (!Array.isArray(inner)) fail(`${where}.tool_result.content: Input should be a valid string or a valid list`);
            inner.forEach((b: any, k: number) => {
              if (!['text', 'image', 'document', 'search_result'].includes(b?.type)) {
                fail(`${where}.tool_result.content.${k}: Input tag '${b?.type}' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'search_result'`);
              }
              if (b.type === 'image') {
                checkImage(b, `${where}.tool_result.content.${k}`);
                images++;
              }
              if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) fail('messages: text content blocks must be non-empty');
            });
          }
          const text = textOfToolResult(inner);
          texts.push(text);
          tokens = words(text);
          break;
        }
        case 'thinking':
          if (typeof block.thinking !== 'string') fail(`${where}.thinking.thinking: Field required`);
          if (typeof block.signature !== 'string' || block.signature === '') fail(`${where}.thinking.signature: Field required`);
          if (block.signature !== signatureFor('thinking', block.thinking)) fail(`${where}: Invalid \`signature\` in \`thinking\` block`);
          break;
        case 'redacted_thinking':
          if (typeof block.data !== 'string') fail(`${where}.redacted_thinking.data: Field required`);
          break;
      }
      promptBlocks.push({ key: withoutCacheControl(block), tokens, cache });
    });
    const last = turns.at(-1);
    if (last !== undefined && last.role === m.role) {
      if (consecutiveTurns === 'reject') fail(`messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`);
      last.blocks.push(...content);
    } else {
      turns.push({ role: m.role, index: i, blocks: [...content] });
    }
  });

  const breakpoints = promptBlocks.filter((b) => b.cache !== null).length + (body.cache_control != null ? 1 : 0);
  if (breakpoints > 4) fail(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  const automaticCache = readCacheControl(body.cache_control, 'cache_control');

  // Tool use and results pair up turn by turn.
  const usesTools = turns.some((t) => t.blocks.some((b) => b.type === 'tool_use' || b.type === 'tool_result'));
  if (usesTools && tools.length === 0) fail('Requests which include `tool_use` or `tool_result` blocks must define tools.');
  const seenIds = new Set<string>();
  turns.forEach((turn, t) => {
    const uses = turn.blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    for (const id of uses) {
      if (seenIds.has(id)) fail(`messages.${turn.index}: \`tool_use\` ids must be unique`);
      seenIds.add(id);
    }
    if (turn.role === 'assistant' && uses.length > 0) {
      const next = turns[t + 1];
      const results = next?.blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string) ?? [];
      const missing = uses.filter((id) => !results.includes(id));
      if (missing.length > 0) {
        fail(`messages.${turn.index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      }
      const leading = next!.blocks.findIndex((b) => b.type !== 'tool_result');
      if (leading !== -1 && next!.blocks.slice(leading).some((b) => b.type === 'tool_result')) {
        fail(`messages.${next!.index}: Did not find ${results.length} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`);
      }
    }
    if (turn.role === 'user') {
      const previous = turns[t - 1];
      const offered = previous?.role === 'assistant' ? previous.blocks.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
      turn.blocks.forEach((b, j) => {
        if (b.type === 'tool_result' && !offered.includes(b.tool_use_id)) {
          fail(`messages.${turn.index}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
        }
      });
    }
  });

  // What the model answers.
  const lastTurn = turns.at(-1)!;
  const lastUser = [...turns].reverse().find((t) => t.role === 'user');
  const prompt = (lastUser?.blocks ?? []).filter((b) => b.type === 'text').map((b) => String(b.text)).join(' ');
  const toolResults = lastTurn.role === 'user' && lastTurn.blocks.some((b) => b.type === 'tool_result') ? lastTurn.blocks.filter((b) => b.type === 'tool_result').map((b) => textOfToolResult(b.content)) : null;
  if (reasoning && toolResults !== null) {
    const asked = turns.at(-2);
    const first = asked?.blocks[0];
    if (asked !== undefined && first?.type !== 'thinking' && first?.type !== 'redacted_thinking') {
      fail(`messages.${asked.index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`);
    }
  }
  const promptTokens = Math.max(1, promptBlocks.reduce((sum, b) => sum + b.tokens, 0));
  return {
    prompt,
    images: (lastUser?.blocks ?? []).filter((b) => b.type === 'image').length,
    toolResults,
    promptTokens,
    blocks: promptBlocks,
    automaticCache,
    tools,
    mode,
    parallel,
    json: jsonOutput,
    reasoning,
  };
}

/** Which prompt tokens were written to or read from the cache, marking the prefixes as seen. */
function cacheUsage(request: MessagesRequest, cached: Set<string>): { creation: number; read: number; ttl: '5m' | '1h' } {
  const marks = request.blocks.flatMap((b, i) => (b.cache !== null ? [i] : []));
  if (request.automaticCache !== null && request.blocks.length > 0 && !marks.includes(request.blocks.length - 1)) marks.push(request.blocks.length - 1);
  if (marks.length === 0) return { creation: 0, read: 0, ttl: '5m' };
  const keyOf = (end: number) => JSON.stringify(request.blocks.slice(0, end + 1).map((b) => b.key));
  const tokensUpTo = (end: number) => request.blocks.slice(0, end + 1).reduce((sum, b) => sum + b.tokens, 0);
  const hit = [...marks].reverse().find((end) => cached.has(keyOf(end)));
  const last = marks.at(-1)!;
  const read = hit === undefined ? 0 : tokensUpTo(hit);
  const creation = tokensUpTo(last) - read;
  for (const end of marks) cached.add(keyOf(end));
  const lastBlock = request.blocks[last]!;
  return { creation, read, ttl: (lastBlock.cache ?? request.automaticCache)?.ttl ?? '5m' };
}

function error(res: ServerResponse, status: number, type: string, message: string): void {
  json(res, status, { type: 'error', error: { type, message }, request_id: 'req_fake' });
}
