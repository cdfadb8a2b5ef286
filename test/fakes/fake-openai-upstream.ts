import type { ServerResponse } from 'node:http';
import { answer, decodeBase64, isPlainObject, planToolCalls, promptTokens, sniffImage, type Answer, type OfferedTool, type ToolMode } from './chat-model.js';
import { countWords, fakeLogprob, generate, type Generation } from './generation.js';
import { endStream, json, startFakeServer, writeEvent, type Behaviour, type FakeUpstream } from './fake-server.js';
import { openAIModelList, type ListedModel, type OpenAIListFlavour } from './model-lists.js';
import { fakeResponses } from './fake-openai-responses.js';
import { fakeRelays, RELAY_PATHS } from './fake-openai-relays.js';
import { fakeOpenAIMedia } from './fake-openai-media.js';
import { fakeEmbeddings, type FakeEmbeddingOptions } from './fake-openai-embeddings.js';

export { WORDS } from './generation.js';
export type { FakeUpstream } from './fake-server.js';

/**
 * A stand-in for an OpenAI-compatible server, behaving as vLLM (≥ 0.10.1) documents: its
 * validation and error bodies (`{"error":{message,type,param,code:int}}`, `{"error":"Unauthorized"}`
 * for a bad key), its stream framing (compact `data:` chunks without a `usage` key, a `choices: []`
 * usage chunk, `data: [DONE]`). It serves `/v1/completions` and `/v1/chat/completions`, and
 * OpenAI's `/v1/responses` (see fake-openai-responses.ts).
 *
 * Chat completions follow OpenAI's documented wire format and its request checks (error texts and
 * `param` as OpenAI words them, in vLLM's error body): roles system / developer / user / assistant
 * / tool; content a string or parts (text, image_url with an http(s) URL or a base64 data URL of a
 * png / jpeg / gif / webp whose bytes are such an image, file with a file_id or a base64 data URL
 * `file_data` and its `filename`, a PDF's bytes a PDF); assistant `tool_calls` whose
 * `function.arguments` must be a string; each tool message must answer a `tool_call_id` of the
 * assistant message before it, and every tool call of that message must be answered; `tools`
 * (type function, name `^[a-zA-Z0-9_-]{1,64}$`), `tool_choice` (none / auto / required /
 * {type:function}; only with tools), `parallel_tool_calls` (only with tools), `response_format`
 * (text / json_object — which needs the word "json" in the messages — / json_schema with a
 * `name`), `logprobs` / `top_logprobs` (≤ 20, needs logprobs), `n` (1..128), `reasoning_effort`
 * (none / minimal / low / medium / high / xhigh), `max_completion_tokens` or `max_tokens`
 * (default 16), `stream_options` (only when streaming). Other fields are ignored, as vLLM does.
 *
 * The model is chat-model.ts's, spelled the OpenAI way:
 * - tool calls: `message.tool_calls` [{id: "chatcmpl-tool-…", type: "function", function: {name,
 *   arguments: JSON text}}] with `content: null`; finish_reason "tool_calls", but "stop" when the
 *   call was forced by a named tool_choice (as OpenAI, and vLLM since 0.11, do). Streamed: a delta
 *   with index, id, type, name and `arguments: ""`, then one delta per argument fragment (3).
 * - tool results: the trailing run of `tool` messages; the answer quotes each ("Result: …").
 * - JSON: response_format json_schema → the schema's minimal instance; json_object → {"ok":true}.
 * - images: image_url parts of the last user message: "I see <n> image(s)."
 * - reasoning: `reasoning_effort` other than "none" → `reasoning_content` (or `reasoning`, as
 *   vLLM ≥ 0.12 names it: option `reasoningField`) "Let me think." in the message, streamed as 3
 *   deltas before the content; usage.completion_tokens_details.reasoning_tokens (3 per choice),
 *   included in completion_tokens.
 * - caching: a prompt of more than 20 tokens reports usage.prompt_tokens_details.cached_tokens 16
 *   (included in prompt_tokens, as OpenAI counts).
 * - finish_reason: "stop", "length", "tool_calls"; a last user message containing "forbidden" is
 *   answered empty with "content_filter". `n` choices each get the same answer.
 */
