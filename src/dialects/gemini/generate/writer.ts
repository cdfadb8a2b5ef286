import type { AnswerSink } from '../../../generation/operation.js';
import type { GatewayError } from '../../../core/errors.js';
import type { ContentPart, Finish, GenerationResult, StreamPart, TokenLogprob, Usage } from '../../../generation/model.js';
import { ChunkedWriter, SSE_HEADERS, type StreamWriter } from '../../reply.js';
import { geminiDialect } from '../dialect.js';
import { sealReasoning, type SealedReasoning } from './thought-signatures.js';
import { toolArguments } from '../../../wire/json.js';

type Json = Record<string, unknown>;

/** Google's usage: candidatesTokenCount leaves out the thoughts, which the core counts as output. */
export function geminiUsage(usage: Usage): Json {
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output - usage.reasoning,
    totalTokenCount: usage.input + usage.output,
    ...(usage.cachedInput > 0 ? { cachedContentTokenCount: usage.cachedInput } : {}),
    ...(usage.reasoning > 0 ? { thoughtsTokenCount: usage.reasoning } : {}),
  };
}

/** Gemini's own words where an upstream used them; function calls end with STOP in Gemini. */
const GEMINI_FINISHES = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS', 'LANGUAGE']);

export function finishReasonOf(finish: Finish): string {
  switch (finish.reason) {
    case 'stop':
    case 'tool_calls':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return finish.raw !== undefined && GEMINI_FINISHES.has(finish.raw) ? finish.raw : 'SAFETY';
    case 'error':
      return finish.raw !== undefined && GEMINI_FINISHES.has(finish.raw) ? finish.raw : 'OTHER';
  }
}

function logprobsResult(tokens: readonly TokenLogprob[]): Json {
  return {
    topCandidates: tokens.map((t) => ({ candidates: t.top.map((alt) => ({ token: alt.token, logProbability: alt.logprob })) })),
    chosenCandidates: tokens.map((t) => ({ token: t.token, logProbability: t.logprob })),
  };
}

function averageLogprob(tokens: readonly TokenLogprob[]): number {
  return tokens.length === 0 ? 0 : tokens.reduce((sum, t) => sum + t.logprob, 0) / tokens.length;
}

/**
 * One candidate's content as Gemini parts, whole or as it streams. Thoughts are shown only when
 * the caller asked (includeThoughts), as `{text, thought: true}`; either way the reasoning blocks
 * an upstream signed are sealed into the `thoughtSignature` of the next part (thought-signatures.ts),
 * or of an empty text part if nothing follows, as Gemini puts its signatures on the parts after
 * its thoughts.
 */
export class CandidateParts {
  private out: Json[] = [];
  private thinking = '';
  private sealed: SealedReasoning[] = [];

  constructor(private readonly showThoughts: boolean) {}

  add(part: ContentPart): void {
    switch (part.type) {
      case 'text':
        this.text(part.text);
        return;
      case 'reasoning':
        if (part.redactedData !== undefined) this.redacted(part.redactedData);
        else {
          this.reasoning(part.text);
          if (part.signature !== undefined && part.signature !== '') this.signature(part.signature);
        }
        return;
      case 'tool_call':
        this.toolCall(part.id, part.name, part.arguments);
        return;
      default:
        return; // images and tool results are never generated
    }
  }

  reasoning(text: string): void {
    this.thinking += text;
    if (this.showThoughts && text !== '') this.out.push({ text, thought: true });
  }

  signature(signature: string): void {
    this.sealed.push({ text: this.thinking, signature });
    this.thinking = '';
  }

  redacted(data: string): void {
    this.sealed.push({ redacted: data });
  }

  text(text: string): void {
    this.visible({ text });
  }

  toolCall(id: string, name: string, args: string): void {
    this.visible({ functionCall: { id, name, args: toolArguments(args) } });
  }

  /** Signed reasoning with no part after it still goes back to the caller. */
  end(): void {
    if (this.sealed.length > 0) this.visible({ text: '' });
  }

  /** The parts made since the last call. */
  take(): Json[] {
    const parts = this.out;
    this.out = [];
    return parts;
  }

  private visible(part: Json): void {
    this.thinking = '';
    if (this.sealed.length > 0) {
      part.thoughtSignature = sealReasoning(this.sealed);
      this.sealed = [];
    }
    this.out.push(part);
  }
}

/** A whole GenerateContentResponse of a translated upstream, under the public model id. */
export function generateContentBody(result: GenerationResult, publicModel: string, responseId: string, usage: Usage, showThoughts: boolean): string {
  return JSON.stringify({
    candidates: result.choices.map((choice) => {
      const builder = new CandidateParts(showThoughts);
      for (const part of choice.content) builder.add(part);
      builder.end();
      const parts = builder.take();
      return {
        ...contentOf(parts, choice.finish),
        finishReason: finishReasonOf(choice.finish),
        index: choice.index,
        ...(choice.logprobs === undefined ? {} : { avgLogprobs: averageLogprob(choice.logprobs), logprobsResult: logprobsResult(choice.logprobs) }),
      };
    }),
    usageMetadata: geminiUsage(usage),
    modelVersion: publicModel,
    responseId,
  });
}

/** Gemini leaves the content out of a candidate its filters withheld; an empty answer is one empty text. */
function contentOf(parts: Json[], finish: Finish | undefined): Json {
  if (parts.length === 0 && finish?.reason === 'content_filter') return {};
  return { content: { parts: parts.length === 0 ? [{ text: '' }] : parts, role: 'model' } };
}

const JSON_ARRAY_HEADERS = { 'content-type': 'application/json; charset=UTF-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' } as const;

