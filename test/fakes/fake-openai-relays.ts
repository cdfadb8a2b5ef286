import type { ServerResponse } from 'node:http';
import { isPlainObject, TINY_PNG_BASE64 } from './chat-model.js';
import { json, type RecordedRequest } from './fake-server.js';

/**
 * The JSON operations besides generation that OpenAI-compatible servers serve, for the OpenAI fake
 * (fake-openai-upstream.ts hands these paths here): rerank as vLLM and Jina answer it, or as Cohere
 * does; moderations and image generations as OpenAI answers them. Each checks its body as the
 * documented API does and refuses a bad value with that API's error body.
 *
 * Rerank (`/rerank`, `/v1/rerank`, `/v2/rerank`): `query` a non-empty string, `documents` a
 * non-empty array of strings or `{text}`, `top_n` an integer (≥ 0 for vLLM, where 0 means all;
 * ≥ 1 for Cohere), `return_documents` a boolean. A document's relevance is the share of the query's
 * words it holds (ties kept in input order); results come best first, cut to `top_n`. Models whose
 * name holds `cohere` answer in Cohere's shape (`{id, results:[{index, relevance_score}], meta:
 * {api_version, billed_units:{search_units}}}`, one search unit per 100 documents, a document only
 * with `return_documents: true`, errors `{id, message}`); the others in vLLM's and Jina's (`{id, model,
 * usage:{total_tokens}, results:[{index, document:{text}, relevance_score}]}`, documents unless
 * `return_documents: false`, the words of the query once per document and of every document as
 * tokens; errors in vLLM's body).
 *
 * Moderations (`/moderations`): `input` a string, an array of strings, or (omni models only) an
 * array of text and image_url parts; one result per string, one for a parts array. A text holding
 * "kill" is flagged for violence, one holding "hate" for hate; an image is never flagged. Models
 * whose name holds `omni` add `category_applied_input_types`.
 *
 * Images (`/images/generations`), by model family as OpenAI documents them: `gpt-image*` (sizes
 * 1024x1024, 1536x1024, 1024x1536, auto; quality low / medium / high / auto; `background`,
 * `output_format`, `output_compression`; no `response_format` or `style`: always b64_json, with
 * `usage`), `dall-e-3` (n 1 only; sizes 1024x1024, 1792x1024, 1024x1792; quality standard / hd;
 * `style`; each image with its `revised_prompt`) and any other as dall-e-2 (sizes 256x256,
 * 512x512, 1024x1024; quality standard). `prompt` is required and not empty; `n` 1..10;
 * `response_format` url (the default) or b64_json. Images are a 1×1 PNG, or its URL.
 */

export const RELAY_PATHS = new Set(['/rerank', '/v1/rerank', '/v2/rerank', '/v1/moderations', '/v1/images/generations']);

let served = 0;

export function fakeRelays(request: RecordedRequest, res: ServerResponse, models: ReadonlySet<string>): void {
  const body = request.body;
  if (!isPlainObject(body)) return openAIError(res, 400, 'We could not parse the JSON body of your request.', null, null);
  if (!models.has(body.model)) return openAIError(res, 404, `The model \`${String(body.model)}\` does not exist.`, 'model', 'model_not_found');
  served++;
  if (request.path.endsWith('/rerank')) return rerank(res, body);
  if (request.path === '/v1/moderations') return moderate(res, body);
  return generateImages(res, body);
}

function openAIError(res: ServerResponse, status: number, message: string, param: string | null, code: string | null): void {
  json(res, status, { error: { message, type: 'invalid_request_error', param, code } });
}

const words = (text: string): string[] => text.toLowerCase().split(/\W+/).filter(Boolean);

