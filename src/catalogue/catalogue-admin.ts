import type { z } from 'zod';
import { defaultBaseUrl, deploymentProblem, ENTRA_AUTHORITY, deploymentsOf, modelSchema, providerSchema } from '../config/config-file.js';
import type { CatalogueRepository } from '../store/store.js';
import type { CredentialCipher } from './credential-cipher.js';
import { storedModelEntry, type LiveCatalogue } from './live-catalogue.js';
import { CREDENTIALS_FILE_REFUSED, joinSecrets, SECRET_FIELDS, SECRET_KINDS, splitSecrets, storedProviderProblems, type ProviderSecrets, type SecretField } from './provider-secrets.js';

/** Field name → what is wrong with it; `_` for the entry as a whole. */
export type FieldErrors = Record<string, string>;
export type AdminResult = { ok: true } | { ok: false; errors: FieldErrors };

/** For each credential field on update: undefined keeps what is stored, null removes it. */
export type SecretChanges = { readonly [Field in SecretField]?: ProviderSecrets[Field] | null };

/**
 * Changes to the console's providers and models, validated with the configuration file's own
 * schemas so an entry means the same wherever it was written. Configuration-file entries are
 * read-only here. Every write reloads this process's catalogue at once; others see it on their poll.
 */
export class CatalogueAdmin {
  constructor(
    private readonly repository: CatalogueRepository,
    private readonly live: LiveCatalogue,
    private readonly cipher: CredentialCipher,
  ) {}

