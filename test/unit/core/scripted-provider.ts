import type { EmbeddingResult } from '../../../src/generation/embedding.js';
/**
 * An upstream adapter whose answers a test scripts call by call, standing in for a provider at the
 * `Provider` seam (the contract every real adapter implements). Its failures are made by the same
 * functions the real adapters use (providers/upstream-errors.ts), it honours the call's signal as
 * they do, and its waits run on whatever clock `setTimeout` is (virtual time in these tests).
 */
import type { CatalogueModel } from '../../../src/catalogue/catalogue.js';
import type { GatewayError } from '../../../src/core/errors.js';
import { usageOf, type GenerationResult, type StreamPart, type Usage } from '../../../src/generation/model.js';
import type { Capabilities, GenerationCall, Provider, RelayCall, RelayResponse, Transferred } from '../../../src/generation/provider.js';
import type { UpstreamModel } from '../../../src/catalogue/upstream-model.js';
import { upstreamHttpError, upstreamTransportError } from '../../../src/core/upstream-errors.js';

/** One stream item as scripted: a part, a wait, a failure thrown from the iterator, or silence until aborted. */
export type StreamStep = StreamPart | { readonly wait: number } | { readonly fail: GatewayError } | 'hang';

/** What one call does. */
export type Step =
  /** A whole answer (or, to a stream call, a stream of that text), after `after` ms. */
  | { readonly answer: string; readonly usage?: Usage | null; readonly after?: number }
  /** Refused (a whole call, or a stream before it is accepted), after `after` ms. */
  | { readonly fail: GatewayError; readonly after?: number }
  /** No answer until the call is aborted. */
  | 'hang'
  /** A stream accepted at once, then these items. */
  | { readonly stream: readonly StreamStep[] }
  /** A relayed stream of the upstream's own events. */
  | { readonly events: readonly (Readonly<Record<string, unknown>> | { readonly fail: GatewayError })[] };

export interface RecordedCall {
  readonly kind: 'generate' | 'stream' | 'relay';
  /** When the call was made, on the test's clock. */
  readonly at: number;
  readonly choices: number;
  readonly signal: AbortSignal;
  readonly model: string;
}

const CAPABILITIES: Capabilities = {
  upstream: 'a scripted upstream',
  maxChoicesPerCall: 1,
  maxTemperature: 2,
  maxStopSequences: null,
  logprobs: true,
  logitBias: true,
  penalties: true,
  topK: true,
  jsonWithoutSchema: true,
  forwardsExtensions: false,
  maxEmbeddingInputs: 0,
  embedsTokenIds: false,
};

export class ScriptedProvider implements Provider {
  readonly kind = 'openai';
  readonly origin: string;
  readonly calls: RecordedCall[] = [];
  private readonly queue: Step[] = [];
  /** Calls in flight, and the most there were at once. */
  inFlight = 0;
  mostInFlight = 0;

  constructor(
    readonly id: string,
    private readonly clock: () => number = Date.now,
    /** What a call does once the queued steps are used up. */
    public otherwise: Step = { answer: `answer from ${id}` },
    private readonly caps: Capabilities = CAPABILITIES,
  ) {
    this.origin = `https://${id}.example`;
  }

  /** Queues what the next calls do, in order. */
  next(...steps: Step[]): this {
    this.queue.push(...steps);
    return this;
  }

  /** An HTTP error as this upstream's adapter would raise it; `message`: the upstream's own (a 404 without one is for the path). */
  httpError(status: number, retryAfter?: string, message?: string): GatewayError {
    return upstreamHttpError({ providerId: this.id, status, retryAfter, message, type: undefined, code: undefined, secrets: [], body: `{"error":"${message ?? `status ${status}`}"}` });
  }

