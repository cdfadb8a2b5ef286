import { GatewayError } from '../../core/errors.js';
import { unreadableUpstream } from '../../core/upstream-errors.js';
import type { Usage } from '../../generation/model.js';
import { isObject } from '../json.js';
import { TextsByChoice, type EventReading } from '../relay-format.js';
import { usageFromOpenAI, usageFromResponses } from './usage.js';

type Json = Readonly<Record<string, unknown>>;

/** A chat message's or delta's text and tool-call arguments. */
export function messageText(message: unknown): string {
  if (!isObject(message)) return '';
  let text = typeof message.content === 'string' ? message.content : '';
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) if (isObject(call) && isObject(call.function)) text += String(call.function.arguments ?? '');
  }
  return text;
}

/** The generated texts of a whole chat completion. */
export function chatTexts(body: Json): string[] {
  return Array.isArray(body.choices) ? body.choices.map((choice: unknown) => messageText(isObject(choice) ? choice.message : undefined)) : [];
}

/** Chat and legacy completion chunks: every one has choices; the last usage counts (vLLM's continuous stats put running totals on every chunk). */
abstract class ChoicesReading implements EventReading {
  protected readonly texts = new TextsByChoice();
  reported: Usage | null = null;

  constructor(private readonly providerId: string) {}

  see(event: Json): void {
    if (!Array.isArray(event.choices)) throw unreadableUpstream(this.providerId, 'a stream event without choices');
    for (const choice of event.choices) if (isObject(choice)) this.texts.add(Number(choice.index ?? 0), this.textOf(choice));
    this.reported = usageFromOpenAI(event.usage) ?? this.reported;
  }

  generated(): readonly string[] {
    return this.texts.list();
  }

  byChoice(): readonly (string | undefined)[] {
    return this.texts.byChoice();
  }

  protected abstract textOf(choice: Json): string;
}

export class ChatReading extends ChoicesReading {
  protected textOf(choice: Json): string {
    return messageText(choice.delta);
  }
}

export class CompletionReading extends ChoicesReading {
  protected textOf(choice: Json): string {
    return typeof choice.text === 'string' ? choice.text : '';
  }
}

/** Responses API events: deltas carry text, the response events its usage; a failure event is passed on and recorded as the upstream's. */
export class ResponsesReading implements EventReading {
  private text = '';
  reported: Usage | null = null;
  failure: GatewayError | undefined;

  see(event: Json): void {
    if (typeof event.delta === 'string') this.text += event.delta;
    if (isObject(event.response)) this.reported = usageFromResponses(event.response.usage) ?? this.reported;
    if (event.type === 'response.failed' || event.type === 'error') this.failure ??= new GatewayError('upstream_error', 'The upstream provider failed during its answer.', { status: 502, upstreamFailure: 502 });
  }

  generated(): readonly string[] {
    return [this.text];
  }
}
