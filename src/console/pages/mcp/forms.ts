// The MCP server form: what was posted, into an HTTP server's plain fields and the change to its
// headers (which are never shown back), and a stored server turned into form values for editing.
import type { FieldErrors } from '../../../catalogue/catalogue-admin.js';
import type { HeaderChange } from '../../../mcp/mcp-server-admin.js';
import { parseHeaderLines, type FormValues } from '../catalogue/forms.js';

/** The fields of a stdio server: no field of the form, but passed on when posted, for the admin to refuse by name. */
const STDIO_FIELDS = ['command', 'args', 'env', 'cwd'] as const;

function text(form: URLSearchParams, name: string): string | undefined {
  const value = (form.get(name) ?? '').trim();
  return value === '' ? undefined : value;
}

/** The posted form → the entry's plain fields, the change to its headers, and the errors only the form can name. */
export function readMcpServerForm(form: URLSearchParams): { raw: Record<string, unknown>; headers: HeaderChange; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const raw: Record<string, unknown> = { id: text(form, 'id') ?? '', url: text(form, 'url') ?? '' };
  const transport = text(form, 'transport');
  if (transport !== undefined) raw.transport = transport;
  const price = text(form, 'price_per_call');
  if (price !== undefined) {
    const value = Number(price.replace(/^\$/, ''));
    if (!Number.isFinite(value)) errors.price_per_call = 'must be an amount in USD, such as 0.01 (leave it empty for free calls)';
    else raw.price_per_call = value;
  }
  for (const field of STDIO_FIELDS) if (form.has(field)) raw[field] = form.getAll(field);
  let headers: HeaderChange;
  const headerText = (form.get('headers') ?? '').trim();
  if (form.get('clear_headers') === '1') headers = null;
  else if (headerText !== '') {
    const parsed = parseHeaderLines(headerText);
    if (typeof parsed === 'string') errors.headers = parsed;
    else headers = parsed;
  }
  return { raw, headers, errors };
}

/** The form as posted, to show again when it is refused: never the headers. */
export function mcpFormValues(form: URLSearchParams): FormValues {
  const values: FormValues = {};
  for (const name of ['id', 'url', 'transport', 'price_per_call']) values[name] = form.get(name) ?? '';
  return values;
}

/** A stored server's plain fields → form values. */
export function mcpStoredValues(stored: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const name of ['id', 'url', 'transport', 'price_per_call']) if (stored[name] !== undefined && stored[name] !== null) values[name] = String(stored[name]);
  return values;
}