  /** A connection refused, as this upstream's adapter would raise it. */
  connectError(): GatewayError {
    return upstreamTransportError(this.id, Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
  }

  capabilities(): Capabilities {
    return this.caps;
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    const step = this.take('generate', call);
    return this.counted(async () => {
      if (step === 'hang') return this.waitAbort(call.signal);
      if ('fail' in step) {
        await this.wait(step.after ?? 0, call.signal);
        throw step.fail;
      }
      if ('answer' in step) {
        await this.wait(step.after ?? 0, call.signal);
        return this.result(step.answer, call.choices, step.usage === undefined ? usageOf(10, 5 * call.choices) : step.usage);
      }
      throw new Error(`a whole call was scripted a stream on ${this.id}`);
    });
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    const step = this.take('stream', call);
    if (step === 'hang') return this.counted(() => this.waitAbort(call.signal));
    if ('fail' in step) {
      await this.wait(step.after ?? 0, call.signal);
      throw step.fail;
    }
    if ('events' in step) throw new Error(`a stream call was scripted relayed events on ${this.id}`);
    const steps = 'stream' in step ? step.stream : textStream(step.answer, call.choices, step.usage === undefined ? usageOf(10, 5 * call.choices) : step.usage);
    if ('answer' in step) await this.wait(step.after ?? 0, call.signal);
    return this.play(steps, call.signal);
  }

  embed(): Promise<EmbeddingResult> {
    return Promise.reject(new Error('this scripted upstream embeds nothing'));
  }

  transfer(): Promise<Transferred> {
    return Promise.reject(new Error('this scripted upstream takes no bytes'));
  }

  relays(): boolean {
    return true;
  }

  async relay(call: RelayCall): Promise<RelayResponse> {
    const step = this.take('relay', call);
    if (step === 'hang') return this.counted(() => this.waitAbort(call.signal));
    if (typeof step === 'object' && 'fail' in step) throw step.fail;
    if (typeof step === 'object' && 'events' in step) {
      const self = this;
      return {
        stream: true,
        events: (async function* () {
          for (const event of step.events) {
            if ('fail' in event && typeof event.fail === 'object') throw event.fail;
            self.throwIfAborted(call.signal);
            yield event as Readonly<Record<string, unknown>>;
          }
        })(),
      };
    }
    return { stream: false, body: { id: 'relayed', answer: 'answer' in step ? step.answer : '' } };
  }

  async listModels(): Promise<UpstreamModel[]> {
    return [];
  }

  connections(): null {
    return null;
  }

  async close(): Promise<void> {}

  private take(kind: RecordedCall['kind'], call: { readonly signal: AbortSignal; readonly model: CatalogueModel; readonly choices?: number }): Step {
    this.calls.push({ kind, at: this.clock(), choices: call.choices ?? 1, signal: call.signal, model: call.model.upstreamModel });
    return this.queue.shift() ?? this.otherwise;
  }

  private async counted<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      return await work();
    } finally {
      this.inFlight--;
    }
  }

  private result(text: string, choices: number, usage: Usage | null): GenerationResult {
    return {
      id: `gen-${this.id}-${this.calls.length}`,
      created: 1_700_000_000 + this.calls.length,
      choices: Array.from({ length: choices }, (_, index) => ({ index, content: [{ type: 'text' as const, text: `${text} #${index}` }], finish: { reason: 'stop' as const, raw: 'stop' }, logprobs: undefined })),
      usage,
    };
  }

  private async *play(steps: readonly StreamStep[], signal: AbortSignal): AsyncGenerator<StreamPart> {
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      for (const step of steps) {
        this.throwIfAborted(signal);
        if (step === 'hang') await this.waitAbort(signal);
        else if ('wait' in step) await this.wait(step.wait, signal);
        else if ('fail' in step) throw step.fail;
        else yield step;
      }
    } finally {
      this.inFlight--;
    }
  }

  /** As undici does: an aborted call fails as a transport error. */
  private throwIfAborted(signal: AbortSignal): void {
    if (signal.aborted) throw upstreamTransportError(this.id, signal.reason);
  }

  private wait(ms: number, signal: AbortSignal): Promise<void> {
    this.throwIfAborted(signal);
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(upstreamTransportError(this.id, signal.reason));
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private waitAbort(signal: AbortSignal): Promise<never> {
    return new Promise((_, reject) => {
      if (signal.aborted) reject(upstreamTransportError(this.id, signal.reason));
      else signal.addEventListener('abort', () => reject(upstreamTransportError(this.id, signal.reason)), { once: true });
    });
  }
}

/** A stream of one text part per choice, each choice's finish, and the usage. */
export function textStream(text: string, choices = 1, usage: Usage | null = usageOf(10, 5)): StreamStep[] {
  const steps: StreamStep[] = [{ type: 'start', id: 'stream-1', created: 1_700_000_000 }];
  for (let choice = 0; choice < choices; choice++) steps.push({ type: 'text', choice, text: `${text} #${choice}` });
  for (let choice = 0; choice < choices; choice++) steps.push({ type: 'finish', choice, finish: { reason: 'stop', raw: 'stop' } });
  if (usage !== null) steps.push({ type: 'usage', usage });
  return steps;
}

/** The registry of a test's providers. */
export function registryOf(...providers: Provider[]): { get(id: string): Provider | undefined } {
  const byId = new Map(providers.map((provider) => [provider.id, provider]));
  return { get: (id) => byId.get(id) };
}

