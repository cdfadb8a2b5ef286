import type { ServerResponse } from 'node:http';
import { json } from './fake-server.js';

/**
 * The model-list routes of the fakes, shaped as each server documents them. The listed models are
 * an array the test holds, so that it can change what the upstream lists while a gateway runs.
 */

/** What an OpenAI-compatible server's `GET /v1/models` looks like, by server. */
export type OpenAIListFlavour = 'vllm' | 'ollama' | 'llamacpp' | 'openai';

export interface ListedModel {
  readonly id: string;
  /** vLLM's `max_model_len`, llama.cpp's `meta.n_ctx_train`. */
  readonly contextLength?: number;
  /** vLLM: a LoRA adapter's base model (`parent`). */
  readonly parent?: string;
  /** vLLM: the weights a model served under another name (`--served-model-name`) was loaded from (`root`); default: its id. */
  readonly root?: string;
  /** Anthropic's `display_name`, Gemini's `displayName`. */
  readonly displayName?: string;
  /** Gemini's token limits and generation methods (default: generateContent, countTokens, streamGenerateContent). */
  readonly inputTokenLimit?: number;
  readonly outputTokenLimit?: number;
  readonly methods?: readonly string[];
  readonly description?: string;
}

const CREATED = 1_735_689_600;

/** `{"object":"list","data":[…]}` as vLLM (with `root`, `parent`, `max_model_len`, `permission`), Ollama, llama.cpp (`meta`) or OpenAI serve it. */
export function openAIModelList(res: ServerResponse, listed: readonly ListedModel[], flavour: OpenAIListFlavour): void {
  const data = listed.map((model) => {
    const base = { id: model.id, object: 'model', created: CREATED };
    switch (flavour) {
      case 'vllm':
        return {
          ...base,
          owned_by: 'vllm',
          root: model.parent === undefined ? (model.root ?? model.id) : `/adapters/${model.id}`,
          parent: model.parent ?? null,
          max_model_len: model.contextLength ?? 32_768,
          permission: [{ id: `modelperm-${model.id}`, object: 'model_permission', created: CREATED, allow_create_engine: false, allow_sampling: true, allow_logprobs: true, allow_search_indices: false, allow_view: true, allow_fine_tuning: false, organization: '*', group: null, is_blocking: false }],
        };
      case 'ollama':
        return { ...base, owned_by: 'library' };
      case 'llamacpp':
        return { ...base, owned_by: 'llamacpp', meta: { vocab_type: 2, n_vocab: 128_256, n_ctx_train: model.contextLength ?? 131_072, n_embd: 4096, n_params: 8_030_261_248, size: 4_920_734_720 } };
      case 'openai':
        return { ...base, owned_by: 'system' };
    }
  });
  json(res, 200, { object: 'list', data });
}

/** Anthropic's `GET /v1/models`: `limit` 1..1000 (default 20), `after_id`; at most `maxPage` a page however many were asked. */
export function anthropicModelList(res: ServerResponse, path: string, listed: readonly ListedModel[], maxPage: number, error: (status: number, type: string, message: string) => void): void {
  const query = new URL(path, 'http://fake').searchParams;
  const limit = Number(query.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return error(400, 'invalid_request_error', 'limit: Input should be less than or equal to 1000');
  const after = query.get('after_id');
  const start = after === null ? 0 : listed.findIndex((model) => model.id === after) + 1;
  if (after !== null && start === 0) return error(400, 'invalid_request_error', `after_id: no model '${after}'`);
  const page = listed.slice(start, start + Math.min(limit, maxPage));
  json(res, 200, {
    data: page.map((model) => ({ type: 'model', id: model.id, display_name: model.displayName ?? model.id, created_at: '2026-02-05T00:00:00Z' })),
    has_more: start + page.length < listed.length,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  });
}

/** Gemini's `GET /v1beta/models`: `pageSize` (default 50, at most 1000), `pageToken`; `nextPageToken` left out on the last page. */
export function geminiModelList(res: ServerResponse, path: string, listed: readonly ListedModel[], maxPage: number, error: (code: number, status: string, message: string) => void): void {
  const query = new URL(path, 'http://fake').searchParams;
  const size = Math.min(Number(query.get('pageSize') ?? 50), 1000, maxPage);
  if (!Number.isInteger(size) || size < 1) return error(400, 'INVALID_ARGUMENT', 'pageSize must be positive');
  const token = query.get('pageToken');
  const start = token === null ? 0 : Number(Buffer.from(token, 'base64url').toString('utf8'));
  if (!Number.isInteger(start) || start < 0) return error(400, 'INVALID_ARGUMENT', 'Invalid page token.');
  const page = listed.slice(start, start + size);
  const next = start + page.length < listed.length ? Buffer.from(String(start + page.length)).toString('base64url') : undefined;
  json(res, 200, {
    models: page.map((model) => ({
      name: `models/${model.id}`,
      baseModelId: model.id,
      version: '001',
      displayName: model.displayName ?? model.id,
      description: model.description ?? `The ${model.id} model.`,
      inputTokenLimit: model.inputTokenLimit ?? 1_048_576,
      outputTokenLimit: model.outputTokenLimit ?? 65_536,
      supportedGenerationMethods: model.methods ?? ['generateContent', 'countTokens', 'streamGenerateContent'],
      temperature: 1,
      maxTemperature: 2,
      topP: 0.95,
      topK: 64,
    })),
    ...(next === undefined ? {} : { nextPageToken: next }),
  });
}
