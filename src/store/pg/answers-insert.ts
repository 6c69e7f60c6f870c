/**
 * The INSERT of a write batch's answers into `halserve.answers` (layout.ts), the one text both the
 * plain write statement (write-statement.ts) and the create function (create-function.ts) run,
 * each with its own names for the same values.
 *
 * The answers come as nine arrays: id, key, fingerprint, at, status, headers, body, and
 * `AnswerRow.from`'s row and characters (write-statement.ts). Each is inserted only if it has no
 * id or `written` holds for its id (`a.id`). A body's start given by reference is taken from the
 * row's JSON, an element of the rows' bodies (`bodies`): a subscript, not a join, which PostgreSQL
 * would plan at every execution (`plan_cache_mode`, driver.ts). A key that already has an answer
 * breaks `answers_pkey`, and the whole statement, rows included, is undone.
 */
import { ANSWERS_TABLE } from './layout.js';

export interface AnswersSql {
  /** The resource's name. */
  readonly resource: string;
  /** The rows' bodies, a `text[]`. */
  readonly bodies: string;
  /** The nine arrays, typed (text[] but `at` and `ref` bigint[] or int[], `status` and `shared` int[]). */
  readonly arrays: readonly string[];
  /** The condition on `a.id` under which an answer with an id is inserted. */
  readonly written: string;
}

export function answersInsert({ resource, bodies, arrays, written }: AnswersSql): string {
  return `INSERT INTO ${ANSWERS_TABLE} (resource, key, fingerprint, at, status, headers, body)
  SELECT ${resource}, a.key, a.fingerprint, a.at, a.status, a.headers, CASE WHEN a.ref IS NULL THEN a.body ELSE left((${bodies})[a.ref], a.shared) || a.body END
  FROM unnest(${arrays.join(', ')})
    AS a(id, key, fingerprint, at, status, headers, body, ref, shared)
  WHERE a.id IS NULL OR ${written}`;
}
