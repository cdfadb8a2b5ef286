import type { CatalogueModel } from '../../../../src/catalogue/catalogue.js';
import { modelFromConfig } from '../../../../src/catalogue/catalogue.js';
import { modelSchema, providerSchema, type HostedTools } from '../../../../src/config/config-file.js';
import { anthropicCountTokens } from '../../../../src/dialects/anthropic/messages/operation.js';
import { inputTexts as anthropicInputTexts, parseMessagesRequest, toGenerationRequest as anthropicToGeneration } from '../../../../src/dialects/anthropic/messages/request.js';
import { anthropicDialect } from '../../../../src/dialects/anthropic/dialect.js';
import type { Dialect } from '../../../../src/dialects/dialect.js';
import { geminiDialect } from '../../../../src/dialects/gemini/dialect.js';
import { inputTexts as geminiInputTexts, parseCountTokensRequest, parseGenerateRequest } from '../../../../src/dialects/gemini/generate/request.js';
import { toGenerationRequest as geminiToGeneration } from '../../../../src/dialects/gemini/generate/translate.js';
import { parseChatRequest, toGenerationRequest as chatToGeneration } from '../../../../src/dialects/openai/chat/request.js';
import { openAIDialect } from '../../../../src/dialects/openai/dialect.js';
import { translate as translateCompletion } from '../../../../src/dialects/openai/legacy/operation.js';
import { parseCompletionRequest } from '../../../../src/dialects/openai/legacy/request.js';
import { parseResponsesRequest, toGenerationRequest as responsesToGeneration } from '../../../../src/dialects/openai/responses/request.js';
import { responsesTools } from '../../../../src/dialects/openai/responses/tools.js';
import { unsupported } from '../../../../src/generation/capabilities.js';
import type { Capabilities } from '../../../../src/generation/provider.js';
import type { WireRequest } from '../../../../src/generation/operation.js';
import { createProvider } from '../../../../src/providers/registry.js';
import type { REQUEST_DIRS } from './fixtures.js';

export type ProviderKind = 'openai' | 'anthropic' | 'gemini';

/** A catalogue model of a translating upstream of `kind`, under the public id the caller named. */
export function translatingModel(id: string, kind: ProviderKind, hostedTools?: HostedTools): CatalogueModel {
  return modelFromConfig(modelSchema.parse({ id, provider: kind, upstream_model: 'upstream-model', endpoints: ['chat', 'completions', 'responses'], hosted_tools: hostedTools }));
}

const capabilitiesByKind = new Map<ProviderKind, Capabilities>();

/** What the real adapter of `kind` says it can honour (nothing is connected: capabilities are constants). */
export function capabilitiesOf(kind: ProviderKind, model: CatalogueModel): Capabilities {
  let caps = capabilitiesByKind.get(kind);
  if (caps === undefined) {
    caps = createProvider(providerSchema.parse({ id: kind, kind, base_url: 'http://127.0.0.1:9', api_key: 'unused' }) as Parameters<typeof createProvider>[0]).capabilities(model);
    capabilitiesByKind.set(kind, caps);
  }
  return caps;
}

/** How one caller operation is put through the same checks: parse, what it keeps, what it translates to. */
export interface Subject {
  readonly operation: keyof typeof REQUEST_DIRS;
  readonly dialect: Dialect;
  /** The upstream a translation is for, unless a fixture says otherwise: one of another dialect. */
  readonly translatesFor: ProviderKind;
  parse(body: unknown, wire: WireRequest): unknown;
  /** The parsed value without the bodies it keeps (compared on their own). */
  view(parsed: unknown): unknown;
  /** The body a same-dialect upstream is relayed: the caller's own. */
  relayed(parsed: unknown): unknown;
  /** The typed body the dialect reads, where it keeps one apart from the relayed one. */
  typedBody?(parsed: unknown): unknown;
  translate?(parsed: unknown, model: CatalogueModel, kind: ProviderKind): unknown;
  counted?(parsed: unknown): unknown;
}

