import type { CatalogueModel } from '../catalogue/catalogue.js';

/**
 * The legacy completion operation as Sluice models it internally. The OpenAI dialect parses the
 * wire body into a CompletionRequest at the edge; providers turn it into upstream calls and answer
 * with a Completion or a stream of CompletionEvents, which the dialect's writer puts on the wire.
 */
export type Prompt = string | string[] | number[] | number[][];

export interface CompletionRequest {
  /** The public model id the client asked for. */
  readonly model: string;
  readonly prompt: Prompt;
  readonly suffix: string | null;
  /** null: the client left it to the upstream's default (16 for OpenAI). */
  readonly maxTokens: number | null;
  readonly temperature: number | undefined;
  readonly topP: number | undefined;
  readonly n: number;
  readonly bestOf: number | undefined;
  readonly stream: boolean;
  /** The client asked for the usage chunk (`stream_options.include_usage`). */
  readonly includeUsage: boolean;
  readonly logprobs: number | null;
  readonly echo: boolean;
  readonly stop: readonly string[];
  readonly presencePenalty: number | undefined;
  readonly frequencyPenalty: number | undefined;
  readonly logitBias: Readonly<Record<string, number>> | undefined;
  readonly seed: number | undefined;
  readonly user: string | undefined;
  /**
   * The body exactly as the client sent it (validated), including fields Sluice does not know,
   * for adapters that relay to an upstream speaking the same dialect.
   */
  readonly body: Readonly<Record<string, unknown>>;
}

export type FinishReason = 'stop' | 'length' | 'content_filter' | (string & {});

export interface LegacyLogprobs {
  readonly tokens: readonly string[];
  readonly token_logprobs: readonly (number | null)[];
  readonly top_logprobs: readonly (Readonly<Record<string, number>> | null)[] | null;
  readonly text_offset: readonly number[];
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface CompletionChoice {
  readonly index: number;
  readonly text: string;
  readonly logprobs: LegacyLogprobs | null;
  readonly finishReason: FinishReason | null;
  /** Further fields an upstream of the same dialect sent (vLLM's `stop_reason`, …), kept as they came. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface Completion {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly choices: readonly CompletionChoice[];
  /** null when the upstream reported none; Sluice then counts the tokens itself. */
  readonly usage: Usage | null;
  readonly extra?: Readonly<Record<string, unknown>>;
}

/**
 * One stream, normalised. `start` comes first; `choice` carries new text for one choice (with
 * `finishReason` set on that choice's last piece); `usage` at most once, near the end. A failure
 * mid-stream is thrown from the iterator as a GatewayError.
 */
export type CompletionEvent =
  | { readonly type: 'start'; readonly id: string; readonly created: number }
  | ({ readonly type: 'choice' } & CompletionChoice)
  | { readonly type: 'usage'; readonly usage: Usage };

export interface CompletionCall {
  readonly request: CompletionRequest;
  readonly model: CatalogueModel;
  readonly requestId: string;
  /** Aborted when the client goes away or the gateway gives up. */
  readonly signal: AbortSignal;
}
