/**
 * What halserve keeps in PostgreSQL (docs/storage.md §2): one table for every resource, in a schema of
 * its own, created on first start when absent.
 *
 * `halserve.entities` holds one row per id a resource has ever had:
 * - `body`: the entity's JSON text exactly as the file store would serve it (field order kept), or
 *   NULL once deleted: the row stays as a tombstone so that every process's change feed sees the
 *   delete.
 * - `pos`: the creation order within the resource, from one sequence; a create (or a re-create of a
 *   deleted id) takes the next value, a replace keeps it.
 * - `rev`: 1 at first create, +1 with every write of the id (delete and re-create included), so the
 *   pair (pos, rev) names one state and a process never applies an older state over a newer one.
 * - `tx`: the transaction that wrote the row (`pg_current_xact_id()`). The change feed reads rows by
 *   `tx` in windows below the oldest transaction still running, which never misses a commit
 *   whatever its commit order (see pg-feed); sequence values and xmin would, under concurrent writers.
 * - `deleted_at`: on a tombstone, the Unix second the delete was applied (its change's `at`, the
 *   same on every process); NULL on a live row, whose body carries `updatedAt`, and on tombstones
 *   written before the column existed (their `at` reads 0).
 *
 * One table with a resource column rather than a table per resource: resource names up to 64
 * characters would not fit PostgreSQL's 63-byte identifiers, and one change feed reads every
 * resource with one query. A statement-level trigger notifies `halserve_changes` on every write, so
 * any writer (import included) wakes every process.
 */
export const SCHEMA = 'halserve';
export const CHANNEL = 'halserve_changes';
/** Bumped when the layout changes; a database with another version is refused at start-up. */
export const LAYOUT_VERSION = 1;
/** Serialises concurrent first starts (an arbitrary constant, the same in every process). */
export const LAYOUT_LOCK = 0x68616c73;

/**
 * `halserve.answers`: the remembered answers of keyed writes (`Idempotency-Key`, idempotency.ts),
 * one row per resource and ledger key. A row is inserted by the very statement that makes its
 * write (write-statement.ts), so it commits or rolls back with it; its primary key makes a second
 * write of the key fail as a whole. `at` is milliseconds; rows past their time to live are deleted.
 * Added without a layout version of its own: created when absent, in a database of either age.
 */
export const ANSWERS_TABLE = `${SCHEMA}.answers`;
/**
 * The index the sweep of expired answers reads (writer.ts: `at <= cutoff`): a BRIN index of `at`,
 * the smallest and largest time of each range of the table's pages. Rows come in the order of
 * their time, so a range of old rows is found as well as by a B-tree, and a new row costs nothing
 * in the index while its range is not yet summarised (autovacuum summarises it). A B-tree on
 * `(resource, at)`, as first laid out (`answers_at`), took an index entry of its own in every
 * keyed write's statement.
 */
