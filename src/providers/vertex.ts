import type { CatalogueModel } from '../catalogue/catalogue.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import type { ProviderConfig } from '../config/config-file.js';
import { GatewayError } from '../core/errors.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import type { EmbeddingResult } from '../generation/embedding.js';
import { usageOf, type GenerationResult, type StreamPart } from '../generation/model.js';
import type {
  Capabilities,
  ConnectionUse,
  EmbedCall,
  GenerationCall,
  ProviderAdapter,
  RelayCall,
  RelayResponse,
  TransferCall,
  TransferOperation,
  Transferred,
  WireOperation,
} from '../generation/provider.js';
import { isObject } from '../wire/json.js';
import { AnthropicProvider } from './anthropic.js';
import { GoogleServiceAccountAuth, keySourceOf } from './auth/google-service-account.js';
import { parseVertexModelId } from '../config/cloud-model-ids.js';
import { GeminiProvider } from './gemini.js';
import { listAllPages, listField, optionalString, upstreamModel } from './model-listing.js';
import { UpstreamClient, type Json } from './upstream-client.js';

/** The API version Claude on Vertex AI takes, in the body; never the caller's `anthropic-version`. */
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/**
 * Inputs one `:predict` call takes (Vertex AI's text-embeddings limits): 250 texts for the
 * text-embedding models, one for gemini-embedding models. Vertex also caps a request at 20,000
 * input tokens, which it reports as a 400 the caller sees.
 */
const TEXT_EMBEDDING_INPUTS = 250;
const GEMINI_EMBEDDING_INPUTS = 1;

/** Which publisher serves a model: the one its resource name says, else Anthropic's for `claude-…` (cloud-model-ids.ts). */
function isClaudeOnVertex(model: CatalogueModel): boolean {
  return parseVertexModelId(model.upstreamModel).publisher === 'anthropic';
}

/** The model as its publisher's path names it: a resource name's last part, `@version` kept. */
function vertexModelId(model: CatalogueModel): string {
  return parseVertexModelId(model.upstreamModel).model;
}

function embeddingInputsOf(modelId: string): number {
  if (modelId.startsWith('gemini-embedding')) return GEMINI_EMBEDDING_INPUTS;
  return /(?:^|-)embedding/.test(modelId) ? TEXT_EMBEDDING_INPUTS : 0;
}

/** Gemini on Vertex AI: Google's generateContent wire, under the project's publisher path; embeddings through `:predict`. */
class VertexGemini extends GeminiProvider {
  private readonly maxEmbeddingInputs: number | undefined;

  constructor(
    config: ProviderConfig,
    client: UpstreamClient,
    private readonly publisherPath: string,
  ) {
    super(config, client, `/v1/${publisherPath}`);
    this.maxEmbeddingInputs = config.max_embedding_inputs;
  }

  /** Each model's own embedding limit (an operator's max_embedding_inputs may lower it); generation as on Google's API. */
  override capabilities(model: CatalogueModel): Capabilities {
    const limit = embeddingInputsOf(vertexModelId(model));
    return {
      ...super.capabilities(model),
      upstream: limit > 0 ? "Vertex AI's text-embeddings API (:predict)" : "Vertex AI's Gemini generateContent API",
      maxEmbeddingInputs: this.maxEmbeddingInputs === undefined ? limit : Math.min(limit, this.maxEmbeddingInputs),
    };
  }

  /** Vertex names a model by its full resource name. */
  protected override resourceName(model: CatalogueModel): string {
    return `${this.publisherPath}/models/${vertexModelId(model)}`;
  }

  /** Vertex's countTokens takes the request's own fields at the top, not a generateContentRequest. */
  protected override countTokensBody(body: Readonly<Json>, upstreamName: string): Json {
    const inner = body.generateContentRequest;
    if (!isObject(inner)) return { ...body, model: upstreamName };
    const { contents, systemInstruction, tools, generationConfig } = inner;
    return { model: upstreamName, contents, systemInstruction, tools, generationConfig };
  }

