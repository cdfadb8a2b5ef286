import { createParser } from 'eventsource-parser';
import { Pool, type Dispatcher } from 'undici';
import type {
  Completion,
  CompletionCall,
  CompletionChoice,
  CompletionEvent,
  LegacyLogprobs,
  Usage,
} from '../completions/completion.js';
import type { ProviderConfig } from '../config/config-file.js';
import { GatewayError } from '../errors.js';
import type { Provider } from './provider.js';
import { unreadableUpstream, upstreamHttpError, upstreamTransportError } from './upstream-errors.js';

type Json = Record<string, unknown>;

/**
 * Any server that speaks OpenAI's legacy completions (vLLM, llama.cpp, Ollama, OpenAI). The body
 * the client sent is relayed as it came, fields Sluice does not know included; only `model` is
 * rewritten and, for streams, usage is always asked for so the ledger can account.
 */
export class OpenAICompatibleProvider implements Provider {
  readonly kind = 'openai';
  readonly id: string;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly headers: Record<string, string>;
  private readonly secrets: string[];

  constructor(config: ProviderConfig) {
    this.id = config.id;
    const url = new URL(config.base_url);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: config.max_connections,
      connectTimeout: config.connect_timeout_ms,
      headersTimeout: config.response_timeout_ms,
      bodyTimeout: config.idle_timeout_ms,
      keepAliveTimeout: 30_000,
    });
    this.headers = { 'content-type': 'application/json', accept: 'application/json', ...config.headers };
    if (config.api_key !== undefined) this.headers.authorization = `Bearer ${config.api_key}`;
    this.secrets = config.api_key === undefined ? [] : [config.api_key];
  }

  async complete(call: CompletionCall): Promise<Completion> {
    const body = { ...call.request.body, model: call.model.upstreamModel };
    const response = await this.post(call, body);
    const parsed = await this.readJson(response);
    return this.toCompletion(parsed);
  }

  async streamCompletion(call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    const streamOptions = (call.request.body.stream_options as Json | null | undefined) ?? {};
    const body = {
      ...call.request.body,
      model: call.model.upstreamModel,
      stream: true,
      stream_options: { ...streamOptions, include_usage: true },
    };
    const response = await this.post(call, body);
    return this.events(response.body);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private async post(call: CompletionCall, body: Json): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool.request({
        method: 'POST',
        path: `${this.basePath}/completions`,
        headers: { ...this.headers, 'x-request-id': call.requestId },
        body: JSON.stringify(body),
        signal: call.signal,
      });
    } catch (error) {
      throw upstreamTransportError(this.id, error);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    throw await this.failure(response);
  }

  private async failure(response: Dispatcher.ResponseData): Promise<GatewayError> {
    let text = '';
    try {
      text = await response.body.text();
    } catch {
      // The status alone still says what went wrong.
    }
    const { message, type, code } = readErrorBody(text);
    const retryAfter = response.headers['retry-after'];
    return upstreamHttpError({
      providerId: this.id,
      status: response.statusCode,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
      message,
      type,
      code,
      secrets: this.secrets,
    });
  }

  private async readJson(response: Dispatcher.ResponseData): Promise<Json> {
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw upstreamTransportError(this.id, error);
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Json;
    } catch {
      // Falls through to the error below.
    }
    throw unreadableUpstream(this.id, 'an answer that is not a JSON object');
  }

  private toCompletion(body: Json): Completion {
    const choices = body.choices;
    if (!Array.isArray(choices)) throw unreadableUpstream(this.id, 'an answer without choices');
    return {
      id: typeof body.id === 'string' ? body.id : '',
      created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
      choices: choices.map((choice) => this.toChoice(choice)),
      usage: toUsage(body.usage),
      extra: body,
    };
  }

  private toChoice(raw: unknown): CompletionChoice {
    const choice = raw as Json | null;
    if (choice === null || typeof choice !== 'object' || typeof choice.text !== 'string') {
      throw unreadableUpstream(this.id, 'a choice without text');
    }
    return {
      index: typeof choice.index === 'number' ? choice.index : 0,
      text: choice.text,
      logprobs: (choice.logprobs as LegacyLogprobs | null | undefined) ?? null,
      finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
      extra: choice,
    };
  }

  private async *events(body: Dispatcher.ResponseData['body']): AsyncGenerator<CompletionEvent> {
    const pending: string[] = [];
    const parser = createParser({ onEvent: (event) => pending.push(event.data) });
    const decoder = new TextDecoder();
    let started = false;
    let usage: Usage | null = null;
    let usageSent = false;
    try {
      for await (const bytes of body) {
        parser.feed(decoder.decode(bytes as Uint8Array, { stream: true }));
        for (let i = 0; i < pending.length; i++) {
          const data = pending[i]!;
          if (data === '[DONE]') {
            if (usage !== null && !usageSent) yield { type: 'usage', usage };
            return;
          }
          const chunk = this.parseChunk(data);
          if (!started) {
            started = true;
            yield {
              type: 'start',
              id: typeof chunk.id === 'string' ? chunk.id : '',
              created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000),
            };
          }
          const choices = chunk.choices as unknown[];
          for (let c = 0; c < choices.length; c++) yield { type: 'choice', ...this.toChoice(choices[c]) };
          const chunkUsage = toUsage(chunk.usage);
          if (chunkUsage !== null) {
            usage = chunkUsage;
            // A chunk with no choices is the final usage chunk; vLLM's continuous stats put
            // running totals on every chunk, of which only the last counts.
            if (choices.length === 0) {
              usageSent = true;
              yield { type: 'usage', usage };
            }
          }
        }
        pending.length = 0;
      }
    } catch (error) {
      throw upstreamTransportError(this.id, error);
    }
    throw unreadableUpstream(this.id, 'a stream that ended before [DONE]');
  }

  private parseChunk(data: string): Json {
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw unreadableUpstream(this.id, 'a stream event that is not JSON');
    }
    if (chunk === null || typeof chunk !== 'object') throw unreadableUpstream(this.id, 'a stream event that is not an object');
    const object = chunk as Json;
    if (object.error !== undefined && object.error !== null) {
      const { message } = readErrorBody(data);
      throw new GatewayError('upstream_error', `The upstream provider '${this.id}' failed mid-stream${message ? `: ${message}` : '.'}`);
    }
    if (!Array.isArray(object.choices)) throw unreadableUpstream(this.id, 'a stream event without choices');
    return object;
  }
}

