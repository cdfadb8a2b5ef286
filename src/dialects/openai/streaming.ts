import type { AnswerSink } from '../../generation/operation.js';
import type { GatewayError } from '../../core/errors.js';
import { newGenerationId } from '../../generation/fan-out.js';
import type { Usage } from '../../generation/model.js';
import { UPSTREAM_TEXT, type RelayedEvent } from '../../wire/relay-format.js';
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
  /** The stream's id and creation time, as its head says them. */
  protected streamId = '';
  protected created = 0;
  private readonly publicModelJson: string;

  constructor(
    sink: AnswerSink,
    protected readonly publicModel: string,
    protected readonly includeUsage: boolean,
    private readonly object: string,
    private readonly idPrefix: string,
  ) {
    super(sink);
    this.chunkSuffix = includeUsage ? ',"usage":null}\n\n' : '}\n\n';
    this.publicModelJson = JSON.stringify(publicModel);
  }

  /** Sends the status line and headers; the body follows chunk by chunk. */
  open(id: string, created: number): void {
    this.streamId = id;
    this.created = created;
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

  /**
   * A relayed chunk as the upstream wrote it, `model` rewritten in place to the public id and its
   * `usage` as the caller's stream has it (`as-is`; `null`: present and null; `absent`), framed as
   * an event; undefined when that cannot be done on its text alone (no upstream text, data of
   * several lines, a `model` written otherwise or more than once, a usage that is not null), and
   * the chunk must be serialised again.
   */
  protected upstreamEvent(chunk: RelayedEvent, usage: 'as-is' | 'null' | 'absent'): string | undefined {
    let text = chunk[UPSTREAM_TEXT];
    // Data of several lines (joined by \n) is written again as one.
    if (text === undefined || typeof chunk.model !== 'string' || text.includes('\n')) return undefined;
    // A key's quotes are never escaped and a string's always are: `"model"` unescaped right after `{` or `,` is a key; any
    // other spelling (escaped, spaced, repeated) is left to serialising again.
    const at = text.indexOf('"model"');
    const upstreamModel = JSON.stringify(chunk.model);
    const before = text.charCodeAt(at - 1);
    if (at < 1 || (before !== 123 /* { */ && before !== 44) /* , */ || text.indexOf('"model"', at + 7) !== -1 || text.indexOf('odel"') !== at + 2) return undefined;
    if (!text.startsWith(upstreamModel, at + 8) || text.charCodeAt(at + 7) !== 58 /* : */) return undefined;
    text = text.slice(0, at + 8) + this.publicModelJson + text.slice(at + 8 + upstreamModel.length);
    if (usage === 'as-is') return `data: ${text}\n\n`;
    if (!('usage' in chunk)) {
      if (usage === 'absent') return `data: ${text}\n\n`;
      const end = text.lastIndexOf('}');
      return `data: ${text.slice(0, end)},"usage":null${text.slice(end)}\n\n`;
    }
    if (chunk.usage !== null) return undefined;
    if (usage === 'null') return `data: ${text}\n\n`;
    const field = text.indexOf('"usage"');
    if (text.indexOf('"usage"', field + 7) !== -1) return undefined;
    if (text.startsWith(',"usage":null', field - 1)) return `data: ${text.slice(0, field - 1)}${text.slice(field + 12)}\n\n`;
    if (text.startsWith('"usage":null,', field)) return `data: ${text.slice(0, field)}${text.slice(field + 13)}\n\n`;
    return undefined;
  }

  protected async writeChoice(choiceJson: string): Promise<void> {
    await this.write(this.chunkPrefix + choiceJson + ']' + this.chunkSuffix);
  }
}