export const ANSWERS_AT_INDEX = 'answers_at_brin';
/** The first layout's index of the answers' time, replaced by `ANSWERS_AT_INDEX` (`ANSWERS_AT_MIGRATION`). */
export const ANSWERS_AT_BTREE = 'answers_at';
/** Whether a database still holds the first layout's index (`ANSWERS_AT_BTREE`). */
export const ANSWERS_AT_BTREE_QUERY = `SELECT to_regclass('${SCHEMA}.${ANSWERS_AT_BTREE}') IS NOT NULL AS present`;
/** Creates `ANSWERS_AT_INDEX` where it is absent. */
const ANSWERS_AT_DDL = `CREATE INDEX IF NOT EXISTS ${ANSWERS_AT_INDEX} ON ${ANSWERS_TABLE} USING brin (at)`;
export const ANSWERS_TABLE_DDL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS ${ANSWERS_TABLE} (
     resource text NOT NULL,
     key text NOT NULL,
     fingerprint text NOT NULL,
     at bigint NOT NULL,
     status int NOT NULL,
     headers text NOT NULL,
     body text NOT NULL,
     CONSTRAINT answers_pkey PRIMARY KEY (resource, key)
   )`,
  ANSWERS_AT_DDL,
];
/** The first layout's index of the answers' time replaced by the BRIN index: run once, inside one transaction. */
export const ANSWERS_AT_MIGRATION: readonly string[] = [
  `SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`,
  ANSWERS_AT_DDL,
  `DROP INDEX IF EXISTS ${SCHEMA}.${ANSWERS_AT_BTREE}`,
];
/** The constraint a second answer to one key breaks (SQLSTATE 23505). */
export const ANSWERS_KEY_CONSTRAINT = 'answers_pkey';

/**
 * The data set's name, `halserve.meta`'s row `dataset`: every cursor of the database carries it
 * (pg-cursor.ts), so that a cursor handed out by another database — another one, or this one
 * before its layout was made anew — is told apart (410) instead of resuming at a position that
 * means something else here. Made with the layout, in its transaction, and never changed: every
 * process serving the database reads the same one, at every start. `p` and 16 hexadecimal digits
 * of a version-4 UUID (60 random bits; the 13th digit is the version), a name as a data
 * directory's (local-feed.ts `DATASET`). Inserted only when absent: run again, or by several
 * processes at once, the first stays.
 */
export const DATASET_DDL = `INSERT INTO ${SCHEMA}.meta (key, value) SELECT 'dataset', 'p' || left(replace(gen_random_uuid()::text, '-', ''), 16) ON CONFLICT (key) DO NOTHING`;
/**
 * The row that lets cursors without a name resume (pg-cursor.ts `PgDataset.unnamedResume`): a
 * database laid out by an earlier halserve handed them out, and its clients' cursors must go on
 * resuming across the upgrade. Never set on a database laid out with its name.
 */
export const UNNAMED_CURSORS = 'unnamed_cursors';
/**
 * A database laid out before data sets were named gets its name on the first start of a writing
 * process, with `UNNAMED_CURSORS`, only where no name is there yet (a process that ran this first
 * made it, and the row with it). Run inside one transaction; the layout lock serialises processes
 * starting at once, and each statement after it sees what the one before committed.
 */
export const DATASET_MIGRATION: readonly string[] = [
  `SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`,
  `INSERT INTO ${SCHEMA}.meta (key, value) SELECT '${UNNAMED_CURSORS}', 'resume'
   WHERE NOT EXISTS (SELECT 1 FROM ${SCHEMA}.meta WHERE key = 'dataset') ON CONFLICT (key) DO NOTHING`,
  DATASET_DDL,
];
/** The data set's name and whether unnamed cursors resume, as rows `(key, value)`. */
export const DATASET_QUERY = `SELECT key, value FROM ${SCHEMA}.meta WHERE key IN ('dataset', '${UNNAMED_CURSORS}')`;

/** Creates the schema, table, indexes and trigger when absent, and names the data set. Run inside one transaction. */
export const LAYOUT_DDL: readonly string[] = [
  `SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`,
  `CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`,
  `CREATE TABLE IF NOT EXISTS ${SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL)`,
  `INSERT INTO ${SCHEMA}.meta (key, value) VALUES ('layout', '${LAYOUT_VERSION}') ON CONFLICT (key) DO NOTHING`,
  DATASET_DDL,
  `CREATE SEQUENCE IF NOT EXISTS ${SCHEMA}.creation`,
  `CREATE TABLE IF NOT EXISTS ${SCHEMA}.entities (
     resource text NOT NULL,
     id text NOT NULL,
     pos bigint NOT NULL,
     rev bigint NOT NULL,
     tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
     body text,
     deleted_at bigint,
     PRIMARY KEY (resource, id)
   )`,
  `CREATE INDEX IF NOT EXISTS entities_creation ON ${SCHEMA}.entities (resource, pos) WHERE body IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS entities_tx ON ${SCHEMA}.entities (tx)`,
  ...ANSWERS_TABLE_DDL,
  `CREATE OR REPLACE FUNCTION ${SCHEMA}.notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN PERFORM pg_notify('${CHANNEL}', ''); RETURN NULL; END $$`,
  `CREATE OR REPLACE TRIGGER entities_changed AFTER INSERT OR UPDATE OR DELETE ON ${SCHEMA}.entities
   FOR EACH STATEMENT EXECUTE FUNCTION ${SCHEMA}.notify_changes()`,
];

/**
 * `deleted_at` added to a table created before it (without a layout version of its own, like the
 * answers table): a nullable column without a default is a change of the catalogue only.
 */
export const DELETED_AT_DDL = `ALTER TABLE ${SCHEMA}.entities ADD COLUMN IF NOT EXISTS deleted_at bigint`;
export const DELETED_AT_QUERY = `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${SCHEMA}.entities'::regclass AND attname = 'deleted_at' AND NOT attisdropped) AS present`;

/** The layout version a database holds. */
export const LAYOUT_VERSION_QUERY = `SELECT value FROM ${SCHEMA}.meta WHERE key = 'layout'`;
