/**
 * Drives the real Router over scripted providers on virtual time. A request is routed as the
 * pipeline routes one: `router.invoke` with a job whose `plan` asks each attempt's provider for a
 * whole answer, a stream or a relay. The answer is then written as the pipeline's write stage
 * writes it (`writeReply`, so a failure after the first byte is handled as in production; a
 * relayed stream is read out by hand) to an in-memory sink, and the answering attempt is ended
 * with what the write saw.
 */
import { Catalogue, type CatalogueModel } from '../../../src/catalogue/catalogue.js';
import { parseConfig } from '../../../src/config/config-file.js';
import { rendered, translatedStream, wholeReply } from '../../../src/dialects/reply.js';
import { toGatewayError, type GatewayError, type UpstreamFailureCondition } from '../../../src/core/errors.js';
import { splitChoices } from '../../../src/generation/fan-out.js';
import { generationRequest, textOf, type StreamPart, type Usage } from '../../../src/generation/model.js';
import type { Answer } from '../../../src/generation/operation.js';
import type { WireOperation } from '../../../src/generation/provider.js';
import { writeReply, type Written } from '../../../src/pipeline/write.js';
import { Router, type AnsweredAttempt, type RouteJob, type RouteOutcome } from '../../../src/routing/router.js';
import { NO_TELEMETRY } from '../../../src/telemetry/telemetry.js';
import { MemorySink } from '../support/memory-sink.js';
import { registryOf, ScriptedProvider, type Step } from './scripted-provider.js';
import { VirtualTime } from './virtual-time.js';

/**
 * A catalogue from a configuration file's text (every provider is `openai` at a dead address: nothing
 * connects). Provider `e` is configured but has no adapter in the harness's registry.
 */
export function catalogueOf(models: string, routing = ''): Catalogue {
  const providers = ['a', 'b', 'c', 'd', 'e'].map((id) => `  - { id: ${id}, kind: openai, base_url: 'http://127.0.0.1:9/v1' }`).join('\n');
  return Catalogue.fromConfig(parseConfig(`${routing}\nproviders:\n${providers}\nmodels:\n${models}`, 'unit.yaml'));
}

export interface RequestOptions {
  readonly stream?: boolean;
  readonly n?: number;
  /** Relay the caller's own wire (a stream of events when `stream`). */
  readonly relay?: WireOperation;
}

/** A failure after the answer began, as the meter stage records it and routing reads it. */
export interface StreamFailure {
  readonly status: number;
  readonly kind: string;
  readonly upstreamFailure?: UpstreamFailureCondition | undefined;
}

export interface Outcome {
  /** The failure routing or the write ended the request with, or undefined when the request was answered. */
  readonly error: GatewayError | undefined;
  /** How the request was routed: the attempts, the deployment and model that served it. */
  readonly route: RouteOutcome;
  /** What the caller was sent. */
  readonly sink: MemorySink;
  /** A failure after the first byte (sent to the caller as an error in the stream), else null. */
  readonly failure: StreamFailure | null;
  /** The stream parts or relayed events the caller was sent, or the whole answer's choices' text. */
  readonly delivered: unknown[];
  /** The provider whose answer the caller got. */
  readonly servedBy: string | undefined;
}

/** The usage a whole relayed answer or a relayed stream is metered at here: none is read from the events. */
const NOTHING_METERED: Written = { usage: null, counted: false, firstByteAt: null, failure: undefined, thrown: undefined };

export class RouterHarness {
  readonly time = new VirtualTime();
  readonly providers: Record<'a' | 'b' | 'c' | 'd', ScriptedProvider>;
  readonly router: Router;
  /** The router's random draws, in order; `random` supplies them. */
  draws = 0;

  constructor(
    readonly catalogue: Catalogue,
    public random: () => number = () => 0,
  ) {
    const clock = this.time.read;
    this.providers = { a: new ScriptedProvider('a', clock), b: new ScriptedProvider('b', clock), c: new ScriptedProvider('c', clock), d: new ScriptedProvider('d', clock) };
    this.router = new Router(registryOf(...Object.values(this.providers)), clock, () => {
      this.draws++;
      return this.random();
    });
  }

  model(id: string): CatalogueModel {
    const model = this.catalogue.get(id);
    if (model === undefined) throw new Error(`no model ${id} in the test's catalogue`);
    return model;
  }

  /** Queues steps on a provider. */
  script(provider: 'a' | 'b' | 'c' | 'd', ...steps: Step[]): void {
    this.providers[provider].next(...steps);
  }

