import { GatewayError } from '../../../core/errors.js';
import type { AttemptTarget, ProviderCall } from '../../../generation/operation.js';
import type { OutgoingBody, TransferOperation } from '../../../generation/provider.js';

/** Caller paths of the transferred operations, for messages. */
const PATHS: Readonly<Record<TransferOperation, string>> = {
  'openai.images.edits': '/v1/images/edits',
  'openai.audio.transcriptions': '/v1/audio/transcriptions',
  'openai.audio.translations': '/v1/audio/translations',
  'openai.audio.speech': '/v1/audio/speech',
};

/**
 * One attempt's call for an operation whose bytes go upstream as they are: only an upstream with
 * the same API takes them (an OpenAI-compatible one); another is refused naming the model and the
 * operation. `body` is made per attempt, as each deployment may name another upstream model.
 */
export function transferCall(operation: TransferOperation, model: string, { model: deployment, provider }: AttemptTarget, body: () => OutgoingBody, stream: boolean): ProviderCall {
  if (!provider.relays(operation, deployment)) {
    throw new GatewayError('unsupported_endpoint', `The model \`${model}\` does not serve ${PATHS[operation]}: its provider '${provider.id}' (${provider.kind}) has no such API.`, { param: 'model' });
  }
  return { kind: 'transfer', operation, body: body(), stream };
}

/** A JSON body as bytes for a transfer (speech: JSON in, audio out). */
export function jsonBody(body: unknown): OutgoingBody {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  return { contentType: 'application/json', chunks: [bytes], length: bytes.length };
}

/** A JSON answer's `model` given the caller's public id, where it has one; other answers as they came. */
export function withPublicModel(bytes: Buffer, contentType: string, model: string): { body: string | Buffer; json: Readonly<Record<string, unknown>> | undefined } {
  if (!/^application\/json\b/i.test(contentType)) return { body: bytes, json: undefined };
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { body: bytes, json: undefined };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { body: bytes, json: undefined };
  const object = json as Readonly<Record<string, unknown>>;
  return typeof object.model === 'string' ? { body: JSON.stringify({ ...object, model }), json: object } : { body: bytes, json: object };
}
