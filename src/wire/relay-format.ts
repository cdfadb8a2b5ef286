import type { GatewayError } from '../core/errors.js';
import type { BilledUnits, Usage } from '../generation/model.js';
import type { WireOperation } from '../generation/provider.js';
import { ANTHROPIC_COUNT_TOKENS, ANTHROPIC_MESSAGES } from './anthropic/relay.js';
import { GEMINI_COUNT_TOKENS, GEMINI_GENERATE_CONTENT } from './gemini/relay.js';
import { OPENAI_CHAT, OPENAI_COMPLETIONS, OPENAI_IMAGES, OPENAI_MODERATIONS, OPENAI_RESPONSES } from './openai/relay.js';
import { RERANK } from './rerank/relay.js';

type Json = Readonly<Record<string, unknown>>;

/**
 * What routing asks of a relayed answer's wire: where a stream's first content is (a stream is held
 * until then, so that a failure before it can still be retried), which held event is a failure, and
 * whether a whole answer is readable at all (an unreadable one is the upstream's 502).
 */
export interface RelayFormat {
  isContent(event: Json): boolean;
  failureIn?(event: Json, providerId: string): GatewayError | undefined;
  /** What is wrong with a whole answer, or undefined when it can be read. */
  wholeProblem(body: Json): string | undefined;
}

const FORMATS: Readonly<Record<WireOperation, RelayFormat>> = {
  'openai.chat': OPENAI_CHAT,
  'openai.completions': OPENAI_COMPLETIONS,
  'openai.responses': OPENAI_RESPONSES,
  'anthropic.messages': ANTHROPIC_MESSAGES,
  'anthropic.count_tokens': ANTHROPIC_COUNT_TOKENS,
  'gemini.generateContent': GEMINI_GENERATE_CONTENT,
  'gemini.countTokens': GEMINI_COUNT_TOKENS,
  // Cohere's shape, relayed to any server that reranks (its caller's path is OpenAI-style: /v1/rerank).
  'openai.rerank': RERANK,
  'openai.moderations': OPENAI_MODERATIONS,
  'openai.images.generations': OPENAI_IMAGES,
};

export function relayFormat(operation: WireOperation): RelayFormat {
  return FORMATS[operation];
}

/** What a relayed whole answer says it consumed: tokens where the upstream counted them (else null), and what it sold besides. */
export interface Consumption {
  readonly usage: Usage | null;
  readonly units: BilledUnits;
}

/**
 * Where a relayed stream event keeps the upstream's own text of it (its SSE `data`, as it came), so
 * that the caller's writer, when the caller's wire is the upstream's, can pass that text on with
 * `model` rewritten in place instead of serialising the parsed event again. A symbol: JSON.stringify
 * and key listings never see it. Absent on an event Sluice made anew (that one is serialised again).
 */
export const UPSTREAM_TEXT: unique symbol = Symbol('upstream text');

/** A relayed stream event, parsed, with its upstream text where it is still the event's own. */
export type RelayedEvent = Json & { readonly [UPSTREAM_TEXT]?: string };

/** Keeps `text` on the event it was parsed from: not enumerable, so a copy of the event (a spread) or a comparison of events never carries it. */
export function keepUpstreamText(event: Json, text: string): RelayedEvent {
  return Object.defineProperty(event, UPSTREAM_TEXT, { value: text });
}

/** What a relayed stream's events say of usage and of the text generated, read event by event. */
export interface EventReading {
  see(event: Json): void;
  /** The upstream's usage so far; null while it reported none. */
  readonly reported: Usage | null;
  /** Generated text by choice, for Sluice's own count. */
  generated(): readonly string[];
  /** A failure the upstream sent as an event (and the stream passed on as it came). */
  readonly failure?: GatewayError | undefined;
}

/** Generated text by choice. */
export class TextsByChoice {
  private readonly texts: string[] = [];

  add(choice: number, text: string): void {
    this.texts[choice] = (this.texts[choice] ?? '') + text;
  }

  list(): string[] {
    return this.texts.filter((text) => text !== undefined);
  }

  /** By choice index, a choice with nothing generated left undefined. */
  byChoice(): readonly (string | undefined)[] {
    return this.texts;
  }
}
