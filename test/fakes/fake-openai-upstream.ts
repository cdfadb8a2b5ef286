import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for an OpenAI-compatible completions server, behaving as vLLM (≥ 0.10.1) documents:
 * its validation and error bodies (`{"error":{message,type,param,code:int}}`, `{"error":"Unauthorized"}`
 * for a bad key), its stream framing (compact `data:` chunks without a `usage` key, a `choices: []`
 * usage chunk when asked, `data: [DONE]`), and it records every request for assertions.
 *
 * Generation is deterministic: the output is taken word by word from WORDS, one token per word.
 */
export const WORDS = [' The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'];

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: any;
}

export interface Behaviour {
  /** Answer every request with this status, body and headers instead of generating. */
  fail?: { status: number; body: string; headers?: Record<string, string> };
  /** Wait before sending the response headers. */
  headerDelayMs?: number;
  /** Wait between stream chunks. */
  tokenDelayMs?: number;
  /** Leave `usage` out of answers (as some servers do). */
  omitUsage?: boolean;
  /** Send a vLLM-style error event after this many chunks, then [DONE]. */
  errorAfterChunks?: number;
  /** Answer 200 with a body that is not JSON. */
  garbage?: boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Requests whose connection closed before the answer was complete. */
  readonly aborted: RecordedRequest[];
  behaviour: Behaviour;
  close(): Promise<void>;
}

