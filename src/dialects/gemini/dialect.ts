import type { CatalogueModel, ModelSequence } from '../../catalogue/catalogue.js';
import { GatewayError } from '../../core/errors.js';
import type { Dialect } from '../dialect.js';
import { intParam } from '../paging.js';

/** Google's canonical status names by HTTP status. */
const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** The catalogue's operation names. */
type Endpoint = CatalogueModel['endpoints'] extends ReadonlySet<infer E> ? E : never;

/**
 * Gemini's generation methods for each Sluice operation: a chat model is a generateContent model;
 * a legacy completion is Gemini's legacy generateText.
 */
const METHODS: Record<Endpoint, readonly string[]> = {
  chat: ['generateContent', 'streamGenerateContent', 'countTokens'],
  completions: ['generateText'],
  responses: [],
  embeddings: ['embedContent', 'batchEmbedContents'],
  rerank: [],
  images: [],
  transcriptions: [],
  speech: [],
  moderations: [],
};

export function geminiModel(model: CatalogueModel) {
  return {
    name: `models/${model.id}`,
    // An alias's entry names the model it stands for as its base.
    baseModelId: model.aliasOf ?? model.id,
    ...(model.version === undefined ? {} : { version: model.version }),
    ...(model.displayName === undefined ? {} : { displayName: model.displayName }),
    ...(model.description === undefined ? {} : { description: model.description }),
    ...(model.contextWindow === undefined ? {} : { inputTokenLimit: model.contextWindow }),
    ...(model.maxOutputTokens === undefined ? {} : { outputTokenLimit: model.maxOutputTokens }),
    supportedGenerationMethods: [...model.endpoints].flatMap((endpoint) => METHODS[endpoint]),
  };
}

/** The page token is opaque to callers: the id of the last model of the previous page. */
function encodePageToken(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId }), 'utf8').toString('base64url');
}

function decodePageToken(token: string, models: ModelSequence): number {
  try {
    const { after } = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { after?: unknown };
    const index = typeof after === 'string' ? models.indexOf(after) : -1;
    if (typeof after === 'string' && index !== -1) return index + 1;
  } catch {
    // Reported below.
  }
  throw new GatewayError('invalid_request', "Invalid 'pageToken': it does not come from a previous page of this list.", { param: 'pageToken' });
}

export const geminiDialect: Dialect = {
  name: 'gemini',
  renderError: (error) => ({
    status: error.status,
    body: JSON.stringify({ error: { code: error.status, message: error.message, status: STATUS_NAMES[error.status] ?? 'UNKNOWN' } }),
  }),

  /** Catalogue order; `pageSize` default 50, values above 1000 are coerced to 1000, as Google does. */
  listModels(permitted, query) {
    const pageSize = Math.min(intParam(query, 'pageSize', 50, 0, Number.MAX_SAFE_INTEGER) || 50, 1000);
    const token = query.get('pageToken');
    const sequence = permitted.ordered();
    const start = token === null || token === '' ? 0 : decodePageToken(token, sequence);
    const models = sequence.models;
    const page = models.slice(start, start + pageSize);
    const end = start + page.length;
    return {
      models: page.map(geminiModel),
      ...(end < models.length && page.length > 0 ? { nextPageToken: encodePageToken(page.at(-1)!.id) } : {}),
    };
  },
  describeModel: geminiModel,
};
