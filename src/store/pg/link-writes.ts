import { linkedIds, linkTargets, type LinkField, type LinkTarget } from '../../conventions/relations.js';
import type { EntityRecord } from '../store.js';

/**
 * The links a write makes (contract §4a): each id its new state's link fields hold that the field
 * did not hold before it (`previous`: the state it changed; none for a create), with the field
 * path a validation message names (`tags.2`). A link the state held already is stored, and was
 * checked when it was made, so the database checks only these. (The HTTP layer checks every link
 * a request names before the write: `PgLinkIntegrity.linking`.)
 */
export function introducedLinks(forward: readonly LinkField[], next: EntityRecord, previous: EntityRecord | undefined): LinkTarget[] {
  if (previous === undefined) return linkTargets(forward, next);
  return forward.flatMap((link) => {
    const held = linkedIds(previous[link.field]);
    return linkTargets([link], next).filter((target) => !held.includes(target.id));
  });
}
