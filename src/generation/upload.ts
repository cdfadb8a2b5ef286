/**
 * A multipart form as the caller sent it (file uploads: image edits, audio), read whole up to the
 * gateway's upload cap before any stage that needs the model. A file's bytes stay the buffers they
 * arrived in, so that writing the form again for an upstream copies nothing.
 */
export type FormPart =
  | { readonly kind: 'field'; readonly name: string; readonly value: string }
  | { readonly kind: 'file'; readonly name: string; readonly filename: string; readonly contentType: string; readonly chunks: readonly Uint8Array[]; readonly size: number };

export interface UploadForm {
  /** In the caller's order. */
  readonly parts: readonly FormPart[];
}

/** A field's value (the last, where it came more than once). */
export function formField(form: UploadForm, name: string): string | undefined {
  let value: string | undefined;
  for (const part of form.parts) if (part.kind === 'field' && part.name === name) value = part.value;
  return value;
}
