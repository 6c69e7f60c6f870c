/**
 * What the database needs to keep links from dangling across processes (docs/relations.md, §8a): an
 * index per link field, to find the entities that link to one, and the function a write that
 * checks links runs as its one statement. Both are created at start-up when absent, beside the
 * table (layout.ts), which they leave as it is.
 */
import { createHash } from 'node:crypto';
import type { RelationGraph } from '../../conventions/relations.js';
import { textArray, type Sql } from './driver.js';
import { LAYOUT_LOCK, SCHEMA } from './layout.js';

/** A field of `source` whose values are ids of entities of another resource. */
export interface LinkSpec {
  readonly source: string;
  readonly field: string;
  /** An array of ids rather than one. */
  readonly many: boolean;
}

/** Every link field of the graph, once each. */
export function linkSpecs(graph: RelationGraph): LinkSpec[] {
  const out: LinkSpec[] = [];
  for (const [source, relations] of graph) for (const { field, many } of relations.forward) out.push({ source, field, many });
  return out;
}

/** A SQL string literal (standard_conforming_strings, PostgreSQL's default since 9.1). */
export const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * The index of one link field: on the field's value (text) for a single id, GIN on the array for
 * many, only over the source's live rows. The name hashes what it indexes (identifiers are 63
 * bytes at most; a field that becomes an array gets an index of its own). `body::json` rather
 * than `jsonb`: only the field is converted. Neither takes `\u0000` anywhere in the body: the
 * writer refuses such a body of a linking resource before it is sent (nul-text.ts). The
 * function below writes the same expressions, so the planner matches them.
 */
export function linkIndex({ source, field, many }: LinkSpec): { name: string; ddl: string } {
  const name = `link_${createHash('sha256').update(`${source}\0${field}\0${many ? 'many' : 'one'}`).digest('hex').slice(0, 24)}`;
  const where = `WHERE resource = ${literal(source)} AND body IS NOT NULL`;
  const ddl = many
    ? `CREATE INDEX IF NOT EXISTS ${name} ON ${SCHEMA}.entities USING gin (((body::json -> ${literal(field)})::jsonb) jsonb_path_ops) ${where}`
    : `CREATE INDEX IF NOT EXISTS ${name} ON ${SCHEMA}.entities ((body::json ->> ${literal(field)})) ${where}`;
  return { name, ddl };
}

/**
 * The function's name: a new version of it gets a new name, so processes of two versions never run
 * each other's (v2: a tombstone keeps its delete's time, `p_deleted_at`; v3: its statements' plans
 * are PostgreSQL's choice, `plan_cache_mode = auto`, below).
 */
export const WRITE_FUNCTION = `${SCHEMA}.write_linked_v3`;

/**
 * One write batch of a resource whose writes link or whose entities are linked to, as one
 * statement (the function runs inside the statement's transaction: no transaction spans two round
 * trips). Rows: `p_ids`, `p_pos`, `p_rev`, `p_body` (NULL: a tombstone), `p_read` (the rev read; 0:
 * no row), `p_guard` (the batch deletes the entity: refused while something links to it). Links
 * the batch makes: `p_link_row` (1-based row), `p_link_resource`, `p_link_id`. What links to the
 * resource: `p_ref_source`, `p_ref_field`, `p_ref_many`. The time of the batch's deletes, in Unix
 * seconds: `p_deleted_at`.
 *
 * 1. Every row it writes or links to is locked, in (resource, id) order — so two of these
 *    statements never wait for each other in a cycle: a row it deletes `FOR UPDATE`, one it
 *    writes otherwise `FOR NO KEY UPDATE`, a link target `FOR KEY SHARE`. `FOR KEY SHARE`
 *    conflicts with `FOR UPDATE` only: links to one target are made in parallel, a target's
 *    ordinary updates go on, and a delete and a link to the same entity wait for each other.
 * 2. Each query below runs in a snapshot taken after the locks (PL/pgSQL takes a new snapshot
 *    per statement of a VOLATILE function under READ COMMITTED), so it sees every transaction
 *    that held a lock on those rows before as committed or gone. A row whose rev is no longer the
 *    one read is 'lost' (another process wrote it; the batch runs its writes again).
 * 3. A delete is refused ('linked', with the count per source and field) when a live row links
 *    to the entity, not counting the entity itself.
 * 4. A row whose new links point to an entity that is not live, or that this statement deletes,
 *    is refused ('dangling', with the missing targets).
 * 5. The other rows are written as `PgWriter`'s plain statement writes them ('written').
 *
 * `SET plan_cache_mode = auto`: the server's connections plan every statement at each execution
 * (driver.ts `DRIVER_OPTIONS`), which would plan this function's five statements at every call
 * too; they keep the plans PL/pgSQL caches, as before (bench/pg-links.ts, 16 clients' linked POSTs
 * against the in-process guard's: 0.75× planned at each call, 0.91× with cached plans).
 */
