/**
 * `halserve import`: resources read from a data directory into the table (layout.ts), all or
 * nothing: a failed import leaves the database as it was.
 *
 * The entities go first into a temporary table of the import's session (staging), in batches:
 * each one INSERT of two parameters, the ids as a text array and the bodies joined by newlines (a
 * body is one line of a file, so it holds none), zipped by `ROWS FROM`, with their `pos` (creation
 * order, taken from the shared sequence). Then one statement publishes every resource at once —
 * one statement is one transaction, so the table never holds part of an import. No transaction
 * spans round trips: postgres 3.4.9 crashes the process that writes a ROLLBACK to a lost
 * connection; here a lost connection fails a statement, the session and its staging table end with
 * it, and nothing was published. (Not `COPY`: Postgres.js 3.4.9 never settles a COPY FROM STDIN
 * that the server fails after the last chunk, porsager/postgres#1173.)
 *
 * Publishing acts as the writes a client would make, so that every running process's change feed
 * applies it: an id in both is replaced in place where it differs (rev + 1, its place in the order
 * kept, as a PUT), an id only in the database is deleted (a tombstone, as a DELETE), an id only in
 * the file is created at the end of the order. So an import, `--replace` included, adds to the
 * database's history and rewrites none of it: the data set keeps its name (layout.ts), and a
 * cursor handed out before resumes and reads the import's changes — unlike `export --replace` on
 * files, whose logs are a new history and get a new name (`ChangesFile.renew`). An import into a
 * new database lays it out, which names it. A resource the database holds live entities of is
 * refused, skipped or replaced (`ExistingPolicy`); with `refuse`, publishing checks again that
 * none has appeared meanwhile.
 *
 * Links (import-links.ts): the same statement finds the links the import would leave dangling
 * among the imported resources and those the database holds, and publishes nothing when there are
 * any, unless told to accept them. It reads the state it replaces, in its own snapshot; it takes no
 * row locks (a million links would be a million locks), so a server's write committed while it
 * runs is not seen (the README says so).
 */
import { textArray, type Sql } from './driver.js';
import { danglingLinksQuery, linkFieldsOf, linkRows, type DanglingLink, type ImportLink, type LinkingEntity } from './import-links.js';
import { SCHEMA } from './layout.js';
import { TransferError } from './transfer-db.js';

/** What an entity to import must offer: its id and its JSON text (and a few fields read from its bytes, when it can). */
export type ImportEntity = LinkingEntity;

export interface ImportResource {
  readonly name: string;
  /** Live entities in creation order. */
  readonly entities: readonly ImportEntity[];
}

/** The link fields the schemas declare, and whether links left dangling are accepted. */
export interface ImportLinks {
  readonly declared: readonly ImportLink[];
  readonly allowDangling: boolean;
}

/** What an import did, and the links it found dangling (left so only when they were accepted). */
export interface ImportResult {
  readonly outcomes: ImportOutcome[];
  readonly dangling: { readonly count: number; readonly examples: readonly DanglingLink[] };
}

/** How many dangling links a refusal or a warning names. */
const EXAMPLES = 3;

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
/** The links of the staged entities (import-links.ts). */
const STAGING_LINKS = 'halserve_import_links';
/** The most rows, and about the most bytes of JSON, one INSERT carries. */
const BATCH_ROWS = 50_000;
const BATCH_CHARS = 16 << 20;

/**
 * Imports `resources` (staged, then published in one statement). `progress` is told the number of
 * entities sent so far. Throws `TransferError` (nothing written) when a resource holds live
 * entities and `policy` is `refuse`, and `DanglingLinksError` (nothing written) when the import
 * would leave links of `links.declared` dangling and `links.allowDangling` is false.
 */
