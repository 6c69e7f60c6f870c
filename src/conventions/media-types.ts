/**
 * The JSON representations of a resource (docs/conventions.md §5): HAL, and plain JSON with the
 * same bytes. Their media types and the rule that tells their tags apart live here, once.
 */

/** Media types of the service (docs/conventions.md §5). */
export const HAL_JSON = 'application/hal+json';
export const JSON_TYPE = 'application/json';

/**
 * The strong tag (RFC 9110 §8.8.3) of the representation of `base` (an entity's version, a
 * collection's revision) in `mediaType`: `"<base>"` for HAL, `"<base>-json"` for plain JSON,
 * `"<base>-forms"` for HAL-FORMS, so that a cache never serves one for another.
 */
export function representationTag(base: string, mediaType: string): string {
  return mediaType === HAL_JSON ? `"${base}"` : mediaType === HAL_FORMS ? `"${base}-forms"` : `"${base}-json"`;
}

/** HAL-FORMS: HAL plus `_templates` (see hal-forms.ts); named here so that its tag differs too. */
export const HAL_FORMS = 'application/prs.hal-forms+json';