function without<T extends object>(value: T, ...keys: string[]): Partial<T> {
  const out = { ...value } as Record<string, unknown>;
  for (const key of keys) delete out[key];
  return out as Partial<T>;
}

type Parsed<F extends (...args: never[]) => unknown> = ReturnType<F>;

export const SUBJECTS: readonly Subject[] = [
  {
    operation: 'openai.completions',
    dialect: openAIDialect,
    translatesFor: 'anthropic',
    parse: (body) => parseCompletionRequest(body),
    view: (p) => without(p as Parsed<typeof parseCompletionRequest>, 'body'),
    relayed: (p) => (p as Parsed<typeof parseCompletionRequest>).body,
    translate: (p, model, kind) => translateCompletion(p as Parsed<typeof parseCompletionRequest>, model, capabilitiesOf(kind, model)),
  },
  {
    operation: 'openai.chat',
    dialect: openAIDialect,
    translatesFor: 'anthropic',
    parse: (body) => parseChatRequest(body),
    view: (p) => without(p as Parsed<typeof parseChatRequest>, 'body'),
    relayed: (p) => (p as Parsed<typeof parseChatRequest>).body,
    translate: (p) => chatToGeneration(p as Parsed<typeof parseChatRequest>),
  },
  {
    operation: 'openai.responses',
    dialect: openAIDialect,
    translatesFor: 'anthropic',
    parse: (body) => parseResponsesRequest(body),
    view: (p) => without(p as Parsed<typeof parseResponsesRequest>, 'body'),
    relayed: (p) => (p as Parsed<typeof parseResponsesRequest>).body,
    // A first turn: no stored conversation before it, so its own input is all the items.
    translate: (p, model, kind) => {
      const request = p as Parsed<typeof parseResponsesRequest>;
      const tools = responsesTools(request.body.tools ?? [], request.input);
      return { request: responsesToGeneration(request, request.input, model, kind, tools), droppedTools: tools.dropped };
    },
  },
  {
    operation: 'anthropic.messages',
    dialect: anthropicDialect,
    translatesFor: 'openai',
    parse: (body, wire) => parseMessagesRequest(body, wire),
    view: (p) => without(p as Parsed<typeof parseMessagesRequest>, 'body'),
    relayed: (p) => (p as Parsed<typeof parseMessagesRequest>).body,
    translate: (p, model) => anthropicToGeneration(p as Parsed<typeof parseMessagesRequest>, model),
  },
  {
    operation: 'anthropic.count_tokens',
    dialect: anthropicDialect,
    translatesFor: 'openai',
    parse: (body, wire) => anthropicCountTokens.parse(body, wire),
    view: (p) => without(p as { body: unknown }, 'body'),
    relayed: (p) => (p as { body: unknown }).body,
    counted: (p) => anthropicInputTexts((p as { body: Readonly<Record<string, unknown>> }).body),
  },
  {
    operation: 'gemini.generateContent',
    dialect: geminiDialect,
    translatesFor: 'openai',
    parse: (body, wire) => parseGenerateRequest(body, wire),
    view: (p) => without(p as Parsed<typeof parseGenerateRequest>, 'body', 'raw'),
    relayed: (p) => (p as Parsed<typeof parseGenerateRequest>).raw,
    typedBody: (p) => (p as Parsed<typeof parseGenerateRequest>).body,
    translate: (p, model, kind) => geminiToGeneration(p as Parsed<typeof parseGenerateRequest>, (param, what) => unsupported(model, capabilitiesOf(kind, model), param, what)),
  },
  {
    operation: 'gemini.countTokens',
    dialect: geminiDialect,
    translatesFor: 'openai',
    parse: (body, wire) => parseCountTokensRequest(body, wire),
    // What is counted is the point of a count: the normalised request stays in the view.
    view: (p) => without(p as Parsed<typeof parseCountTokensRequest>, 'raw'),
    relayed: (p) => (p as Parsed<typeof parseCountTokensRequest>).raw,
    counted: (p) => geminiInputTexts((p as Parsed<typeof parseCountTokensRequest>).body),
  },
];
