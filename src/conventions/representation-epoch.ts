import type { ResourceRelations } from './relations.js';
import { sha256Base64url } from '../structures/sha256.js';

/**
 * A resource's representation epoch: what its representations' bytes depend on besides the data
 * (docs/conventions.md §5). An entity's HAL text carries links under the base path, to and from the
 * resources its schema and the others' name (`x-link`), and its HAL-FORMS text the templates its
 * schema makes; a collection page the same. A restart with another base path, another schema, or
 * a halserve that renders differently serves other bytes for the same data, so its strong tags
 * must differ too (RFC 9110 §8.8.1, §8.8.3): a client or a shared cache revalidating with
 * `If-None-Match` would otherwise get a 304 and keep stale links and forms.
 *
 * Deterministic, from the configuration alone (no start time, nothing random): processes serving
 * one PostgreSQL database with the same schema files and base path hand out the same tags, and a
 * restart with an unchanged configuration keeps every tag clients hold.
 */

/**
 * The rendering's version: bumped whenever halserve renders the same data with the same schema and
 * base path into other bytes (a new link, a member moved, a template field), so that the tags of
 * before name no current representation. test/unit/representation-epoch.test.ts pins the bytes of
 * a few representations to this number: changing them fails it until the number moves.
 */
export const REPRESENTATION_VERSION = 1;

/** Digits of an epoch: 40 bits of SHA-256 in base 36, padded (36^8 > 2^40). */
export const EPOCH_LENGTH = 8;

/** What one resource's representations depend on besides its data. */
export interface EpochInputs {
  /** The normalised base path every href starts with ('' for none). */
  readonly basePath: string;
  /** The resource's JSON schema (its templates, its `x-link`s), or none. */
  readonly schema: unknown;
  /** Its links to and from the other resources served, as `relationGraph` found them (their order is the links' order). */
  readonly relations: ResourceRelations | undefined;
}

const NO_RELATIONS: ResourceRelations = { forward: [], reverse: [] };

/** A short hash of `text`, `EPOCH_LENGTH` base-36 digits. */
function shortHash(text: string): string {
  return Buffer.from(sha256Base64url(text), 'base64url').readUIntBE(0, 5).toString(36).padStart(EPOCH_LENGTH, '0');
}

/**
 * The resource's epoch: made once at start-up. The schema is hashed as parsed (its members in the
 * file's order, which is the templates' order), so a change of its whitespace alone, which changes
 * no representation, keeps the tags.
 */
export function representationEpoch({ basePath, schema, relations }: EpochInputs, version = REPRESENTATION_VERSION): string {
  return shortHash(JSON.stringify([version, basePath, schema ?? null, relations ?? NO_RELATIONS]));
}

/**
 * The epoch of a representation that shows other resources' entities too (`embed`): every served
 * resource's epoch, by name, since an embedded entity carries its own resource's links.
 */
export function combinedEpoch(epochs: ReadonlyMap<string, string>): string {
  return shortHash(JSON.stringify([...epochs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}
