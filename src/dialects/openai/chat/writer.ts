import type { AnswerSink } from '../../../generation/operation.js';
import type { Finish, GenerationResult, StreamPart, TokenLogprob, Usage } from '../../../generation/model.js';
import type { RelayedEvent } from '../../../wire/relay-format.js';
import { OpenAIStreamWriter } from '../streaming.js';

export function wireChatUsage(usage: Usage) {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cachedInput },
    completion_tokens_details: { reasoning_tokens: usage.reasoning },
  };
}

/** OpenAI's chat finish reasons; an upstream's own failure of a choice still stopped it. */
function wireFinish(finish: Finish): string {
  return finish.reason === 'error' ? 'stop' : finish.reason;
}

function wireLogprobs(tokens: readonly TokenLogprob[] | undefined) {
  if (tokens === undefined) return null;
  return {
    content: tokens.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes ?? null,
      top_logprobs: t.top.map((alt) => ({ token: alt.token, logprob: alt.logprob, bytes: alt.bytes ?? null })),
    })),
  };
}

/** A whole `chat.completion` under the public model id. Reasoning text goes in `reasoning_content`, as vLLM and DeepSeek put it. */
export function chatCompletionBody(id: string, result: GenerationResult, publicModel: string, usage: Usage): string {
  return JSON.stringify({
    id,
    object: 'chat.completion',
    created: result.created,
    model: publicModel,
    choices: result.choices.map((choice) => {
      let content = '';
      let reasoning = '';
      const toolCalls = [];
      for (const part of choice.content) {
        if (part.type === 'text') content += part.text;
        else if (part.type === 'reasoning') reasoning += part.text;
        else if (part.type === 'tool_call') toolCalls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } });
      }
      return {
        index: choice.index,
        message: {
          role: 'assistant',
          content: content === '' && toolCalls.length > 0 ? null : content,
          refusal: null,
          ...(reasoning === '' ? {} : { reasoning_content: reasoning }),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: wireLogprobs(choice.logprobs),
        finish_reason: wireFinish(choice.finish),
      };
    }),
    usage: wireChatUsage(usage),
  });
}

/**
 * A `chat.completion.chunk` stream from stream parts: the role in each choice's first delta, then
 * content, reasoning and tool-call deltas (id and name on a call's first delta, argument fragments
 * after, under a stable index), and each choice's finish reason in a delta of its own.
 */
export class ChatStreamWriter extends OpenAIStreamWriter {
  /** The choices whose role went out (a translated stream's; a relayed one's are the upstream's). */
  private roleSent: Set<number> | undefined;

  constructor(sink: AnswerSink,
    publicModel: string, includeUsage: boolean) {
    super(sink, publicModel, includeUsage, 'chat.completion.chunk', 'chatcmpl-');
  }

  /** Writes one part as the chunk OpenAI would send for it. */
  async part(part: StreamPart): Promise<void> {
    switch (part.type) {
      case 'text':
        return this.delta(part.choice, { content: part.text }, wireLogprobs(part.logprobs));
      case 'reasoning':
        return this.delta(part.choice, { reasoning_content: part.text }, null);
      case 'tool_call_start':
        return this.delta(part.choice, { tool_calls: [{ index: part.index, id: part.id, type: 'function', function: { name: part.name, arguments: '' } }] }, null);
      case 'tool_call_delta':
        return this.delta(part.choice, { tool_calls: [{ index: part.index, function: { arguments: part.arguments } }] }, null);
      case 'finish':
        await this.ensureRole(part.choice);
        return this.writeChoice(`{"index":${part.choice},"delta":{},"logprobs":null,"finish_reason":"${wireFinish(part.finish)}"}`);
      default:
        // start, usage and the parts OpenAI's chat has no place for (signatures, redacted reasoning)
        return;
    }
  }

  /**
   * A relayed chunk of an OpenAI-compatible upstream, passed on under the public model id. Usage,
   * which Sluice always asks the upstream for, reaches only a caller that asked for it too.
   */
  async relayed(chunk: RelayedEvent): Promise<void> {
    const usageChunk = Array.isArray(chunk.choices) && chunk.choices.length === 0;
    if (!this.includeUsage) {
      if (usageChunk) return;
    } else if (usageChunk) {
      this.usageWritten = true;
    }
    // The upstream's own text where it serves as it is; else the chunk serialised again.
    const passed = this.upstreamEvent(chunk, this.includeUsage ? 'as-is' : 'absent');
    if (passed !== undefined) return this.write(passed);
    const { usage, ...rest } = chunk;
    await this.write(`data: ${JSON.stringify(this.includeUsage ? { ...chunk, model: this.publicModel } : { ...rest, model: this.publicModel })}\n\n`);
  }

  protected wireUsage(usage: Usage): unknown {
    return wireChatUsage(usage);
  }

  private async ensureRole(choice: number): Promise<void> {
    if (this.roleSent?.has(choice) === true) return;
    (this.roleSent ??= new Set()).add(choice);
    await this.writeChoice(`{"index":${choice},"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`);
  }

  private async delta(choice: number, delta: Record<string, unknown>, logprobs: unknown): Promise<void> {
    await this.ensureRole(choice);
    await this.writeChoice(JSON.stringify({ index: choice, delta, logprobs, finish_reason: null }));
  }
}