export async function startFakeOpenAI(
  options: {
    models?: string[];
    apiKey?: string;
    reasoningField?: 'reasoning_content' | 'reasoning';
    /** What `GET /v1/models` lists (default: `models`), in the shape of which server (default vLLM's); the test may change the array. */
    listed?: ListedModel[];
    listFlavour?: OpenAIListFlavour;
    /** How `/v1/embeddings` behaves (see fake-openai-embeddings.ts). */
    embeddings?: FakeEmbeddingOptions;
    /** A fixed port on 127.0.0.1 (vLLM's 8000 for the README's quick start); default any free one. */
    port?: number;
  } = {},
): Promise<FakeUpstream> {
  const reasoningField = options.reasoningField ?? 'reasoning_content';
  const models = new Set(options.models ?? ['upstream-model']);
  const listed = options.listed ?? [...models].map((id) => ({ id }));
  let served = 0;
  return startFakeServer('/v1', async (request, res, behaviour) => {
    const { body } = request;
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      return json(res, 401, { error: 'Unauthorized' });
    }
    const path = request.path;
    if (await fakeOpenAIMedia(request, res, behaviour, models)) return;
    if (request.method === 'GET' && path === '/v1/models') return openAIModelList(res, listed, options.listFlavour ?? 'vllm');
    if (request.method === 'POST' && RELAY_PATHS.has(path)) return fakeRelays(request, res, models);
    if (request.method === 'POST' && path === '/v1/embeddings' && body !== undefined && typeof body === 'object' && models.has(body.model)) return fakeEmbeddings(res, body, behaviour, options.embeddings ?? {});
    if (request.method === 'POST' && path === '/v1/responses' && body !== undefined && typeof body === 'object' && models.has(body.model)) return fakeResponses(res, body, behaviour);
    if (request.method !== 'POST' || (path !== '/v1/completions' && path !== '/v1/chat/completions')) return unknownPath(res, behaviour.unknownPath ?? 'fastapi');
    if (body === undefined || typeof body !== 'object') return vllmError(res, 400, 'Bad Request', 'JSON decode error', null);
    if (!models.has(body.model)) {
      if (behaviour.unknownModel === 'ollama') return json(res, 404, { error: `model '${String(body.model)}' not found` });
      return vllmError(res, 404, 'NotFoundError', `The model \`${body.model}\` does not exist.`, 'model');
    }
    if (typeof body.temperature === 'number' && body.temperature < 0) {
      return vllmError(res, 400, 'BadRequestError', `temperature must be non-negative, got ${body.temperature}.`, 'temperature');
    }
    if (body.stream_options != null && body.stream !== true) {
      return vllmError(res, 400, 'Bad Request', 'Stream options can only be defined when `stream=True`.', 'stream_options');
    }
    served++;
    const id = path === '/v1/completions' ? `cmpl-${served}` : `chatcmpl-${served}`;
    const created = 1_700_000_000 + served;
    const errorMessage = behaviour.errorMessage?.(request) ?? 'engine crashed';
    if (path === '/v1/completions') return legacyCompletion(res, body, behaviour, errorMessage, id, created);
    return chatCompletion(res, body, behaviour, errorMessage, id, created, reasoningField);
  }, options.port);
}

interface Choice extends Generation {
  readonly index: number;
  readonly prompt: string | number[];
}

function stopsOf(body: any): string[] {
  return body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
}

function usageOf(promptTokens: number, choices: readonly Choice[]) {
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens.length, 0);
  // vLLM's own field order: prompt, total, completion.
  return { prompt_tokens: promptTokens, total_tokens: promptTokens + completionTokens, completion_tokens: completionTokens };
}

