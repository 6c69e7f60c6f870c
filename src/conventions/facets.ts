import { narrowedCarried, type CollectionQuery } from './query.js';

/** One value of a facet as a store counts it. */
export interface FacetValue {
  readonly value: unknown;
  readonly count: number;
}

/**
 * The `facets` member of a collection page, as JSON text: for each requested field
 * (by its name as written), its values with their counts, each with a `self` link to the first
 * page of the same query narrowed to that value. `counts` holds the store's answer for
 * `query.facets`, in the same order; `href` makes a page-1 href from the carried query.
 */
export function facetsJson(query: CollectionQuery, counts: readonly (readonly FacetValue[])[], href: (carried: string) => string): string {
  const members = query.facets.map(({ field }, i) => {
    const values = (counts[i] ?? []).map(({ value, count }) => {
      const link = JSON.stringify(href(narrowedCarried(query, field, value)));
      return `{"value":${JSON.stringify(value)},"count":${count},"_links":{"self":{"href":${link}}}}`;
    });
    return `${JSON.stringify(field)}:[${values.join(',')}]`;
  });
  return `{${members.join(',')}}`;
}
