import type { CatalogueModel } from '../../catalogue/catalogue.js';
import type { UpstreamModel } from '../../catalogue/upstream-model.js';
import type { ProviderConfig } from '../../config/config-file.js';
import { upstreamTransportError, unreadableUpstream } from '../../core/upstream-errors.js';
import { unsupported } from '../../generation/capabilities.js';
import type { EmbeddingResult } from '../../generation/embedding.js';
import type { GenerationResult, StreamPart } from '../../generation/model.js';
import type { Capabilities, EmbedCall, GenerationCall, RelayCall, RelayResponse, WireOperation } from '../../generation/provider.js';
import { isObject } from '../../wire/json.js';
import { relayedMessagesEvents } from '../anthropic.js';
import { listAllPages, listField, optionalString, upstreamModel } from '../model-listing.js';
import { TranslatingProvider } from '../translating-provider.js';
import { UpstreamClient, type Json, type ResponseBody } from '../upstream-client.js';
import { awsFailures, identityRefused, streamException } from './aws-errors.js';
import { CONVERSE_CAPABILITIES, converseRequest, converseResult, converseStreamParts, isAnthropicModel, type ConverseStreamEvent } from './converse.js';
import { COHERE_MAX_TEXTS, cohereBody, cohereResult, embeddingFamily, takesDimensions, titanBody, titanResult } from './embeddings.js';
import { eventStreamMessages, headerString } from './event-stream.js';
import { AwsIdentity, RequestSigner } from './request-signer.js';

/** The body version Bedrock's Anthropic models take, whatever API version the caller wrote for. */
const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Stateless between calls, so one serves every frame. */
const UTF8 = new TextDecoder();

const TITAN_CAPABILITIES: Capabilities = { ...CONVERSE_CAPABILITIES, maxEmbeddingInputs: 1 };
const COHERE_CAPABILITIES: Capabilities = { ...CONVERSE_CAPABILITIES, maxEmbeddingInputs: COHERE_MAX_TEXTS };

/** A runtime path naming the model percent-encoded, as the AWS SDK sends it (`:` as `%3A`, an ARN's `/` as `%2F`). */
export function modelPath(upstream: string, action: string): string {
  return `/model/${encodeURIComponent(upstream)}/${action}`;
}

/** A runtime host's leading label, FIPS or not, and the control plane's beside it. */
const RUNTIME_HOST = /^bedrock-runtime(-fips)?\./;

/**
 * The control plane (model lists) beside a runtime base URL: its leading `bedrock-runtime.` host
 * label becomes `bedrock.` (`https://bedrock-runtime.us-east-1.amazonaws.com` →
 * `https://bedrock.us-east-1.amazonaws.com`), `bedrock-runtime-fips.` becomes `bedrock-fips.`;
 * any other base URL (a proxy, a test's fake) is taken to serve both. A VPC endpoint of the
 * runtime serves no model lists: docs/clouds-bedrock.md says what discovery then needs.
 */
export function controlPlaneUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.hostname = url.hostname.replace(RUNTIME_HOST, (_label, fips: string | undefined) => `bedrock${fips ?? ''}.`);
  return url.toString().replace(/\/+$/, '');
}

/**
 * Amazon Bedrock, every request signed with SigV4: chat through the Converse API (converse.ts maps
 * it), Claude models relayed to Anthropic-dialect callers through InvokeModel, Titan and Cohere
 * embeddings through InvokeModel, and discovery from the control plane's foundation models and
 * inference profiles.
 */
export class BedrockProvider extends TranslatingProvider {
  readonly kind = 'bedrock';
  private readonly controlPlane: UpstreamClient;
  private readonly identity: AwsIdentity;
  private readonly region: string | undefined;
  private readonly maxFrameBytes: number;
  /** Beta features the operator turned on for every relayed Claude call; a caller's are added to them. */
  private readonly configuredBeta: string | undefined;

  constructor(config: ProviderConfig) {
    const identity = new AwsIdentity(config);
    const region = config.region ?? '';
    const failures = awsFailures(config.region);
    const runtime = new UpstreamClient(config, new RequestSigner(identity, region, new URL(config.base_url).origin), undefined, failures);
    super(config.id, runtime);
    this.identity = identity;
    const controlUrl = controlPlaneUrl(config.base_url);
    this.controlPlane = new UpstreamClient({ ...config, base_url: controlUrl }, new RequestSigner(identity, region, new URL(controlUrl).origin), undefined, failures);
    this.region = config.region;
    this.maxFrameBytes = config.max_response_bytes;
    this.configuredBeta = config.headers?.['anthropic-beta'];
  }