function rerank(res: ServerResponse, body: Record<string, any>): void {
  const cohere = String(body.model).includes('cohere');
  const refuse = (message: string) => (cohere ? json(res, 400, { id: `err-${served}`, message }) : json(res, 400, { error: { message, type: 'BadRequestError', param: null, code: 400 } }));
  if (typeof body.query !== 'string' || body.query === '') return refuse('invalid request: query must be a non-empty string');
  if (!Array.isArray(body.documents) || body.documents.length === 0) return refuse('invalid request: documents must be a non-empty list');
  const texts: string[] = [];
  for (const document of body.documents) {
    if (typeof document === 'string') texts.push(document);
    else if (isPlainObject(document) && typeof document.text === 'string') texts.push(document.text);
    else return refuse('invalid request: each document must be a string or an object with text');
  }
  const topN = body.top_n;
  if (topN != null && (!Number.isInteger(topN) || topN < (cohere ? 1 : 0))) return refuse(`invalid request: top_n must be an integer ${cohere ? '>= 1' : '>= 0'}`);
  if (body.return_documents != null && typeof body.return_documents !== 'boolean') return refuse('invalid request: return_documents must be a boolean');
  const query = words(body.query);
  const scored = texts.map((text, index) => {
    const held = new Set(words(text));
    return { index, text, relevance_score: query.filter((word) => held.has(word)).length / query.length };
  });
  scored.sort((x, y) => y.relevance_score - x.relevance_score || x.index - y.index);
  const kept = topN == null || topN === 0 ? scored : scored.slice(0, topN);
  const withDocuments = cohere ? body.return_documents === true : body.return_documents !== false;
  const results = kept.map(({ index, text, relevance_score }) => (withDocuments ? { index, document: { text }, relevance_score } : { index, relevance_score }));
  if (cohere) return json(res, 200, { id: `rerank-${served}`, results, meta: { api_version: { version: '2' }, billed_units: { search_units: Math.ceil(texts.length / 100) } } });
  const tokens = texts.reduce((sum, text) => sum + query.length + words(text).length, 0);
  json(res, 200, { id: `rerank-${served}`, model: body.model, usage: { total_tokens: tokens }, results });
}

const CATEGORIES = [
  'harassment', 'harassment/threatening', 'hate', 'hate/threatening', 'illicit', 'illicit/violent', 'self-harm', 'self-harm/intent',
  'self-harm/instructions', 'sexual', 'sexual/minors', 'violence', 'violence/graphic',
];

function moderate(res: ServerResponse, body: Record<string, any>): void {
  const omni = String(body.model).includes('omni');
  const input = body.input;
  if (input === undefined) return openAIError(res, 400, "Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  /** Each result's texts, and whether it had an image. */
  let items: { texts: string[]; images: number }[];
  if (typeof input === 'string') items = [{ texts: [input], images: 0 }];
  else if (Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'string')) items = input.map((text: string) => ({ texts: [text], images: 0 }));
  else if (Array.isArray(input) && input.length > 0 && input.every(isPlainObject)) {
    const texts: string[] = [];
    let images = 0;
    for (const [i, part] of input.entries()) {
      if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
      else if (part.type === 'image_url' && isPlainObject(part.image_url) && typeof part.image_url.url === 'string' && /^(https?:|data:image\/)/.test(part.image_url.url)) images++;
      else return openAIError(res, 400, `Invalid value for 'input[${i}]': expected a text or an image_url part.`, `input[${i}]`, 'invalid_value');
    }
    if (images > 0 && !omni) return openAIError(res, 400, `The model \`${body.model}\` does not support image inputs.`, 'input', 'invalid_value');
    items = [{ texts, images }];
  } else return openAIError(res, 400, "Invalid type for 'input': expected a string, an array of strings, or an array of objects.", 'input', 'invalid_type');
  const results = items.map(({ texts, images }) => {
    const said = new Set(texts.flatMap(words));
    const categories: Record<string, boolean> = {};
    const scores: Record<string, number> = {};
    const applied: Record<string, string[]> = {};
    for (const category of CATEGORIES) {
      const hit = (category === 'violence' && said.has('kill')) || (category === 'hate' && said.has('hate'));
      categories[category] = hit;
      scores[category] = hit ? 0.91 : 0.0001;
      applied[category] = [...(texts.length > 0 ? ['text'] : []), ...(images > 0 && (category === 'violence' || category === 'sexual' || category.startsWith('self-harm')) ? ['image'] : [])];
    }
    return { flagged: Object.values(categories).some(Boolean), categories, category_scores: scores, ...(omni ? { category_applied_input_types: applied } : {}) };
  });
  json(res, 200, { id: `modr-${served}`, model: body.model, results });
}

interface ImageFamily {
  readonly sizes: readonly string[];
  readonly qualities: readonly string[];
  readonly maxN: number;
}