/**
 * Google's two stream framings: with `alt=sse`, `data: {chunk}\r\n\r\n` events and no end marker;
 * without it, one JSON array written as it grows (`[{chunk}\r\n,{chunk}\r\n]`). An error after
 * the stream began is one more chunk, `{"error": {code, message, status}}`, which the SDKs raise.
 * A relayed stream is written as the upstream sent it, under the public model id.
 */
export class GeminiStreamWriter extends ChunkedWriter implements StreamWriter {
  private chunks = 0;

  constructor(
    sink: AnswerSink,
    private readonly sse: boolean,
    protected readonly publicModel: string,
  ) {
    super(sink, sse ? SSE_HEADERS : JSON_ARRAY_HEADERS);
  }

  openEmpty(): void {
    this.start();
  }

  async relayed(chunk: Json): Promise<void> {
    await this.chunk(JSON.stringify({ ...chunk, modelVersion: this.publicModel }));
  }

  async close(_usage: Usage): Promise<void> {
    this.endStream();
  }

  async fail(error: GatewayError): Promise<void> {
    await this.chunk(geminiDialect.renderError(error, '').body);
    if (!this.sse) await this.write(']');
  }

  protected async chunk(json: string): Promise<void> {
    this.start();
    await this.write(this.sse ? `data: ${json}\r\n\r\n` : `${this.chunks++ === 0 ? '[' : ','}${json}\r\n`);
  }

  protected endStream(): void {
    this.endWith(this.sse ? '' : this.chunks === 0 ? '[]' : ']');
  }
}

interface CandidateStream {
  readonly parts: CandidateParts;
  /** The candidate's latest part, held back so that its finish reason can ride on it. */
  held: { part: Json; logprobs: readonly TokenLogprob[] | undefined } | undefined;
  readonly calls: Map<number, { id: string; name: string; args: string }>;
  finish: Finish | undefined;
}

/**
 * A translated stream as Gemini streams: one chunk per part, each candidate's last part held back
 * until its finish, so that the finish reason and (in the last chunk) the usage come on a chunk
 * with content. A chunk without content would make the SDKs' chat sessions drop the turn.
 */
export class TranslatedStreamWriter extends GeminiStreamWriter {
  private readonly candidates = new Map<number, CandidateStream>();

  constructor(
    sink: AnswerSink,
    sse: boolean,
    publicModel: string,
    private readonly responseId: string,
    private readonly showThoughts: boolean,
  ) {
    super(sink, sse, publicModel);
  }

  async part(part: StreamPart): Promise<void> {
    if (part.type === 'start' || part.type === 'usage') return;
    const c = this.candidate(part.choice);
    switch (part.type) {
      case 'text':
        c.parts.text(part.text);
        break;
      case 'reasoning':
        c.parts.reasoning(part.text);
        break;
      case 'reasoning_signature':
        c.parts.signature(part.signature);
        break;
      case 'redacted_reasoning':
        c.parts.redacted(part.data);
        break;
      case 'tool_call_start':
        c.calls.set(part.index, { id: part.id, name: part.name, args: '' });
        return;
      case 'tool_call_delta': {
        const call = c.calls.get(part.index);
        if (call !== undefined) call.args += part.arguments;
        return;
      }
      case 'tool_call_end':
        this.endCall(c, part.index);
        break;
      case 'finish':
        for (const index of [...c.calls.keys()]) this.endCall(c, index);
        c.parts.end();
        c.finish = part.finish;
        break;
    }
    const logprobs = part.type === 'text' ? part.logprobs : undefined;
    for (const made of c.parts.take()) {
      if (c.held !== undefined) await this.chunk(this.body([this.candidateJson(part.choice, c.held.part, c.held.logprobs, undefined)]));
      c.held = { part: made, logprobs };
    }
  }

  /** The held parts with their finish reasons, and the usage, in one last chunk. */
  override async close(usage: Usage): Promise<void> {
    const last = [...this.candidates.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => this.candidateJson(index, c.held?.part, c.held?.logprobs, c.finish ?? { reason: 'stop', raw: undefined }));
    await this.chunk(this.body(last, usage));
    this.endStream();
  }

  /** Parts already made go out before the error. */
  override async fail(error: GatewayError): Promise<void> {
    const held = [...this.candidates.entries()].filter(([, c]) => c.held !== undefined).map(([index, c]) => this.candidateJson(index, c.held!.part, c.held!.logprobs, c.finish));
    if (held.length > 0) await this.chunk(this.body(held));
    await super.fail(error);
  }

  private candidate(index: number): CandidateStream {
    let c = this.candidates.get(index);
    if (c === undefined) this.candidates.set(index, (c = { parts: new CandidateParts(this.showThoughts), held: undefined, calls: new Map(), finish: undefined }));
    return c;
  }

  private endCall(c: CandidateStream, index: number): void {
    const call = c.calls.get(index);
    if (call === undefined) return;
    c.calls.delete(index);
    c.parts.toolCall(call.id, call.name, call.args);
  }

  private candidateJson(index: number, part: Json | undefined, logprobs: readonly TokenLogprob[] | undefined, finish: Finish | undefined): Json {
    return {
      ...contentOf(part === undefined ? [] : [part], finish),
      ...(finish === undefined ? {} : { finishReason: finishReasonOf(finish) }),
      index,
      ...(logprobs === undefined ? {} : { logprobsResult: logprobsResult(logprobs) }),
    };
  }

  private body(candidates: Json[], usage?: Usage): string {
    return JSON.stringify({
      candidates,
      ...(usage === undefined ? {} : { usageMetadata: geminiUsage(usage) }),
      modelVersion: this.publicModel,
      responseId: this.responseId,
    });
  }
}
