// The catalogue's entry forms: posted provider and model forms parsed into configuration entries
// (with the errors only the form can name), the admin's errors mapped back to the form's fields,
// and stored entries turned into form values for editing.
import type { FieldErrors, SecretChanges } from '../../../catalogue/catalogue-admin.js';
import { SECRET_FIELDS } from '../../../catalogue/provider-secrets.js';
import { PRICE_UNITS, PROVIDER_DEFAULTS, type DeploymentConfig, type PriceUnit } from '../../../config/config-file.js';

/** A form's values by field name: text as typed, or the ticked values of a group of checkboxes. */
export type FormValues = Record<string, string | string[]>;

/** The provider form's limits, each with its label and placeholder (the default where there is one). */
export const PROVIDER_LIMIT_FIELDS: readonly (readonly [name: string, label: string, placeholder: string])[] = [
  ['connect_timeout_ms', 'Connect timeout (ms)', String(PROVIDER_DEFAULTS.connect_timeout_ms)],
  ['response_timeout_ms', 'Response timeout (ms, until headers)', String(PROVIDER_DEFAULTS.response_timeout_ms)],
  ['idle_timeout_ms', 'Idle timeout (ms)', String(PROVIDER_DEFAULTS.idle_timeout_ms)],
  ['keep_alive_timeout_ms', 'Keep idle connections (ms)', String(PROVIDER_DEFAULTS.keep_alive_timeout_ms)],
  ['max_response_bytes', 'Largest whole answer (bytes)', String(PROVIDER_DEFAULTS.max_response_bytes)],
  ['max_connections', 'Max connections', '256'],
];


/** Form text → the configuration file's shapes; numbers that do not parse are reported here, the rest by the schema. */
function numberField(form: URLSearchParams, name: string, errors: FieldErrors, integer = true): number | undefined {
  const text = (form.get(name) ?? '').trim();
  if (text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    errors[name] = integer ? 'must be a whole number' : 'must be a number';
    return undefined;
  }
  return value;
}

function text(form: URLSearchParams, name: string): string | undefined {
  const value = (form.get(name) ?? '').trim();
  return value === '' ? undefined : value;
}

/** The form as posted, to show again when it is refused. */
export function formValues(form: URLSearchParams): FormValues {
  const values: FormValues = {};
  for (const key of new Set(form.keys())) {
    if (key === 'csrf' || (SECRET_FIELDS as readonly string[]).includes(key)) continue; // credentials are never echoed back
    const all = form.getAll(key);
    values[key] = key === 'endpoints' ? all : (all[0] ?? '');
  }
  return values;
}