function toUsage(raw: unknown): Usage | null {
  const usage = raw as Json | null | undefined;
  if (usage === null || usage === undefined || typeof usage !== 'object') return null;
  const prompt = usage.prompt_tokens;
  const completion = usage.completion_tokens;
  if (typeof prompt !== 'number' || typeof completion !== 'number') return null;
  return { promptTokens: prompt, completionTokens: completion };
}

/**
 * Message, type and code from the error bodies OpenAI-compatible servers send:
 * `{"error":{"message",…}}` (OpenAI, vLLM ≥ 0.10.1), `{"object":"error","message",…}` (older vLLM),
 * `{"error":"Unauthorized"}` (vLLM's key check), `{"detail":…}` (FastAPI servers).
 */
function readErrorBody(text: string): { message?: string; type?: string; code?: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  if (body === null || typeof body !== 'object') return {};
  const outer = body as Json;
  const inner = typeof outer.error === 'object' && outer.error !== null ? (outer.error as Json) : outer;
  const message =
    typeof inner.message === 'string' ? inner.message : typeof outer.error === 'string' ? outer.error : typeof outer.detail === 'string' ? outer.detail : undefined;
  return {
    ...(message === undefined ? {} : { message }),
    ...(typeof inner.type === 'string' ? { type: inner.type } : {}),
    ...(typeof inner.code === 'string' ? { code: inner.code } : {}),
  };
}
