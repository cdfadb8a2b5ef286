import { z } from 'zod';
import { countUsage } from '../../../generation/token-counter.js';
import type { Usage } from '../../../generation/model.js';
import { NO_OUTPUT, type Operation } from '../../../generation/operation.js';
import { bearerToken } from '../../../wire/key-carriers.js';
import { tokenUsage, withUnits } from '../../../wire/openai/media-usage.js';
import { eventsReading, passedOnHeaders, passedOnReply } from '../../transfer-reply.js';
import { jsonBody, transferCall } from '../uploads/transfer.js';
import { invalid, validationError } from '../validation.js';

/** OpenAI's limit on `input`, in characters. */
export const MAX_SPEECH_CHARACTERS = 4096;

export const speechSchema = z.looseObject({
  model: z.string().min(1),
  input: z.string(),
  // A built-in voice's name, or a custom voice `{id}`.
  voice: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })]),
  instructions: z.string().optional(),
  response_format: z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  stream_format: z.enum(['audio', 'sse']).optional(),
});

export interface SpeechRequest {
  readonly model: string;
  /** The caller asked for server-sent events (`stream_format: sse`) rather than the audio's bytes. */
  readonly stream: boolean;
  readonly body: z.output<typeof speechSchema>;
  /** Characters of `input` (code points), what per_mchar bills. */
  readonly characters: number;
}

export function parseSpeechRequest(body: unknown): SpeechRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('', 'The request body must be a JSON object.');
  const parsed = speechSchema.safeParse(body);
  if (!parsed.success) throw validationError(parsed.error.issues[0]!);
  const characters = [...parsed.data.input].length;
  if (characters === 0) throw invalid('input', "Invalid 'input': empty string. Expected a string with minimum length 1.", 'empty_string');
  if (characters > MAX_SPEECH_CHARACTERS) {
    throw invalid('input', `Invalid 'input': string too long. Expected a string with maximum length ${MAX_SPEECH_CHARACTERS}, but got a string with length ${characters} instead.`, 'string_above_max_length');
  }
  return { model: parsed.data.model, stream: parsed.data.stream_format === 'sse', body: parsed.data, characters };
}

/**
 * `POST /v1/audio/speech`: JSON in, audio out. The body is relayed to an OpenAI-compatible server
 * with `model` rewritten; the audio (any `response_format`), or its server-sent events
 * (`stream_format: sse`), passes on to the caller as it arrives, at the pace the caller reads.
 */
export const audioSpeech: Operation<SpeechRequest> = {
  endpoint: 'speech',
  dialect: 'openai',
  operation: 'audio.speech',
  credential: (wire) => bearerToken(wire.headers),
  parse: parseSpeechRequest,
  outputBound: (request) => ({ ...NO_OUTPUT, units: { characters: request.characters } }),
  // Sluice's own count where the upstream gave none: the input's tokens, and its characters.
  countUsage: async (request) => withUnits(await countUsage([request.body.input], []), { characters: request.characters }),
  plan: (request, target) => transferCall('openai.audio.speech', request.model, target, () => jsonBody({ ...request.body, model: target.model.upstreamModel }), true),
  answer(request, answer, { sink }) {
    if (answer.kind !== 'transferred') throw new Error('speech is always transferred');
    const transferred = answer.transferred;
    let reported: Usage | null = null;
    const events = transferred.contentType.startsWith('text/event-stream')
      ? eventsReading((event) => {
          const usage = event.type === 'speech.audio.done' ? tokenUsage(event.usage) : null;
          if (usage !== null) reported = withUnits(usage, { characters: request.characters });
        })
      : undefined;
    return passedOnReply(transferred, sink, { see: (chunk) => events?.see(chunk), get reported() { return reported; } }, passedOnHeaders(transferred.contentType));
  },
};