/** The provider form → a configuration entry and the changes to its credentials. */
export function readProviderForm(form: URLSearchParams): { raw: Record<string, unknown>; secrets: SecretChanges; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const raw: Record<string, unknown> = { id: text(form, 'id') ?? '', kind: text(form, 'kind') ?? '' };
  const baseUrl = text(form, 'base_url');
  if (baseUrl !== undefined) raw.base_url = baseUrl;
  for (const [name] of PROVIDER_LIMIT_FIELDS) {
    const value = numberField(form, name, errors);
    if (value !== undefined) raw[name] = value;
  }
  const probeModel = text(form, 'probe_model');
  const probeInterval = numberField(form, 'probe_interval_ms', errors);
  if (probeModel !== undefined || probeInterval !== undefined) {
    if (probeModel === undefined || probeInterval === undefined) errors.probe = 'give both the probe model and its interval, or neither';
    else raw.probe = { model: probeModel, interval_ms: probeInterval };
  }
  if (form.get('discover') === '1') {
    const patterns = (name: string) => text(form, name)?.split(',').map((p) => p.trim()).filter((p) => p !== '');
    const discover: Record<string, unknown> = {};
    const interval = numberField(form, 'discover_interval_ms', errors);
    if (interval !== undefined) discover.interval_ms = interval;
    const include = patterns('discover_include');
    if (include !== undefined && include.length > 0) discover.include = include;
    const exclude = patterns('discover_exclude');
    if (exclude !== undefined && exclude.length > 0) discover.exclude = exclude;
    const prefix = text(form, 'discover_id_prefix');
    if (prefix !== undefined) discover.id_prefix = prefix;
    const maxModels = numberField(form, 'discover_max_models', errors);
    if (maxModels !== undefined) discover.max_models = maxModels;
    raw.discover = discover;
  }
  readCloudFields(form, raw);
  const secrets: { -readonly [Field in keyof SecretChanges]: SecretChanges[Field] } = {};
  for (const field of SECRET_FIELDS) {
    if (field === 'headers') continue;
    // A pasted key keeps its own line breaks; a one-line credential loses stray whitespace.
    const value = field === 'credentials' ? (form.get(field) ?? '') : (form.get(field) ?? '').trim();
    if (form.get(`clear_${field}`) === '1') secrets[field] = null;
    else if (value.trim() !== '') secrets[field] = value;
  }
  const headerText = (form.get('headers') ?? '').trim();
  if (form.get('clear_headers') === '1') secrets.headers = null;
  else if (headerText !== '') {
    const parsed = parseHeaderLines(headerText);
    if (typeof parsed === 'string') errors.headers = parsed;
    secrets.headers = typeof parsed === 'string' ? {} : parsed;
  }
  return { raw, secrets, errors };
}

/** A headers textarea, one `Name: value` a line (blank lines skipped): the headers, or what is wrong (never quoting a value). */
export function parseHeaderLines(text: string): Record<string, string> | string {
  const headers = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon).trim();
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return 'each line must be `Name: value` with a valid header name';
    // The schema's header record drops a `__proto__` key: refuse it rather than lose it unseen.
    if (name === '__proto__') return '`__proto__` cannot be used as a header name';
    headers.set(name, line.slice(colon + 1).trim());
  }
  return Object.fromEntries(headers);
}

/** The cloud kinds' plain fields, each only when given (a field of another kind is refused by name, not dropped). */
const CLOUD_TEXT_FIELDS = ['api_version', 'region', 'project', 'location', 'credentials_file'] as const;
const ENTRA_FIELDS = ['tenant_id', 'client_id', 'authority_url'] as const;

function readCloudFields(form: URLSearchParams, raw: Record<string, unknown>): void {
  // credentials_file is no field of the form: one posted anyway is passed on, for the admin to refuse by name.
  for (const name of CLOUD_TEXT_FIELDS) {
    const value = text(form, name);
    if (value !== undefined) raw[name] = value;
  }
  const entra: Record<string, string> = {};
  for (const name of ENTRA_FIELDS) {
    const value = text(form, `entra_${name}`);
    if (value !== undefined) entra[name] = value;
  }
  if (Object.keys(entra).length > 0) raw.entra = entra;
  if (form.get('allow_data_sources') === '1') raw.allow_data_sources = true;
}

/**
 * The admin's errors of a provider under the form's names: `discover.interval_ms` is the form's
 * `discover_interval_ms`, `entra.client_secret` its `entra_client_secret`.
 */
export function providerFormErrors(errors: FieldErrors): FieldErrors {
  return Object.fromEntries(Object.entries(errors).map(([field, message]) => [field.replace(/^(discover|entra)\./, '$1_'), message]));
}

const DEPLOYMENT_ATTRIBUTES = ['weight', 'priority', 'upstream_api'] as const;

/**
 * The "More deployments" lines → deployment entries, one per non-blank line:
 * `provider [upstream_model] [weight=N] [priority=N] [upstream_api=…]`. Only what the schema
 * cannot say in the user's terms is judged here (the shape of a line, numbers that do not parse);
 * the rest (weight > 0, a known provider, …) is the admin's, whose errors `modelFormErrors` maps back
 * through `lines`, the textarea line of each entry.
 */