export async function importResources(
  sql: Sql,
  resources: readonly ImportResource[],
  policy: ExistingPolicy,
  progress: (sent: number) => void = () => {},
  links: ImportLinks = { declared: [], allowDangling: false },
): Promise<ImportResult> {
  const held = await holdings(sql, resources.map((r) => r.name));
  const refuse = (): never => {
    const taken = resources.filter(({ name }) => (held.get(name)?.live ?? 0) > 0);
    const list = taken
      .map(({ name }) => {
        const live = held.get(name)?.live ?? 0;
        return `${name} (${live} ${live === 1 ? 'entity' : 'entities'})`;
      })
      .join(', ');
    throw new TransferError(`the database already holds ${list}: nothing imported; --replace makes them what the files hold, --skip-existing leaves them as they are`);
  };
  if (policy === 'refuse' && resources.some(({ name }) => (held.get(name)?.live ?? 0) > 0)) refuse();
  await sql.unsafe(`CREATE TEMPORARY TABLE IF NOT EXISTS ${STAGING} (resource text NOT NULL, id text NOT NULL, pos bigint NOT NULL, body text NOT NULL, PRIMARY KEY (resource, id))`);
  await sql.unsafe(`TRUNCATE ${STAGING}`);
  if (links.declared.length > 0) {
    await sql.unsafe(`CREATE TEMPORARY TABLE IF NOT EXISTS ${STAGING_LINKS} (source text NOT NULL, id text NOT NULL, field text NOT NULL, target_id text NOT NULL)`);
    await sql.unsafe(`TRUNCATE ${STAGING_LINKS}`);
  }
  const outcomes: ImportOutcome[] = [];
  const published: string[] = [];
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
    await stage(sql, resource, await reservePositions(sql, entities), count, links.declared);
    published.push(resource.name);
    outcomes.push({ name: resource.name, action: rows === 0 ? 'created' : 'replaced', entities, before: live });
  }
  await sql.unsafe(`ANALYZE ${STAGING}`);
  if (links.declared.length > 0) await sql.unsafe(`ANALYZE ${STAGING_LINKS}`);
  const check = danglingLinksQuery(links.declared, new Set(published), STAGING, STAGING_LINKS);
  const [done] = await sql.unsafe<{ fresh: boolean; ok: boolean; dangling: string; examples: DanglingLink[] | null }[]>(publish(check), [
    textArray(published),
    textArray(policy === 'refuse' ? published : []),
    links.allowDangling,
  ]);
  await sql.unsafe(`DROP TABLE ${STAGING}`);
  if (links.declared.length > 0) await sql.unsafe(`DROP TABLE ${STAGING_LINKS}`);
  if (done?.fresh !== true) {
    // Entities appeared in a resource between the first look and publishing: refused as then.
    const now = await holdings(sql, published);
    for (const [name, h] of now) held.set(name, h);
    return refuse();
  }
  const dangling = { count: Number(done.dangling), examples: done.examples ?? [] };
  if (!done.ok) throw new DanglingLinksError(dangling.count, dangling.examples);
  return { outcomes, dangling };
}

/** The import would leave links dangling, and was not told to accept it: nothing was written. */
export class DanglingLinksError extends TransferError {
  constructor(
    readonly count: number,
    readonly examples: readonly DanglingLink[],
  ) {
    super(`the import would leave ${count} ${count === 1 ? 'link' : 'links'} dangling`);
  }
}

/** Rows and live entities the database holds of each resource. */
async function holdings(sql: Sql, names: readonly string[]): Promise<Map<string, { rows: number; live: number }>> {
  const found = await sql<{ resource: string; rows: string; live: string }[]>`
    SELECT resource, count(*) AS rows, count(body) AS live FROM ${sql(SCHEMA)}.entities WHERE resource IN ${sql(names.length > 0 ? names : [''])} GROUP BY resource`;
  return new Map(found.map((r) => [r.resource, { rows: Number(r.rows), live: Number(r.live) }]));
}

/**
 * Takes `count` values of the creation sequence, for the entities' `pos` in file order, and
 * returns the first: `count` calls of nextval in one statement, which hand out one unbroken run
 * unless another writer takes values at the same moment, in which case it tries again (the values
 * left unused are only a gap in the sequence, as a rolled-back insert leaves).
 */
async function reservePositions(sql: Sql, count: number): Promise<number> {
  if (count === 0) return 0;
  for (let attempt = 0; ; attempt++) {
    const [row] = await sql.unsafe<{ first: string; last: string }[]>(
      `SELECT min(v) AS first, max(v) AS last FROM (SELECT nextval('${SCHEMA}.creation') AS v FROM generate_series(1, $1::int)) s`,
      [count],
    );
    const first = Number(row?.first);
    if (Number(row?.last) - first + 1 === count) return first;
    if (attempt === 9) throw new TransferError(`could not take ${count} consecutive creation positions: other writers kept taking them; try again`);
  }
}

/**
 * Puts the resource's entities into the staging table, in batches; entity `i` gets position
 * `first + i`. The links they hold (of `declared`) go beside them, batch by batch.
 */
