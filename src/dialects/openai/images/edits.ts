import { usageOf, type Usage } from '../../../generation/model.js';
import { NO_OUTPUT, type Operation } from '../../../generation/operation.js';
import { countUsage } from '../../../generation/token-counter.js';
import type { UploadForm } from '../../../generation/upload.js';
import { bearerToken } from '../../../wire/key-carriers.js';
import { imagesUsage, tokenUsage, withUnits } from '../../../wire/openai/media-usage.js';
import { multipartBody } from '../../../wire/openai/multipart.js';
import { collectedReply, eventsReading, passedOnHeaders, passedOnReply } from '../../transfer-reply.js';
import { FormFields } from '../uploads/form.js';
import { transferCall, withPublicModel } from '../uploads/transfer.js';
import { invalid } from '../validation.js';

/** OpenAI's limit on an edit's `prompt` (gpt-image-1), in characters. */
export const MAX_EDIT_PROMPT_CHARACTERS = 32_000;

export interface ImageEditRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly form: UploadForm;
  readonly prompt: string;
  /** Images asked for. */
  readonly n: number;
}

/** Parses an image edit form: one or more `image` files (`image[]` as the SDKs send an array), `prompt`, `model`; the rest goes upstream as it came. */
export function parseImageEditForm(body: unknown): ImageEditRequest {
  const fields = new FormFields(body as UploadForm);
  const images = fields.files('image', 'image[]');
  if (images.length === 0) {
    if (fields.optional('image') !== undefined) throw invalid('image', "Invalid 'image': expected a file upload, but got a text field instead.", 'invalid_type');
    throw invalid('image', "Missing required parameter: 'image'.", 'missing_required_parameter');
  }
  const empty = images.find((image) => image.size === 0);
  if (empty !== undefined) throw invalid('image', `The file \`${empty.filename.slice(0, 200)}\` is empty.`, 'invalid_value');
  const prompt = fields.required('prompt');
  if ([...prompt].length > MAX_EDIT_PROMPT_CHARACTERS) throw invalid('prompt', `Invalid 'prompt': string too long. Expected a string with maximum length ${MAX_EDIT_PROMPT_CHARACTERS}.`, 'string_above_max_length');
  const model = fields.required('model');
  const n = fields.number('n', 1, 10) ?? 1;
  fields.oneOf('response_format', ['url', 'b64_json']);
  const stream = fields.boolean('stream') ?? false;
  return { model, stream, form: fields.form, prompt, n };
}

/**
 * `POST /v1/images/edits`: a multipart upload of images and a prompt, relayed to an
 * OpenAI-compatible server with `model` rewritten. The answer (`data` of `b64_json` or `url`) is
 * written whole; gpt-image-1's streamed partial images pass on as they come.
 */
export const imageEdits: Operation<ImageEditRequest> = {
  endpoint: 'images',
  dialect: 'openai',
  operation: 'images.edits',
  body: 'multipart',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseImageEditForm,
  outputBound: (request) => ({ ...NO_OUTPUT, units: { images: request.n } }),
  countUsage: async (request) => withUnits(await countUsage([request.prompt], []), { images: 0 }),
  plan: (request, target) => transferCall('openai.images.edits', request.model, target, () => multipartBody(request.form, { model: target.model.upstreamModel }), request.stream),
  answer(request, answer, { sink }) {
    if (answer.kind !== 'transferred') throw new Error('an image edit is always transferred');
    const transferred = answer.transferred;
    if (transferred.contentType.startsWith('text/event-stream')) {
      let reported: Usage | null = null;
      let images = 0;
      const events = eventsReading((event) => {
        if (event.type !== 'image_edit.completed') return;
        images++;
        reported = withUnits(tokenUsage(event.usage) ?? reported ?? usageOf(0, 0), { images });
      });
      return passedOnReply(transferred, sink, { see: (chunk) => events.see(chunk), get reported() { return reported; } }, passedOnHeaders(transferred.contentType));
    }
    return collectedReply(transferred, sink, (bytes, contentType) => {
      const { body, json } = withPublicModel(bytes, contentType, request.model);
      return { body, contentType, reported: json === undefined ? null : imagesUsage(json) };
    });
  },
};
