// The key creation form: what was posted, as typed (to show again when refused), and the checks
// the form itself can make, into the new key's name, account, models, expiry and limits.
import { aliasedNames, aliasedNamesProblem } from '../../../catalogue/access.js';
import type { Catalogue } from '../../../catalogue/catalogue.js';
import type { Limits } from '../../../core/key-limits.js';
import { emptyLimitValues, limitValuesFromForm, parseLimitValues, type LimitValues } from '../../limits-view.js';
import type { Session } from '../../sessions.js';

export const MAX_KEY_NAME = 100;

/** The creation form's fields as typed. */
export interface CreateValues {
  name: string;
  account: string;
  models: string[];
  expires: string;
  /** Admins only: the new key's limits as typed. */
  limits: LimitValues;
}

/** A posted creation form: its values, an error per refused field, and the expiry and limits read from it. */
export interface CreateForm {
  readonly values: CreateValues;
  readonly errors: Record<string, string>;
  readonly expiresAt: number | undefined;
  readonly limits: Limits | null;
}

/** A date input's YYYY-MM-DD → the end of that day, UTC (the start of the next). */
function parseExpiry(value: string): number | string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return 'must be a date (YYYY-MM-DD)';
  const start = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(start)) return 'must be a real date';
  const end = start + 86_400_000;
  if (end <= Date.now()) return 'is in the past';
  return end;
}

/** Reads and checks a creation form; whether the account exists is the store's to say, after this. */
export function readCreateForm(form: URLSearchParams, session: Session, catalogue: Catalogue): CreateForm {
  const values: CreateValues = {
    name: (form.get('name') ?? '').trim(),
    account: session.account.isAdmin ? (form.get('account') ?? session.account.name).trim() : session.account.name,
    // Ticked boxes send one id each; the text field of a large catalogue sends them in one value.
    models: [...new Set(form.getAll('models').flatMap((value) => value.split(/[\s,]+/)).filter((id) => id !== ''))],
    expires: (form.get('expires') ?? '').trim(),
    // Limits are the admins' to set; a member's form has none, and fields added to it are ignored.
    limits: session.account.isAdmin ? limitValuesFromForm(form) : emptyLimitValues(),
  };
  const parsedLimits = parseLimitValues(values.limits);
  const errors: Record<string, string> = { ...parsedLimits.errors };
  if (values.name.length > MAX_KEY_NAME) errors.name = `must be at most ${MAX_KEY_NAME} characters`;
  if (/[\u0000-\u001f\u007f]/.test(values.name)) errors.name = 'must not contain control characters';
  const aliased = aliasedNames(catalogue, values.models);
  const unknown = values.models.filter((id) => catalogue.get(id) === undefined);
  if (aliased.length > 0) errors.models = aliasedNamesProblem(aliased);
  else if (unknown.length > 0) errors.models = `not in the catalogue: ${unknown.join(', ')}`;
  let expiresAt: number | undefined;
  if (values.expires !== '') {
    const parsed = parseExpiry(values.expires);
    if (typeof parsed === 'string') errors.expires = parsed;
    else expiresAt = parsed;
  }
  return { values, errors, expiresAt, limits: parsedLimits.limits };
}
