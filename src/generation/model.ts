/**
 * The dialect-neutral generation model. Caller dialects parse their wire into a GenerationRequest
 * and write GenerationResults and StreamParts back out; provider adapters translate the same types
 * to and from their upstream. Nothing here knows any wire format.
 */

export type JsonSchema = Readonly<Record<string, unknown>>;

export type ImageSource =
  | { readonly kind: 'url'; readonly url: string }
  /** Base64 bytes, from a `data:` URL or an inline block. */
  | { readonly kind: 'inline'; readonly mediaType: string; readonly data: string };

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
  /** The caller marked a prompt-cache breakpoint after this part (Anthropic's `cache_control`). */
  readonly cacheBreakpoint?: boolean;
}

export interface ImagePart {
  readonly type: 'image';
  readonly source: ImageSource;
  /** OpenAI's `detail` hint; other upstreams ignore it. */
  readonly detail?: 'auto' | 'low' | 'high';
}

/** The document types every translating upstream takes (Anthropic takes no other); refused at the caller's edge otherwise. */
export const DOCUMENT_MEDIA_TYPES = ['application/pdf', 'text/plain'] as const;
export type DocumentMediaType = (typeof DOCUMENT_MEDIA_TYPES)[number];

export function isDocumentMediaType(mediaType: string): mediaType is DocumentMediaType {
  return (DOCUMENT_MEDIA_TYPES as readonly string[]).includes(mediaType);
}

export type DocumentSource =
  /** A document by URL, which only some upstreams fetch themselves (Anthropic's PDFs); the others refuse it. */
  | { readonly kind: 'url'; readonly url: string }
  /** Base64 bytes, whatever the caller's wire carried (a `data:` URL, an inline block, plain text encoded once). */
  | { readonly kind: 'inline'; readonly mediaType: DocumentMediaType; readonly data: string };

/** A file given to the model to read (a PDF, a text file), in a user turn. */
export interface DocumentPart {
  readonly type: 'document';
  readonly source: DocumentSource;
  /** The caller's file name or title, if any; each upstream shapes it as it needs. */
  readonly name?: string;
  readonly cacheBreakpoint?: boolean;
}

export interface ToolCallPart {
  readonly type: 'tool_call';
  readonly id: string;
  readonly name: string;
  /** The arguments as JSON text, exactly as the model produced them. */
  readonly arguments: string;
}

export interface ToolResultPart {
  readonly type: 'tool_result';
  readonly toolCallId: string;
  /** The function's name, which Gemini needs and OpenAI's tool messages do not carry: found from the call. */
  readonly name: string | undefined;
  readonly content: readonly (TextPart | ImagePart)[];
  readonly isError?: boolean;
}

export interface ReasoningPart {
  readonly type: 'reasoning';
  readonly text: string;
  /** The upstream's opaque signature (Anthropic's `signature`, Gemini's `thoughtSignature`), replayed as it came. */
  readonly signature?: string;
  /** Reasoning the upstream returned encrypted (Anthropic's `redacted_thinking`). */
  readonly redactedData?: string;
}

export type ContentPart = TextPart | ImagePart | DocumentPart | ToolCallPart | ToolResultPart | ReasoningPart;

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface Message {
  readonly role: Role;
  readonly content: readonly ContentPart[];
}

export interface ToolDefinition {
  readonly name: string;
  readonly description: string | undefined;
  readonly parameters: JsonSchema;
  readonly strict: boolean | undefined;
}

export type ToolChoice =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  | { readonly type: 'required' }
  | { readonly type: 'tool'; readonly name: string };

export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly name: string; readonly schema: JsonSchema; readonly strict: boolean | undefined; readonly description: string | undefined };

export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';

export interface GenerationRequest {
  /** The public model id the caller asked for. */
  readonly model: string;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDefinition[];
  readonly toolChoice: ToolChoice | undefined;
  readonly parallelToolCalls: boolean | undefined;
  readonly responseFormat: ResponseFormat | undefined;
  /** undefined: the caller left it to the model (adapters whose upstream requires one supply it). */
  readonly maxOutputTokens: number | undefined;
  readonly temperature: number | undefined;
  readonly topP: number | undefined;
  readonly topK: number | undefined;
  readonly stop: readonly string[];
  /** Choices asked for; the invoke stage splits them over upstream calls. */
  readonly n: number;
  readonly presencePenalty: number | undefined;
  readonly frequencyPenalty: number | undefined;
  readonly logitBias: Readonly<Record<string, number>> | undefined;
  readonly seed: number | undefined;
  readonly user: string | undefined;
  /** Per-token log-probabilities with this many alternatives each; undefined: none. */
  readonly logprobs: { readonly top: number } | undefined;
  readonly reasoning: { readonly effort: ReasoningEffort } | undefined;
  readonly metadata: Readonly<Record<string, string>> | undefined;
  /**
   * Fields the caller sent that Sluice does not model (vLLM's `min_p`, `chat_template_kwargs`, …):
   * an upstream of the caller's own family takes them, any other refuses each by name.
   */
  readonly extensions: Readonly<Record<string, unknown>>;
}

