import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import type { GenerationRequest, GenerationResult, StreamPart } from '../generation/model.js';
import type { EmbeddingResult } from '../generation/embedding.js';
import type { Capabilities, ConnectionUse, EmbedCall, GenerationCall, ProviderAdapter, RelayCall, RelayResponse, TransferCall, TransferOperation, Transferred, WireOperation } from '../generation/provider.js';
import type { UpstreamClient } from './upstream-client.js';

/** Output tokens asked for when neither the caller nor the model's configuration says (Anthropic requires a number). */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

function defaultMaxTokens(model: CatalogueModel): number {
  return model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

/**
 * The output limit a translated call asks for: the caller's, within the model's `max_output_tokens`
 * (clients ask for 64000 or 128000 of a model they do not know, which its upstream would refuse);
 * the model's own, or a default, when the caller set none.
 */
export function outputLimit(request: GenerationRequest, model: CatalogueModel): number {
  const asked = request.maxOutputTokens;
  if (asked === undefined) return defaultMaxTokens(model);
  return model.maxOutputTokens === undefined ? asked : Math.min(asked, model.maxOutputTokens);
}

/** An upstream reached by translating the generation model; one that takes its own vendor's wire from callers overrides `relays`. */
export abstract class TranslatingProvider implements ProviderAdapter {
  abstract readonly kind: string;

  protected constructor(
    readonly id: string,
    protected readonly client: UpstreamClient,
  ) {}

  abstract capabilities(model: CatalogueModel): Capabilities;
  abstract generate(call: GenerationCall): Promise<GenerationResult>;

  get origin(): string {
    return this.client.origin;
  }

  connections(): ConnectionUse | null {
    return this.client.connections();
  }

  abstract stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>>;
  abstract listModels(signal: AbortSignal): Promise<UpstreamModel[]>;

  relays(_operation: WireOperation | TransferOperation, _model: CatalogueModel): boolean {
    return false;
  }

  relay(_call: RelayCall): Promise<RelayResponse> {
    return Promise.reject(new Error(`provider ${this.id} relays no caller's wire format`));
  }

  /** Upstreams without an embedding API; the capabilities' `maxEmbeddingInputs` of 0 keeps calls from coming here. */
  embed(_call: EmbedCall): Promise<EmbeddingResult> {
    return Promise.reject(new Error(`provider ${this.id} embeds nothing`));
  }

  transfer(_call: TransferCall): Promise<Transferred> {
    return Promise.reject(new Error(`provider ${this.id} takes no caller's bytes`));
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
