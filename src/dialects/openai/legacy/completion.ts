/**
 * The legacy completion operation as the OpenAI dialect holds it: the parsed request, and the
 * completion it writes back. Providers never see these: a same-dialect upstream gets the caller's
 * body relayed, any other the generation model (see operation.ts).
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
   * for an upstream speaking the same dialect.
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
  readonly extra?: Readonly<Record<string, unknown>>;
}