function deploymentLines(source: string, errors: FieldErrors): { entries: Record<string, unknown>[]; lines: number[] } {
  const entries: Record<string, unknown>[] = [];
  const lines: number[] = [];
  const problems: string[] = [];
  source.split(/\r?\n/).forEach((line, index) => {
    const tokens = line.trim().split(/\s+/).filter((token) => token !== '');
    if (tokens.length === 0) return;
    const at = `line ${index + 1}`;
    const [provider, ...rest] = tokens as [string, ...string[]];
    if (provider.includes('=')) problems.push(`${at}: start with the provider id, then the upstream model, then attributes`);
    const entry: Record<string, unknown> = { provider };
    if (rest[0] !== undefined && !rest[0].includes('=')) entry.upstream_model = rest.shift();
    for (const token of rest) {
      const eq = token.indexOf('=');
      const key = token.slice(0, eq);
      const value = token.slice(eq + 1);
      if (eq === -1) problems.push(`${at}: '${token}' is not an attribute (weight=N, priority=N or upstream_api=…)`);
      else if (!(DEPLOYMENT_ATTRIBUTES as readonly string[]).includes(key)) problems.push(`${at}: unknown attribute '${key}' (use weight=, priority= or upstream_api=)`);
      else if (Object.hasOwn(entry, key)) problems.push(`${at}: ${key} is given twice`);
      else if (key === 'upstream_api') entry[key] = value;
      else {
        const number = value.trim() === '' ? NaN : Number(value);
        if (!Number.isFinite(number)) problems.push(`${at}: ${key} must be a number`);
        else if (key === 'priority' && !Number.isInteger(number)) problems.push(`${at}: priority must be a whole number`);
        else entry[key] = number;
      }
    }
    entries.push(entry);
    lines.push(index + 1);
  });
  if (problems.length > 0) errors.deployments = problems.join('; ');
  return { entries, lines };
}

/** A further deployment as a line of the form, with only its attributes that are not the defaults. */
function deploymentLine(deployment: DeploymentConfig): string {
  const parts = [deployment.provider];
  if (deployment.upstream_model !== undefined) parts.push(deployment.upstream_model);
  if (deployment.weight !== 1) parts.push(`weight=${deployment.weight}`);
  if (deployment.priority !== 0) parts.push(`priority=${deployment.priority}`);
  if (deployment.upstream_api !== undefined) parts.push(`upstream_api=${deployment.upstream_api}`);
  return parts.join(' ');
}

/**
 * The admin names a deployment by its index in the entry; the form shows the first as the Provider
 * and Upstream model fields and the others as lines of the textarea, so its errors go there, by line.
 */
export function modelFormErrors(errors: FieldErrors, lines: readonly number[]): FieldErrors {
  const mapped: FieldErrors = {};
  const add = (name: string, message: string) => (mapped[name] = Object.hasOwn(mapped, name) ? `${mapped[name]}; ${message}` : message);
  for (const [path, message] of Object.entries(errors)) {
    const deployment = /^deployments\.(\d+)(?:\.(.+))?$/.exec(path);
    if (deployment !== null) {
      const index = Number(deployment[1]);
      const attribute = deployment[2];
      if (index === 0) {
        const name = attribute === 'upstream_model' ? 'upstream_model' : 'provider';
        add(name, attribute === undefined || attribute === name ? message : `${attribute}: ${message}`);
      } else add('deployments', `line ${lines[index - 1] ?? index}${attribute === undefined ? '' : `, ${attribute}`}: ${message}`);
    } else if (path.startsWith('fallbacks.')) add('fallbacks', message);
    else if (path.startsWith('aliases.')) add('aliases', message);
    // A price's own field shows its error (`pricing.per_image` → the per_image field).
    else if (path.startsWith('pricing.')) add(path.slice('pricing.'.length), message);
    else add(path, message);
  }
  return mapped;
}

