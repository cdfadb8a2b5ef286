import type { ServerResponse } from 'node:http';
import { countWords, fakeLogprob, generate, type Generation } from './generation.js';
import { endStream, json, startFakeServer, writeEvent, type Behaviour, type FakeUpstream } from './fake-server.js';

export { WORDS } from './generation.js';
export type { FakeUpstream } from './fake-server.js';

/**
 * A stand-in for an OpenAI-compatible server, behaving as vLLM (≥ 0.10.1) documents: its
 * validation and error bodies (`{"error":{message,type,param,code:int}}`, `{"error":"Unauthorized"}`
 * for a bad key), its stream framing (compact `data:` chunks without a `usage` key, a `choices: []`
 * usage chunk, `data: [DONE]`). It serves `/v1/completions` and `/v1/chat/completions`.
 */
export async function startFakeOpenAI(options: { models?: string[]; apiKey?: string } = {}): Promise<FakeUpstream> {
  const models = new Set(options.models ?? ['upstream-model']);
  let served = 0;
  return startFakeServer('/v1', async (request, res, behaviour) => {
    const { body } = request;
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      return json(res, 401, { error: 'Unauthorized' });
    }
    const path = request.path;
    if (request.method !== 'POST' || (path !== '/v1/completions' && path !== '/v1/chat/completions')) {
      return vllmError(res, 404, 'NotFoundError', 'Not Found', null);
    }
    if (body === undefined || typeof body !== 'object') return vllmError(res, 400, 'Bad Request', 'JSON decode error', null);
    if (!models.has(body.model)) return vllmError(res, 404, 'NotFoundError', `The model \`${body.model}\` does not exist.`, 'model');
    if (typeof body.temperature === 'number' && body.temperature < 0) {
      return vllmError(res, 400, 'BadRequestError', `temperature must be non-negative, got ${body.temperature}.`, 'temperature');
    }
    if (body.stream_options != null && body.stream !== true) {
      return vllmError(res, 400, 'Bad Request', 'Stream options can only be defined when `stream=True`.', 'stream_options');
    }
    served++;
    const id = path === '/v1/completions' ? `cmpl-${served}` : `chatcmpl-${served}`;
    const created = 1_700_000_000 + served;
    if (path === '/v1/completions') return legacyCompletion(res, body, behaviour, id, created);
    return chatCompletion(res, body, behaviour, id, created);
  });
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
        res.write('data: {"error": {"message": "engine crashed", "type": "InternalServerError", "param": null, "code": 500}}\n\n');
        res.end('data: [DONE]\n\n');
        return false;
      }
      if (!(await writeEvent(res, `data: ${JSON.stringify(chunkFor(choice, t, t === count - 1))}\n\n`, behaviour))) return false;
      sent++;
    }
  }
  return true;
}

async function legacyCompletion(res: ServerResponse, body: any, behaviour: Behaviour, id: string, created: number): Promise<void> {
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
  const finished = await streamTokens(res, choices, behaviour, (c, t, last) => ({
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

async function chatCompletion(res: ServerResponse, body: any, behaviour: Behaviour, id: string, created: number): Promise<void> {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return vllmError(res, 400, 'Bad Request', 'messages: Field required', 'messages');
  const prompt = String(messages.at(-1).content);
  if (prompt.includes('forbidden')) {
    // A moderated answer, as OpenAI reports it.
    return json(res, 200, { id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'content_filter' }], usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 } });
  }
  const n: number = body.n ?? 1;
  const choices: Choice[] = Array.from({ length: n }, (_, k) => ({ index: k, prompt, ...generate(prompt, body.max_tokens ?? 16, stopsOf(body), { lead: true }) }));
  const usage = usageOf(countWords(prompt), choices);
  const top = body.top_logprobs ?? 0;
  if (body.stream !== true) {
    return json(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      choices: choices.map((c) => ({
        index: c.index,
        message: { role: 'assistant', content: c.tokens.join('') },
        logprobs: body.logprobs ? chatLogprobs(c.tokens, top) : null,
        finish_reason: c.finishReason,
      })),
      usage: behaviour.omitUsage ? undefined : usage,
    });
  }
  const finished = await streamTokens(res, choices, behaviour, (c, t, last) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: body.model,
    choices: [
      {
        index: c.index,
        delta: t === 0 ? { role: 'assistant', content: c.tokens[t] ?? '' } : { content: c.tokens[t] ?? '' },
        logprobs: body.logprobs ? chatLogprobs(c.tokens.slice(t, t + 1), top) : null,
        finish_reason: last ? c.finishReason : null,
      },
    ],
  }));
  if (!finished) return;
  if (body.stream_options?.include_usage && !behaviour.omitUsage) {
    if (!(await writeEvent(res, `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage })}\n\n`, behaviour))) return;
  }
  await endStream(res, 'data: [DONE]\n\n');
}

function vllmError(res: ServerResponse, status: number, type: string, message: string, param: string | null): void {
  json(res, status, { error: { message, type, param, code: status } });
}
