import type { IncomingMessage } from 'node:http';
import type { BusboyInstance } from '@fastify/busboy';
import { GatewayError } from '../core/errors.js';
import type { FormPart, UploadForm } from '../generation/upload.js';

/**
 * Far more than any upload operation has (OpenAI's image edits take up to 16 images and a dozen
 * fields), few enough that a form of tiny parts costs no more than its bytes.
 */
export const MULTIPART_LIMITS = {
  parts: 64,
  files: 16,
  fieldNameBytes: 100,
  /** A field's value (an image edit's `prompt` is at most 32,000 characters). */
  fieldBytes: 1024 * 1024,
  headerPairs: 16,
  headerBytes: 8 * 1024,
} as const;

/**
 * A body refused for its size is read on and thrown away up to this many times the cap (and at
 * least DISCARD_MIN_BYTES) before the refusal is written: a client that writes its whole body before
 * reading (the `openai` SDK, whose `model` field can come after the file) then reads the 413 instead
 * of a reset. Past it the connection is closed and the client may see a reset; nothing of it is
 * kept either way.
 */
export const DISCARD_FACTOR = 4;

/** Loaded with the first upload, so that a gateway that takes none keeps it out of memory. */
const loadBusboy = () => import('@fastify/busboy');
let busboy: ReturnType<typeof loadBusboy> | undefined;
export const DISCARD_MIN_BYTES = 64 * 1024 * 1024;

/**
 * Reads a multipart/form-data body into an UploadForm with a streaming parser: each file's bytes
 * stay the buffers the parser handed over (views of what the socket read), never joined; the whole
 * body is refused past `limit` bytes with a 413 that tells the client to close (`connection:
 * close`), sent once the client has finished sending (up to DISCARD_FACTOR × `limit`, at least DISCARD_MIN_BYTES). A body that
 * is not multipart, names no boundary, has no part delimited by it or ends early is a 400.
 */
export async function readMultipartBody(req: IncomingMessage, limit: number): Promise<UploadForm> {
  const { Busboy } = await (busboy ??= loadBusboy());
  return new Promise((resolve, reject) => {
    let settled = false;
    const refuse = (error: GatewayError) => {
      if (settled) return;
      settled = true;
      req.unpipe();
      discard(req, Math.max(limit * DISCARD_FACTOR, DISCARD_MIN_BYTES)).then(() => reject(error), reject);
    };
    const declared = Number(req.headers['content-length']);
    if (declared > limit) return refuse(tooLarge(limit));
    const contentType = req.headers['content-type'] ?? '';
    let parser: BusboyInstance;
    try {
      parser = Busboy({
        headers: { ...req.headers, 'content-type': contentType },
        limits: {
          parts: MULTIPART_LIMITS.parts,
          files: MULTIPART_LIMITS.files,
          fieldNameSize: MULTIPART_LIMITS.fieldNameBytes,
          fieldSize: MULTIPART_LIMITS.fieldBytes,
          headerPairs: MULTIPART_LIMITS.headerPairs,
          headerSize: MULTIPART_LIMITS.headerBytes,
        },
        // A part is a file when it names a filename, whatever its type: a field sent as application/octet-stream is still text.
        isPartAFile: (_name, _type, filename) => filename !== undefined,
      });
    } catch {
      return refuse(notMultipart(contentType));
    }
    const parts: FormPart[] = [];
    let size = 0;
    let open = 0;
    let finished = false;
    const done = () => {
      if (settled || !finished || open > 0) return;
      settled = true;
      if (parts.length === 0) reject(noParts());
      else resolve({ parts });
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) refuse(tooLarge(limit));
    });
    // `on`, not `once`, for every error below: a second error event with no listener would crash the process.
    req.on('error', () => {
      if (settled) return;
      settled = true;
      reject(new GatewayError('invalid_request', 'The upload was cut off before its end.'));
    });
    parser.on('field', (name, value, nameTruncated, valueTruncated) => {
      if (nameTruncated) return refuse(invalidForm(`A field's name is longer than ${MULTIPART_LIMITS.fieldNameBytes} bytes.`));
      if (valueTruncated) return refuse(invalidForm(`The field \`${name}\` is longer than ${MULTIPART_LIMITS.fieldBytes} bytes.`, name));
      parts.push({ kind: 'field', name, value });
    });
    parser.on('file', (name, stream, filename, _encoding, mimeType) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      open++;
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        bytes += chunk.length;
      });
      stream.on('error', () => refuse(truncated()));
      stream.once('end', () => {
        open--;
        parts.push({ kind: 'file', name, filename, contentType: mimeType, chunks, size: bytes });
        done();
      });
    });
    for (const event of ['partsLimit', 'filesLimit'] as const) {
      parser.once(event, () => refuse(invalidForm(`The form has more than ${event === 'partsLimit' ? `${MULTIPART_LIMITS.parts} parts` : `${MULTIPART_LIMITS.files} files`}.`)));
    }
    parser.on('error', () => refuse(truncated()));
    parser.once('finish', () => {
      finished = true;
      done();
    });
    req.pipe(parser);
  });
}

/** Reads the rest of a refused body without keeping it, up to `bound` bytes more; past that, stops reading (the connection is then closed). */
function discard(req: IncomingMessage, bound: number): Promise<void> {
  if (req.complete) return Promise.resolve();
  const declared = Number(req.headers['content-length']);
  if (declared > bound) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > bound) finish();
    };
    const finish = () => {
      req.off('data', onData);
      req.off('end', finish);
      req.off('error', finish);
      resolve();
    };
    req.on('data', onData);
    req.once('end', finish);
    req.once('error', finish);
    req.resume();
  });
}

function tooLarge(limit: number): GatewayError {
  // The rest of the body may still be on its way: this connection serves no further request.
  return new GatewayError('payload_too_large', `The upload is larger than the ${limit} bytes this gateway accepts (max_upload_bytes).`, { headers: { connection: 'close' } });
}

function notMultipart(contentType: string): GatewayError {
  const said = contentType === '' ? 'no content-type' : `content-type \`${contentType.slice(0, 100)}\``;
  return new GatewayError('invalid_request', `This operation takes a multipart/form-data body with a boundary; the request has ${said}.`);
}

function noParts(): GatewayError {
  return new GatewayError('invalid_request', 'The multipart body has no part delimited by the boundary its content-type names.');
}

function truncated(): GatewayError {
  return new GatewayError('invalid_request', 'The multipart body ended early or does not match the boundary its content-type names.');
}

function invalidForm(message: string, param?: string): GatewayError {
  return new GatewayError('invalid_request', message, param === undefined ? {} : { param });
}
