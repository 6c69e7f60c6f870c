import { linkedIds, linkTargets, type LinkField, type LinkTarget } from '../../conventions/relations.js';
import { DanglingLinkError, StillLinkedError } from '../integrity.js';
import type { EntityRecord } from '../store.js';
import type { LinkSpec } from './link-layout.js';
import { targetKey, type RowOutcome } from './write-statement.js';
import type { RanWrite } from './writer.js';

/** The links of one resource as its writes check them (docs/relations.md): set by `PgWriter.checkLinks`. */
export interface WriterLinks {
  /** Its link fields: what its writes link to. */
  readonly forward: readonly LinkField[];
  /** The link fields of every resource that link to it: its deletes are refused while one does. */
  readonly reverse: readonly LinkSpec[];
}

export const NO_LINKS: WriterLinks = { forward: [], reverse: [] };

/**
 * The links a write makes (docs/relations.md): each id its new state's link fields hold that the field
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

/**
 * How a write of `resource` whose id the statement did not write is answered: refused when it is
 * the delete of an entity still linked to, or made a link to a missing entity; otherwise it runs
 * again, against the database's state (another process wrote the id, or another write of the
 * batch was refused). Undefined: settled as run.
 */
export function refusal(resource: string, write: RanWrite, outcome: RowOutcome): Error | 'again' | undefined {
  switch (outcome.kind) {
    case 'written':
      return undefined;
    case 'lost':
      return 'again';
    case 'linked':
      return write.deletes === true ? new StillLinkedError(resource, write.id as string, outcome.referrers) : 'again';
    case 'dangling': {
      const missing = (write.links ?? []).filter((t) => outcome.missing.has(targetKey(t.resource, t.id)));
      return missing.length > 0 ? new DanglingLinkError(missing) : 'again';
    }
  }
}
