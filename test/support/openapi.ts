import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * The OpenAPI document's component schemas, compiled once by a JSON Schema 2020-12 validator, for
 * checking requests and answers against it.
 */
export class DocumentSchemas {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(readonly document: Record<string, any>) {
    // The document's refs point into components/schemas; here they become one schema's $defs.
    const schemas = JSON.parse(JSON.stringify(document.components.schemas).replaceAll('#/components/schemas/', 'sluice-openapi#/$defs/'));
    this.ajv.addSchema({ $id: 'sluice-openapi', $defs: schemas });
  }

  /** Null when `value` fits the named schema, else the validator's complaints. */
  check(name: string, value: unknown): string | null {
    const validate = this.compiled.get(name) ?? this.ajv.compile({ $ref: `sluice-openapi#/$defs/${name}` });
    this.compiled.set(name, validate);
    return validate(value) ? null : this.ajv.errorsText(validate.errors);
  }

  /** The schema's name a `$ref` names. */
  static refName(schema: { $ref?: string } | undefined): string | undefined {
    return schema?.$ref?.replace('#/components/schemas/', '');
  }
}
