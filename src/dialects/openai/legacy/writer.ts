import type { AnswerSink } from '../../../generation/operation.js';
import type { Usage } from '../../../generation/model.js';
import type { RelayedEvent } from '../../../wire/relay-format.js';
import { OpenAIStreamWriter } from '../streaming.js';
import type { Completion, CompletionChoice } from './completion.js';

function wireUsage(usage: Usage) {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
  };
}

/** Upstream extras first, so the fields Sluice owns overwrite any of the same name. */
function wireChoice(choice: CompletionChoice) {
  return {
    ...choice.extra,
    index: choice.index,
    text: choice.text,
    logprobs: choice.logprobs,
    finish_reason: choice.finishReason,
  };
}

/** A whole `text_completion` object under the public model id. */
export function openAICompletionBody(completion: Completion, publicModel: string, usage: Usage): string {
  return JSON.stringify({
    ...completion.extra,
    id: completion.id,
    object: 'text_completion',
    created: completion.created,
    model: publicModel,
    choices: completion.choices.map(wireChoice),
    usage: wireUsage(usage),
  });
}

/** A completion stream: each chunk a whole `text_completion` object. */
export class OpenAICompletionStreamWriter extends OpenAIStreamWriter {
  constructor(sink: AnswerSink,
    publicModel: string, includeUsage: boolean) {
    super(sink, publicModel, includeUsage, 'text_completion', 'cmpl-');
  }

  async choice(choice: CompletionChoice): Promise<void> {
    await this.writeChoice(JSON.stringify(wireChoice(choice)));
  }

  /**
   * A relayed chunk of one choice: the upstream's own text where it says what Sluice would write
   * (the stream's id and time, the choice's index, text, logprobs and finish reason all present),
   * with `model` the public id and `usage` null or absent as the caller asked; else the choice,
   * written as Sluice writes it. What the upstream adds inside a choice reaches the caller either
   * way; what it adds beside the choices (`system_fingerprint`, say) only with its own text.
   */
  async relayed(chunk: RelayedEvent, choice: CompletionChoice): Promise<void> {
    const raw = choice.extra ?? {};
    const same =
      chunk.id === this.streamId && chunk.created === this.created && chunk.object === 'text_completion' &&
      raw.index === choice.index && raw.logprobs !== undefined && (raw.finish_reason === null || typeof raw.finish_reason === 'string');
    const passed = same ? this.upstreamEvent(chunk, this.includeUsage ? 'null' : 'absent') : undefined;
    if (passed === undefined) return this.choice(choice);
    await this.write(passed);
  }

  protected wireUsage(usage: Usage): unknown {
    return wireUsage(usage);
  }
}