/**
 * Why a choice ended. `tool_calls`: it asked for tools. `error`: the upstream gave up on it (a
 * malformed function call, an unknown reason). `raw` keeps the upstream's own word where a caller
 * dialect has a name for it (Anthropic's `pause_turn`, `refusal`).
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

export interface Finish {
  readonly reason: FinishReason;
  readonly raw: string | undefined;
  /** The stop sequence that ended the text, when the upstream says which. */
  readonly stopSequence?: string;
}

export interface TokenLogprob {
  readonly token: string;
  readonly logprob: number;
  /** UTF-8 bytes of the token, when the upstream gives them (a character can span tokens). */
  readonly bytes?: readonly number[] | null;
  readonly top: readonly { readonly token: string; readonly logprob: number; readonly bytes?: readonly number[] | null }[];
}

/**
 * Token counts. `input` is every input token, cached ones included; `cachedInput` and `cacheWrite`
 * say how many of them were read from or written to a prompt cache. `output` includes `reasoning`.
 */
export interface Usage {
  readonly input: number;
  readonly output: number;
  readonly cachedInput: number;
  readonly cacheWrite: number;
  readonly reasoning: number;
  /** What an operation sold in other units than tokens consumed (images, audio, characters, calls). */
  readonly units?: BilledUnits | undefined;
}

/** The units besides tokens that operations are priced in (pricing: per_image, per_audio_minute, per_mchar, per_request). */
export interface BilledUnits {
  readonly images?: number;
  readonly audioSeconds?: number;
  /** Input characters (speech). */
  readonly characters?: number;
  /** Calls billed per call (rerank, moderations). */
  readonly requests?: number;
}

export function usageOf(input: number, output: number, more: Partial<Omit<Usage, 'input' | 'output'>> = {}): Usage {
  return { input, output, cachedInput: more.cachedInput ?? 0, cacheWrite: more.cacheWrite ?? 0, reasoning: more.reasoning ?? 0, ...(more.units === undefined ? {} : { units: more.units }) };
}

/** What an operation that generates nothing (a token count) consumes, as billed. */
export const NO_USAGE: Usage = { input: 0, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 };

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cachedInput: a.cachedInput + b.cachedInput,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    reasoning: a.reasoning + b.reasoning,
    ...(a.units === undefined && b.units === undefined ? {} : { units: addUnits(a.units ?? {}, b.units ?? {}) }),
  };
}

function addUnits(a: BilledUnits, b: BilledUnits): BilledUnits {
  const sum: { -readonly [K in keyof BilledUnits]: number } = {};
  for (const unit of ['images', 'audioSeconds', 'characters', 'requests'] as const) {
    if (a[unit] !== undefined || b[unit] !== undefined) sum[unit] = (a[unit] ?? 0) + (b[unit] ?? 0);
  }
  return sum;
}

export interface GeneratedChoice {
  readonly index: number;
  /** Text, reasoning and tool calls, in the order the model produced them. */
  readonly content: readonly ContentPart[];
  readonly finish: Finish;
  readonly logprobs: readonly TokenLogprob[] | undefined;
}

export interface GenerationResult {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly choices: readonly GeneratedChoice[];
  /** null when the upstream reported none; the meter stage then counts. */
  readonly usage: Usage | null;
}

/**
 * One stream, normalised: `start` first; then, per choice, text, reasoning and tool-call parts as
 * they arrive; each choice's `finish`; `usage` at most once, at the end. A failure mid-stream is
 * thrown from the iterator as a GatewayError, never smuggled into a finish reason.
 */
export type StreamPart =
  | { readonly type: 'start'; readonly id: string; readonly created: number }
  | { readonly type: 'text'; readonly choice: number; readonly text: string; readonly logprobs?: readonly TokenLogprob[] }
  | { readonly type: 'reasoning'; readonly choice: number; readonly text: string }
  | { readonly type: 'reasoning_signature'; readonly choice: number; readonly signature: string }
  | { readonly type: 'redacted_reasoning'; readonly choice: number; readonly data: string }
  /** `index` counts the choice's tool calls from 0, in the order they began. */
  | { readonly type: 'tool_call_start'; readonly choice: number; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: 'tool_call_delta'; readonly choice: number; readonly index: number; readonly arguments: string }
  | { readonly type: 'tool_call_end'; readonly choice: number; readonly index: number }
  | { readonly type: 'finish'; readonly choice: number; readonly finish: Finish }
  | { readonly type: 'usage'; readonly usage: Usage };

/** A request with every optional field left to the model, for callers that set only a few. */
export function generationRequest(fields: Pick<GenerationRequest, 'model' | 'messages'> & Partial<GenerationRequest>): GenerationRequest {
  return {
    tools: [],
    toolChoice: undefined,
    parallelToolCalls: undefined,
    responseFormat: undefined,
    maxOutputTokens: undefined,
    temperature: undefined,
    topP: undefined,
    topK: undefined,
    stop: [],
    n: 1,
    presencePenalty: undefined,
    frequencyPenalty: undefined,
    logitBias: undefined,
    seed: undefined,
    user: undefined,
    logprobs: undefined,
    reasoning: undefined,
    metadata: undefined,
    extensions: {},
    ...fields,
  };
}

/** The text of a message's text parts, joined: what a text-only upstream or a token count sees. */
export function textOf(parts: readonly ContentPart[]): string {
  let out = '';
  for (const part of parts) if (part.type === 'text') out += part.text;
  return out;
}
