import { usageOf, type Usage } from '../../../generation/model.js';
import { NO_OUTPUT, type Operation, type OutputBound } from '../../../generation/operation.js';
import type { UploadForm } from '../../../generation/upload.js';
import { bearerToken } from '../../../wire/key-carriers.js';
import { transcriptionUsage, withUnits } from '../../../wire/openai/media-usage.js';
import { multipartBody } from '../../../wire/openai/multipart.js';
import { collectedReply, eventsReading, passedOnHeaders, passedOnReply } from '../../transfer-reply.js';
import { FormFields, type FilePart } from '../uploads/form.js';
import { transferCall, withPublicModel } from '../uploads/transfer.js';
import { readAudioFile, type AudioFile } from './audio-file.js';

export const TRANSCRIPT_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

export interface TranscriptionRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly form: UploadForm;
  readonly file: FilePart;
  readonly responseFormat: TranscriptFormat;
  /** The file's container and duration, read once the request is admitted. */
  readonly audio?: AudioFile | undefined;
}

/** Parses a transcription or translation form; fields Sluice does not check (`language`, `prompt`, `timestamp_granularities[]`…) go upstream as they came. */
export function parseTranscriptionForm(body: unknown, streams: boolean): TranscriptionRequest {
  const fields = new FormFields(body as UploadForm);
  const file = fields.file('file');
  const model = fields.required('model');
  const responseFormat = fields.oneOf('response_format', TRANSCRIPT_FORMATS) ?? 'json';
  fields.number('temperature', 0, 1);
  const stream = streams ? (fields.boolean('stream') ?? false) : false;
  return { model, stream, form: fields.form, file, responseFormat };
}

/**
 * Seconds of audio billed: the upstream's word where it gave one (verbose_json's `duration`, a
 * `usage` of type duration), else the file's own header.
 */
function billed(reported: Usage | null, request: TranscriptionRequest): Usage | null {
  if (reported === null || reported.units?.audioSeconds !== undefined) return reported;
  const seconds = request.audio?.seconds;
  return seconds === undefined ? reported : withUnits(reported, { audioSeconds: seconds });
}

/**
 * `POST /v1/audio/transcriptions` and `POST /v1/audio/translations`: a multipart upload whose file
 * must be audio (its container read from its bytes before anything goes upstream), relayed to an
 * OpenAI-compatible server with `model` rewritten. Answers in JSON and text formats are written
 * whole with the upstream's content type; a transcript streamed as server-sent events
 * (`transcript.text.delta` … `transcript.text.done`) passes on as it comes.
 */
const BILLED_BY_AUDIO: OutputBound = { ...NO_OUTPUT, units: { audioSeconds: 0 } };

function audioTextOperation(kind: 'transcriptions' | 'translations'): Operation<TranscriptionRequest> {
  const wire = kind === 'transcriptions' ? 'openai.audio.transcriptions' : 'openai.audio.translations';
  return {
    endpoint: 'transcriptions',
    dialect: 'openai',
    operation: `audio.${kind}`,
    body: 'multipart',
    credential: (wire) => bearerToken(wire.headers),
    // OpenAI's translations take no `stream`: the field, if sent, goes upstream untouched.
    parse: (body) => parseTranscriptionForm(body, kind === 'transcriptions'),
    async prepare(request) {
      return { ...request, audio: await readAudioFile(request.file) };
    },
    // The audio's length, what it is billed by, is read after admission (prepare): only its input is reserved here,
    // and the audio named at 0 s, so that a budget admits the request only on a model with a price for it (or for tokens).
    outputBound: () => BILLED_BY_AUDIO,
    countUsage: (request) => Promise.resolve(usageOf(0, 0, request.audio?.seconds === undefined ? {} : { units: { audioSeconds: request.audio.seconds } })),
    plan: (request, target) => transferCall(wire, request.model, target, () => multipartBody(request.form, { model: target.model.upstreamModel }), request.stream),
    answer(request, answer, { sink }) {
      if (answer.kind !== 'transferred') throw new Error(`a ${kind} call is always transferred`);
      const transferred = answer.transferred;
      if (transferred.contentType.startsWith('text/event-stream')) {
        let reported: Usage | null = null;
        const events = eventsReading((event) => {
          if (event.type === 'transcript.text.done') reported = transcriptionUsage(event);
        });
        return passedOnReply(transferred, sink, { see: (chunk) => events.see(chunk), get reported() { return billed(reported, request); } }, passedOnHeaders(transferred.contentType));
      }
      return collectedReply(transferred, sink, (bytes, contentType) => {
        const { body, json } = withPublicModel(bytes, contentType, request.model);
        return { body, contentType, reported: billed(json === undefined ? null : transcriptionUsage(json), request) };
      });
    },
  };
}

export const audioTranscriptions = audioTextOperation('transcriptions');
export const audioTranslations = audioTextOperation('translations');
