import type { EmbeddingResult } from '../../../../src/generation/embedding.js';
import type { CatalogueModel } from '../../../../src/catalogue/catalogue.js';
import type { GatewayError } from '../../../../src/core/errors.js';
import type { GenerationResult, StreamPart } from '../../../../src/generation/model.js';
import type { Capabilities, ConnectionUse, GenerationCall, Provider, RelayCall, RelayResponse, Transferred, WireOperation } from '../../../../src/generation/provider.js';
import type { UpstreamModel } from '../../../../src/catalogue/upstream-model.js';

type Json = Readonly<Record<string, unknown>>;

/** What the scripted upstream answers: generation-model parts (a translated upstream) or its own wire (a relayed one). */
export type Script =
  | { readonly kind: 'translated'; readonly result: GenerationResult; readonly parts: readonly StreamPart[]; readonly failure?: GatewayError }
  | { readonly kind: 'relayed'; readonly operation: WireOperation; readonly whole: Json; readonly events: readonly Json[]; readonly failure?: GatewayError };

/**
 * An upstream adapter that answers from a script, for driving a caller dialect's `plan` and `answer` in
 * process: the dialect, fan-out, answer and writer code are Sluice's own, only the upstream is
 * made up. It takes anything (every capability), so that what the dialect writes is what is tested.
 */
export class ScriptedProvider implements Provider {
  readonly id = 'scripted';
  readonly origin = 'http://upstream.invalid';
  readonly generated: GenerationCall[] = [];
  readonly relayedCalls: RelayCall[] = [];

  /** `kind`: the kind of upstream it stands for (reasoning signatures are sealed with it). */
  constructor(
    readonly kind: string,
    private readonly script: Script,
  ) {}

  capabilities(): Capabilities {
    return {
      upstream: 'a scripted upstream',
      maxChoicesPerCall: 8,
      maxTemperature: 2,
      maxStopSequences: null,
      logprobs: true,
      logitBias: true,
      penalties: true,
      topK: true,
      jsonWithoutSchema: true,
      forwardsExtensions: true,
      maxEmbeddingInputs: 0,
      embedsTokenIds: false,
    };
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    this.generated.push(call);
    const script = this.translated();
    if (script.failure !== undefined) throw script.failure;
    return script.result;
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    this.generated.push(call);
    const script = this.translated();
    return (async function* () {
      yield* script.parts;
      if (script.failure !== undefined) throw script.failure;
    })();
  }

  embed(): Promise<EmbeddingResult> {
    return Promise.reject(new Error('this scripted upstream embeds nothing'));
  }

  transfer(): Promise<Transferred> {
    return Promise.reject(new Error('this scripted upstream takes no bytes'));
  }

  relays(operation: WireOperation, _model: CatalogueModel): boolean {
    return this.script.kind === 'relayed' && this.script.operation === operation;
  }

  async relay(call: RelayCall): Promise<RelayResponse> {
    this.relayedCalls.push(call);
    if (this.script.kind !== 'relayed') throw new Error('this upstream is not relayed to');
    if (!call.stream) return { stream: false, body: structuredClone(this.script.whole) };
    const events = this.script.events.map((event) => structuredClone(event));
    const failure = this.script.failure;
    return {
      stream: true,
      events: (async function* () {
        yield* events;
        if (failure !== undefined) throw failure;
      })(),
    };
  }

  async listModels(): Promise<UpstreamModel[]> {
    return [];
  }

  connections(): ConnectionUse | null {
    return null;
  }

  async close(): Promise<void> {}

  private translated() {
    if (this.script.kind !== 'translated') throw new Error('this upstream is relayed to, not translated for');
    return this.script;
  }
}
