import type { AnswerSink } from '../../../generation/operation.js';
import type { Usage } from '../../../generation/model.js';
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

  protected wireUsage(usage: Usage): unknown {
    return wireUsage(usage);
  }
}
