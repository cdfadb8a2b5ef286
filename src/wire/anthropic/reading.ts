import type { Usage } from '../../generation/model.js';
import { isObject } from '../json.js';
import type { EventReading } from '../relay-format.js';
import { usageFromAnthropic, withUsageDelta } from './usage.js';

type Json = Readonly<Record<string, unknown>>;

/** The text blocks, thinking and tool inputs of an Anthropic message. */
export function contentText(content: unknown): string {
  let text = '';
  if (Array.isArray(content)) {
    for (const block of content) {
      if (!isObject(block)) continue;
      if (typeof block.text === 'string') text += block.text;
      else if (typeof block.thinking === 'string') text += block.thinking;
      else if (block.type === 'tool_use') text += JSON.stringify(block.input ?? {});
    }
  }
  return text;
}

/** Messages stream events: message_start holds the input and cache figures, message_delta cumulative ones (input too, on newer API versions). */
export class MessagesReading implements EventReading {
  private usage: Record<string, unknown> | undefined;
  private text = '';

  get reported(): Usage | null {
    return this.usage === undefined ? null : usageFromAnthropic(this.usage);
  }

  see(event: Json): void {
    if (event.type === 'message_start' && isObject(event.message) && isObject(event.message.usage)) this.usage = { ...event.message.usage };
    else if (event.type === 'message_delta' && isObject(event.usage)) this.usage = withUsageDelta(this.usage ?? {}, event.usage);
    else if (event.type === 'content_block_delta' && isObject(event.delta)) {
      const delta = event.delta;
      this.text += typeof delta.text === 'string' ? delta.text : typeof delta.thinking === 'string' ? delta.thinking : typeof delta.partial_json === 'string' ? delta.partial_json : '';
    }
  }

  generated(): readonly string[] {
    return [this.text];
  }
}