  capabilities(model: CatalogueModel): Capabilities {
    const family = embeddingFamily(model.upstreamModel);
    return family === 'titan' ? TITAN_CAPABILITIES : family === 'cohere' ? COHERE_CAPABILITIES : CONVERSE_CAPABILITIES;
  }

  async generate(call: GenerationCall): Promise<GenerationResult> {
    const body = await this.readAgainIfRefused(this.client.postJson(modelPath(call.model.upstreamModel, 'converse'), converseRequest(call.request, call.model), call));
    return converseResult(body, this.id);
  }

  async stream(call: GenerationCall): Promise<AsyncIterable<StreamPart>> {
    const response = await this.readAgainIfRefused(this.client.post(modelPath(call.model.upstreamModel, 'converse-stream'), converseRequest(call.request, call.model), call));
    return converseStreamParts(this.events(response.body), this.id);
  }

  /** An Anthropic-dialect caller on a Claude model keeps its own body: thinking signatures, cache control and betas. */
  override relays(operation: WireOperation, model: CatalogueModel): boolean {
    return operation === 'anthropic.messages' && isAnthropicModel(model.upstreamModel);
  }

  /**
   * InvokeModel with the caller's Messages body, less what Bedrock takes elsewhere or refuses: the
   * model is in the path, streaming is the `-with-response-stream` path, the API version is
   * Bedrock's own (the caller's `anthropic-version` is for Anthropic's API), and the caller's
   * `anthropic-beta` header becomes the body's `anthropic_beta` array.
   */
  override async relay(call: RelayCall): Promise<RelayResponse> {
    if (call.operation !== 'anthropic.messages') throw new Error(`provider ${this.id} does not relay ${call.operation}`);
    const { model: _model, stream: _stream, anthropic_version: _version, anthropic_beta: bodyBetas, ...rest } = call.body;
    const betas = new Set<string>();
    for (const list of [this.configuredBeta, call.headers?.['anthropic-beta']]) for (const beta of (list ?? '').split(',')) if (beta.trim() !== '') betas.add(beta.trim());
    if (Array.isArray(bodyBetas)) for (const beta of bodyBetas) if (typeof beta === 'string' && beta !== '') betas.add(beta);
    const body = { ...rest, anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...(betas.size > 0 ? { anthropic_beta: [...betas] } : {}) };
    const upstreamCall = { requestId: call.requestId, signal: call.signal, traceHeaders: call.traceHeaders };
    const upstream = call.model.upstreamModel;
    if (!call.stream) return { stream: false, body: await this.readAgainIfRefused(this.client.postJson(modelPath(upstream, 'invoke'), body, upstreamCall)) };
    const response = await this.readAgainIfRefused(this.client.post(modelPath(upstream, 'invoke-with-response-stream'), body, upstreamCall));
    return { stream: true, events: relayedMessagesEvents(this.anthropicEvents(response.body), this.client) };
  }

  /** Titan takes one text a call, Cohere up to 96 (the capabilities' limits keep calls within them). */
  override async embed(call: EmbedCall): Promise<EmbeddingResult> {
    const r = call.request;
    if (r.input.kind !== 'text') throw new Error('Bedrock embeds text only; the plan refuses token ids');
    const upstream = call.model.upstreamModel;
    const family = embeddingFamily(upstream);
    if (family === undefined) throw new Error(`provider ${this.id} embeds nothing with ${upstream}; the capabilities keep calls from coming here`);
    if (r.dimensions !== undefined && !takesDimensions(upstream)) {
      throw unsupported(call.model, this.capabilities(call.model), 'dimensions', '`dimensions` (Titan Text Embeddings v1 and Cohere Embed v3 make vectors of one size; Titan v2 and Cohere Embed v4 take it)');
    }
    const path = modelPath(upstream, 'invoke');
    const result =
      family === 'titan'
        ? titanResult(await this.readAgainIfRefused(this.client.postJson(path, titanBody(upstream, r.input.texts[0] ?? '', r), call)))
        : cohereResult(await this.readAgainIfRefused(this.client.postJson(path, cohereBody(upstream, r.input.texts, r), call)), r.input.texts.length);
    if (typeof result === 'string') throw unreadableUpstream(this.id, result);
    return result;
  }