  /**
   * `:predict` with one instance per text: `{content, task_type?, title?}`, and
   * `outputDimensionality` for `dimensions`. Vertex counts each input's tokens, which become usage.
   */
  override async embed(call: EmbedCall): Promise<EmbeddingResult> {
    const r = call.request;
    if (r.input.kind !== 'text') throw new Error('Vertex AI embeds text only; the plan refuses token ids');
    const instanceFields = { ...(r.taskType === undefined ? {} : { task_type: r.taskType }), ...(r.title === undefined ? {} : { title: r.title }) };
    const autoTruncate = r.extensions.autoTruncate ?? r.extensions.auto_truncate;
    const parameters = {
      ...(r.dimensions === undefined ? {} : { outputDimensionality: r.dimensions }),
      ...(typeof autoTruncate === 'boolean' ? { autoTruncate } : {}),
    };
    const body = { instances: r.input.texts.map((content) => ({ content, ...instanceFields })), ...(Object.keys(parameters).length > 0 ? { parameters } : {}) };
    const answer = await this.client.postJson(this.pathOf(call.model, 'predict'), body, call);
    const predictions = Array.isArray(answer.predictions) ? (answer.predictions as unknown[]) : undefined;
    if (predictions === undefined || predictions.length !== r.input.texts.length) {
      throw unreadableUpstream(this.id, `an answer with ${predictions?.length ?? 'no'} predictions for ${r.input.texts.length} instances`);
    }
    let tokens = 0;
    const embeddings = predictions.map((prediction) => {
      const embedding = isObject(prediction) && isObject(prediction.embeddings) ? prediction.embeddings : undefined;
      if (embedding === undefined || !Array.isArray(embedding.values)) throw unreadableUpstream(this.id, 'a prediction without embeddings.values');
      const count = isObject(embedding.statistics) ? embedding.statistics.token_count : undefined;
      if (typeof count === 'number') tokens += count;
      return { kind: 'float' as const, values: embedding.values as number[] };
    });
    return { embeddings, usage: usageOf(tokens, 0) };
  }
}

/** Claude on Vertex AI: the Messages wire through rawPredict, the model in the path, Vertex's API version in the body. */
class VertexClaude extends AnthropicProvider {
  protected override readonly passesCallerVersion = false;

  constructor(
    config: ProviderConfig,
    client: UpstreamClient,
    private readonly modelsPath: string,
  ) {
    super(config, client);
  }

  protected override messagesRequest(model: CatalogueModel, body: Json, stream: boolean): { path: string; body: Json } {
    const { model: _named, anthropic_version: _callers, ...rest } = body;
    return { path: `${this.modelsPath}/${vertexModelId(model)}:${stream ? 'streamRawPredict' : 'rawPredict'}`, body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest } };
  }

  /** Vertex counts tokens at one path for every Claude model, which the body names. */
  protected override countTokensRequest(model: CatalogueModel, body: Json): { path: string; body: Json } {
    return { path: `${this.modelsPath}/count-tokens:rawPredict`, body: { ...body, anthropic_version: VERTEX_ANTHROPIC_VERSION, model: vertexModelId(model) } };
  }
}

/**
 * Google Vertex AI: one provider for the two publishers it serves here, chosen per model by its
 * upstream id (`claude-…` is Anthropic's, the rest Google's). Both share one connection pool and one
 * service account's token; each speaks its vendor's wire, so a Gemini or an Anthropic caller is
 * relayed on its own publisher's models, as with the vendors themselves.
 */
export class VertexProvider implements ProviderAdapter {
  readonly kind = 'vertex';
  readonly id: string;
  private readonly client: UpstreamClient;
  private readonly gemini: VertexGemini;
  private readonly claude: VertexClaude;
  private readonly location: string;

  constructor(config: ProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    this.id = config.id;
    this.location = config.location ?? '';
    this.client = new UpstreamClient(config, new GoogleServiceAccountAuth(config.id, keySourceOf(config, env)));
    const location = `projects/${config.project}/locations/${config.location}`;
    this.gemini = new VertexGemini(config, this.client, `${location}/publishers/google`);
    this.claude = new VertexClaude(config, this.client, `/v1/${location}/publishers/anthropic/models`);
  }

  get origin(): string {
    return this.client.origin;
  }

  private publisherOf(model: CatalogueModel): ProviderAdapter {
    return isClaudeOnVertex(model) ? this.claude : this.gemini;
  }

  capabilities(model: CatalogueModel): Capabilities {
    return this.publisherOf(model).capabilities(model);
  }

  generate(call: GenerationCall): Promise<GenerationResult> {
    return this.advised(call.model, this.publisherOf(call.model).generate(call));
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    return this.advisedStream(call.model, await this.advised(call.model, this.publisherOf(call.model).stream(call)));
  }

  relays(operation: WireOperation | TransferOperation, model: CatalogueModel): boolean {
    return this.publisherOf(model).relays(operation, model);
  }

  async relay(call: RelayCall): Promise<RelayResponse> {
    const response = await this.advised(call.model, this.publisherOf(call.model).relay(call));
    return response.stream ? { stream: true, events: this.advisedStream(call.model, response.events) } : response;
  }

  embed(call: EmbedCall): Promise<EmbeddingResult> {
    return this.advised(call.model, this.publisherOf(call.model).embed(call));
  }

  transfer(call: TransferCall): Promise<Transferred> {
    return this.advised(call.model, this.publisherOf(call.model).transfer(call));
  }

  private advised<T>(model: CatalogueModel, work: Promise<T>): Promise<T> {
    return work.catch((error: unknown) => {
      throw this.failure(error, model);
    });
  }

