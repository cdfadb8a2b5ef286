import type { CatalogueModel } from '../catalogue/catalogue.js';
import { endpointsByName } from '../catalogue/model-kind.js';
import type { UpstreamModel } from '../catalogue/upstream-model.js';
import type { ProviderConfig } from '../config/config-file.js';
import { GatewayError } from '../core/errors.js';
import { unreadableUpstream } from '../core/upstream-errors.js';
import type { EmbeddingResult } from '../generation/embedding.js';
import type { GenerationResult, StreamPart, Usage } from '../generation/model.js';
import type { Capabilities, EmbedCall, GenerationCall, RelayCall, RelayResponse, TransferCall, TransferOperation, Transferred, WireOperation } from '../generation/provider.js';
import { EntraAuth } from './auth/entra-token.js';
import { CredentialUnavailable } from './auth/token-endpoint.js';
import { listAllPages, listField, optionalCount, optionalString, upstreamModel } from './model-listing.js';
import { OPENAI_CAPABILITIES, OpenAICompatibleProvider } from './openai-compatible.js';
import { isObject } from '../wire/json.js';

const CAPABILITIES: Capabilities = {
  ...OPENAI_CAPABILITIES,
  upstream: "Azure OpenAI's chat completions API",
  // Azure refuses parameters OpenAI does not have ("Unrecognized request argument supplied: top_k").
  topK: false,
};

/** The first api-version whose deployments serve the Responses API; any later date does too. */
const FIRST_RESPONSES_VERSION = '2025-03-01';

/** The first api-version that takes `stream_options` (and so reports a stream's usage). */
const FIRST_STREAM_USAGE_VERSION = '2024-09-01';

/** The data-plane version that still lists a resource's deployments (later versions moved the list to the control plane). */
const DEPLOYMENTS_LIST_VERSION = '2022-12-01';

const NO_USAGE: Usage = { input: 0, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 };

/** Whether an api-version (`2024-10-21`, `2025-04-01-preview`) serves the Responses API: its date is the first one's or later. */
export function servesResponses(apiVersion: string): boolean {
  return apiVersion.slice(0, 10) >= FIRST_RESPONSES_VERSION;
}

/**
 * Where an OpenAI endpoint lives on an Azure OpenAI resource. With `api_version`, on the deployment:
 * `/openai/deployments/{deployment}/chat/completions?api-version=V`; the Responses API is not
 * deployment-scoped (`/openai/responses?api-version=V`, the deployment in `model`), and with a
 * version older than 2025-03-01-preview, which has none, it goes to the v1 API. Without
 * `api_version`, the v1 API: `/openai/v1/chat/completions`, the deployment in `model`.
 */
export function azurePath(apiVersion: string | undefined, endpoint: string, deployment: string): string {
  if (apiVersion === undefined) return `/openai/v1${endpoint}`;
  const version = `api-version=${encodeURIComponent(apiVersion)}`;
  if (endpoint === '/responses') return servesResponses(apiVersion) ? `/openai/responses?${version}` : '/openai/v1/responses';
  return `/openai/deployments/${encodeURIComponent(deployment)}${endpoint}?${version}`;
}

/**
 * Azure OpenAI: OpenAI's wire (the OpenAI-compatible adapter's mapping and relay) on a resource's
 * deployments, with the `api-key` header or a Microsoft Entra ID token. What is Azure's own: the
 * paths, the credentials, the deployment list, and its answers: a prompt its content filter refused
 * (a 400 `content_filter`) reaches a caller of another dialect as a refusal, an OpenAI caller as
 * Azure's own 400; a missing deployment or API version names the setting to fix. A caller's
 * `data_sources` (On Your Data) is refused unless the provider allows it.
 */
export class AzureOpenAIProvider extends OpenAICompatibleProvider {
  private readonly apiVersion: string | undefined;
  private readonly credentialSetting: string;
  private readonly allowsDataSources: boolean;

  constructor(config: ProviderConfig) {
    const apiVersion = config.api_version;
    super(config, {
      kind: 'azure',
      credentials: config.entra === undefined ? { 'api-key': config.api_key ?? '' } : new EntraAuth(config.id, config.entra),
      path: (endpoint, model) => azurePath(apiVersion, endpoint, model.upstreamModel),
      capabilities: CAPABILITIES,
      // Older versions refuse the field ("Unrecognized request argument supplied: stream_options").
      streamUsage: apiVersion === undefined || apiVersion.slice(0, 10) >= FIRST_STREAM_USAGE_VERSION,
    });
    this.apiVersion = apiVersion;
    this.allowsDataSources = config.allow_data_sources === true;
    this.credentialSetting = config.entra === undefined ? 'api_key' : "entra (the application's role on the resource: Cognitive Services OpenAI User)";
  }