const FAMILIES: Record<'gpt-image' | 'dall-e-3' | 'dall-e-2', ImageFamily> = {
  'gpt-image': { sizes: ['1024x1024', '1536x1024', '1024x1536', 'auto'], qualities: ['low', 'medium', 'high', 'auto'], maxN: 10 },
  'dall-e-3': { sizes: ['1024x1024', '1792x1024', '1024x1792'], qualities: ['standard', 'hd'], maxN: 1 },
  'dall-e-2': { sizes: ['256x256', '512x512', '1024x1024'], qualities: ['standard'], maxN: 10 },
};

/** Image tokens gpt-image-1 bills per square image, by quality. */
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160, auto: 1056 };

function supported(values: readonly string[]): string {
  const quoted = values.map((value) => `'${value}'`);
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(', ')}, and ${quoted.at(-1)}`;
}

function generateImages(res: ServerResponse, body: Record<string, any>): void {
  const model = String(body.model);
  const family = model.startsWith('gpt-image') ? 'gpt-image' : model.startsWith('dall-e-3') ? 'dall-e-3' : 'dall-e-2';
  const rules = FAMILIES[family];
  const unknown = (param: string) => openAIError(res, 400, `Unknown parameter: '${param}'.`, param, 'unknown_parameter');
  if (body.prompt === undefined) return openAIError(res, 400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  if (typeof body.prompt !== 'string') return openAIError(res, 400, "Invalid type for 'prompt': expected a string.", 'prompt', 'invalid_type');
  if (body.prompt === '') return openAIError(res, 400, "Invalid 'prompt': empty string. Expected a string with minimum length 1.", 'prompt', 'empty_string');
  const n = body.n ?? 1;
  if (!Number.isInteger(n) || n < 1 || n > 10) return openAIError(res, 400, `Invalid 'n': expected an integer between 1 and 10, but got ${JSON.stringify(n)} instead.`, 'n', 'invalid_value');
  if (n > rules.maxN) return openAIError(res, 400, `Invalid 'n': this model takes at most ${rules.maxN}.`, 'n', 'invalid_value');
  const size = body.size ?? rules.sizes[0];
  if (!rules.sizes.includes(size)) return openAIError(res, 400, `Invalid value: '${String(size)}'. Supported values are: ${supported(rules.sizes)}.`, 'size', 'invalid_value');
  const quality = body.quality ?? (family === 'gpt-image' ? 'auto' : 'standard');
  if (!rules.qualities.includes(quality)) return openAIError(res, 400, `Invalid value: '${String(quality)}'. Supported values are: ${supported(rules.qualities)}.`, 'quality', 'invalid_value');
  if (family === 'gpt-image') {
    if (body.response_format != null) return unknown('response_format');
    if (body.style != null) return unknown('style');
  } else {
    for (const param of ['background', 'output_format', 'output_compression', 'moderation']) if (body[param] != null) return unknown(param);
    if (body.response_format != null && body.response_format !== 'url' && body.response_format !== 'b64_json') {
      return openAIError(res, 400, `Invalid value: '${String(body.response_format)}'. Supported values are: 'url' and 'b64_json'.`, 'response_format', 'invalid_value');
    }
    if (body.style != null && family !== 'dall-e-3') return unknown('style');
  }
  const b64 = family === 'gpt-image' || body.response_format === 'b64_json';
  const created = 1_700_000_000 + served;
  const data = Array.from({ length: n }, (_, i) => ({
    ...(b64 ? { b64_json: TINY_PNG_BASE64 } : { url: `https://images.fake.example/img-${served}-${i}.png` }),
    ...(family === 'dall-e-3' ? { revised_prompt: `A picture of ${body.prompt}` } : {}),
  }));
  if (family !== 'gpt-image') return json(res, 200, { created, data });
  const textTokens = words(body.prompt).length;
  const outputTokens = OUTPUT_TOKENS[quality]! * n;
  json(res, 200, {
    created,
    background: body.background ?? 'opaque',
    data,
    output_format: body.output_format ?? 'png',
    quality: quality === 'auto' ? 'medium' : quality,
    size: size === 'auto' ? '1024x1024' : size,
    usage: { input_tokens: textTokens, input_tokens_details: { image_tokens: 0, text_tokens: textTokens }, output_tokens: outputTokens, total_tokens: textTokens + outputTokens },
  });
}
