import { randomBase62 } from '../../core/ids.js';
import type { OutgoingBody } from '../../generation/provider.js';
import type { FormPart, UploadForm } from '../../generation/upload.js';

/**
 * A caller's multipart form written again for an upstream: a fresh boundary, the fields named in
 * `replaced` given new values (`model`: the deployment's upstream model), every other part as it
 * came and in its order. Only the small parts (each part's head, the fields) are new bytes; a
 * file's bytes are the caller's own buffers, so writing the form once per attempt costs nothing
 * of the upload's size.
 */
export function multipartBody(form: UploadForm, replaced: Readonly<Record<string, string>> = {}, boundary = newBoundary()): OutgoingBody {
  const chunks: Uint8Array[] = [];
  let length = 0;
  const add = (chunk: Uint8Array) => {
    chunks.push(chunk);
    length += chunk.length;
  };
  for (const part of form.parts) {
    add(Buffer.from(`--${boundary}\r\n${partHead(part)}\r\n`, 'utf8'));
    if (part.kind === 'field') add(Buffer.from(Object.hasOwn(replaced, part.name) ? replaced[part.name]! : part.value, 'utf8'));
    else for (const chunk of part.chunks) add(chunk);
    add(CRLF);
  }
  add(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  return { contentType: `multipart/form-data; boundary=${boundary}`, chunks, length };
}

const CRLF = Buffer.from('\r\n', 'latin1');

/** A boundary as browsers make them: long and random, so no upload's bytes hold it. */
export function newBoundary(): string {
  return `----SluiceFormBoundary${randomBase62(24)}`;
}

/** A part's headers, each line ended. */
function partHead(part: FormPart): string {
  if (part.kind === 'field') return `Content-Disposition: form-data; name="${quoted(part.name)}"\r\n`;
  return `Content-Disposition: form-data; name="${quoted(part.name)}"; filename="${quoted(part.filename)}"\r\nContent-Type: ${part.contentType.replace(/[\r\n]/g, '')}\r\n`;
}

/** A name in a quoted header parameter, escaped as the HTML standard's form encoding does (what browsers and undici send). */
function quoted(name: string): string {
  return name.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}
