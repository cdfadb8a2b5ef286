import { isDocumentMediaType, type DocumentPart } from '../../generation/model.js';
import { invalid } from './validation.js';

/**
 * A file given inline in OpenAI's wire (chat's `file.file_data`, Responses' `input_file.file_data`)
 * as the generation model's document: a base64 `data:` URL of a PDF or plain text, or bare base64,
 * whose type the file name tells (`.txt` is text, anything else a PDF, the one type OpenAI reads).
 */
export function documentOfFileData(fileData: string, filename: string | null | undefined, param: string): DocumentPart {
  const name = filename == null || filename === '' ? {} : { name: filename };
  if (!fileData.startsWith('data:')) {
    const mediaType = /\.txt$/i.test(filename ?? '') ? 'text/plain' : 'application/pdf';
    return { type: 'document', source: { kind: 'inline', mediaType, data: fileData }, ...name };
  }
  // Only the header is matched, so a large file costs one scan for the comma.
  const comma = fileData.indexOf(',');
  const header = /^data:([\w/.+-]+);base64$/i.exec(fileData.slice(0, comma === -1 ? 0 : Math.min(comma, 200)));
  if (comma === -1 || header === null) throw invalid(param, `Invalid '${param}': expected base64 file data or a base64 'data:' URL.`, 'invalid_value');
  const mediaType = header[1]!.toLowerCase();
  if (!isDocumentMediaType(mediaType)) throw invalid(param, `Invalid '${param}': a file of type ${mediaType.slice(0, 100)} cannot be read (PDF and plain text only).`, 'invalid_value');
  return { type: 'document', source: { kind: 'inline', mediaType, data: fileData.slice(comma + 1) }, ...name };
}