/** Streams tokens of several choices interleaved, as vLLM does when it generates them together. */
async function streamTokens(
  res: ServerResponse,
  choices: readonly Choice[],
  behaviour: Behaviour,
  errorMessage: string,
  chunkFor: (choice: Choice, t: number, last: boolean) => unknown,
): Promise<boolean> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sent = 0;
  const longest = Math.max(1, ...choices.map((c) => c.tokens.length));
  for (let t = 0; t < longest; t++) {
    for (const choice of choices) {
      const count = Math.max(choice.tokens.length, 1);
      if (t >= count) continue;
      if (behaviour.errorAfterChunks !== undefined && sent === behaviour.errorAfterChunks) {
        // vLLM writes this one with Python's json.dumps: spaces after ':' and ','.
        res.write(`data: {"error": {"message": ${JSON.stringify(errorMessage)}, "type": "InternalServerError", "param": null, "code": 500}}\n\n`);
        res.end('data: [DONE]\n\n');
        return false;
      }
      if (!(await writeEvent(res, `data: ${JSON.stringify(chunkFor(choice, t, t === count - 1))}\n\n`, behaviour))) return false;
      sent++;
    }
  }
  return true;
}

async function legacyCompletion(res: ServerResponse, body: any, behaviour: Behaviour, errorMessage: string, id: string, created: number): Promise<void> {
  if (body.suffix != null) return vllmError(res, 400, 'BadRequestError', 'suffix is not currently supported', null);
  const prompts: (string | number[])[] = typeof body.prompt === 'string' || typeof body.prompt[0] === 'number' ? [body.prompt] : body.prompt;
  const n: number = body.n ?? 1;
  const promptText = (prompt: string | number[]) => (typeof prompt === 'string' ? prompt : prompt.map((t) => `<${t}>`).join(''));
  const choices: Choice[] = prompts.flatMap((prompt, p) =>
    Array.from({ length: n }, (_, k) => ({ index: p * n + k, prompt, ...generate(promptText(prompt), body.max_tokens ?? 16, stopsOf(body)) })),
  );
  const promptTokens = prompts.reduce<number>((sum, p) => sum + (typeof p === 'string' ? countWords(p) : p.length), 0);
  const usage = usageOf(promptTokens, choices);
  const logprobsFor = (tokens: string[], start: number) => {
    let offset = 0;
    return {
      text_offset: tokens.map((token) => ((offset += token.length), offset - token.length)),
      token_logprobs: tokens.map((_, i) => fakeLogprob(start + i)),
      tokens,
      top_logprobs: tokens.map((token, i) => ({ [token]: fakeLogprob(start + i) })),
    };
  };
  if (body.stream !== true && behaviour.largeAnswer) return largeCompletion(res, body, id, created, behaviour.largeAnswer);
  if (body.stream !== true) {
    return json(res, 200, {
      id,
      object: 'text_completion',
      created,
      model: body.model,
      choices: choices.map((c) => ({
        index: c.index,
        text: (body.echo ? promptText(c.prompt) : '') + c.tokens.join(''),
        logprobs: body.logprobs == null ? null : logprobsFor(c.tokens, 0),
        finish_reason: c.finishReason,
        stop_reason: c.stop,
        prompt_logprobs: null,
      })),
      service_tier: null,
      system_fingerprint: null,
      usage: behaviour.omitUsage ? null : usage,
      kv_transfer_params: null,
    });
  }
  const finished = await streamTokens(res, choices, behaviour, errorMessage, (c, t, last) => ({
    id,
    object: 'text_completion',
    created,
    model: body.model,
    choices: [
      {
        index: c.index,
        text: (t === 0 && body.echo ? promptText(c.prompt) : '') + (c.tokens[t] ?? ''),
        logprobs: body.logprobs == null ? null : logprobsFor([c.tokens[t] ?? ''], t),
        finish_reason: last ? c.finishReason : null,
        stop_reason: last ? c.stop : null,
      },
    ],
  }));
  if (!finished) return;
  const includeUsage = body.stream_options?.include_usage ?? true; // vLLM's default is true
  if (includeUsage && !behaviour.omitUsage) {
    if (!(await writeEvent(res, `data: ${JSON.stringify({ id, object: 'text_completion', created, model: body.model, choices: [], usage })}\n\n`, behaviour))) return;
  }
  await endStream(res, 'data: [DONE]\n\n');
}

