/**
 * `halserve import`: resources read from a data directory into the table (layout.ts), in one
 * transaction: a failed import leaves the database as it was.
 *
 * A resource the database does not hold yet is inserted straight into the table: body = the
 * entity's JSON text, pos = creation order (taken from the shared sequence), rev = 1. Rows go in
 * batches, each one INSERT of two parameters: the ids as a text array and the bodies joined by
 * newlines (a body is one line of a file, so it holds none), zipped by `ROWS FROM`. Not `COPY`:
 * Postgres.js 3.4.9 never settles a COPY FROM STDIN that the server fails after the last chunk
 * (porsager/postgres#1173), so an import refused by the database would hang instead of failing,
 * and its COPY TO STDOUT can leave the connection paused (#1016). Measured on 1M products, COPY
 * took 14 s and these batches 23 s: inside the 60 s target, and every error surfaces. A resource it holds already is refused, skipped or replaced (`ExistingPolicy`); a
 * replace goes through a temporary table and acts as the writes a client would make, so that every
 * running process's change feed applies it: an id in both is replaced in place (rev + 1, its
 * place in the order kept, as a PUT), an id only in the database is deleted (a tombstone, as a
 * DELETE) and an id only in the file is created at the end of the order.
 */
import type { TransactionSql } from 'postgres';
import type { Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { TransferError } from './transfer-db.js';

/** What an entity to import must offer: its id and its JSON text. */
export interface ImportEntity {
  readonly id: string;
  readonly json: string;
}

export interface ImportResource {
  readonly name: string;
  /** Live entities in creation order. */
  readonly entities: readonly ImportEntity[];
}

/** What to do with a resource the database already holds live entities of. */
export type ExistingPolicy = 'refuse' | 'skip' | 'replace';

export interface ImportOutcome {
  readonly name: string;
  /** `created`: the database held no row of it; `replaced`: it did (`--replace`, or tombstones only). */
  readonly action: 'created' | 'replaced' | 'skipped';
  /** Entities the file holds (and the resource holds after the import, unless skipped). */
  readonly entities: number;
  /** Live entities the database held before. */
  readonly before: number;
}

const TABLE = `${SCHEMA}.entities`;
const STAGING = 'halserve_import';
/** The most rows, and about the most bytes of JSON, one INSERT carries. */
const BATCH_ROWS = 50_000;
const BATCH_CHARS = 16 << 20;

/**
 * Imports `resources` in one transaction. `progress` is told the number of entities sent so far.
 * Throws `TransferError` (nothing written) when a resource holds live entities and `policy` is
 * `refuse`.
 */
export async function importResources(
  sql: Sql,
  resources: readonly ImportResource[],
  policy: ExistingPolicy,
  progress: (sent: number) => void = () => {},
): Promise<ImportOutcome[]> {
  return sql.begin(async (tx) => {
    const held = new Map<string, { rows: number; live: number }>();
    for (const { name } of resources) {
      const [row] = await tx<{ rows: string; live: string }[]>`
        SELECT count(*) AS rows, count(body) AS live FROM ${tx(SCHEMA)}.entities WHERE resource = ${name}`;
      held.set(name, { rows: Number(row?.rows ?? 0), live: Number(row?.live ?? 0) });
    }
    if (policy === 'refuse') {
      const taken = resources.filter(({ name }) => (held.get(name)?.live ?? 0) > 0);
      if (taken.length > 0) {
        const list = taken.map(({ name }) => `${name} (${held.get(name)?.live} entities)`).join(', ');
        throw new TransferError(`the database already holds ${list}: nothing imported; --replace makes them what the files hold, --skip-existing leaves them as they are`);
      }
    }
    const outcomes: ImportOutcome[] = [];
    let sent = 0;
    const count = (n: number): void => {
      sent += n;
      progress(sent);
    };
    for (const resource of resources) {
      const { rows, live } = held.get(resource.name) ?? { rows: 0, live: 0 };
      const entities = resource.entities.length;
      if (live > 0 && policy === 'skip') {
        outcomes.push({ name: resource.name, action: 'skipped', entities, before: live });
        count(entities);
        continue;
      }
      const first = await reservePositions(tx, entities);
      if (rows === 0) {
        await insertBatches(tx, TABLE, resource, first, count);
        outcomes.push({ name: resource.name, action: 'created', entities, before: 0 });
      } else {
        await replace(tx, resource, first, count);
        outcomes.push({ name: resource.name, action: 'replaced', entities, before: live });
      }
    }
    return outcomes;
  });
}

/**
 * Takes `count` values of the creation sequence, for the entities' `pos` in file order, and
 * returns the first: `count` calls of nextval in one statement, which hand out one unbroken run
 * unless another writer takes values at the same moment, in which case it tries again (the values
 * left unused are only a gap in the sequence, as a rolled-back insert leaves).
 */
async function reservePositions(tx: TransactionSql, count: number): Promise<number> {
  if (count === 0) return 0;
  for (let attempt = 0; ; attempt++) {
    const [row] = await tx.unsafe<{ first: string; last: string }[]>(
      `SELECT min(v) AS first, max(v) AS last FROM (SELECT nextval('${SCHEMA}.creation') AS v FROM generate_series(1, $1::int)) s`,
      [count],
    );
    const first = Number(row?.first);
    if (Number(row?.last) - first + 1 === count) return first;
    if (attempt === 9) throw new TransferError(`could not take ${count} consecutive creation positions: other writers kept taking them; try again`);
  }
}

/**
 * Inserts the resource's entities into `table` (the table, or the staging table of a replace), in
 * batches; entity `i` gets position `first + i`.
 */
async function insertBatches(tx: TransactionSql, table: string, resource: ImportResource, first: number, count: (n: number) => void): Promise<void> {
  const { entities, name } = resource;
  const staging = table === STAGING;
  const statement =
    `INSERT INTO ${table} ${staging ? '(id, pos, body)' : '(resource, id, pos, rev, body)'} ` +
    `SELECT ${staging ? '' : '$4, '}r.id, $1::int8 + r.n - 1, ${staging ? '' : '1, '}r.body ` +
    `FROM ROWS FROM (unnest($2::text[]), string_to_table($3, E'\\n')) WITH ORDINALITY AS r(id, body, n)`;
  for (let start = 0; start < entities.length; ) {
    const ids: string[] = [];
    const bodies: string[] = [];
    let chars = 0;
    for (let i = start; i < entities.length && ids.length < BATCH_ROWS && chars < BATCH_CHARS; i++) {
      const entity = entities[i]!;
      ids.push(entity.id);
      bodies.push(entity.json);
      chars += entity.json.length;
    }
    const parameters = [first + start, ids, bodies.join('\n')];
    await tx.unsafe(statement, staging ? parameters : [...parameters, name]);
    start += ids.length;
    count(ids.length);
  }
}

/** Makes the resource's rows what the file holds, as client writes would (see the file comment). */
async function replace(tx: TransactionSql, resource: ImportResource, first: number, count: (n: number) => void): Promise<void> {
  await tx.unsafe(`CREATE TEMPORARY TABLE IF NOT EXISTS ${STAGING} (id text PRIMARY KEY, pos bigint NOT NULL, body text NOT NULL) ON COMMIT DROP`);
  await tx.unsafe(`TRUNCATE ${STAGING}`);
  await insertBatches(tx, STAGING, resource, first, count);
  await tx.unsafe(`ANALYZE ${STAGING}`);
  const name = resource.name;
  // Ids the file no longer holds: deleted.
  await tx`
    UPDATE ${tx(SCHEMA)}.entities e SET body = NULL, rev = e.rev + 1, tx = DEFAULT
    WHERE e.resource = ${name} AND e.body IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ${tx(STAGING)} i WHERE i.id = e.id)`;
  // Ids in both: replaced where they differ, in place; a deleted one is created again, at the end.
  await tx`
    UPDATE ${tx(SCHEMA)}.entities e
    SET body = i.body, rev = e.rev + 1, tx = DEFAULT, pos = CASE WHEN e.body IS NULL THEN i.pos ELSE e.pos END
    FROM ${tx(STAGING)} i
    WHERE e.resource = ${name} AND e.id = i.id AND e.body IS DISTINCT FROM i.body`;
  // Ids only in the file: created.
  await tx`
    INSERT INTO ${tx(SCHEMA)}.entities (resource, id, pos, rev, body)
    SELECT ${name}, i.id, i.pos, 1, i.body FROM ${tx(STAGING)} i
    WHERE NOT EXISTS (SELECT 1 FROM ${tx(SCHEMA)}.entities e WHERE e.resource = ${name} AND e.id = i.id)`;
}