const WRITE_FUNCTION_DDL = `CREATE OR REPLACE FUNCTION ${WRITE_FUNCTION}(
  p_resource text, p_ids text[], p_pos bigint[], p_rev bigint[], p_body text[], p_read bigint[], p_guard boolean[],
  p_link_row int[], p_link_resource text[], p_link_id text[],
  p_ref_source text[], p_ref_field text[], p_ref_many boolean[], p_deleted_at bigint
) RETURNS TABLE (id text, outcome text, detail text) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = auto AS $fn$
#variable_conflict use_column
DECLARE
  n int := coalesce(array_length(p_ids, 1), 0);
  refs int := coalesce(array_length(p_ref_source, 1), 0);
  verdict text[] := array_fill(NULL::text, ARRAY[n]);
  why text[] := array_fill(NULL::text, ARRAY[n]);
  gone text[] := '{}';
  k record;
  found bigint;
  counts text;
BEGIN
  -- 1. Locks, in one order.
  FOR k IN
    SELECT l.resource AS r, l.id AS i, max(l.mode) AS mode FROM (
      SELECT p_resource AS resource, u.id, CASE WHEN u.guard THEN 2 ELSE 1 END AS mode
        FROM unnest(p_ids, p_read, p_guard) AS u(id, read, guard) WHERE u.read > 0
      UNION ALL
      SELECT t.resource, t.id, 0 FROM unnest(p_link_resource, p_link_id) AS t(resource, id)
    ) l GROUP BY l.resource, l.id ORDER BY l.resource, l.id
  LOOP
    IF k.mode = 2 THEN
      PERFORM 1 FROM ${SCHEMA}.entities e WHERE e.resource = k.r AND e.id = k.i FOR UPDATE;
    ELSIF k.mode = 1 THEN
      PERFORM 1 FROM ${SCHEMA}.entities e WHERE e.resource = k.r AND e.id = k.i FOR NO KEY UPDATE;
    ELSE
      PERFORM 1 FROM ${SCHEMA}.entities e WHERE e.resource = k.r AND e.id = k.i FOR KEY SHARE;
    END IF;
  END LOOP;
  -- 2. Rows written by another process since they were read.
  FOR k IN
    SELECT u.n FROM unnest(p_ids, p_read) WITH ORDINALITY AS u(id, read, n)
    WHERE u.read > 0 AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.entities e WHERE e.resource = p_resource AND e.id = u.id AND e.rev = u.read)
  LOOP
    verdict[k.n] := 'lost';
  END LOOP;
  -- 3. Deletes of entities something links to.
  FOR k IN SELECT u.id AS i, u.n FROM unnest(p_ids, p_guard) WITH ORDINALITY AS u(id, guard, n) WHERE u.guard LOOP
    CONTINUE WHEN verdict[k.n] IS NOT NULL;
    counts := NULL;
    FOR j IN 1..refs LOOP
      EXECUTE format(
        CASE WHEN p_ref_many[j]
          THEN 'SELECT count(*) FROM ${SCHEMA}.entities WHERE resource = %L AND body IS NOT NULL AND ((body::json -> %L)::jsonb) @> jsonb_build_array($1::text)'
          ELSE 'SELECT count(*) FROM ${SCHEMA}.entities WHERE resource = %L AND body IS NOT NULL AND (body::json ->> %L) = $1'
        END || CASE WHEN p_ref_source[j] = p_resource THEN ' AND id <> $1' ELSE '' END,
        p_ref_source[j], p_ref_field[j]) INTO found USING k.i;
      IF found > 0 THEN
        counts := concat_ws(',', counts, format('[%s,%s,%s]', to_json(p_ref_source[j]), to_json(p_ref_field[j]), found));
      END IF;
    END LOOP;
    IF counts IS NOT NULL THEN
      verdict[k.n] := 'linked';
      why[k.n] := '[' || counts || ']';
    END IF;
  END LOOP;
  SELECT coalesce(array_agg(u.id), '{}') INTO gone FROM unnest(p_ids, p_body) WITH ORDINALITY AS u(id, body, n)
    WHERE u.body IS NULL AND verdict[u.n] IS NULL;
  -- 4. Links to entities that are not live, or that this statement deletes.
  FOR k IN
    SELECT t.r AS n, json_agg(json_build_array(t.resource, t.id))::text AS missing
    FROM unnest(p_link_row, p_link_resource, p_link_id) AS t(r, resource, id)
    WHERE verdict[t.r] IS NULL AND (
      (t.resource = p_resource AND t.id = ANY(gone))
      OR NOT EXISTS (SELECT 1 FROM ${SCHEMA}.entities e WHERE e.resource = t.resource AND e.id = t.id AND e.body IS NOT NULL))
    GROUP BY t.r
  LOOP
    verdict[k.n] := 'dangling';
    why[k.n] := k.missing;
  END LOOP;
  -- 5. The rows neither lost nor refused.
  RETURN QUERY
  WITH u AS (
    SELECT * FROM unnest(p_ids, p_pos, p_rev, p_body, p_read) WITH ORDINALITY AS u(id, pos, rev, body, read, n) WHERE verdict[u.n] IS NULL
  ), updated AS (
    UPDATE ${SCHEMA}.entities AS e SET pos = u.pos, rev = u.rev, body = u.body, tx = pg_current_xact_id(),
      deleted_at = CASE WHEN u.body IS NULL THEN p_deleted_at END
    FROM u WHERE u.read > 0 AND e.resource = p_resource AND e.id = u.id AND e.rev = u.read
    RETURNING e.id
  ), inserted AS (
    INSERT INTO ${SCHEMA}.entities AS e (resource, id, pos, rev, body, deleted_at)
    SELECT p_resource, u.id, u.pos, u.rev, u.body, CASE WHEN u.body IS NULL THEN p_deleted_at END FROM u WHERE u.read = 0
    ON CONFLICT (resource, id) DO NOTHING
    RETURNING e.id
  )
  SELECT w.id, 'written', NULL::text FROM (SELECT updated.id FROM updated UNION ALL SELECT inserted.id FROM inserted) w
  UNION ALL
  SELECT v.id, v.verdict, v.why FROM unnest(p_ids, verdict, why) AS v(id, verdict, why) WHERE v.verdict IS NOT NULL;
END
$fn$`;