/** A legacy completion whose text pads it to `bytes`, written as fast as the reader takes it, until it goes away. */
async function largeCompletion(res: ServerResponse, body: any, id: string, created: number, { bytes, contentLength }: { bytes: number; contentLength: boolean }): Promise<void> {
  const prefix = `{"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(body.model)},"choices":[{"index":0,"text":"`;
  const suffix = '","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}';
  res.writeHead(200, { 'content-type': 'application/json', ...(contentLength ? { 'content-length': String(bytes) } : {}) });
  res.write(prefix);
  const block = 'x'.repeat(64 * 1024);
  for (let left = bytes - prefix.length - suffix.length; left > 0 && !res.destroyed; left -= block.length) {
    if (res.write(left >= block.length ? block : block.slice(0, left))) continue;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done).off('close', done);
        resolve();
      };
      res.on('drain', done).on('close', done);
    });
  }
  if (!res.destroyed) res.end(suffix);
}

/** Chat logprobs with `bytes`; the astral character of UNICODE_TOKENS is split over two tokens. */
function chatLogprobs(tokens: readonly string[], top: number) {
  const content: { token: string; logprob: number; bytes: number[]; top_logprobs: { token: string; logprob: number; bytes: number[] }[] }[] = [];
  for (const token of tokens) {
    const bytes = [...Buffer.from(token, 'utf8')];
    const pieces = token === ' 😀' ? [bytes.slice(0, 3), bytes.slice(3)] : [bytes];
    for (const piece of pieces) {
      const text = pieces.length > 1 ? piece.map((b) => `\\x${b.toString(16)}`).join('') : token;
      const logprob = fakeLogprob(content.length);
      content.push({ token: text, logprob, bytes: piece, top_logprobs: [{ token: text, logprob, bytes: piece }, { token: ' alt', logprob: logprob - 1, bytes: [32, 97, 108, 116] }].slice(0, top) });
    }
  }
  return { content };
}

const CHAT_ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];
const IMAGE_DATA_URL = /^data:(image\/(?:png|jpeg|gif|webp));base64,(.*)$/s;

class BadRequest {
  constructor(
    readonly message: string,
    readonly param: string | null,
  ) {}
}

/** A chat request read into the shared model's terms. */
interface ChatRequest {
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

/** Text of a content that may only hold text parts (system, developer, tool, assistant). */
function textContent(content: unknown, where: string, allowed: readonly string[] = ['text']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new BadRequest(`Invalid type for '${where}': expected one of a string or array of objects, but got ${content === null ? 'null' : typeof content} instead.`, where);
  return content
    .map((part: any, j: number) => {
      if (!isPlainObject(part) || !allowed.includes(part.type)) {
        throw new BadRequest(`Invalid value: '${part?.type}'. Supported values are: ${allowed.map((t) => `'${t}'`).join(' and ')}.`, `${where}[${j}].type`);
      }
      const text = part.type === 'refusal' ? part.refusal : part.text;
      if (typeof text !== 'string') throw new BadRequest(`Missing required parameter: '${where}[${j}].${part.type}'.`, `${where}[${j}].${part.type}`);
      return text;
    })
    .join('');
}

/** A `file` part: a file id, or `file_data` (a base64 data URL; a PDF's bytes must be one) with its `filename`. */
function checkFile(file: any, at: string): void {
  if (!isPlainObject(file)) throw new BadRequest(`Missing required parameter: '${at}'.`, at);
  if (file.file_id !== undefined) {
    if (typeof file.file_id !== 'string') throw new BadRequest(`Invalid type for '${at}.file_id': expected a string.`, `${at}.file_id`);
    return;
  }
  if (typeof file.file_data !== 'string') throw new BadRequest(`Missing required parameter: '${at}.file_data'.`, `${at}.file_data`);
  if (typeof file.filename !== 'string' || file.filename === '') throw new BadRequest(`Missing required parameter: '${at}.filename'.`, `${at}.filename`);
  const data = /^data:([\w/.+-]+);base64,(.*)$/s.exec(file.file_data);
  const bytes = data === null ? null : decodeBase64(data[2]);
  if (data === null || bytes === null) throw new BadRequest(`Invalid '${at}.file_data': expected a base64-encoded data URL.`, `${at}.file_data`);
  if (data[1] === 'application/pdf' && bytes.subarray(0, 5).toString('latin1') !== '%PDF-') throw new BadRequest(`Invalid file data: '${at}.file_data'. The file is not a valid PDF.`, `${at}.file_data`);
}

/** A user message's text and image count; images are checked as OpenAI checks them. */
function userContent(content: unknown, where: string): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  if (!Array.isArray(content)) throw new BadRequest(`Invalid type for '${where}': expected one of a string or array of objects, but got ${content === null ? 'null' : typeof content} instead.`, where);
  const texts: string[] = [];
  let images = 0;
  content.forEach((part: any, j: number) => {
    const at = `${where}[${j}]`;
    if (!isPlainObject(part)) throw new BadRequest(`Invalid type for '${at}': expected an object, but got ${typeof part} instead.`, at);
    switch (part.type) {
      case 'text':
        if (typeof part.text !== 'string') throw new BadRequest(`Missing required parameter: '${at}.text'.`, `${at}.text`);
        texts.push(part.text);
        return;
      case 'image_url': {
        const url = part.image_url?.url;
        if (typeof url !== 'string') throw new BadRequest(`Missing required parameter: '${at}.image_url.url'.`, `${at}.image_url.url`);
        checkImageUrl(url, `${at}.image_url.url`);
        images++;
        return;
      }
      case 'file':
        checkFile(part.file, `${at}.file`);
        return;
      case 'input_audio':
        return;
      default:
        throw new BadRequest(`Invalid value: '${part.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`, `${at}.type`);
    }
  });
  return { text: texts.join(' '), images };
}