  private async *advisedStream<T>(model: CatalogueModel, items: AsyncIterable<T>): AsyncGenerator<T> {
    try {
      yield* items;
    } catch (error) {
      throw this.failure(error, model);
    }
  }

  /**
   * Vertex's answers as a caller may see them. A publisher model the location does not serve (or
   * the project may not use) is the configuration's: a 502 naming the setting, which routing tries
   * on another deployment. No message shows the project and location path: it is the operator's.
   */
  private failure(error: unknown, model: CatalogueModel): unknown {
    if (!(error instanceof GatewayError)) return error;
    if (error.kind === 'upstream_rejected_request' && error.status === 404 && /\bPublisher Model\b/i.test(error.message)) {
      return new GatewayError(
        'upstream_error',
        `Vertex AI (provider '${this.id}') does not serve '${model.upstreamModel}' in location '${this.location}': check the upstream_model of model '${model.id}', and that the model is offered in that location and enabled for the project. This is a gateway configuration problem; see /status.`,
        { upstreamBody: error.upstreamBody, cause: error, upstreamFailure: 502, logOnceAs: `vertex_model:${this.id}:${model.upstreamModel}` },
      );
    }
    const message = withoutResourcePath(error.message);
    if (message === error.message) return error;
    return new GatewayError(error.kind, message, {
      param: error.param,
      status: error.status,
      ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
      ...(error.headers === undefined ? {} : { headers: error.headers }),
      ...(error.type === undefined ? {} : { type: error.type }),
      ...(error.code === undefined ? {} : { code: error.code }),
      ...(error.upstreamFailure === undefined ? {} : { upstreamFailure: error.upstreamFailure }),
      ...(error.upstreamBody === undefined ? {} : { upstreamBody: error.upstreamBody }),
      ...(error.logOnceAs === undefined ? {} : { logOnceAs: error.logOnceAs }),
      cause: error,
    });
  }

  /**
   * The publisher models of Model Garden (`GET /v1beta1/publishers/{google,anthropic}/models`,
   * every page): Google's Gemini and text-embedding models, and Anthropic's Claude models as
   * `{name}@{version}` (how Vertex calls them). Other publishers' models and Google's other
   * families (Imagen, Veo, Gemma, Chirp) speak other wires, so they are not listed.
   */
  async listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    // One after the other: a failure names the first page that failed, and the pages come in one order.
    const google = await this.listPublisher('google', signal);
    return [...google, ...(await this.listPublisher('anthropic', signal))];
  }

  private listPublisher(publisher: 'google' | 'anthropic', signal: AbortSignal): Promise<UpstreamModel[]> {
    const path = (token: string | undefined) => `/v1beta1/publishers/${publisher}/models?pageSize=1000${token === undefined ? '' : `&pageToken=${encodeURIComponent(token)}`}`;
    return listAllPages(this.client, signal, path, (page) => {
      // Proto3 JSON leaves an empty list out.
      const items = page.publisherModels === undefined ? [] : listField(this.client, page, 'publisherModels');
      const models = items.flatMap((item) => {
        const name = optionalString(item.name)?.replace(/^publishers\/[^/]+\/models\//, '');
        if (name === undefined) return [];
        const listed = publisher === 'anthropic' ? claudeId(name, optionalString(item.versionId)) : googleModel(name);
        return listed === undefined ? [] : [listed];
      });
      return { models, next: optionalString(page.nextPageToken) };
    });
  }

  connections(): ConnectionUse | null {
    return this.client.connections();
  }

  /** The two publishers share the one client, so it is closed once. */
  async close(): Promise<void> {
    await this.client.close();
  }
}

/** A resource name's project and location (`//aiplatform.googleapis.com/projects/P/locations/L/`, or a bare `projects/P`), left out of a message. */
const RESOURCE_PATH = /(?:\/\/[a-z0-9.-]*googleapis\.com\/)?(?:v1(?:beta1)?\/)?projects\/[^/\s'"`]+(?:\/locations\/[^/\s'"`]+)?\/?/g;

function withoutResourcePath(message: string): string {
  return message.replace(RESOURCE_PATH, '');
}

function claudeId(name: string, version: string | undefined): UpstreamModel | undefined {
  if (!name.startsWith('claude-')) return undefined;
  const id = version !== undefined && /^\d{8}$/.test(version) ? `${name}@${version}` : name;
  return upstreamModel({ id, displayName: undefined, description: undefined, contextWindow: undefined, maxOutputTokens: undefined, ownedBy: 'anthropic', created: undefined });
}

function googleModel(name: string): UpstreamModel | undefined {
  const embeds = embeddingInputsOf(name) > 0;
  if (!embeds && !name.startsWith('gemini-')) return undefined;
  return upstreamModel({
    id: name,
    displayName: undefined,
    description: undefined,
    contextWindow: undefined,
    maxOutputTokens: undefined,
    ownedBy: 'google',
    created: undefined,
    endpoints: embeds ? ['embeddings'] : undefined,
  });
}
