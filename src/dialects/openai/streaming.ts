import type { AnswerSink } from '../../generation/operation.js';
import type { GatewayError } from '../../core/errors.js';
import { newGenerationId } from '../../generation/fan-out.js';
import type { Usage } from '../../generation/model.js';
import { ChunkedWriter, type StreamWriter } from '../reply.js';
import { openAIErrorObject } from './errors.js';

const DONE = 'data: [DONE]\n\n';

/**
 * OpenAI's data-only server-sent events, shared by the completion and chat streams: every chunk is
 * a whole object whose constant head (id, object, created, model) is serialised once per stream.
 */
export abstract class OpenAIStreamWriter extends ChunkedWriter implements StreamWriter {
  protected chunkPrefix = '';
  /** With include_usage, OpenAI puts `"usage": null` on every chunk but the usage chunk. */
  protected readonly chunkSuffix: string;
  /** Set once a usage chunk went out (a relayed one included), so that no second one follows. */
  protected usageWritten = false;

  constructor(
    sink: AnswerSink,
    protected readonly publicModel: string,
    protected readonly includeUsage: boolean,
    private readonly object: string,
    private readonly idPrefix: string,
  ) {
    super(sink);
    this.chunkSuffix = includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  }

  /** Sends the status line and headers; the body follows chunk by chunk. */
  open(id: string, created: number): void {
    this.chunkPrefix = `data: {"id":${JSON.stringify(id)},"object":"${this.object}","created":${created},"model":${JSON.stringify(this.publicModel)},"choices":[`;
    this.start();
  }

  openEmpty(): void {
    this.open(newGenerationId(this.idPrefix), Math.floor(Date.now() / 1000));
  }

  /** The usage chunk (`choices: []`), only when the caller asked for it; then `[DONE]`: one write with the end. */
  async close(usage: Usage): Promise<void> {
    if (this.includeUsage && !this.usageWritten) {
      this.usageWritten = true;
      this.endWith(`${this.chunkPrefix}],"usage":${JSON.stringify(this.wireUsage(usage))}}\n\n${DONE}`);
      return;
    }
    this.endWith(DONE);
  }

  protected abstract wireUsage(usage: Usage): unknown;

  /** An error after the stream began: OpenAI's SDKs raise `data: {"error":…}` as an APIError. */
  async fail(error: GatewayError): Promise<void> {
    await this.write(`data: ${JSON.stringify({ error: openAIErrorObject(error) })}\n\n`);
  }

  protected async writeChoice(choiceJson: string): Promise<void> {
    await this.write(this.chunkPrefix + choiceJson + ']' + this.chunkSuffix);
  }
}
