// The public model list's query and selection: the sorts offered, the search, and one page of the
// catalogue in that order (sorted and prepared once per catalogue snapshot).
import type { Catalogue, CatalogueModel } from '../../../catalogue/catalogue.js';
import { pageOf, paged, type PageSpec, type Paged } from '../../paging.js';

/** What the public list is, on the page and in its JSON: every model, whatever a key may use. */
export const KEY_DEPENDENT_NOTE =
  'This page lists every model the gateway offers. The list an API key gets from GET /v1/models depends on the key: a key restricted to some models sees only those. Prices, context windows and operations here are authoritative; those in API listings are not.';

/** The sorts the page offers, each with its label and the value it orders by (null sorts last). */
export const SORTS = {
  default: { label: 'Catalogue order', value: () => 0 },
  id: { label: 'Model', value: (m: CatalogueModel) => m.id.toLowerCase() },
  owner: { label: 'Owner', value: (m: CatalogueModel) => m.ownedBy.toLowerCase() },
  context: { label: 'Context', value: (m: CatalogueModel) => m.contextWindow ?? null },
  output: { label: 'Max output', value: (m: CatalogueModel) => m.maxOutputTokens ?? null },
  input_price: { label: 'Input price', value: (m: CatalogueModel) => m.pricing?.inputPerMtok ?? null },
  output_price: { label: 'Output price', value: (m: CatalogueModel) => m.pricing?.outputPerMtok ?? null },
} as const satisfies Record<string, { label: string; value: (m: CatalogueModel) => string | number | null }>;
export type SortKey = keyof typeof SORTS;
export type SortDir = 'asc' | 'desc';

/** The list's query as typed values: the search text, the sort and its direction. */
export interface ListQuery {
  readonly q: string;
  readonly sort: SortKey;
  readonly dir: SortDir;
}

export function readListQuery(query: URLSearchParams): ListQuery {
  const q = (query.get('q') ?? '').slice(0, 200);
  const sortParam = query.get('sort') ?? 'default';
  // Own keys only: `in` would also accept what every object inherits (constructor, toString, …).
  // An unknown sort is the catalogue order, as an unknown `dir` is ascending.
  const sort: SortKey = Object.hasOwn(SORTS, sortParam) ? (sortParam as SortKey) : 'default';
  const dir = query.get('dir') === 'desc' ? 'desc' : 'asc';
  return { q, sort, dir };
}

/** The models in a sort of the page (missing values last either way; ties keep the catalogue order), sorted once per catalogue snapshot. */
function sorted(catalogue: Catalogue, sort: SortKey, dir: SortDir): readonly CatalogueModel[] {
  return catalogue.derive(`models-page:${sort}:${dir}`, (all) => {
    if (sort === 'default') return dir === 'desc' ? [...all].reverse() : all;
    // Each model's value is read once, not once per comparison.
    const value = SORTS[sort].value;
    const keyed = all.map((model) => ({ model, key: value(model) }));
    keyed.sort(({ key: x }, { key: y }) => {
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      const order = x < y ? -1 : x > y ? 1 : 0;
      return dir === 'asc' ? order : -order;
    });
    return keyed.map(({ model }) => model);
  });
}

/** Each model's lower-case id, aliases, display name, owner and description, aligned with `sorted`; prepared on the first search. */
function searchTexts(catalogue: Catalogue, sort: SortKey, dir: SortDir): readonly string[] {
  return catalogue.derive(`models-page:text:${sort}:${dir}`, () => {
    const textOf = catalogue.derive('models-page:text', (models) => new Map(models.map((m) => [m, [m.id, ...catalogue.aliasesOf(m.id), m.displayName ?? '', m.ownedBy, m.description ?? ''].join('\u0000').toLowerCase()])));
    return sorted(catalogue, sort, dir).map((m) => textOf.get(m)!);
  });
}

/**
 * One page of the models, sorted, and filtered by a search over id, aliases, display name, owner and
 * description. Without a search the page is a slice; a search reads each model's prepared text once.
 */
export function select(catalogue: Catalogue, { q, sort, dir }: ListQuery, spec: PageSpec): Paged<CatalogueModel> {
  const models = sorted(catalogue, sort, dir);
  const needle = q.trim().toLowerCase();
  if (needle === '') return pageOf(models, spec);
  // The prepared text joins the fields with NUL, which no search may span.
  if (needle.includes('\u0000')) return paged([], 0, spec);
  const texts = searchTexts(catalogue, sort, dir);
  const start = (spec.page - 1) * spec.limit;
  const page: CatalogueModel[] = [];
  let total = 0;
  for (let i = 0; i < texts.length; i++) {
    if (!texts[i]!.includes(needle)) continue;
    if (total >= start && page.length < spec.limit) page.push(models[i]!);
    total++;
  }
  return paged(page, total, spec);
}
