import { Readable } from 'node:stream';
import type { FilePart } from '../uploads/form.js';
import { invalid } from '../validation.js';

/**
 * What an uploaded audio file is, read from its own bytes (never from its name or declared type):
 * its container, and its duration where the container's header says it. OpenAI's audio APIs take
 * flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav and webm.
 */
export interface AudioFile {
  readonly container: AudioContainer;
  /** Seconds of audio, from the container's header; undefined where it does not say (a webm stream). */
  readonly seconds: number | undefined;
}

export type AudioContainer = 'wav' | 'mp3' | 'flac' | 'ogg' | 'webm' | 'mp4';

/** music-metadata's container names for the ones OpenAI takes (an mp4's is its brands, e.g. `M4A/isom/iso2`). */
function containerOf(name: string | undefined): AudioContainer | undefined {
  if (name === undefined) return undefined;
  if (name === 'WAVE') return 'wav';
  if (name === 'MPEG') return 'mp3';
  if (name === 'FLAC') return 'flac';
  if (name === 'Ogg') return 'ogg';
  if (name === 'EBML/webm' || name === 'EBML/matroska') return 'webm';
  if (/^(M4A|M4B|mp4\d|isom|iso\d|dash|3gp\d|qt)\b/i.test(name)) return 'mp4';
  return undefined;
}

const ACCEPTED = 'flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav or webm';

/** Loaded with the first audio upload: a gateway that never transcribes keeps the parser (and its format detectors) out of memory. */
let metadataParser: Promise<typeof import('music-metadata')> | undefined;

/**
 * The file's container and duration; a 400 naming `file` when its bytes are not audio in a
 * container OpenAI's audio APIs take. The header is read from the file's own buffers as a stream
 * (they are not joined), and only as far as the headers go.
 */
export async function readAudioFile(file: FilePart, param = 'file'): Promise<AudioFile> {
  let container: string | undefined;
  let seconds: number | undefined;
  try {
    // No name or type given: the parser would trust them over the bytes.
    const { parseStream } = await (metadataParser ??= import('music-metadata'));
    const metadata = await parseStream(Readable.from(file.chunks, { objectMode: false }), { size: file.size }, { duration: false, skipCovers: true, skipPostHeaders: true });
    container = metadata.format.container;
    seconds = metadata.format.duration;
  } catch {
    // Not a format the parser knows, or not one at all: refused below.
  }
  const known = containerOf(container);
  if (known === undefined) {
    throw invalid(param, `The file \`${file.filename.slice(0, 200)}\` is not audio in a supported format (${ACCEPTED}).`, 'invalid_value');
  }
  return { container: known, seconds: seconds !== undefined && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined };
}