/** The model form → a configuration entry: the `provider:` short form, or `deployments:` when there are more lines. */
export function readModelForm(form: URLSearchParams): { raw: Record<string, unknown>; lines: number[]; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const raw: Record<string, unknown> = { id: text(form, 'id') ?? '' };
  const first: Record<string, unknown> = { provider: text(form, 'provider') ?? '' };
  const upstreamModel = text(form, 'upstream_model');
  if (upstreamModel !== undefined) first.upstream_model = upstreamModel;
  const { entries, lines } = deploymentLines(form.get('deployments') ?? '', errors);
  if (entries.length === 0) Object.assign(raw, first);
  else raw.deployments = [first, ...entries];
  for (const name of ['fallbacks', 'aliases']) {
    const ids = (form.get(name) ?? '').split(/[\s,]+/).filter((id) => id !== '');
    if (ids.length > 0) raw[name] = ids;
  }
  for (const name of ['display_name', 'owned_by', 'description', 'version']) {
    const value = text(form, name);
    if (value !== undefined) raw[name] = value;
  }
  for (const name of ['context_window', 'max_output_tokens', 'created']) {
    const value = numberField(form, name, errors);
    if (value !== undefined) raw[name] = value;
  }
  const endpoints = form.getAll('endpoints');
  if (endpoints.length > 0) raw.endpoints = endpoints;
  // Only the units the model is sold in; none at all leaves it unpriced (or priced by the price list).
  const pricing: Partial<Record<PriceUnit, number>> = {};
  for (const unit of PRICE_UNITS) {
    const value = numberField(form, unit, errors, false);
    if (value !== undefined) pricing[unit] = value;
  }
  if (Object.keys(pricing).length > 0) raw.pricing = pricing;
  return { raw, lines, errors };
}

/** Stored entry → form values, for editing. */
export function valuesOf(stored: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const [key, value] of Object.entries(stored)) {
    if (key === 'discover' && value && typeof value === 'object') {
      const discover = value as { interval_ms?: number; include?: string[]; exclude?: string[]; id_prefix?: string; max_models?: number };
      values.discover = '1';
      if (discover.interval_ms !== undefined) values.discover_interval_ms = String(discover.interval_ms);
      if (discover.include !== undefined) values.discover_include = discover.include.join(', ');
      if (discover.exclude !== undefined) values.discover_exclude = discover.exclude.join(', ');
      if (discover.id_prefix !== undefined) values.discover_id_prefix = discover.id_prefix;
      if (discover.max_models !== undefined) values.discover_max_models = String(discover.max_models);
    } else if (key === 'entra' && value && typeof value === 'object') {
      for (const [name, part] of Object.entries(value as Record<string, unknown>)) if (typeof part === 'string' && name !== 'client_secret') values[`entra_${name}`] = part;
    } else if (key === 'probe' && value && typeof value === 'object') {
      const probe = value as { model: string; interval_ms: number };
      values.probe_model = probe.model;
      values.probe_interval_ms = String(probe.interval_ms);
    } else if (key === 'pricing' && value && typeof value === 'object') {
      const pricing = value as Partial<Record<PriceUnit, number>>;
      for (const unit of PRICE_UNITS) if (pricing[unit] !== undefined) values[unit] = String(pricing[unit]);
    } else if (key === 'deployments' && Array.isArray(value)) {
      // The first deployment fills the Provider and Upstream model fields; the others are lines.
      const [first, ...rest] = value as DeploymentConfig[];
      if (first !== undefined) {
        values.provider = first.provider;
        if (first.upstream_model !== undefined) values.upstream_model = first.upstream_model;
      }
      values.deployments = rest.map(deploymentLine).join('\n');
    } else if ((key === 'fallbacks' || key === 'aliases') && Array.isArray(value)) values[key] = value.join(', ');
    else if (Array.isArray(value)) values[key] = value.map(String);
    else if (value !== undefined && value !== null) values[key] = String(value);
  }
  return values;
}