  async saveProvider(mode: 'create' | 'update', raw: Record<string, unknown>, secrets: SecretChanges): Promise<AdminResult> {
    await this.live.refresh(); // judge against the store as it is now, whichever process wrote last
    const id = typeof raw.id === 'string' ? raw.id : '';
    if (this.live.configProviders().some((p) => p.id === id)) {
      return refused('id', mode === 'create' ? `The configuration file already declares a provider '${id}'.` : `Provider '${id}' comes from the configuration file; change it there.`);
    }
    // Before anything else is judged: a console entry never names a file on the gateway's host.
    if (raw.credentials_file !== undefined) return refused('credentials_file', CREDENTIALS_FILE_REFUSED);
    const stored = (await this.repository.providers()).find((p) => p.id === id);
    if (mode === 'update' && stored === undefined) return refused('_', `There is no console provider '${id}'.`);
    if (mode === 'create' && stored !== undefined) return refused('id', `A provider '${id}' already exists.`);

    let current: ProviderSecrets = {};
    if (stored?.secrets != null) {
      try {
        current = JSON.parse(this.cipher.open(stored.secrets, id)) as ProviderSecrets;
      } catch {
        current = {}; // unreadable (credential key changed): the admin re-enters it
      }
    }
    const kind = typeof raw.kind === 'string' ? raw.kind : '';
    // A stored credential goes only where it went when it was entered: sent to an address changed
    // since, it would reach whoever the console admin named (a client secret, a key, a token).
    const moved = stored !== undefined && destinationOf(stored.config) !== destinationOf(raw);
    const merged: Record<string, unknown> = {};
    const left: SecretField[] = [];
    for (const field of SECRET_FIELDS) {
      const change = secrets[field];
      const keep = change === undefined && current[field] !== undefined && (SECRET_KINDS[field] as readonly string[]).includes(kind);
      // A stored credential of another kind (the kind was changed) is left behind; one typed now is judged.
      if (keep && !moved) merged[field] = current[field];
      else if (keep) left.push(field);
      else if (change !== undefined && change !== null) merged[field] = change;
    }
    if (left.length > 0) {
      return { ok: false, errors: Object.fromEntries(left.map((field) => [field, 'the address changed (base_url, or the Entra ID authority or tenant): enter this credential again, or it would be sent to the new address'])) };
    }

    const parsed = providerSchema.safeParse(joinSecrets(raw, merged as ProviderSecrets));
    if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error) };
    if (parsed.data.base_url === undefined && defaultBaseUrl(parsed.data) === undefined) {
      return refused('base_url', `is required for kind '${parsed.data.kind}'`);
    }
    const problems = storedProviderProblems(parsed.data);
    if (Object.keys(problems).length > 0) return { ok: false, errors: problems };
    const { config, secrets: toSeal } = splitSecrets(parsed.data);
    const sealed = Object.keys(toSeal).length === 0 ? null : this.cipher.seal(JSON.stringify(toSeal), id);
    const written = await this.repository.putProvider({ id, config, secrets: sealed }, mode);
    if (!written) return refused('id', mode === 'create' ? `A provider '${id}' already exists.` : `There is no console provider '${id}'.`);
    await this.live.refresh();
    return { ok: true };
  }

  async deleteProvider(id: string): Promise<AdminResult> {
    await this.live.refresh(); // judge against the store as it is now, whichever process wrote last
    if (this.live.configProviders().some((p) => p.id === id)) return refused('_', `Provider '${id}' comes from the configuration file; change it there.`);
    const user = this.live.current().models.find((model) => model.deployments.some((d) => d.providerId === id));
    if (user !== undefined) return refused('_', `Models still use provider '${id}' (${user.id}); remove or move them first.`);
    const outcome = await this.repository.deleteProvider(id);
    if (outcome === 'missing') return refused('_', `There is no console provider '${id}'.`);
    if (outcome === 'in_use') return refused('_', `Models still use provider '${id}'; remove or move them first.`);
    await this.live.refresh();
    return { ok: true };
  }

  async saveModel(mode: 'create' | 'update', raw: Record<string, unknown>): Promise<AdminResult> {
    await this.live.refresh(); // judge against the store as it is now, whichever process wrote last
    const id = typeof raw.id === 'string' ? raw.id : '';
    if (this.live.configModels().some((m) => m.id === id)) {
      return refused('id', mode === 'create' ? `The configuration file already declares a model '${id}'.` : `Model '${id}' comes from the configuration file; change it there.`);
    }
    const parsed = modelSchema.safeParse(raw);
    if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error) };
    const kinds = new Map(this.live.providers().map((p) => [p.id, p.config.kind]));
    const problem = deploymentProblem(parsed.data, (providerId) => kinds.get(providerId));
    if (problem !== undefined) return refused(problem.field, problem.message);
    const current = this.live.current();
    const missing = parsed.data.fallbacks?.find((fallback) => current.get(fallback) === undefined);
    if (missing !== undefined) return refused('fallbacks', `no model has the id '${missing}'`);
    const taken = current.named(id);
    if (taken !== undefined && taken.id !== id) return refused('id', `'${id}' is an alias of the model '${taken.id}'.`);
    for (const alias of parsed.data.aliases ?? []) {
      const owner = current.named(alias);
      if (owner !== undefined && owner.id !== id) return refused('aliases', owner.id === alias ? `'${alias}' is the id of a model.` : `'${alias}' is already an alias of '${owner.id}'.`);
    }
    const { id: _id, provider: _provider, ...config } = parsed.data;
    const written = await this.repository.putModel({ id, providerId: deploymentsOf(parsed.data)[0]!.provider, config }, mode);
    if (!written) return refused('id', mode === 'create' ? `A model '${id}' already exists.` : `There is no console model '${id}'.`);
    await this.live.refresh();
    return { ok: true };
  }

  async deleteModel(id: string): Promise<AdminResult> {
    await this.live.refresh(); // judge against the store as it is now, whichever process wrote last
    if (this.live.configModels().some((m) => m.id === id)) return refused('_', `Model '${id}' comes from the configuration file; change it there.`);
    if (!(await this.repository.deleteModel(id))) return refused('_', `There is no console model '${id}'.`);
    await this.live.refresh();
    return { ok: true };
  }

  /** The stored (unsealed-free) fields of a console entry, to fill an edit form. */
  async storedProvider(id: string): Promise<Record<string, unknown> | undefined> {
    const stored = (await this.repository.providers()).find((p) => p.id === id);
    return stored && { ...stored.config, id: stored.id };
  }

  async storedModel(id: string): Promise<Record<string, unknown> | undefined> {
    const stored = (await this.repository.models()).find((m) => m.id === id);
    return stored && storedModelEntry(stored);
  }
}

/** Where a provider's credentials are sent: its base URL and, for Entra ID, the authority and tenant (what an edit may not change under a kept credential). */
function destinationOf(entry: Readonly<Record<string, unknown>>): string {
  const entra = entry.entra as Record<string, unknown> | undefined;
  const authority = entra === undefined ? null : (entra.authority_url ?? ENTRA_AUTHORITY);
  return JSON.stringify([entry.kind, entry.base_url ?? null, authority, entra?.tenant_id ?? null]);
}

function refused(field: string, message: string): AdminResult {
  return { ok: false, errors: { [field]: message } };
}

export function fieldErrors(error: z.ZodError): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of error.issues) {
    const field = issue.path.length === 0 ? '_' : issue.path.map(String).join('.');
    if (Object.hasOwn(errors, field)) continue; // the first issue per field; own keys, whatever the field is called
    errors[field] =
      issue.code === 'unrecognized_keys'
        ? `unknown field(s) ${issue.keys.join(', ')}`
        : issue.code === 'invalid_type' && issue.input === undefined
          ? 'is required'
          : issue.message;
  }
  return errors;
}