async function stage(sql: Sql, resource: ImportResource, first: number, count: (n: number) => void, declared: readonly ImportLink[]): Promise<void> {
  const { entities, name } = resource;
  const statement =
    `INSERT INTO ${STAGING} (resource, id, pos, body) SELECT $4, r.id, $1::int8 + r.n - 1, r.body ` +
    `FROM ROWS FROM (unnest($2::text[]), string_to_table($3, E'\\n')) WITH ORDINALITY AS r(id, body, n)`;
  const linkStatement = `INSERT INTO ${STAGING_LINKS} (source, id, field, target_id) SELECT $1, unnest($2::text[]), unnest($3::text[]), unnest($4::text[])`;
  const { forward, paths } = linkFieldsOf(declared, name);
  for (let start = 0; start < entities.length; ) {
    const ids: string[] = [];
    const bodies: string[] = [];
    const linked = { ids: [] as string[], fields: [] as string[], targets: [] as string[] };
    let chars = 0;
    for (let i = start; i < entities.length && ids.length < BATCH_ROWS && chars < BATCH_CHARS; i++) {
      const entity = entities[i]!;
      ids.push(entity.id);
      bodies.push(entity.json);
      chars += entity.json.length;
      if (forward.length > 0) linkRows(entity, forward, paths, linked);
    }
    await sql.unsafe(statement, [first + start, textArray(ids), bodies.join('\n'), name]);
    if (linked.ids.length > 0) await sql.unsafe(linkStatement, [name, textArray(linked.ids), textArray(linked.fields), textArray(linked.targets)]);
    start += ids.length;
    count(ids.length);
  }
}

/**
 * Makes the staged resources (`$1`) what the files hold, as client writes would (see the file
 * comment), in one statement; with `$2` (the resources that must hold no live entity) not empty, only
 * if they still hold none (`fresh`); and only if `check` finds no dangling link, unless `$3` accepts
 * them. The three changes touch disjoint ids, so none sees another's rows; the check, as every part
 * of one statement, reads the state before them. It returns the dangling links' count and a few of
 * them (without an order: sorting a million of them to name three would cost more than finding them).
 */
const publish = (check: string): string => `WITH dangling AS MATERIALIZED (
  ${check}
), fresh AS (
  SELECT NOT EXISTS (SELECT 1 FROM ${TABLE} e WHERE e.resource = ANY($2::text[]) AND e.body IS NOT NULL) AS fresh
), ok AS (
  SELECT (SELECT fresh FROM fresh) AND ($3::boolean OR NOT EXISTS (SELECT 1 FROM dangling)) AS ok
), gone AS (
  UPDATE ${TABLE} e SET body = NULL, rev = e.rev + 1, tx = DEFAULT, deleted_at = floor(extract(epoch FROM statement_timestamp()))::bigint
  WHERE (SELECT ok FROM ok) AND e.resource = ANY($1::text[]) AND e.body IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM ${STAGING} i WHERE i.resource = e.resource AND i.id = e.id)
  RETURNING 1
), changed AS (
  UPDATE ${TABLE} e
  SET body = i.body, rev = e.rev + 1, tx = DEFAULT, pos = CASE WHEN e.body IS NULL THEN i.pos ELSE e.pos END, deleted_at = NULL
  FROM ${STAGING} i
  WHERE (SELECT ok FROM ok) AND e.resource = i.resource AND e.id = i.id AND e.body IS DISTINCT FROM i.body
  RETURNING 1
), added AS (
  INSERT INTO ${TABLE} (resource, id, pos, rev, body)
  SELECT i.resource, i.id, i.pos, 1, i.body FROM ${STAGING} i
  WHERE (SELECT ok FROM ok) AND NOT EXISTS (SELECT 1 FROM ${TABLE} e WHERE e.resource = i.resource AND e.id = i.id)
  RETURNING 1
)
SELECT (SELECT fresh FROM fresh) AS fresh, (SELECT ok FROM ok) AS ok,
  (SELECT count(*) FROM dangling)::text AS dangling,
  (SELECT json_agg(json_build_object('source', d.source, 'id', d.id, 'field', d.field, 'target', d.target, 'targetId', d.target_id))
     FROM (SELECT * FROM dangling LIMIT ${EXAMPLES}) d) AS examples,
  (SELECT count(*) FROM gone) + (SELECT count(*) FROM changed) + (SELECT count(*) FROM added) AS rows`;