export async function startFakeOpenAI(options: { models?: string[]; apiKey?: string } = {}): Promise<FakeUpstream> {
  const models = new Set(options.models ?? ['upstream-model']);
  const requests: RecordedRequest[] = [];
  const aborted: RecordedRequest[] = [];
  const state: { behaviour: Behaviour } = { behaviour: {} };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) aborted.push(record);
    });

    const behaviour = state.behaviour;
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return json(res, 401, { error: 'Unauthorized' });
    }
    if (behaviour.headerDelayMs) await sleep(behaviour.headerDelayMs);
    if (res.destroyed) return;
    if (behaviour.fail) {
      res.writeHead(behaviour.fail.status, { 'content-type': 'application/json', ...behaviour.fail.headers });
      return res.end(behaviour.fail.body);
    }
    if (behaviour.garbage) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('<html>gateway timeout</html>');
    }
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      return vllmError(res, 404, 'NotFoundError', `Not Found`, null);
    }
    if (body === undefined || typeof body !== 'object') return vllmError(res, 400, 'Bad Request', 'JSON decode error', null);
    if (!models.has(body.model)) return vllmError(res, 404, 'NotFoundError', `The model \`${body.model}\` does not exist.`, 'model');
    if (body.suffix != null) return vllmError(res, 400, 'BadRequestError', 'suffix is not currently supported', null);
    if (typeof body.temperature === 'number' && body.temperature < 0) {
      return vllmError(res, 400, 'BadRequestError', `temperature must be non-negative, got ${body.temperature}.`, 'temperature');
    }
    if (body.stream_options != null && body.stream !== true) {
      return vllmError(res, 400, 'Bad Request', 'Stream options can only be defined when `stream=True`.', 'stream_options');
    }

    const prompts: (string | number[])[] = typeof body.prompt === 'string' || typeof body.prompt[0] === 'number' ? [body.prompt] : body.prompt;
    const n: number = body.n ?? 1;
    const generations = prompts.flatMap((prompt, p) =>
      Array.from({ length: n }, (_, k) => generate(prompt, p * n + k, body)),
    );
    const promptTokens = prompts.reduce<number>((sum, prompt) => sum + countPromptTokens(prompt), 0);
    const completionTokens = generations.reduce((sum, g) => sum + g.tokens.length, 0);
    const usage = { prompt_tokens: promptTokens, total_tokens: promptTokens + completionTokens, completion_tokens: completionTokens };
    const id = `cmpl-${requests.length}`;
    const created = 1_700_000_000 + requests.length;

    if (body.stream !== true) {
      return json(res, 200, {
        id,
        object: 'text_completion',
        created,
        model: body.model,
        choices: generations.map((g) => ({
          index: g.index,
          text: (body.echo ? promptText(g.prompt) : '') + g.tokens.join(''),
          logprobs: body.logprobs == null ? null : logprobsFor(g.tokens),
          finish_reason: g.finishReason,
          stop_reason: g.stopReason,
          prompt_logprobs: null,
        })),
        service_tier: null,
        system_fingerprint: null,
        usage: behaviour.omitUsage ? null : usage,
        kv_transfer_params: null,
      });
    }

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    let sent = 0;
    const send = async (payload: unknown) => {
      if (res.destroyed) return false;
      if (behaviour.errorAfterChunks !== undefined && sent === behaviour.errorAfterChunks) {
        res.write(`data: ${JSON.stringify({ error: { message: 'engine crashed', type: 'InternalServerError', param: null, code: 500 } }, null, 1).replace(/\n\s*/g, ' ')}\n\n`);
        res.end('data: [DONE]\n\n');
        return false;
      }
      res.write(`data: ${JSON.stringify(payload)}\n\n`);
      sent++;
      if (behaviour.tokenDelayMs) await sleep(behaviour.tokenDelayMs);
      return true;
    };
    const chunk = (g: Generation, text: string, last: boolean, position: number) => ({
      id,
      object: 'text_completion',
      created,
      model: body.model,
      choices: [
        {
          index: g.index,
          text,
          logprobs: body.logprobs == null ? null : logprobsFor([text], position),
          finish_reason: last ? g.finishReason : null,
          stop_reason: last ? g.stopReason : null,
        },
      ],
    });
    // Choices interleave, as vLLM's do when several are generated at once.
    const longest = Math.max(...generations.map((g) => g.tokens.length));
    for (let t = 0; t < Math.max(longest, 1); t++) {
      for (const g of generations) {
        if (t >= Math.max(g.tokens.length, 1)) continue;
        const text = (t === 0 && body.echo ? promptText(g.prompt) : '') + (g.tokens[t] ?? '');
        if (!(await send(chunk(g, text, t === Math.max(g.tokens.length, 1) - 1, t)))) return;
      }
    }
    const includeUsage = body.stream_options?.include_usage ?? true; // vLLM's default is true
    if (includeUsage && !behaviour.omitUsage) {
      if (!(await send({ id, object: 'text_completion', created, model: body.model, choices: [], usage }))) return;
    }
    res.end('data: [DONE]\n\n');
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    aborted,
    get behaviour() {
      return state.behaviour;
    },
    set behaviour(value: Behaviour) {
      state.behaviour = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Generation {
  index: number;
  prompt: string | number[];
  tokens: string[];
  finishReason: 'stop' | 'length';
  stopReason: string | null;
}

function generate(prompt: string | number[], index: number, body: any): Generation {
  const maxTokens: number = body.max_tokens ?? 16;
  const stops: string[] = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const tokens: string[] = [];
  let text = '';
  for (const word of WORDS) {
    if (tokens.length >= maxTokens) return { index, prompt, tokens, finishReason: 'length', stopReason: null };
    const next = text + word;
    const stop = stops.find((s) => next.includes(s));
    if (stop !== undefined) {
      const cut = next.slice(0, next.indexOf(stop)).slice(text.length);
      if (cut) tokens.push(cut);
      return { index, prompt, tokens, finishReason: 'stop', stopReason: stop };
    }
    tokens.push(word);
    text = next;
  }
  return { index, prompt, tokens, finishReason: 'stop', stopReason: null };
}

function promptText(prompt: string | number[]): string {
  return typeof prompt === 'string' ? prompt : prompt.map((id) => `<${id}>`).join('');
}

function countPromptTokens(prompt: string | number[]): number {
  return typeof prompt === 'string' ? Math.max(1, prompt.split(/\s+/).filter(Boolean).length) : prompt.length;
}

function logprobsFor(tokens: string[], start = 0) {
  let offset = 0;
  return {
    text_offset: tokens.map((token) => {
      const at = offset;
      offset += token.length;
      return at;
    }),
    token_logprobs: tokens.map((_, i) => -0.1 * (start + i + 1)),
    tokens,
    top_logprobs: tokens.map((token, i) => ({ [token]: -0.1 * (start + i + 1) })),
  };
}

function json(res: http.ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

function vllmError(res: http.ServerResponse, status: number, type: string, message: string, param: string | null): void {
  json(res, status, { error: { message, type, param, code: status } });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
