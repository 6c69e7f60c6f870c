/**
 * The links an import would leave dangling (docs/relations.md §4, README "Moving a data set"): the
 * query that finds them, run inside the statement that publishes the import (import.ts), so that
 * it reads the very state the import replaces and the check and the writes are one transaction.
 *
 * The database does not hold the schemas (the servers read them from their data directory), so the
 * caller names the link fields it read from the schema files (`ImportLink`). Only links the import
 * makes or breaks count; a link already dangling between two resources it leaves alone is not its
 * doing (and is served as it is, docs/relations.md §4):
 *
 * - the source is imported: each id its entities (as the file holds them) link to must be an
 *   entity of the target after the import: in the staging table if the target is imported, else
 *   live in the database;
 * - only the target is imported: each entity of the source the database holds must not link to an
 *   id the import takes away (live in the database now, absent from the file). The comparison is
 *   the one a DELETE's check makes (link-layout.ts), on the same expressions, so the link field's
 *   index (created by the servers at start-up) finds those entities without reading the others.
 *
 * An imported entity's link values are read while it is staged (`linkRows`), from its bytes, as a
 * write reads them (relations.ts `linkTargets`): a string for a field of one id, the strings of an
 * array for a field of many; anything else links nowhere. They go to a table of their own beside
 * the staged bodies, so that the check parses no JSON in the database: casting a million bodies to
 * `json` there, to read one field, took longer than importing them (bench/pg-transfer.ts, README).
 */
import { linkTargets, type LinkField } from '../../conventions/relations.js';
import { SCHEMA } from './layout.js';
import { literal } from './link-layout.js';

/** A link field declared by a schema file: `source`'s `field` holds ids of `target`'s entities. */
export interface ImportLink {
  readonly source: string;
  readonly field: string;
  readonly target: string;
  /** An array of ids rather than one. */
  readonly many: boolean;
}

/** What an entity to stage offers: its id, its JSON text, and its fields read without parsing the rest, when it can. */
export interface LinkingEntity {
  readonly id: string;
  readonly json: string;
  valuesAt?(paths: readonly (readonly string[])[]): unknown[];
}

/** The link fields of `source` among `links`, and the paths that read them (`valuesAt`). */
export function linkFieldsOf(links: readonly ImportLink[], source: string): { forward: LinkField[]; paths: string[][] } {
  const forward = links.filter((l) => l.source === source).map(({ field, target, many }) => ({ field, target, many }));
  return { forward, paths: forward.map((l) => [l.field]) };
}

/** Appends the links `entity` holds (`forward`, read at `paths`) to the columns `ids`, `fields`, `targets`. */
export function linkRows(
  entity: LinkingEntity,
  forward: readonly LinkField[],
  paths: readonly (readonly string[])[],
  out: { ids: string[]; fields: string[]; targets: string[] },
): void {
  const values = entity.valuesAt?.(paths) ?? fieldsOf(JSON.parse(entity.json) as Record<string, unknown>, paths);
  forward.forEach((link, i) => {
    if (values[i] === undefined) return;
    for (const target of linkTargets([link], { [link.field]: values[i] })) {
      out.ids.push(entity.id);
      out.fields.push(link.field);
      out.targets.push(target.id);
    }
  });
}

const fieldsOf = (record: Record<string, unknown>, paths: readonly (readonly string[])[]): unknown[] => paths.map(([field]) => record[field!]);

/** One dangling link: the entity holding it, its field, and the id it names in `target`. */
export interface DanglingLink {
  readonly source: string;
  readonly id: string;
  readonly field: string;
  readonly target: string;
  readonly targetId: string;
}

const NONE = `SELECT NULL::text AS source, NULL::text AS id, NULL::text AS field, NULL::text AS target, NULL::text AS target_id WHERE false`;

/**
 * A query of the dangling links (`source, id, field, target, target_id`) once `staged` (the
 * resources the staging table `staging` holds) replace what the database holds of them; the links
 * of the staged entities are the rows of `stagedLinks` (`source, id, field, target_id`). Empty (and
 * costing nothing) when no link touches an imported resource.
 */
export function danglingLinksQuery(links: readonly ImportLink[], staged: ReadonlySet<string>, staging: string, stagedLinks: string): string {
  const table = `${SCHEMA}.entities`;
  const live = (target: string, id: string): string =>
    staged.has(target)
      ? `EXISTS (SELECT 1 FROM ${staging} j WHERE j.resource = ${literal(target)} AND j.id = ${id})`
      : `EXISTS (SELECT 1 FROM ${table} d WHERE d.resource = ${literal(target)} AND d.id = ${id} AND d.body IS NOT NULL)`;
  const parts: string[] = [];
  for (const { source, field, target, many } of links) {
    const names = `${literal(source)} AS source, %ID% AS id, ${literal(field)} AS field, ${literal(target)} AS target`;
    if (staged.has(source)) {
      parts.push(
        `SELECT ${names.replace('%ID%', 'l.id')}, l.target_id FROM ${stagedLinks} l ` +
          `WHERE l.source = ${literal(source)} AND l.field = ${literal(field)} AND NOT ${live(target, 'l.target_id')}`,
      );
    } else if (staged.has(target)) {
      // The ids the import takes away from the target, then the source's entities that name one.
      const names2 = names.replace('%ID%', 'e.id');
      const holds = many ? `((e.body::json -> ${literal(field)})::jsonb) @> jsonb_build_array(r.id)` : `(e.body::json ->> ${literal(field)}) = r.id`;
      parts.push(
        `SELECT ${names2}, r.id AS target_id FROM (SELECT d.id FROM ${table} d WHERE d.resource = ${literal(target)} AND d.body IS NOT NULL ` +
          `AND NOT EXISTS (SELECT 1 FROM ${staging} j WHERE j.resource = ${literal(target)} AND j.id = d.id)) r ` +
          `JOIN ${table} e ON e.resource = ${literal(source)} AND e.body IS NOT NULL AND ${holds}`,
      );
    }
  }
  return parts.length === 0 ? NONE : parts.map((p) => `(${p})`).join(' UNION ALL ');
}
