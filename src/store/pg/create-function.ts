/**
 * The function a batch of the PostgreSQL store that only creates runs as its write statement
 * (write-statement.ts): every row new (no row read for its id) and holding a body, no link to
 * check. Most POSTs are such batches.
 *
 * Why a function: the server's connections plan every statement at each execution, for the values
 * it is given (`plan_cache_mode = force_custom_plan`, driver.ts), because a plan made once, while
 * a resource had few rows, can scan the resource for an id where it has grown (test/pg/plans.test.ts).
 * Planning the plain write statement, an UPDATE and an INSERT in one, was half of PostgreSQL's CPU
 * for a batch of creates, and planning the insert of a keyed write's answers beside it most of
 * what the key cost there (bench/NOTES.md, "Creates planned once"). An insert from arrays has no
 * plan to choose: its rows come from `unnest`, and the only index it reads is the one its
 * `ON CONFLICT` names. So the function's statements are planned once per connection
 * (`SET plan_cache_mode = force_generic_plan`, PL/pgSQL keeping the plan), and the statement that
 * calls it, a scan of one function, is cheap to plan at each execution.
 *
 * Rows: `p_ids`, `p_pos`, `p_rev`, `p_body`. An id that has a row by then (another process created
 * it since the batch read) is not written and not returned: the batch runs that write again, as
 * after the plain statement. Answers of keyed writes (pg/write-statement.ts `AnswerRow`): `p_a_id`
 * (NULL: inserted whatever the rows), `p_a_key`, `p_a_fingerprint`, `p_a_at`, `p_a_status`,
 * `p_a_headers`, `p_a_body`, and the body's start by reference, `p_a_ref` (a 1-based row) and
 * `p_a_shared` (characters); `p_a_key` NULL: no answers. An answer whose id was not written is not
 * inserted; a key that already has one breaks `answers_pkey`, and the statement, rows included,
 * is undone.
 *
 * The name carries a version, as the link function's does (link-layout.ts): a later version gets a
 * new name, so that processes of two versions never run each other's.
 */
import { answersInsert } from './answers-insert.js';
import { LAYOUT_LOCK, SCHEMA } from './layout.js';

export const CREATE_FUNCTION = `${SCHEMA}.write_created_v1`;

const CREATE_FUNCTION_DDL = `CREATE OR REPLACE FUNCTION ${CREATE_FUNCTION}(
  p_resource text, p_ids text[], p_pos bigint[], p_rev bigint[], p_body text[],
  p_a_id text[], p_a_key text[], p_a_fingerprint text[], p_a_at bigint[], p_a_status int[],
  p_a_headers text[], p_a_body text[], p_a_ref int[], p_a_shared int[]
) RETURNS TABLE (id text, tx text) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
  IF p_a_key IS NULL THEN
    RETURN QUERY
    INSERT INTO ${SCHEMA}.entities AS e (resource, id, pos, rev, body)
    SELECT p_resource, u.id, u.pos, u.rev, u.body FROM unnest(p_ids, p_pos, p_rev, p_body) AS u(id, pos, rev, body)
    ON CONFLICT (resource, id) DO NOTHING
    RETURNING e.id, e.tx::text;
  ELSE
    RETURN QUERY
    WITH inserted AS (
      INSERT INTO ${SCHEMA}.entities AS e (resource, id, pos, rev, body)
      SELECT p_resource, u.id, u.pos, u.rev, u.body FROM unnest(p_ids, p_pos, p_rev, p_body) AS u(id, pos, rev, body)
      ON CONFLICT (resource, id) DO NOTHING
      RETURNING e.id, e.tx::text AS tx
    ), answered AS (
      ${answersInsert({
        resource: 'p_resource',
        bodies: 'p_body',
        arrays: ['p_a_id', 'p_a_key', 'p_a_fingerprint', 'p_a_at', 'p_a_status', 'p_a_headers', 'p_a_body', 'p_a_ref', 'p_a_shared'],
        written: 'a.id = ANY (ARRAY(SELECT i.id FROM inserted i))',
      })}
    )
    SELECT i.id, i.tx FROM inserted i;
  END IF;
END
$fn$`;

/** Whether a database has the function. */
export const CREATE_FUNCTION_QUERY = `SELECT to_regproc('${CREATE_FUNCTION}') IS NOT NULL AS present`;

/** Creates the function: one simple query, one transaction, under the layout's lock (layout.ts). */
export const CREATE_FUNCTION_SETUP = [`SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`, CREATE_FUNCTION_DDL].join(';\n');

/** The call of a batch of creates without answers (parameters: resource and the rows' four arrays). */
export const CREATE_CALL = `SELECT id, tx FROM ${CREATE_FUNCTION}($1, $2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[],
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`;

/** The call of a batch of creates with answers (parameters $6…$14: the answers' nine arrays, as `answeredBy` takes them). */
export const CREATE_CALL_ANSWERED = `SELECT id, tx FROM ${CREATE_FUNCTION}($1, $2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[],
  $6::text[], $7::text[], $8::text[], $9::text[]::bigint[], $10::text[]::int[], $11::text[], $12::text[], $13::text[]::int[], $14::text[]::int[])`;