  /** Starts a request; the caller then moves time on until it settles. `leave()` is the caller going away. */
  start(modelId: string, options: RequestOptions = {}): { outcome: Promise<Outcome>; leave: () => void } {
    const sink = new MemorySink();
    const delivered: unknown[] = [];
    const request = generationRequest({ model: modelId, messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], n: options.n ?? 1 });
    const stream = options.stream ?? false;
    const job = this.job(modelId, sink.signal, ({ model, provider }) => {
      if (options.relay !== undefined) return { kind: 'relay', operation: options.relay, body: { model: modelId }, stream };
      return { kind: 'generate', subCalls: splitChoices(request, provider.capabilities(model).maxChoicesPerCall), stream };
    });
    const outcome = (async (): Promise<Outcome> => {
      const routed = await this.router.invoke(job);
      // As the pipeline says how many attempts a request took.
      const attempts = routed.outcome.attempts.length + (routed.ok ? 1 : 0);
      if (attempts > 1) sink.setHeader('x-sluice-attempts', String(attempts));
      if (!routed.ok) return { error: routed.error, route: routed.outcome, sink, failure: null, delivered, servedBy: undefined };
      const written = await this.write(routed.answer, routed.answered, sink, delivered);
      const failure = written.failure === undefined ? null : { status: written.failure.status, kind: written.failure.kind, upstreamFailure: written.failure.upstreamFailure };
      return { error: written.thrown, route: routed.outcome, sink, failure, delivered, servedBy: routed.target.provider.id };
    })();
    return { outcome, leave: () => sink.leave() };
  }

  /** Runs a request to its end, moving virtual time from one timer to the next (at most `limitMs` in all). */
  async send(modelId: string, options: RequestOptions = {}, limitMs = 3_600_000): Promise<Outcome> {
    const { outcome } = this.start(modelId, options);
    return this.settled(outcome, limitMs);
  }

  /**
   * The provider of the deployment routing picks first for a request to `modelId`, with no upstream
   * call: the attempt's plan is Sluice answering itself, as a token count on an upstream without one.
   */
  async firstPick(modelId: string): Promise<string> {
    const routed = await this.router.invoke(this.job(modelId, new AbortController().signal, () => ({ kind: 'none' })));
    if (!routed.ok) throw routed.error;
    await routed.answered.end(NOTHING_METERED);
    return routed.target.provider.id;
  }

  /** Moves virtual time on, timer by timer, until `outcome` settles. */
  async settled(outcome: Promise<Outcome>, limitMs = 3_600_000): Promise<Outcome> {
    let done: Outcome | undefined;
    void outcome.then((result) => (done = result));
    const until = this.time.now + limitMs;
    for (;;) {
      await this.time.advance(0);
      if (done !== undefined) return done;
      const due = this.time.nextDue;
      if (due === undefined || due > until) throw new Error(`the request did not settle within ${limitMs} ms of virtual time`);
      await this.time.advance(due - this.time.now);
    }
  }

  /** Who answered each of `count` requests, one after another (each settles before the next starts). */
  async servedBy(modelId: string, count: number, options: RequestOptions = {}): Promise<string[]> {
    const served: string[] = [];
    for (let i = 0; i < count; i++) {
      const outcome = await this.send(modelId, options);
      if (outcome.error !== undefined) throw outcome.error;
      served.push(outcome.servedBy!);
    }
    return served;
  }

  /** Each deployment's state as /status shows it: `provider state`. */
  states(modelId: string): string[] {
    return this.router.deploymentStatus(this.model(modelId)).map((d) => `${d.provider} ${d.state}`);
  }

  private job(modelId: string, signal: AbortSignal, plan: RouteJob['plan']): RouteJob {
    return {
      model: this.model(modelId),
      requestId: 'r',
      fallback: (id) => this.catalogue.get(id),
      plan,
      signal,
      telemetry: NO_TELEMETRY.generation({ requestId: 'r', headers: {}, route: 'unit', operation: 'unit', model: modelId, stream: false, startedAt: 0 }),
      timer: { upstreamMs: 0 },
      promptTokens: () => Promise.resolve(42),
    };
  }

  /** Writes the answer as the write stage does and ends the attempt that gave it with what the write saw. */
  private async write(answer: Answer, answered: AnsweredAttempt, sink: MemorySink, delivered: unknown[]): Promise<Written> {
    // Sluice's own count of what was delivered, for an upstream that reported no usage.
    const count = async (): Promise<Usage> => ({ input: 42, output: delivered.length, cachedInput: 0, cacheWrite: 0, reasoning: 0 });
    let written: Written;
    switch (answer.kind) {
      case 'generated': {
        const { result } = answer;
        for (const choice of result.choices) delivered.push(choice.content);
        written = await writeReply(wholeReply(result.usage, () => result.choices.map((choice) => textOf(choice.content)), () => rendered('{}')), sink, count);
        break;
      }
      case 'generating': {
        const writer = new PartWriter(sink);
        const reply = translatedStream(answer.parts, writer, () => undefined, async (part) => {
          await writer.send(part);
          delivered.push(part);
        });
        written = await writeReply(reply, sink, count);
        break;
      }
      case 'relayed':
        sink.head(200, {});
        delivered.push(answer.body);
        sink.end();
        written = NOTHING_METERED;
        break;
      case 'relaying':
        // Read out by hand: a break once the caller has its 200 is the request's failure, thrown.
        sink.head(200, {});
        try {
          for await (const event of answer.events) delivered.push(event);
          sink.end();
          written = NOTHING_METERED;
        } catch (thrown) {
          written = { ...NOTHING_METERED, thrown: toGatewayError(thrown) };
        }
        break;
      case 'none':
      case 'embedded':
      case 'transferred':
        throw new Error(`the harness answers no ${answer.kind} call`);
    }
    await answered.end(written);
    return written;
  }
}

/** The smallest stream writer: its framing is irrelevant here, only when it started and how it ended. */
class PartWriter {
  private started = false;

  constructor(private readonly sink: MemorySink) {}

  get hasStarted(): boolean {
    return this.started;
  }

  async send(part: StreamPart): Promise<void> {
    if (!this.started) this.openEmpty();
    await this.sink.write(`${JSON.stringify(part)}\n`);
  }

  openEmpty(): void {
    this.started = true;
    this.sink.head(200, { 'content-type': 'text/event-stream' });
  }

  async close(): Promise<void> {
    this.sink.end();
  }

  async fail(error: GatewayError): Promise<void> {
    await this.sink.write(`error: ${error.kind}\n`);
  }
}
