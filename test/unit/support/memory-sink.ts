import type { AnswerSink } from '../../../src/generation/operation.js';

/**
 * An AnswerSink that keeps what a reply wrote in memory: the status line, the headers (names in
 * lower case, as a caller reads them) and the body's chunks in order. It is stricter than an HTTP
 * response, so that a writer's mistake shows: a second head, or a write before the head or after
 * the end, throws. `leave()` is the caller going away.
 */
export class MemorySink implements AnswerSink {
  private readonly controller = new AbortController();
  private readonly headerValues = new Map<string, string>();
  private readonly chunks: (string | Uint8Array)[] = [];
  private statusCode: number | undefined;
  private isEnded = false;
  private wasCut = false;

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get started(): boolean {
    return this.statusCode !== undefined;
  }

  get ended(): boolean {
    return this.isEnded;
  }

  /** The status sent with the head; undefined until then. */
  get status(): number | undefined {
    return this.statusCode;
  }

  /** Every chunk written, the end's included. */
  get body(): string {
    return this.bytes.toString('utf8');
  }

  /** Every byte written, the end's included (a binary answer's). */
  get bytes(): Buffer {
    return Buffer.concat(this.chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)));
  }

  /** How many writes the body took (the end's included, if it had a chunk). */
  get writes(): number {
    return this.chunks.length;
  }

  /** A header as the caller would read it; undefined when it was not set. */
  header(name: string): string | undefined {
    return this.headerValues.get(name.toLowerCase());
  }

  /** The headers in the order they were first set. */
  headers(): ReadonlyMap<string, string> {
    return this.headerValues;
  }

  setHeader(name: string, value: string): void {
    if (this.started) throw new Error(`header ${name} set after the head was sent`);
    this.headerValues.set(name.toLowerCase(), value);
  }

  head(status: number, headers: Readonly<Record<string, string>>): void {
    if (this.started) throw new Error('the head was sent twice');
    this.statusCode = status;
    for (const [name, value] of Object.entries(headers)) this.headerValues.set(name.toLowerCase(), value);
  }

  async write(chunk: string | Uint8Array): Promise<void> {
    if (!this.started) throw new Error('a chunk was written before the head');
    if (this.isEnded) throw new Error('a chunk was written after the end');
    this.chunks.push(chunk);
  }

  end(chunk?: string | Uint8Array): void {
    if (this.isEnded) return;
    // As an HTTP response ended without a head: a bare 200.
    this.statusCode ??= 200;
    if (chunk !== undefined) this.chunks.push(chunk);
    this.isEnded = true;
  }

  /** Whether the answer was cut (a byte stream's failure). */
  get cutShort(): boolean {
    return this.wasCut;
  }

  cut(): void {
    this.wasCut = true;
    this.isEnded = true;
  }

  /** The caller goes away. */
  leave(): void {
    this.controller.abort();
  }
}