  /**
   * The foundation models that answer on demand (text generators, and the Titan and Cohere
   * embedding models, marked so), then the inference profiles, each list's pages followed by
   * `nextToken`; the control plane's host is derived from base_url (controlPlaneUrl).
   */
  async listModels(signal: AbortSignal): Promise<UpstreamModel[]> {
    const page = (path: string) => (token: string | undefined) => `${path}${token === undefined ? '' : `&nextToken=${encodeURIComponent(token)}`}`;
    const foundation = await this.readAgainIfRefused(
      listAllPages(this.controlPlane, signal, page('/foundation-models?byInferenceType=ON_DEMAND'), (body) => ({
        models: listField(this.controlPlane, body, 'modelSummaries').flatMap((item) => foundationModel(item)),
        next: optionalString(body.nextToken),
      })),
    );
    const profiles = await this.readAgainIfRefused(
      listAllPages(this.controlPlane, signal, page('/inference-profiles?maxResults=1000'), (body) => ({
        models: listField(this.controlPlane, body, 'inferenceProfileSummaries').flatMap((item) => inferenceProfile(item)),
        next: optionalString(body.nextToken),
      })),
    );
    return [...foundation, ...profiles];
  }

  override async close(): Promise<void> {
    await Promise.all([super.close(), this.controlPlane.close()]);
  }

  /**
   * AWS's refusal of the identity itself (an unknown key, a wrong secret, an expired session token):
   * the credentials are looked for again at the next call. A model's access denied is not one: the
   * same credentials serve the other models, and reading them again would not help.
   */
  private readAgainIfRefused<T>(work: Promise<T>): Promise<T> {
    return work.catch((error: unknown) => {
      if (identityRefused(error)) this.identity.forget();
      throw error;
    });
  }

  /** The event frames of a stream as `{eventType, payload}`; an exception or error frame becomes a thrown GatewayError. */
  private async *events(body: ResponseBody): AsyncGenerator<ConverseStreamEvent> {
    try {
      for await (const message of eventStreamMessages(body, this.id, this.maxFrameBytes)) {
        const type = headerString(message, ':message-type');
        if (type === 'error') throw this.client.midStreamFailure(`${headerString(message, ':error-code') ?? 'error'}: ${headerString(message, ':error-message') ?? ''}`);
        const payload = this.client.parseEvent(UTF8.decode(message.body));
        if (type === 'exception') throw streamException(this.client, headerString(message, ':exception-type'), payload, this.region);
        if (type !== 'event') throw unreadableUpstream(this.id, `an event-stream frame of message type '${type ?? 'none'}'`);
        yield { eventType: headerString(message, ':event-type') ?? '', payload };
      }
    } catch (error) {
      throw upstreamTransportError(this.id, error);
    }
  }

  /** InvokeModelWithResponseStream's `chunk` events, each `{"bytes": base64 of one Anthropic stream event}`, as those events. */
  private async *anthropicEvents(body: ResponseBody): AsyncGenerator<Json> {
    for await (const { eventType, payload } of this.events(body)) {
      if (eventType !== 'chunk') continue;
      if (typeof payload.bytes !== 'string') throw unreadableUpstream(this.id, 'a chunk event without bytes');
      yield this.client.parseEvent(Buffer.from(payload.bytes, 'base64').toString('utf8'));
    }
  }
}

/** A foundation model that answers on demand with text (or, for Titan and Cohere, with embeddings); undefined for the rest. */
function foundationModel(item: Json): UpstreamModel[] {
  const id = optionalString(item.modelId);
  const outputs = Array.isArray(item.outputModalities) ? item.outputModalities : [];
  const inference = Array.isArray(item.inferenceTypesSupported) ? item.inferenceTypesSupported : [];
  if (id === undefined || !inference.includes('ON_DEMAND')) return [];
  const lifecycle = isObject(item.modelLifecycle) ? item.modelLifecycle.status : undefined;
  if (lifecycle !== undefined && lifecycle !== 'ACTIVE' && lifecycle !== 'LEGACY') return [];
  const embeds = outputs.includes('EMBEDDING') && embeddingFamily(id) !== undefined;
  if (!outputs.includes('TEXT') && !embeds) return [];
  return [upstreamModel({ id, displayName: optionalString(item.modelName), ownedBy: optionalString(item.providerName)?.toLowerCase(), description: undefined, contextWindow: undefined, maxOutputTokens: undefined, created: undefined, endpoints: embeds ? ['embeddings'] : undefined })];
}

/** An active inference profile: a system-defined one by its id (`us.anthropic.…`), an application one by its ARN (what the runtime takes). */
function inferenceProfile(item: Json): UpstreamModel[] {
  if (item.status !== undefined && item.status !== 'ACTIVE') return [];
  const id = item.type === 'APPLICATION' ? optionalString(item.inferenceProfileArn) : optionalString(item.inferenceProfileId);
  if (id === undefined) return [];
  return [upstreamModel({ id, displayName: optionalString(item.inferenceProfileName), description: optionalString(item.description), ownedBy: undefined, contextWindow: undefined, maxOutputTokens: undefined, created: undefined, endpoints: embeddingFamily(id) === undefined ? undefined : ['embeddings'] })];
}