/**
 * The resources whose bodies a link field's index reads, as the database holds them (a server made
 * them, with its schemas: `halserve import` reads none): each index's definition names its source
 * in its predicate (`linkIndex`).
 */
export async function indexedSources(sql: Sql): Promise<Set<string>> {
  const rows = await sql.unsafe<{ def: string }[]>(
    `SELECT indexdef AS def FROM pg_indexes WHERE schemaname = '${SCHEMA}' AND tablename = 'entities' AND indexname LIKE 'link\\_%'`,
  );
  const sources = new Set<string>();
  for (const { def } of rows) {
    const source = /\(resource = '((?:[^']|'')*)'::text\)/.exec(def)?.[1];
    if (source !== undefined) sources.add(source.replaceAll("''", "'"));
  }
  return sources;
}

/** Whether the function and every link field's index are there. */
async function missing(sql: Sql, indexes: readonly string[]): Promise<boolean> {
  const [row] = await sql.unsafe<{ fn: boolean; found: string }[]>(
    `SELECT to_regproc('${WRITE_FUNCTION}') IS NOT NULL AS fn,
            (SELECT count(*) FROM pg_indexes WHERE schemaname = '${SCHEMA}' AND indexname = ANY($1::text[]))::text AS found`,
    [textArray(indexes)],
  );
  return row?.fn !== true || Number(row.found) !== indexes.length;
}

/**
 * Creates the write function and the index of every link field when one is absent. One simple
 * query of several statements is one transaction, with no ROLLBACK to send; the layout's advisory
 * lock serialises processes starting together. Indexes are built only when absent: writes to the
 * table wait for the build (seconds per million rows of the source), once per new link field.
 */
export async function ensureLinkLayout(sql: Sql, specs: readonly LinkSpec[]): Promise<void> {
  const indexes = specs.map(linkIndex);
  if (!(await missing(sql, indexes.map((i) => i.name)))) return;
  await sql.unsafe([`SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`, WRITE_FUNCTION_DDL, ...indexes.map((i) => i.ddl)].join(';\n'));
}