  override relays(operation: WireOperation | TransferOperation, model: CatalogueModel): boolean {
    switch (operation) {
      case 'openai.chat':
      case 'openai.responses':
        return true;
      case 'openai.completions':
        // Only instruct deployments (gpt-35-turbo-instruct) serve legacy completions, and they serve nothing else: a model that serves chat is reached over chat.
        return !model.endpoints.has('chat');
      case 'openai.images.generations':
      case 'openai.images.edits':
      case 'openai.audio.transcriptions':
      case 'openai.audio.translations':
      case 'openai.audio.speech':
        return true;
      default:
        // Azure OpenAI has no rerank or moderations endpoint.
        return false;
    }
  }

  override async relay(call: RelayCall): Promise<RelayResponse> {
    this.refuseDataSources(call.body, call.model);
    const response = await this.advised(call.model, () => super.relay(call));
    // Responses streams check their own ending; chat and completions streams must finish a choice.
    if (!response.stream || call.operation === 'openai.responses') return response;
    return { stream: true, events: finishedChunks(response.events, this.id) };
  }

  override async generate(call: GenerationCall): Promise<GenerationResult> {
    this.refuseDataSources(call.request.extensions, call.model);
    return await this.advised(
      call.model,
      () => super.generate(call),
      () => ({ id: `filtered-${call.requestId}`, created: Math.floor(Date.now() / 1000), choices: refusedChoices(call.choices), usage: NO_USAGE }),
    );
  }

  override async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    this.refuseDataSources(call.request.extensions, call.model);
    const parts = await this.advised(call.model, () => super.stream(call), () => refusedStream(call));
    return finishedParts(parts, this.id);
  }

  override async embed(call: EmbedCall): Promise<EmbeddingResult> {
    this.refuseDataSources(call.request.extensions, call.model);
    return await this.advised(call.model, () => super.embed(call));
  }

  override transfer(call: TransferCall): Promise<Transferred> {
    return this.advised(call.model, () => super.transfer(call));
  }

  /** Azure's refusals that are the configuration's, said with the setting to fix; a prompt its content filter refused is `filtered`'s answer, where there is one. */
  private async advised<T>(model: CatalogueModel, work: () => Promise<T>, filtered?: () => T): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (filtered !== undefined && isPromptFiltered(error)) return filtered();
      throw this.failure(error, model);
    }
  }

  /**
   * On Your Data (`data_sources`) makes the resource itself query Azure AI Search, Cosmos DB or
   * blob storage with its own managed identity, on whatever index a caller names: any key holder
   * could read what the resource can. Refused unless the operator allows it on this provider.
   */
  private refuseDataSources(body: Readonly<Record<string, unknown>>, model: CatalogueModel): void {
    if (this.allowsDataSources) return;
    // `dataSources` is the 2023 previews' spelling of the same field.
    const field = ['data_sources', 'dataSources'].find((name) => body[name] !== undefined);
    if (field === undefined) return;
    throw new GatewayError('unsupported_parameter', `'${field}' (Azure OpenAI On Your Data) is not allowed on model '${model.id}' through this gateway.`, { param: field });
  }

  /**
   * The resource's deployments, each with the model it carries (`model`, which pricing reads), from
   * the data plane's `GET /openai/deployments?api-version=2022-12-01`: the one listing of
   * deployments an `api-key` or a data-plane token may read. (The v1 API's `/openai/v1/models` lists
   * the base models the resource could deploy, whose names are not what a request's `model` takes.)
   */
  override listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    return listAllPages(this.client, signal, () => `/openai/deployments?api-version=${DEPLOYMENTS_LIST_VERSION}`, (page) => {
      const models = listField(this.client, page, 'data').flatMap((item) => {
        const id = optionalString(item.id);
        // A deployment still being created (or failed) serves nothing yet.
        if (id === undefined || (item.status !== undefined && item.status !== 'succeeded')) return [];
        const vendorModel = optionalString(item.model);
        // A deployment's name is the operator's choice: an embedding (or speech, image) deployment is told by the model it carries.
        const endpoints = isInstruct(id, vendorModel) ? ['completions' as const] : endpointsByName(id) === undefined && vendorModel !== undefined ? endpointsByName(vendorModel) : undefined;
        return [upstreamModel({ id, vendorModel, ownedBy: optionalString(item.owner), created: optionalCount(item.created_at), contextWindow: undefined, displayName: undefined, description: undefined, maxOutputTokens: undefined, endpoints })];
      });
      return { models, next: undefined };
    });
  }

  /** Azure's refusals that are the configuration's, said so with the setting to fix; the rest as the shared client made them. */
  private failure(error: unknown, model: CatalogueModel): unknown {
    if (!(error instanceof GatewayError)) return error;
    const options = { upstreamBody: error.upstreamBody, cause: error };
    if (error.code === 'DeploymentNotFound') {
      return new GatewayError(
        'upstream_error',
        `The Azure OpenAI resource of provider '${this.id}' has no deployment named '${model.upstreamModel}': check the upstream_model of model '${model.id}' (it is the deployment's name). This is a gateway configuration problem; see /status.`,
        { ...options, upstreamFailure: 502, logOnceAs: `azure_deployment:${this.id}:${model.upstreamModel}` },
      );
    }
    if (error.kind === 'upstream_rejected_request' && error.status === 404 && error.code === '404') {
      const version = this.apiVersion === undefined ? 'the v1 API (no api_version)' : `api_version '${this.apiVersion}'`;
      return new GatewayError(
        'upstream_error',
        `The Azure OpenAI resource of provider '${this.id}' answered "Resource not found" for ${version}: check api_version and base_url (the resource's endpoint, https://<resource>.openai.azure.com). This is a gateway configuration problem; see /status.`,
        { ...options, upstreamFailure: 502, logOnceAs: `azure_path:${this.id}` },
      );
    }
    if (error.kind === 'upstream_auth_failed' && !(error instanceof CredentialUnavailable)) {
      const status = typeof error.upstreamFailure === 'number' ? error.upstreamFailure : 401;
      return new GatewayError('upstream_auth_failed', `The Azure OpenAI resource of provider '${this.id}' refused the gateway's credentials (HTTP ${status}): check ${this.credentialSetting} of provider '${this.id}'. This is a gateway configuration problem; see /status.`, {
        ...options,
        upstreamFailure: status,
      });
    }
    return error;
  }
}

