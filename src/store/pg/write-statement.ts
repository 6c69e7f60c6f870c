/**
 * The one statement a write batch of the PostgreSQL store ends with (docs/storage.md §2): the final state
 * of each id it wrote, on condition that the row is still the one read. A batch that makes links
 * or deletes an entity something may link to runs it through the write function instead, which
 * checks the links in the same statement (link-layout.ts).
 */
import type { LinkTarget } from '../../conventions/relations.js';
import type { Referrers } from '../integrity.js';
import { CREATE_CALL, CREATE_CALL_ANSWERED } from './create-function.js';
import { PREPARED, textArray, type Sql } from './driver.js';
import { answersInsert } from './answers-insert.js';
import { SCHEMA } from './layout.js';
import { WRITE_FUNCTION, type LinkSpec } from './link-layout.js';
import type { RowState } from './replica.js';

/** A row to write and what the statement must check for it. */
export interface RowWrite {
  readonly row: RowState;
  /** The rev read (0: the id had no row): the row is written only if it is still that. */
  readonly read: number;
  /** Links this row's writes make (each checked: a live entity, locked until the commit). */
  readonly links: readonly LinkTarget[];
  /** The batch deletes the entity: refused while something links to it. */
  readonly guard: boolean;
}

/**
 * An answer of a keyed write (idempotency.ts), inserted by the same statement as the batch's rows:
 * with `id`, only if that id's row is written (the answer was decided against the batch's write of
 * it); without, in any case (decided against the state read, like the writes that write nothing).
 */
export interface AnswerRow {
  readonly id: string | undefined;
  readonly key: string;
  readonly fingerprint: string;
  readonly at: number;
  readonly status: number;
  readonly headers: string;
  /** The body; or, with `from`, what follows its start. */
  readonly body: string;
  /**
   * The body's start given by reference: its first `from.shared` characters (code points, as
   * PostgreSQL's `left` counts them) are those of the JSON of the statement's row `from.row` (an
   * index into its rows). A 201's or 200's body is the representation of the row just written, so
   * it repeats most of the row: sent once, the statement's bytes for a keyed write were about half
   * what they were (pg/writer.ts).
   */
  readonly from?: { readonly row: number; readonly shared: number } | undefined;
}

/**
 * What the statement did with a row: written (in transaction `tx`, decimal: the row's change has
 * the cursor `<dataset>-<tx>.<pos>`), refused (still linked to; links to missing entities), or nothing (`lost`).
 */
export type RowOutcome =
  | { readonly kind: 'written'; readonly tx: string }
  | { readonly kind: 'linked'; readonly referrers: readonly Referrers[] }
  | { readonly kind: 'dangling'; readonly missing: ReadonlySet<string> }
  | { readonly kind: 'lost' };

/** `<resource>/<id>`: how missing targets are named. */
export const targetKey = (resource: string, id: string): string => `${resource}/${id}`;

/**
 * Writes `rows` in one statement; returns each id's outcome. A batch that only creates (every row
 * new and holding a body, nothing to check) calls the create function (create-function.ts). Any
 * other batch with no link to check and no guarded delete is the plain compare-and-set (an UPDATE
 * of rows whose rev is still the one read, an INSERT of ids that still have none); otherwise the
 * write function, given what links to the resource (`reverse`). A tombstone it writes keeps
 * `deletedAt` (Unix seconds) as its delete's time.
 */
export async function writeRows(
  sql: Sql,
  resource: string,
  rows: readonly RowWrite[],
  reverse: readonly LinkSpec[],
  answers: readonly AnswerRow[] = [],
  deletedAt = 0,
): Promise<Map<string, RowOutcome>> {
  const outcomes = new Map<string, RowOutcome>();
  if (rows.length === 0 && answers.length === 0) return outcomes;
  const text = textArray;
  const columns = [
    resource,
    text(rows.map((r) => r.row.id)),
    text(rows.map((r) => String(r.row.pos))),
    text(rows.map((r) => String(r.row.rev))),
    text(rows.map((r) => ('deleted' in r.row ? null : r.row.json))),
    text(rows.map((r) => String(r.read))),
    String(deletedAt),
  ];
  const checked = rows.some((r) => r.guard || r.links.length > 0);
  for (const { row } of rows) outcomes.set(row.id, { kind: 'lost' });
  const answerColumns = [
    text(answers.map((a) => a.id ?? null)),
    text(answers.map((a) => a.key)),
    text(answers.map((a) => a.fingerprint)),
    text(answers.map((a) => String(a.at))),
    text(answers.map((a) => String(a.status))),
    text(answers.map((a) => a.headers)),
    text(answers.map((a) => a.body)),
    text(answers.map((a) => (a.from === undefined ? null : String(a.from.row + 1)))),
    text(answers.map((a) => (a.from === undefined ? null : String(a.from.shared)))),
  ];
  if (!checked) {
    const creates = rows.every((r) => r.read === 0 && !('deleted' in r.row));
    const written = await (creates
      ? sql.unsafe<{ id: string; tx: string }[]>(answers.length === 0 ? CREATE_CALL : CREATE_CALL_ANSWERED, [...columns.slice(0, 5), ...(answers.length === 0 ? [] : answerColumns)], PREPARED)
      : sql.unsafe<{ id: string; tx: string }[]>(answers.length === 0 ? PLAIN : PLAIN_ANSWERED, answers.length === 0 ? columns : [...columns, ...answerColumns], PREPARED));
    for (const { id, tx } of written) outcomes.set(id, { kind: 'written', tx });
    return outcomes;
  }
  const links = rows.flatMap((r, i) => r.links.map((link) => ({ row: i + 1, link })));
  // The function runs whole before its rows are read (a set-returning PL/pgSQL function fills its
  // result first), so the transaction id is assigned by then when it wrote anything.
  const call = `SELECT id, outcome, detail, pg_current_xact_id_if_assigned()::text AS tx FROM ${WRITE_FUNCTION}($1, $2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[], $6::text[]::bigint[],
       $8::text[]::boolean[], $9::text[]::int[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[]::boolean[], $7::bigint)`;
  const answer = await sql.unsafe<{ id: string; outcome: string; detail: string | null; tx: string | null }[]>(
    answers.length === 0
      ? call
      : `WITH w AS MATERIALIZED (${call}), ${answeredBy('(SELECT id FROM w WHERE outcome = \'written\')', 15)} SELECT id, outcome, detail, tx FROM w`,
    [
      ...columns,
      text(rows.map((r) => String(r.guard))),
      text(links.map((l) => String(l.row))),
      text(links.map((l) => l.link.resource)),
      text(links.map((l) => l.link.id)),
      text(reverse.map((r) => r.source)),
      text(reverse.map((r) => r.field)),
      text(reverse.map((r) => String(r.many))),
      ...(answers.length === 0 ? [] : answerColumns),
    ],
    PREPARED,
  );
  for (const { id, outcome, detail, tx } of answer) outcomes.set(id, readOutcome(outcome, detail, tx));
  return outcomes;
}

