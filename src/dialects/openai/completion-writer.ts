import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Completion, CompletionChoice, Usage } from '../../completions/completion.js';
import type { GatewayError } from '../../errors.js';
import { openAIErrorObject } from './errors.js';

function wireUsage(usage: Usage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
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

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;
const DONE = 'data: [DONE]\n\n';

/**
 * Writes a completion stream as OpenAI's data-only server-sent events. Each chunk is a whole
 * `text_completion` object; the constant part of it is serialised once per stream.
 */
export class OpenAICompletionStreamWriter {
  private chunkPrefix = '';
  private readonly usageSuffix: string;
  private started = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly publicModel: string,
    private readonly includeUsage: boolean,
    private readonly signal: AbortSignal,
  ) {
    // With include_usage, OpenAI puts `"usage": null` on every chunk but the usage chunk.
    this.usageSuffix = includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  }

  get hasStarted(): boolean {
    return this.started;
  }

  /** Sends the status line and headers; the body follows chunk by chunk. */
  open(id: string, created: number): void {
    this.chunkPrefix = `data: {"id":${JSON.stringify(id)},"object":"text_completion","created":${created},"model":${JSON.stringify(this.publicModel)},"choices":[`;
    if (!this.started) {
      this.started = true;
      this.res.writeHead(200, SSE_HEADERS);
    }
  }

  async choice(choice: CompletionChoice): Promise<void> {
    await this.write(this.chunkPrefix + JSON.stringify(wireChoice(choice)) + ']' + this.usageSuffix);
  }

  async usage(usage: Usage): Promise<void> {
    if (!this.includeUsage) return;
    await this.write(`${this.chunkPrefix}],"usage":${JSON.stringify(wireUsage(usage))}}\n\n`);
  }

  /** An error after the stream began: OpenAI's SDKs raise `data: {"error":…}` as an APIError. */
  async error(error: GatewayError): Promise<void> {
    await this.write(`data: ${JSON.stringify({ error: openAIErrorObject(error) })}\n\n`);
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end(DONE);
  }

  /** Waits for the socket to drain when the client reads slower than the upstream writes. */
  private async write(data: string): Promise<void> {
    if (this.res.destroyed) return;
    if (!this.res.write(data)) await once(this.res, 'drain', { signal: this.signal });
  }
}