/** Azure's 400 for a prompt its content filter refused: `{"error":{"code":"content_filter","innererror":{"code":"ResponsibleAIPolicyViolation",…}}}`. */
function isPromptFiltered(error: unknown): boolean {
  return error instanceof GatewayError && error.kind === 'upstream_rejected_request' && error.code === 'content_filter';
}

function refusedChoices(count: number): GenerationResult['choices'] {
  return Array.from({ length: count }, (_, index) => ({ index, content: [], finish: { reason: 'content_filter', raw: 'content_filter' } as const, logprobs: undefined }));
}

/** A refused prompt as a stream: no content, each choice finished as filtered, nothing used (Azure bills no filtered prompt). */
async function* refusedStream(call: GenerationCall): AsyncGenerator<StreamPart> {
  yield { type: 'start', id: `filtered-${call.requestId}`, created: Math.floor(Date.now() / 1000) };
  for (let choice = 0; choice < call.choices; choice++) yield { type: 'finish', choice, finish: { reason: 'content_filter', raw: 'content_filter' } };
  yield { type: 'usage', usage: NO_USAGE };
}

/** An instruct deployment (gpt-35-turbo-instruct) serves legacy completions only: Azure refuses it chat ("The chatCompletion operation does not work with the specified model"). */
function isInstruct(id: string, vendorModel: string | undefined): boolean {
  return /instruct/i.test(vendorModel ?? '') || /instruct/i.test(id);
}

/** A translated stream that ends without finishing any choice (Azure's prompt-filter chunk, then [DONE]) is an answer nobody can read, as with every adapter. */
async function* finishedParts(parts: AsyncIterable<StreamPart>, providerId: string): AsyncGenerator<StreamPart> {
  let finished = false;
  for await (const part of parts) {
    if (part.type === 'finish') finished = true;
    yield part;
  }
  if (!finished) throw unreadableUpstream(providerId, 'a stream that ended without a finish reason');
}

/** The same for a relayed chat or completions stream: an OpenAI caller would otherwise get a bare [DONE] and take it for an empty success. */
async function* finishedChunks(chunks: AsyncIterable<Readonly<Record<string, unknown>>>, providerId: string): AsyncGenerator<Readonly<Record<string, unknown>>> {
  let finished = false;
  for await (const chunk of chunks) {
    if (Array.isArray(chunk.choices) && chunk.choices.some((choice) => isObject(choice) && typeof choice.finish_reason === 'string')) finished = true;
    yield chunk;
  }
  if (!finished) throw unreadableUpstream(providerId, 'a stream that ended without a finish reason');
}