function readOutcome(outcome: string, detail: string | null, tx: string | null): RowOutcome {
  if (outcome === 'written') return { kind: 'written', tx: tx! };
  if (outcome === 'linked') {
    const counts = JSON.parse(detail ?? '[]') as [string, string, number][];
    return { kind: 'linked', referrers: counts.map(([source, field, count]) => ({ source, field, count: Number(count) })) };
  }
  if (outcome === 'dangling') {
    const missing = JSON.parse(detail ?? '[]') as [string, string][];
    return { kind: 'dangling', missing: new Set(missing.map(([resource, id]) => targetKey(resource, id))) };
  }
  return { kind: 'lost' };
}

const PLAIN = `WITH u AS (
  SELECT * FROM unnest($2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[], $6::text[]::bigint[]) AS u(id, pos, rev, body, read)
), updated AS (
  UPDATE ${SCHEMA}.entities AS e SET pos = u.pos, rev = u.rev, body = u.body, tx = pg_current_xact_id(),
    deleted_at = CASE WHEN u.body IS NULL THEN $7::bigint END
  FROM u WHERE u.read > 0 AND e.resource = $1 AND e.id = u.id AND e.rev = u.read
  RETURNING e.id, e.tx::text AS tx
), inserted AS (
  INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body, deleted_at)
  SELECT $1, u.id, u.pos, u.rev, u.body, CASE WHEN u.body IS NULL THEN $7::bigint END FROM u WHERE u.read = 0
  ON CONFLICT (resource, id) DO NOTHING
  RETURNING id, tx::text AS tx
)
SELECT id, tx FROM updated UNION ALL SELECT id, tx FROM inserted`;

/**
 * The CTE that inserts a batch's answers (answers-insert.ts; parameters from `$first`: id, key,
 * fingerprint, at, status, headers, body, and `AnswerRow.from`'s row and characters), each only if
 * its id is among `written` (a subquery), or without an id; a body's start by reference is taken
 * from the rows' bodies, `$5`.
 */
function answeredBy(written: string, first: number): string {
  const casts = ['text[]', 'text[]', 'text[]', 'text[]::bigint[]', 'text[]::int[]', 'text[]', 'text[]', 'text[]::bigint[]', 'text[]::int[]'];
  const arrays = casts.map((cast, n) => `$${first + n}::${cast}`);
  return `answered AS (
  ${answersInsert({ resource: '$1', bodies: '$5::text[]', arrays, written: `a.id IN ${written}` })}
)`;
}

/** PLAIN, and the batch's answers with it (parameters $8…$16). */
const PLAIN_ANSWERED = PLAIN.replace(
  'SELECT id, tx FROM updated UNION ALL SELECT id, tx FROM inserted',
  `, ${answeredBy('(SELECT id FROM updated UNION ALL SELECT id FROM inserted)', 8)}\nSELECT id, tx FROM updated UNION ALL SELECT id, tx FROM inserted`,
);

/** Which of `targets` are live entities in the database now (a statement of its own: a check before a write, not the write's). */
export async function liveTargets(sql: Sql, targets: readonly LinkTarget[]): Promise<Set<string>> {
  const rows = await sql.unsafe<{ resource: string; id: string }[]>(
    `SELECT e.resource, e.id FROM ${SCHEMA}.entities e JOIN unnest($1::text[], $2::text[]) AS t(resource, id)
       ON e.resource = t.resource AND e.id = t.id WHERE e.body IS NOT NULL`,
    [textArray(targets.map((t) => t.resource)), textArray(targets.map((t) => t.id))],
    PREPARED,
  );
  return new Set(rows.map((r) => targetKey(r.resource, r.id)));
}
