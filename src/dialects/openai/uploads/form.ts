import type { FormPart, UploadForm } from '../../../generation/upload.js';
import { formField } from '../../../generation/upload.js';
import { invalid } from '../validation.js';

/**
 * Reading an OpenAI multipart request (image edits, transcriptions, translations): its fields are
 * text, checked here with errors worded as OpenAI's and naming the field; fields Sluice does not
 * know go upstream as they came.
 */

export type FilePart = Extract<FormPart, { kind: 'file' }>;

/** The fields of a form, read with OpenAI's checks. */
export class FormFields {
  constructor(readonly form: UploadForm) {}

  /** A field's value, undefined when absent. */
  optional(name: string): string | undefined {
    return formField(this.form, name);
  }

  required(name: string): string {
    const value = this.optional(name);
    if (value === undefined || value === '') throw missing(name);
    return value;
  }

  /** One of `values`, or undefined when absent. */
  oneOf<Value extends string>(name: string, values: readonly Value[]): Value | undefined {
    const value = this.optional(name);
    if (value === undefined) return undefined;
    if (!(values as readonly string[]).includes(value)) {
      throw invalid(name, `Invalid value for '${name}': expected one of ${values.map((v) => `'${v}'`).join(', ')}, but got '${value.slice(0, 100)}' instead.`, 'invalid_value');
    }
    return value as Value;
  }

  /** `true` or `false` as a form writes them (the SDKs write booleans as text). */
  boolean(name: string): boolean | undefined {
    const value = this.oneOf(name, ['true', 'false', 'True', 'False', '1', '0']);
    return value === undefined ? undefined : value === 'true' || value === 'True' || value === '1';
  }

  /** A number in [min, max], or undefined when absent. */
  number(name: string, min: number, max: number): number | undefined {
    const value = this.optional(name);
    if (value === undefined) return undefined;
    const number = value.trim() === '' ? NaN : Number(value);
    if (!Number.isFinite(number)) throw invalid(name, `Invalid type for '${name}': expected a number, but got '${value.slice(0, 100)}' instead.`, 'invalid_type');
    if (number < min || number > max) throw invalid(name, `Invalid '${name}': ${number} is not between ${min} and ${max}.`, 'invalid_value');
    return number;
  }

  /** The file parts under any of `names` (OpenAI's SDKs send an array as `name[]`), in order. */
  files(...names: string[]): FilePart[] {
    return this.form.parts.filter((part): part is FilePart => part.kind === 'file' && names.includes(part.name));
  }

  /** The one file under `name`; a 400 when it is missing, empty, or sent as text. */
  file(name: string): FilePart {
    const files = this.files(name);
    if (files.length === 0) {
      if (this.optional(name) !== undefined) throw invalid(name, `Invalid '${name}': expected a file upload, but got a text field instead.`, 'invalid_type');
      throw missing(name);
    }
    if (files.length > 1) throw invalid(name, `Invalid '${name}': expected one file, but got ${files.length}.`, 'invalid_value');
    if (files[0]!.size === 0) throw invalid(name, `The file \`${files[0]!.filename.slice(0, 200)}\` is empty.`, 'invalid_value');
    return files[0]!;
  }
}

function missing(name: string) {
  return invalid(name, `Missing required parameter: '${name}'.`, 'missing_required_parameter');
}