function checkImageUrl(url: string, where: string): void {
  if (/^https?:\/\/[^\s/]+/.test(url)) return;
  if (!url.startsWith('data:')) throw new BadRequest(`Invalid '${where}'. Expected a valid URL, but got a value with an invalid format.`, where);
  const match = IMAGE_DATA_URL.exec(url);
  const bytes = match ? decodeBase64(match[2]) : null;
  if (match === null || bytes === null) {
    throw new BadRequest(`Invalid '${where}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid value.`, where);
  }
  if (sniffImage(bytes) === null) {
    throw new BadRequest("You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].", where);
  }
}

/** Reads and validates a chat request as OpenAI's chat completions API does. */
function readChatRequest(body: any): ChatRequest {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new BadRequest('messages: Field required', 'messages');
  const texts: string[] = [];
  let images = 0;
  let prompt = '';
  let promptImages = 0;
  // The assistant message whose tool calls the following tool messages answer.
  let pending: { index: number; ids: string[]; answered: Set<string> } | null = null;
  const closePending = () => {
    if (pending === null) return;
    const missing = pending.ids.filter((id) => !pending!.answered.has(id));
    if (missing.length > 0) {
      throw new BadRequest(`An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`, `messages.[${pending.index}].role`);
    }
    pending = null;
  };
  messages.forEach((m: any, i: number) => {
    const at = `messages[${i}]`;
    if (!isPlainObject(m)) throw new BadRequest(`Invalid type for '${at}': expected an object, but got ${typeof m} instead.`, at);
    if (!CHAT_ROLES.has(m.role)) {
      throw new BadRequest(`Invalid value: '${m.role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`, `${at}.role`);
    }
    if (m.role !== 'tool') closePending();
    switch (m.role) {
      case 'system':
      case 'developer':
        texts.push(textContent(m.content, `${at}.content`));
        break;
      case 'function': // deprecated, still accepted
        if (typeof m.content === 'string') texts.push(m.content);
        break;
      case 'user': {
        const content = userContent(m.content, `${at}.content`);
        texts.push(content.text);
        images += content.images;
        prompt = content.text;
        promptImages = content.images;
        break;
      }
      case 'assistant': {
        const calls = m.tool_calls ?? [];
        if (m.content != null) texts.push(textContent(m.content, `${at}.content`, ['text', 'refusal']));
        else if (!Array.isArray(calls) || calls.length === 0) throw new BadRequest(`Missing required parameter: '${at}.content'.`, `${at}.content`);
        if (!Array.isArray(calls)) throw new BadRequest(`Invalid type for '${at}.tool_calls': expected an array, but got ${typeof calls} instead.`, `${at}.tool_calls`);
        calls.forEach((call: any, k: number) => {
          const where = `${at}.tool_calls[${k}]`;
          if (typeof call?.id !== 'string') throw new BadRequest(`Missing required parameter: '${where}.id'.`, `${where}.id`);
          if (call.type !== 'function') throw new BadRequest(`Invalid value: '${call.type}'. Supported values are: 'function'.`, `${where}.type`);
          if (typeof call.function?.name !== 'string') throw new BadRequest(`Missing required parameter: '${where}.function.name'.`, `${where}.function.name`);
          const args = call.function.arguments;
          if (typeof args !== 'string') {
            throw new BadRequest(`Invalid type for '${where}.function.arguments': expected a string, but got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `an ${typeof args}`} instead.`, `${where}.function.arguments`);
          }
          texts.push(args);
        });
        if (calls.length > 0) pending = { index: i, ids: calls.map((c: any) => c.id), answered: new Set() };
        break;
      }
      case 'tool': {
        if (typeof m.tool_call_id !== 'string') throw new BadRequest(`Missing required parameter: '${at}.tool_call_id'.`, `${at}.tool_call_id`);
        const current = pending as { index: number; ids: string[]; answered: Set<string> } | null;
        if (current === null) {
          throw new BadRequest("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
        }
        if (!current.ids.includes(m.tool_call_id)) {
          throw new BadRequest(`Invalid parameter: 'tool_call_id' of '${m.tool_call_id}' not found in 'tool_calls' of previous message.`, `messages.[${i}].tool_call_id`);
        }
        current.answered.add(m.tool_call_id);
        texts.push(textContent(m.content, `${at}.content`));
        break;
      }
    }
  });
  closePending();
  const trailing: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) trailing.unshift(textContent(messages[i].content, `messages[${i}].content`));

  const tools = readTools(body);
  const mode = readToolChoice(body, tools);
  if (body.parallel_tool_calls != null && tools.length === 0) {
    throw new BadRequest("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.", 'parallel_tool_calls');
  }
  const json = readResponseFormat(body, texts);
  if (body.top_logprobs != null) {
    if (body.logprobs !== true) throw new BadRequest("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is specified.", 'top_logprobs');
    if (!Number.isInteger(body.top_logprobs) || body.top_logprobs < 0 || body.top_logprobs > 20) {
      throw new BadRequest(`Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got ${body.top_logprobs} instead.`, 'top_logprobs');
    }
  }
  if (body.n != null && (!Number.isInteger(body.n) || body.n < 1 || body.n > 128)) throw new BadRequest(`Invalid 'n': expected an integer in 1..128, got ${body.n}.`, 'n');
  if (body.reasoning_effort != null && !REASONING_EFFORTS.includes(body.reasoning_effort)) {
    throw new BadRequest(`Invalid value: '${body.reasoning_effort}'. Supported values are: ${REASONING_EFFORTS.map((e) => `'${e}'`).join(', ')}.`, 'reasoning_effort');
  }
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? 16;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new BadRequest(`max_tokens must be at least 1, got ${maxTokens}.`, body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens');
  return {
    prompt,
    images: promptImages,
    toolResults: trailing.length > 0 ? trailing : null,
    promptTokens: promptTokens(texts, images),
    tools,
    mode,
    parallel: body.parallel_tool_calls !== false,
    json,
    reasoning: body.reasoning_effort != null && body.reasoning_effort !== 'none',
    maxTokens,
  };
}

function readTools(body: any): OfferedTool[] {
  if (body.tools == null) return [];
  if (!Array.isArray(body.tools)) throw new BadRequest(`Invalid type for 'tools': expected an array, but got ${typeof body.tools} instead.`, 'tools');
  return body.tools.map((tool: any, k: number) => {
    if (tool?.type !== 'function') throw new BadRequest(`Invalid value: '${tool?.type}'. Supported values are: 'function' and 'custom'.`, `tools[${k}].type`);
    const name = tool.function?.name;
    if (typeof name !== 'string') throw new BadRequest(`Missing required parameter: 'tools[${k}].function.name'.`, `tools[${k}].function.name`);
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new BadRequest(`Invalid 'tools[${k}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `tools[${k}].function.name`);
    }
    const parameters = tool.function.parameters;
    if (parameters !== undefined && !isPlainObject(parameters)) {
      throw new BadRequest(`Invalid type for 'tools[${k}].function.parameters': expected an object, but got ${typeof parameters} instead.`, `tools[${k}].function.parameters`);
    }
    return { name, schema: parameters ?? {} };
  });
}

function readToolChoice(body: any, tools: readonly OfferedTool[]): ToolMode {
  const choice = body.tool_choice;
  if (choice == null) return tools.length > 0 ? { type: 'auto' } : { type: 'none' };
  if (tools.length === 0) throw new BadRequest("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
  if (choice === 'none' || choice === 'auto' || choice === 'required') return { type: choice };
  if (isPlainObject(choice) && choice.type === 'function' && typeof choice.function?.name === 'string') {
    if (!tools.some((t) => t.name === choice.function.name)) {
      throw new BadRequest(`Invalid value for 'tool_choice': no function named '${choice.function.name}' was specified in the 'tools' parameter.`, 'tool_choice');
    }
    return { type: 'named', name: choice.function.name };
  }
  throw new BadRequest("Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}.", 'tool_choice');
}

function readResponseFormat(body: any, texts: readonly string[]): { schema: unknown } | 'object' | null {
  const format = body.response_format;
  if (format == null) return null;
  switch (format.type) {
    case 'text':
      return null;
    case 'json_object':
      if (!texts.some((t) => /json/i.test(t))) {
        throw new BadRequest("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", 'messages');
      }
      return 'object';
    case 'json_schema': {
      const spec = format.json_schema;
      if (!isPlainObject(spec)) throw new BadRequest("Missing required parameter: 'response_format.json_schema'.", 'response_format.json_schema');
      if (typeof spec.name !== 'string') throw new BadRequest("Missing required parameter: 'response_format.json_schema.name'.", 'response_format.json_schema.name');
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) {
        throw new BadRequest("Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", 'response_format.json_schema.name');
      }
      return { schema: spec.schema ?? {} };
    }
    default:
      throw new BadRequest(`Invalid value: '${format.type}'. Supported values are: 'text', 'json_object' and 'json_schema'.`, 'response_format.type');
  }
}

interface ChatDelta {
  readonly delta: Record<string, unknown>;
  /** The content token this delta carries, for logprobs. */
  readonly token: string | null;
}

async function chatCompletion(res: ServerResponse, body: any, behaviour: Behaviour, errorMessage: string, id: string, created: number, reasoningField: string): Promise<void> {
  let request: ChatRequest;
  try {
    request = readChatRequest(body);
  } catch (error) {
    if (error instanceof BadRequest) return vllmError(res, 400, 'BadRequestError', error.message, error.param);
    throw error;
  }
  if (request.prompt.includes('forbidden')) {
    // A moderated answer, as OpenAI reports it.
    return json(res, 200, { id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'content_filter' }], usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 } });
  }
  const n: number = body.n ?? 1;
  const named = request.mode.type === 'named';
  const calls = request.toolResults === null ? planToolCalls(request.prompt, request.tools, request.mode, request.parallel) : [];
  const answers = Array.from({ length: n }, () =>
    answer({ ...request, stops: stopsOf(body), calls }),
  );
  const callId = (choice: number, call: number) => `chatcmpl-tool-${id.slice('chatcmpl-'.length).padStart(6, '0')}${choice}${call}`;
  // As OpenAI (and vLLM since 0.11): a call forced by name ends with "stop", others with "tool_calls".
  const finishOf = (a: Answer) => (a.finish === 'tool_calls' && named ? 'stop' : a.finish);
  const completionTokens = answers.reduce((sum, a) => sum + a.outputTokens, 0);
  const reasoningTokens = answers.reduce((sum, a) => sum + a.reasoning.length, 0);
  const cached = request.promptTokens > 20 ? 16 : 0;
  const usage = {
    prompt_tokens: request.promptTokens,
    total_tokens: request.promptTokens + completionTokens,
    completion_tokens: completionTokens,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    ...(request.reasoning ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
  };
  const top = body.top_logprobs ?? 0;
  if (body.stream !== true) {
    return json(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      choices: answers.map((a, k) => ({
        index: k,
        message: {
          role: 'assistant',
          content: a.calls.length > 0 ? null : a.text.join(''),
          ...(a.reasoning.length > 0 ? { [reasoningField]: a.reasoning.join('') } : {}),
          ...(a.calls.length > 0 ? { tool_calls: a.calls.map((c, j) => ({ id: callId(k, j), type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) } : {}),
        },
        logprobs: body.logprobs ? chatLogprobs(a.text, top) : null,
        finish_reason: finishOf(a),
      })),
      usage: behaviour.omitUsage ? undefined : usage,
    });
  }
  const deltasOf = (a: Answer, k: number): ChatDelta[] => {
    const deltas: ChatDelta[] = [
      ...a.reasoning.map((token) => ({ delta: { [reasoningField]: token }, token: null })),
      ...a.text.map((token) => ({ delta: { content: token }, token })),
      ...a.calls.flatMap((c, j): ChatDelta[] => [
        { delta: { tool_calls: [{ index: j, id: callId(k, j), type: 'function', function: { name: c.name, arguments: '' } }] }, token: null },
        ...c.fragments.map((fragment) => ({ delta: { tool_calls: [{ index: j, function: { arguments: fragment } }] }, token: null })),
      ]),
    ];
    if (deltas.length === 0) deltas.push({ delta: { content: '' }, token: null });
    deltas[0] = { ...deltas[0]!, delta: { role: 'assistant', ...deltas[0]!.delta } };
    return deltas;
  };
  const perChoice = answers.map((a, k) => ({ index: k, deltas: deltasOf(a, k), finish: finishOf(a) }));
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sent = 0;
  const longest = Math.max(...perChoice.map((c) => c.deltas.length));
  for (let t = 0; t < longest; t++) {
    for (const choice of perChoice) {
      if (t >= choice.deltas.length) continue;
      if (behaviour.errorAfterChunks !== undefined && sent === behaviour.errorAfterChunks) {
        // vLLM writes this one with Python's json.dumps: spaces after ':' and ','.
        res.write(`data: {"error": {"message": ${JSON.stringify(errorMessage)}, "type": "InternalServerError", "param": null, "code": 500}}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      const { delta, token } = choice.deltas[t]!;
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        choices: [
          {
            index: choice.index,
            delta,
            logprobs: body.logprobs && token !== null ? chatLogprobs([token], top) : null,
            finish_reason: t === choice.deltas.length - 1 ? choice.finish : null,
          },
        ],
      };
      if (!(await writeEvent(res, `data: ${JSON.stringify(chunk)}\n\n`, behaviour))) return;
      sent++;
    }
  }
  if (body.stream_options?.include_usage && !behaviour.omitUsage) {
    if (!(await writeEvent(res, `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage })}\n\n`, behaviour))) return;
  }
  await endStream(res, 'data: [DONE]\n\n');
}

/** A path the server has no route for, as each kind of server answers it. */
function unknownPath(res: ServerResponse, how: NonNullable<Behaviour['unknownPath']>): void {
  if (how === 'fastapi') return json(res, 404, { detail: 'Not Found' });
  if (how === 'ollama') return void res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found');
  if (how === 'html') return void res.writeHead(404, { 'content-type': 'text/html' }).end('<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>');
  res.writeHead(404).end();
}

function vllmError(res: ServerResponse, status: number, type: string, message: string, param: string | null): void {
  json(res, status, { error: { message, type, param, code: status } });
}
